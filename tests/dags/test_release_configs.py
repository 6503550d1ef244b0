"""Release files: a bad one fails DAG parsing with its file and field named."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from deid.releases import ReleaseConfigError, load_all, load_release

ROOT = Path(__file__).resolve().parents[2]
GOOD = """name: example
method: disassociation
schedule: "@daily"
params: {k: 5, m: 2, seed: 1, utility_policy: icd9-level-1}
destination: {table: example}
"""


def _write(folder: Path, text: str, name: str = "example.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_every_release_file_in_the_repository_parses():
    releases = load_all()
    assert {r.method for r in releases} >= {"medco", "ugaclip", "disassociation", "gccens"}


@pytest.mark.parametrize("change, field", [
    (("method: disassociation", "method: k-anonymity-magic"), "method"),
    (("k: 5", "k: 1"), "params.k"),
    (("m: 2", "m: 9"), "params.m"),
    (('"@daily"', '"61 * * * *"'), "schedule"),
    (("method: disassociation", "method: ugaclip"), "params.m"),
    (("utility_policy: icd9-level-1", "utility_policy: nonsense"), "params.utility_policy"),
    (("table: example", "table: Robert'); DROP TABLE x"), "destination.table"),
])
def test_config_errors_name_the_file_and_field(tmp_path, change, field):
    path = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ReleaseConfigError) as err:
        load_release(path)
    assert err.value.field == field and "example.yaml" in str(err.value)


@pytest.mark.parametrize("scope, problem", [
    ("TRUE) UNION SELECT 1 FROM pg_authid WHERE (TRUE", "changes the query"),
    ("pg_sleep(600) IS NULL", "function pg_sleep()"),
    ("TRUE; DROP TABLE source.carrier_claims", "one SQL expression"),
])
def test_an_unsafe_scope_fails_parsing(tmp_path, scope, problem):
    path = _write(tmp_path, GOOD + f"scope: {scope!r}\n")
    with pytest.raises(ReleaseConfigError) as err:
        load_release(path)
    assert err.value.field == "scope" and problem in str(err.value)


def test_ugaclip_without_a_utility_policy_is_refused(tmp_path):
    text = GOOD.replace("method: disassociation", "method: ugaclip").replace(
        "m: 2, ", "").replace("icd9-level-1", "none")
    with pytest.raises(ReleaseConfigError, match="needs a utility policy"):
        load_release(_write(tmp_path, text))


@pytest.mark.airflow
def test_a_bad_release_file_is_a_dagbag_import_error(tmp_path, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    releases, dags = tmp_path / "releases", tmp_path / "dags"
    releases.mkdir()
    dags.mkdir()
    shutil.copy(ROOT / "dags" / "releases.py", dags / "releases.py")
    _write(releases, GOOD.replace("k: 5", "k: 1"), "broken.yaml")
    monkeypatch.setenv("DEID_RELEASES_DIR", str(releases))
    bag = DagBag(dag_folder=str(dags))
    assert len(bag.import_errors) == 1
    message = next(iter(bag.import_errors.values()))
    assert "broken.yaml" in message and "params.k" in message
    assert os.environ["DEID_RELEASES_DIR"] == str(releases)
