"""A task failed by bad data or a gate fails at once (no retry), with the
error's one line as its message and without the library's traceback chain."""

from __future__ import annotations

import pytest
from deid import steps
from deid.airflow_glue import no_retry_on_bad_data

from anonymizers.errors import InputError

pytestmark = pytest.mark.airflow


@pytest.mark.parametrize("error", [InputError("claims.csv", "not a code", row=3, field="code"),
                                   steps.ValidationFailed("gate 'k' failed")])
def test_bad_data_fails_the_task_with_one_line(error):
    from airflow.sdk.exceptions import AirflowFailException

    @no_retry_on_bad_data
    def task():
        raise error

    with pytest.raises(AirflowFailException) as raised:
        task()
    assert str(raised.value) == str(error) and "\n" not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_other_errors_pass_through_to_airflow_retries():
    @no_retry_on_bad_data
    def task():
        raise OSError("warehouse unreachable")

    with pytest.raises(OSError):
        task()
