"""``tools.demo_data --layout csv``: the generator's members as the command
line's inputs, in both code systems, and the commands run on them."""

from __future__ import annotations

import pandas as pd
import pytest

from anonymizers.__main__ import main as cli
from anonymizers.codesystems import is_valid
from anonymizers.synthetic import SyntheticConfig, generate
from anonymizers.synthetic_csv import FILES, write_cli_inputs
from tools.demo_data import main as demo_data


@pytest.fixture(scope="module", params=["icd9cm", "icd10cm"])
def written(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    assert demo_data(["--layout", "csv", "--members", "40", "--seed", "3",
                      "--code-system", request.param, "--out", str(out)]) == 0
    return request.param, out


def test_the_files_hold_the_generated_claims(written):
    system, out = written
    config = SyntheticConfig(n_members=40, seed=3, code_system=system)
    chunks = list(generate(config))
    members = pd.read_csv(out / "members.csv", dtype=str)
    assert sorted(members["member_id"]) == sorted(
        pd.concat(c["beneficiary_summary"] for c in chunks)["desynpuf_id"].unique())
    claims = pd.read_csv(out / "claims.csv", dtype=str, keep_default_na=False)
    n_claims = sum(len(c[k]) for c in chunks for k in c if k.endswith("_claims"))
    assert len(claims) == n_claims and claims["claim_id"].is_unique
    assert claims["service_date"].str.fullmatch(r"\d{4}-\d{2}-\d{2}").all()
    first = 2016 if system == "icd10cm" else 2008  # ICD-10-CM claims after CMS's switch
    assert claims["service_date"].str[:4].astype(int).min() == first
    records = pd.read_csv(out / "records.csv", dtype=str)
    assert not records.duplicated().any() and set(records["visit_id"]) <= set(claims["claim_id"])
    assert is_valid(records["code"].unique(), system).all()
    first = claims[claims["dx_code"] != ""]
    assert first.merge(records, left_on=["claim_id", "dx_code"],
                       right_on=["visit_id", "code"]).shape[0] == len(first)


def test_trajectory_ages_are_whole_years_at_the_claim(written):
    _, out = written
    members = pd.read_csv(out / "members.csv", dtype=str).set_index("member_id")
    claims = pd.read_csv(out / "claims.csv", dtype=str, keep_default_na=False)
    records = pd.read_csv(out / "records.csv", dtype=str)
    pairs = pd.read_csv(out / "trajectories.csv", dtype={"patient_id": str, "code": str})
    row = records.merge(claims, left_on="visit_id", right_on="claim_id").iloc[0]
    born = pd.Timestamp(members.loc[row["patient_id"], "birth_date"])
    seen = pd.Timestamp(row["service_date"])
    age = seen.year - born.year - ((seen.month, seen.day) < (born.month, born.day))
    assert ((pairs["patient_id"] == row["patient_id"]) & (pairs["code"] == row["code"])
            & (pairs["age"] == age)).any()
    assert not pairs.duplicated().any()


def test_commands_run_on_the_files(written, tmp_path, capsys):
    system, out = written
    assert cli(["ppe", "--k", "3", "--code-system", system, "--input",
                str(out / "records.csv"), "--output", str(tmp_path / "ppe.json")]) == 0
    assert cli(["lda", "--k", "3", "--seed", "1", "--code-system", system, "--input",
                str(out / "trajectories.csv"), "--output", str(tmp_path / "lda.csv")]) == 0
    printed = capsys.readouterr()
    assert "verifier: ok" in printed.out + printed.err


def test_write_cli_inputs_counts_what_it_writes(tmp_path):
    counts = write_cli_inputs(SyntheticConfig(n_members=12, seed=1), tmp_path)
    assert set(counts) == set(FILES)
    for name, n in counts.items():
        assert len(pd.read_csv(tmp_path / name)) == n
