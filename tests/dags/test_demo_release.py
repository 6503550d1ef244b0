"""``make demo CODE_SYSTEM=...`` runs the release of its claims' code system:
the ICD-9-CM release refuses the ICD-10-CM demo claims at the extract (found
running ``make demo CODE_SYSTEM=icd10cm`` from a fresh clone)."""

from __future__ import annotations

import pytest

from tools.demo import RELEASE_FILES, demo_release


@pytest.mark.parametrize("code_system", sorted(RELEASE_FILES))
def test_demo_runs_the_release_of_its_code_system(code_system):
    release = demo_release(code_system)
    assert release.codes.code_system == code_system
    assert release.method == "medco"
    assert release.dag_id == f"deid_{release.name}"


def test_the_two_demo_releases_are_distinct_dags():
    assert demo_release("icd9cm").dag_id != demo_release("icd10cm").dag_id
