"""``python -m anonymizers gccens`` on CSV files (Tamersoy 2011, Example 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.verify.censoring import records_from_document, verify_gccens

ROOT = Path(__file__).resolve().parents[2]
POPULATION = {"Dan": ["250"], "Bella": ["250", "250", "272"],
              "John": ["250", "250", "272", "272"], "Ada": ["401"] * 4,
              "Tom": ["272", "272", "724"], "Alan": ["250"], "Eric": ["272", "724"]}
SAMPLE = {"Alan": ["250"], "Tom": ["272", "272", "724"], "Bella": ["250", "250", "272"]}


def long(records: dict) -> pd.DataFrame:
    rows = [(p, c) for p, codes in records.items() for c in codes]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


@pytest.fixture
def files(tmp_path):
    long(POPULATION).to_csv(tmp_path / "pop.csv", index=False)
    long(SAMPLE).to_csv(tmp_path / "sample.csv", index=False)
    (tmp_path / "caps.json").write_text('{"250": 2, "272": 2, "401": 0, "724": 1}')
    return tmp_path


def cli(files, *extra, k="2"):
    return main(["gccens", "--k", k, "--seed", "1", "--population", str(files / "pop.csv"),
                 "--input", str(files / "sample.csv"), "--output", str(files / "out.json"),
                 *extra])


def test_example_1_through_the_cli(files, capsys):
    assert cli(files, "--caps", str(files / "caps.json"), "--seed", "4",
               "--key", str(files / "key.csv")) == 0
    assert "released 3 records" in capsys.readouterr().out
    doc = json.loads((files / "out.json").read_text())
    assert doc["k"] == 2 and doc["verification"]["ok"]
    key = pd.read_csv(files / "key.csv", dtype=str)
    source = dict(zip(key["patient_id"], key["original_id"]))
    got = {source[r["patient_id"]]: (r["codes"], c) for r, c in zip(doc["records"], doc["cul"])}
    assert got == {"Alan": ({"250": 1}, 0.0), "Tom": ({"272": 1, "724": 1}, pytest.approx(1 / 3)),
                   "Bella": ({"250": 1, "272": 1}, pytest.approx(1 / 3))}
    assert doc["final_caps"] == {"250": 1, "272": 1, "401": 0, "724": 1}
    assert doc["metrics"]["cul_mean"] == pytest.approx(2 / 9)
    assert not set(SAMPLE) & set((files / "out.json").read_text().split('"'))
    patients, records, k, caps = records_from_document(doc)
    verdict = verify_gccens(patients, records, key, long(SAMPLE), long(POPULATION), k, caps)
    assert verdict.ok


@pytest.mark.parametrize("caps", [["--cap", "1"], ["--caps-from-sample"]])
def test_other_cap_options(files, caps):
    assert cli(files, *caps, "--key", str(files / "key.csv")) == 0
    doc = json.loads((files / "out.json").read_text())
    key = pd.read_csv(files / "key.csv", dtype=str)
    patients, records, k, final = records_from_document(doc)
    assert verify_gccens(patients, records, key, long(SAMPLE), long(POPULATION), k, final).ok
    if caps == ["--cap", "1"]:
        assert all(n == 1 for r in doc["records"] for n in r["codes"].values())


def test_key_is_written_only_on_request(files):
    assert cli(files, "--cap", "2") == 0
    assert sorted(p.name for p in files.iterdir()) == ["caps.json", "out.json", "pop.csv",
                                                        "sample.csv"]


def test_count_column_is_accepted(files):
    counted = long(POPULATION).groupby(["patient_id", "code"], as_index=False).size()
    counted.rename(columns={"size": "count"}).to_csv(files / "pop.csv", index=False)
    assert cli(files, "--caps", str(files / "caps.json")) == 0


def test_a_caps_option_is_required(files):
    with pytest.raises(SystemExit) as exit_:
        cli(files)
    assert exit_.value.code == 2


@pytest.mark.parametrize("setup, args, message", [
    (lambda d: (d / "pop.csv").unlink(), ["--cap", "2"], "pop.csv: file not found"),
    (lambda d: (d / "caps.json").write_text("[2, 2]"), ["--caps", "caps.json"],
     "caps must be a JSON object"),
    (lambda d: (d / "caps.json").write_text('{"250": "two"}'), ["--caps", "caps.json"],
     "parameter 'caps'"),
    (lambda d: (d / "sample.csv").write_text("patient_id,code\nZoe,250\n"), ["--cap", "2"],
     "is not in the population"),
    (lambda d: (d / "sample.csv").write_text("patient_id,icd\nAlan,250\n"), ["--cap", "2"],
     "missing column"),
])
def test_user_errors_are_reported(files, capsys, setup, args, message):
    setup(files)
    args = [str(files / a) if a.endswith(".json") else a for a in args]
    assert cli(files, *args) == (1 if message.startswith("parameter") else 2)
    assert message in capsys.readouterr().err
    assert not (files / "out.json").exists()


def test_k_larger_than_the_population(files, capsys):
    assert cli(files, "--cap", "2", k="8") == 1
    assert "exceeds the population size 7" in capsys.readouterr().err


def test_module_entry_point_runs(files):
    out = subprocess.run([sys.executable, "-m", "anonymizers", "gccens", "--k", "2", "--seed", "1",
                          "--population", str(files / "pop.csv"),
                          "--input", str(files / "sample.csv"),
                          "--output", str(files / "out.json"), "--cap", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads((files / "out.json").read_text())["verification"]["ok"]
