"""A real ``airflow standalone`` for the UI and REST tests, on its own port and
AIRFLOW_HOME (so its scheduler does not share SQLite with dag.test runs),
against the tests' embedded warehouse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tools.airflow_server import AirflowServer, standalone  # noqa: F401 - AirflowServer for type hints

from tests.dags.release_copies import write_copies

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def airflow_server(warehouse, tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow-server")
    # the release file is the run's policy: the tests' copy allows k = 3 on their
    # few hundred synthetic members and lets a trigger choose the seed
    releases = write_copies(tmp_path_factory.mktemp("releases"),
                            {"medco_codes": {"k": 3, "min_anonymity_set": 5}},
                            {"medco_codes": {"seed": "any"}})
    env = {"DEID_RELEASES_DIR": str(releases),  # only the DAG the tests unpause runs: no scheduled runs of the others
           "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
           "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
           "AIRFLOW_VAR_DEID_TOKEN_KEY": os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY",
                                                        "ui-test-key")}
    with standalone(home, env, ROOT / "test-artifacts" / "airflow-standalone.log") as server:
        yield server
