"""``python -m anonymizers ppe`` and ``... ugaclip`` on small CSV files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.verify.ugaclip import verify_release

CLAIMS = pd.DataFrame(
    [("P1", "v1", "493.00"), ("P1", "v1", "401"), ("P1", "v2", "250"),
     ("P2", "v1", "493.01"), ("P2", "v1", "401"),
     ("P3", "v1", "493.02"), ("P3", "v2", "250"),
     ("P4", "v1", "401"), ("P4", "v1", "250"), ("P5", "v9", "V70.0")],
    columns=["patient_id", "visit_id", "code"])


@pytest.fixture
def files(tmp_path):
    claims = tmp_path / "claims.csv"
    CLAIMS.to_csv(claims, index=False)
    records = tmp_path / "records.csv"
    CLAIMS[["patient_id", "code"]].to_csv(records, index=False)
    utility = tmp_path / "utility.json"
    utility.write_text(json.dumps([["493.00", "493.01", "493.02"], ["401", "250"]]))
    return tmp_path, claims, records, utility


def test_ppe_all_visits_and_single_visit(files, capsys):
    tmp, claims, _, _ = files
    out = tmp / "policy.json"
    assert main(["ppe", "--k", "2", "--filter", "all-visits", "--input", str(claims),
                 "--output", str(out)]) == 0
    policy = json.loads(out.read_text())
    assert policy["k"] == 2 and policy["filter"] == "all-visits"
    # P1 {250,401,493.00}, P2 {401,493.01}, P3 {250,493.02}, P4 {250,401}, P5 {V70.0}
    # {250,401} lies in P1's record; sizes 3, 2, 2, 1, ties in code order
    assert policy["constraints"] == [["250", "401", "493.00"], ["250", "493.02"],
                                     ["401", "493.01"], ["V70.0"]]
    assert policy["metrics"]["code_system"] == "icd9cm"
    assert policy["metrics"]["rows_dropped_unknown_code"] == 0
    assert "4 constraints" in capsys.readouterr().out
    assert main(["ppe", "--k", "2", "--filter", "single-visit", "--input", str(claims),
                 "--output", str(out)]) == 0
    # visits: P1v1 {401,493.00}, P1v2 {250}, P2v1 {401,493.01}, P3v1 {493.02},
    # P3v2 {250}, P4v1 {250,401}, P5v9 {V70.0}.  {250,401} is held by the records
    # of P4 and of P1 (over two visits): support 2, protected.  {250} lies in it.
    assert json.loads(out.read_text())["constraints"] == [
        ["401", "493.00"], ["401", "493.01"], ["493.02"], ["V70.0"]]


def test_ppe_refuses_or_drops_an_unknown_code(files, capsys):
    tmp, claims, _, _ = files
    bad = tmp / "bad.csv"
    pd.concat([CLAIMS, pd.DataFrame([("P6", "v1", "-1")], columns=CLAIMS.columns)]).to_csv(
        bad, index=False)
    out = tmp / "policy.json"
    assert main(["ppe", "--k", "2", "--input", str(bad), "--output", str(out)]) == 2
    assert "row 11, field 'code'" in capsys.readouterr().err and not out.exists()
    assert main(["ppe", "--k", "2", "--input", str(bad), "--output", str(out),
                 "--drop-unknown"]) == 0
    policy = json.loads(out.read_text())
    assert policy["metrics"]["rows_dropped_unknown_code"] == 1
    assert "-1" not in {c for cons in policy["constraints"] for c in cons}


def test_ppe_refuses_one_code_spelled_two_ways(files, capsys):
    tmp, _, _, _ = files
    bad = tmp / "twice.csv"
    pd.concat([CLAIMS, pd.DataFrame([("P6", "v1", "49300")], columns=CLAIMS.columns)]).to_csv(
        bad, index=False)
    assert main(["ppe", "--k", "2", "--input", str(bad), "--output", str(tmp / "p.json")]) == 2
    assert "row 11, field 'code'" in capsys.readouterr().err


def test_ppe_reports_user_errors(files, capsys):
    tmp, _, records, _ = files
    out = tmp / "policy.json"
    assert main(["ppe", "--k", "2", "--filter", "single-visit", "--input", str(records),
                 "--output", str(out)]) == 2
    assert "visit_id" in capsys.readouterr().err and not out.exists()
    assert main(["ppe", "--k", "0", "--input", str(records), "--output", str(out)]) == 1
    assert "'k'" in capsys.readouterr().err
    assert main(["ppe", "--k", "2", "--input", str(tmp / "none.csv"), "--output", str(out)]) == 2
    assert "file not found" in capsys.readouterr().err


def test_ugaclip_end_to_end(files, capsys):
    tmp, claims, records, utility = files
    policy, out = tmp / "policy.json", tmp / "out.json"
    assert main(["ppe", "--k", "2", "--input", str(claims), "--output", str(policy)]) == 0
    args = ["ugaclip", "--k", "2", "--privacy-policy", str(policy), "--utility-policy",
            str(utility), "--input", str(records), "--output", str(out), "--seed", "3"]
    assert main(args) == 0
    release = json.loads(out.read_text())
    assert set(release) == {"k", "items", "suppressed", "records", "metrics"}
    assert len(release["records"]) == 5
    assert all(r["patient_id"].startswith("R") for r in release["records"])
    constraints = json.loads(policy.read_text())["constraints"]
    assert verify_release(CLAIMS[["patient_id", "code"]], release, constraints, 2).ok
    assert "utility constraints satisfied" in capsys.readouterr().out
    assert release["metrics"]["pseudonyms"] == "fresh key, not replayable"
    assert main(args) == 0
    again = json.loads(out.read_text())  # seeded: the same release, under other pseudonyms
    assert sorted(map(json.dumps, (r["items"] for r in again.pop("records")))) == \
        sorted(map(json.dumps, (r["items"] for r in release.pop("records"))))
    assert again == release


def test_ugaclip_bundled_policy_and_k_check(files, capsys):
    tmp, claims, records, _ = files
    policy, out = tmp / "policy.json", tmp / "out.json"
    assert main(["ppe", "--k", "2", "--input", str(claims), "--output", str(policy)]) == 0
    base = ["ugaclip", "--seed", "0", "--privacy-policy", str(policy), "--input",
            str(records), "--output", str(out)]
    assert main(base + ["--k", "2", "--utility-policy", "pnas2010-k2"]) == 0
    release = json.loads(out.read_text())
    assert ["493.00", "493.01", "493.02"] in release["items"] or "493.00" in release["suppressed"]
    assert main(base + ["--k", "3", "--utility-policy", "pnas2010"]) == 1
    assert "run ppe with --k 3" in capsys.readouterr().err
    assert main(base + ["--k", "2", "--utility-policy", "nope"]) == 1


def test_ugaclip_realises_an_occurrence_plan_from_the_command_line(files, capsys):
    """The plan options are UGACLIPConfig fields, so the command line takes
    them; realising without a plan is one clear line, exit 1."""
    tmp, claims, records, utility = files
    policy, out = tmp / "policy.json", tmp / "out.json"
    assert main(["ppe", "--k", "2", "--input", str(claims), "--output", str(policy)]) == 0
    base = ["ugaclip", "--k", "2", "--privacy-policy", str(policy), "--utility-policy",
            str(utility), "--input", str(records), "--output", str(out), "--seed", "0",
            "--realise-plan"]
    assert main(base + ["--plan-seconds", "5", "--plan-weights", "occurrences"]) == 0
    release = json.loads(out.read_text())
    plan = release["metrics"]["plan"]
    assert plan["realised"] and plan["weights"] == "occurrences"
    assert release["metrics"]["suppressed_occurrences"] <= plan["cost"]
    constraints = json.loads(policy.read_text())["constraints"]
    assert verify_release(CLAIMS[["patient_id", "code"]], release, constraints, 2).ok
    capsys.readouterr()
    assert main(base) == 1
    err = capsys.readouterr().err
    assert "realise_plan" in err and "Traceback" not in err


def test_ugaclip_node_budget_from_the_command_line_writes_the_same_file(files):
    """--plan-nodes/--plan-rounds come from UGACLIPConfig's declaration; the
    release file with that budget is byte for byte the same on a second run
    under the same pseudonym key file."""
    tmp, claims, records, utility = files
    policy, out, key = tmp / "policy.json", tmp / "out.json", tmp / "key"
    key.write_text("node-budget-test-key-0123456789\n")
    key.chmod(0o600)
    assert main(["ppe", "--k", "2", "--input", str(claims), "--output", str(policy)]) == 0
    args = ["ugaclip", "--k", "2", "--privacy-policy", str(policy), "--utility-policy",
            str(utility), "--input", str(records), "--output", str(out), "--seed", "0",
            "--realise-plan", "--plan-nodes", "1", "--plan-rounds", "4",
            "--pseudonym-key-file", str(key)]
    assert main(args) == 0
    first = out.read_text()
    plan = json.loads(first)["metrics"]["plan"]
    assert plan["deterministic"] and plan["budget"] == {"seconds": 0.0, "nodes": 1, "rounds": 4}
    assert main(args) == 0 and out.read_text() == first
