"""The DE-SynPUF loading command the README gives operators, run as they would:
``python -m deid.synpuf_loader FILE...`` in a process of its own."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.warehouse, pytest.mark.datasets]

SOURCE_TABLES = ("beneficiary_summary", "inpatient_claims", "outpatient_claims", "carrier_claims")


def _load(*files) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "deid.synpuf_loader", *map(str, files)],
                          capture_output=True, text=True, timeout=300, check=False)


def _source_rows(warehouse) -> int:
    with warehouse.connect() as conn, conn.cursor() as cur:
        total = 0
        for table in SOURCE_TABLES:
            cur.execute(f"SELECT count(*) FROM source.{table}")
            total += cur.fetchone()[0]
    return total


@pytest.fixture
def sample_files(datasets_dir):
    folder = datasets_dir / "synpuf" / "cms_bfd_sample_testA"
    return sorted(folder.glob("*.csv.gz"))


def test_loads_the_files_and_prints_the_rows_of_each(sample_files, empty_source):
    files = [p for p in sample_files if "Prescription" not in p.name]
    run = _load(*files)
    assert run.returncode == 0, run.stderr
    # stdout is the result alone: Airflow's log lines (the warehouse lookup
    # asks Airflow) go to stderr
    assert all(re.fullmatch(r"\S+: \d+ rows", line) for line in run.stdout.splitlines()), \
        run.stdout
    printed = dict(line.rsplit(": ", 1) for line in run.stdout.splitlines())
    assert list(printed) == [p.name for p in files]
    rows = [int(v.removesuffix(" rows")) for v in printed.values()]
    assert sum(rows) == _source_rows(empty_source) > 0


def _errors(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("error:")]


def test_a_file_of_another_kind_stops_it_before_anything_is_loaded(sample_files, empty_source):
    prescriptions = next(p for p in sample_files if "Prescription" in p.name)
    run = _load(sample_files[0], prescriptions)
    assert run.returncode == 2
    assert len(_errors(run)) == 1 and prescriptions.name in _errors(run)[0]
    assert _source_rows(empty_source) == 0


def test_a_malformed_file_rolls_back_every_file(sample_files, empty_source, tmp_path):
    beneficiaries = next(p for p in sample_files if "Beneficiary" in p.name)
    not_claims = tmp_path / "DE1_0_2008_to_2010_Carrier_Claims_Sample_X.csv.gz"
    not_claims.write_bytes(beneficiaries.read_bytes())  # no claim columns
    run = _load(beneficiaries, not_claims)
    assert run.returncode == 2
    assert len(_errors(run)) == 1 and not_claims.name in _errors(run)[0]
    assert _source_rows(empty_source) == 0


def test_a_missing_file_is_a_usage_error(tmp_path):
    run = _load(tmp_path / "DE1_0_2008_Beneficiary_Summary_File_Sample_1.csv")
    assert run.returncode == 2 and "no such file" in run.stderr


def test_without_airflow_metadata_it_says_so_in_one_line(sample_files, tmp_path):
    """No metadata DB under AIRFLOW_HOME: the connection lookup fails, which is
    said in one line (no traceback) and starts no embedded warehouse."""
    import os

    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "no_airflow"),
           "DEID_VAR_DIR": str(tmp_path / "var")}
    for name in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW_CONN_WAREHOUSE"):
        env.pop(name, None)
    run = subprocess.run([sys.executable, "-m", "deid.synpuf_loader", str(sample_files[0])],
                         capture_output=True, text=True, timeout=300, check=False, env=env)
    assert run.returncode == 1 and run.stdout == ""
    assert len(_errors(run)) == 1 and "airflow db migrate" in _errors(run)[0]
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "var" / "warehouse").exists()
