"""Shared fixtures.  Tests that need ../shared/datasets are marked ``datasets``
and are skipped, with the reason, on machines that do not have it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("DEID_DATASETS", ROOT.parent / "shared" / "datasets"))

# The same environment `make test` exports, for running pytest directly.
for _name, _value in {
    "AIRFLOW_HOME": ROOT / "var" / "airflow",
    "AIRFLOW__CORE__DAGS_FOLDER": ROOT / "dags",
    "AIRFLOW__CORE__PLUGINS_FOLDER": ROOT / "plugins",
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "GX_ANALYTICS_ENABLED": "False",
    # tests get their own embedded warehouse and staging, apart from the demo's
    "DEID_VAR_DIR": ROOT / "var" / "test",
    # the secret of code tokens and pseudonym permutations (deid.secret)
    "AIRFLOW_VAR_DEID_TOKEN_KEY": "test-key-not-secret",
}.items():
    os.environ.setdefault(_name, str(_value))
for _p in (ROOT, ROOT / "plugins"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
    if str(_p) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):  # for subprocesses
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_p), os.environ.get("PYTHONPATH")]))


def pytest_configure(config):
    config.addinivalue_line("markers", "datasets: needs ../shared/datasets (real public data)")
    config.addinivalue_line("markers", "warehouse: needs a running PostgreSQL warehouse")
    config.addinivalue_line("markers", "airflow: runs Airflow itself (DagBag, dag.test, UI)")
    config.addinivalue_line("markers", "ui: starts airflow standalone (REST API, browser)")


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"real datasets not present at {DATASETS}")
    return DATASETS


try:
    from hypothesis import HealthCheck, settings

    # CI's profile is derandomized: the same examples every run, so a red CI is a
    # regression, not a dice roll.  HYPOTHESIS_PROFILE=thorough explores at random.
    settings.register_profile("default", max_examples=60, deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("thorough", max_examples=500, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
except ImportError:  # pragma: no cover - hypothesis is pinned in requirements.txt
    pass


@pytest.fixture(scope="session")
def warehouse():
    """The warehouse with its schemas (embedded unless AIRFLOW_CONN_WAREHOUSE is set)."""
    from deid import warehouse as wh

    wh.ensure_schemas()
    return wh


@pytest.fixture
def empty_source(warehouse):
    """An empty source schema for a test that loads its own claims."""
    from deid.admin_setup import RIF_TABLES
    from tools.demo_data import TABLES

    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in (*TABLES, *RIF_TABLES)))
    return warehouse
