"""``python -m anonymizers lda`` on CSV files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.__main__ import main

ROWS = [(1, "401.1", 33), (1, "401.1", 34), (1, "401.1", 35), (2, "401.1", 38),
        (2, "401.1", 40), (3, "401.9", 38), (3, "401.1", 40), (4, "401.9", 33),
        (4, "401.1", 33), (4, "401.1", 34), (4, "401.1", 35), (5, "401.1", 39),
        (5, "401.9", 40), (6, "401.1", 40), (6, "401.9", 40), (6, "-1", 41)]


@pytest.fixture
def pairs_csv(tmp_path):
    """ROWS less its last, whose code '-1' is not an ICD-9-CM code."""
    path = tmp_path / "pairs.csv"
    pd.DataFrame(ROWS[:-1], columns=["patient_id", "code", "age"]).to_csv(path, index=False)
    return path


@pytest.fixture
def unknown_csv(tmp_path):
    path = tmp_path / "unknown.csv"
    pd.DataFrame(ROWS, columns=["patient_id", "code", "age"]).to_csv(path, index=False)
    return path


def test_an_unknown_code_exits_2_naming_its_row(unknown_csv, tmp_path, capsys):
    out = tmp_path / "out.json"
    code = main(["lda", "--k", "2", "--seed", "3", "--input", str(unknown_csv),
                 "--output", str(out)])
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "row 16, field 'code'" in err and "ICD-9-CM" in err
    assert "-1" not in err.split("field 'code'")[1]  # the value is patient data


def test_writes_the_release_json(unknown_csv, tmp_path, capsys):
    out, pmap = tmp_path / "out.json", tmp_path / "map.csv"
    code = main(["lda", "--k", "2", "--seed", "3", "--input", str(unknown_csv), "--drop-unknown",
                 "--output", str(out), "--map", str(pmap), "--verify"])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["k"] == 2 and len(doc["records"]) == 6
    assert {"ilm", "alm", "avg_re", "icd_levels", "age_levels"} <= set(doc["metrics"])
    first = doc["records"][0]
    assert set(first) == {"patient_id", "trajectory"}
    assert all(len(p) == 2 and all(isinstance(v, str) for v in p)
               for r in doc["records"] for p in r["trajectory"])
    assert not {r["patient_id"] for r in doc["records"]} & {str(i) for i in range(1, 7)}
    trajectories = [tuple(map(tuple, r["trajectory"])) for r in doc["records"]]
    assert all(trajectories.count(t) >= 2 for t in trajectories)
    assert len(pd.read_csv(pmap)) == 6
    err = capsys.readouterr().err
    assert "verifier: ok" in err
    assert doc["metrics"]["rows_dropped_unknown_code"] == 1
    assert doc["metrics"]["code_system"] == "icd9cm"


def test_baseline_and_weights(pairs_csv, tmp_path):
    out = tmp_path / "out.json"
    assert main(["lda", "--k", "3", "--alignment", "baseline", "--w-icd", "0.9",
                 "--w-age", "0.1", "--seed", "1", "--input", str(pairs_csv),
                 "--output", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["alignment"] == "baseline"


def test_the_release_names_the_opt_in_deviations_it_used(pairs_csv, tmp_path):
    out = tmp_path / "out.json"
    base = ["lda", "--k", "2", "--seed", "1", "--input", str(pairs_csv), "--output", str(out)]
    assert main(base) == 0
    assert json.loads(out.read_text())["metrics"]["deviations_from_thesis"] == {}
    assert main([*base, "--shared-code-bonus", "2", "--age-block", "16", "--lookahead", "3"]) == 0
    assert json.loads(out.read_text())["metrics"]["deviations_from_thesis"] == {
        "shared_code_bonus": 2.0, "age_block": 16, "lookahead": 3}


@pytest.mark.parametrize("args,message", [
    (["--k", "0"], "parameter 'k'"),
    (["--k", "2", "--w-icd", "0.7"], "w_icd + w_age must be 1"),
    (["--k", "2", "--age-block", "16"], "parameter 'age_block': prices ages")])
def test_user_errors_exit_1(pairs_csv, tmp_path, capsys, args, message):
    code = main(["lda", *args, "--seed", "1", "--input", str(pairs_csv), "--output", str(tmp_path / "o.json")])
    assert code == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("rows", [[(1, "401.1", 33)] * 0, [(1, "401.1", 33), (2, "401.9", 35)],
                                  [(1, "401.1", 30), (2, "250.00", 90), (3, "7245", 10)]])
def test_a_release_that_keeps_nothing_exits_2_with_one_line(tmp_path, capsys, rows):
    """No patient; fewer than k=3; three patients with nothing in common."""
    path, out = tmp_path / "pairs.csv", tmp_path / "o.json"
    pd.DataFrame(rows, columns=["patient_id", "code", "age"]).to_csv(path, index=False)
    assert main(["lda", "--k", "3", "--seed", "0", "--input", str(path),
                 "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # a file without records is refused by the reader, the others by LDA itself
    assert len(err) == 1 and err[0].startswith("error: ")
    assert ("without records" if not rows else "nothing") in err[0]
    assert not out.exists()


def test_k_larger_than_the_data_exits_2(pairs_csv, tmp_path, capsys):
    assert main(["lda", "--k", "9", "--seed", "1", "--input", str(pairs_csv),
                 "--output", str(tmp_path / "o.json")]) == 2
    assert "6 patient(s) for k=9" in capsys.readouterr().err


def test_icd_domain_option(pairs_csv, tmp_path):
    out = tmp_path / "out.json"
    assert main(["lda", "--k", "2", "--seed", "0", "--icd-domain", "hierarchy",
                 "--input", str(pairs_csv), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["icd_domain"] == "hierarchy"


def test_missing_input_and_bad_age(tmp_path, capsys):
    assert main(["lda", "--k", "2", "--seed", "1", "--input", str(tmp_path / "nope.csv"),
                 "--output", str(tmp_path / "o.json")]) == 2
    assert "file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("patient_id,code,age\n1,401.1,40\n2,401.1,forty\n")
    assert main(["lda", "--k", "1", "--seed", "1", "--input", str(bad), "--output", str(tmp_path / "o.json")]) == 2
    assert "row 2, field 'age'" in capsys.readouterr().err
