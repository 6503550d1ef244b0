"""``python -m anonymizers disassociate`` and ``reconstruct`` on files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.verify.disassociation import verify_disassociation
from test_disassociation_example import FIG1 as EXAMPLE, FIG3B  # Section 5 data

FIG1 = list(EXAMPLE.values())


@pytest.fixture
def files(tmp_path):
    data = pd.DataFrame([(f"r{i + 1}", c) for i, s in enumerate(FIG1) for c in s],
                        columns=["patient_id", "code"])
    data.to_csv(tmp_path / "records.csv", index=False)
    (tmp_path / "utility.json").write_text(json.dumps(FIG3B))
    return tmp_path, data


def disassociate(tmp, *extra):
    return main(["disassociate", "--k", "3", "--m", "2", "--seed", "5",
                 "--input", str(tmp / "records.csv"), "--output", str(tmp / "out.json"),
                 *extra])


def test_disassociate_writes_the_json_release(files, capsys):
    tmp, data = files
    assert disassociate(tmp, "--utility-policy", str(tmp / "utility.json"),
                        "--max-cluster-size", "6", "--verify") == 0
    doc = json.loads((tmp / "out.json").read_text())
    assert set(doc) == {"k", "m", "clusters", "shared_chunks"}
    assert [c["size"] for c in doc["clusters"]] == [5, 5]
    assert doc["shared_chunks"][0]["codes"] == ["834.0", "944.01"]
    for c in doc["clusters"]:
        assert set(c) == {"size", "record_chunks", "item_chunk"}
        assert all(len(ch["subrecords"]) == c["size"] for ch in c["record_chunks"])
    assert verify_disassociation(data, doc).ok
    assert '"ok": true' in capsys.readouterr().out


def test_no_refine_and_options(files):
    tmp, data = files
    assert disassociate(tmp, "--no-refine", "--sensitive-codes", "401.0, 404.00") == 0
    doc = json.loads((tmp / "out.json").read_text())
    assert doc["shared_chunks"] == []
    assert verify_disassociation(data, doc, sensitive_codes={"401.0", "404.00"}).ok


def test_reconstruct_writes_a_csv(files):
    tmp, data = files
    assert disassociate(tmp) == 0
    assert main(["reconstruct", "--input", str(tmp / "out.json"), "--seed", "2",
                 "--output", str(tmp / "drawn.csv")]) == 0
    drawn = pd.read_csv(tmp / "drawn.csv", dtype=str)
    assert list(drawn.columns) == ["patient_id", "code"]
    assert set(drawn["code"]) == set(data["code"])
    assert drawn["patient_id"].nunique() <= 10
    again = tmp / "again.csv"
    main(["reconstruct", "--input", str(tmp / "out.json"), "--seed", "2",
          "--output", str(again), "--item-support", "one"])
    assert pd.read_csv(again, dtype=str)["code"].value_counts().max() <= 7


def test_fewer_records_than_k_exit_2_with_one_line_and_no_file(files, capsys):
    tmp, _ = files
    code = main(["disassociate", "--k", "11", "--m", "2", "--seed", "1",
                 "--input", str(tmp / "records.csv"), "--output", str(tmp / "o.json")])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "10 record(s), fewer than k = 11" in lines[0]
    assert not (tmp / "o.json").exists()


def test_reconstruct_says_which_rule_it_used(files, capsys):
    tmp, _ = files
    assert disassociate(tmp, "--refine-window", "1") == 0
    capsys.readouterr()
    assert main(["reconstruct", "--input", str(tmp / "out.json"), "--seed", "2",
                 "--output", str(tmp / "drawn.csv")]) == 0
    assert "(seed 2, item-chunk codes: one, linking: association)" in capsys.readouterr().out
    assert main(["reconstruct", "--input", str(tmp / "out.json"), "--seed", "2",
                 "--output", str(tmp / "drawn.csv"), "--linking", "random"]) == 0
    assert "linking: random)" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--k", "1"], "'k'"), (["--m", "9"], "'m'"), (["--max-cluster-size", "2"],
                                                   "max_cluster_size"),
])
def test_bad_parameters_fail_with_a_message(files, capsys, args, message):
    tmp, _ = files
    code = main(["disassociate", "--k", "3", "--m", "2", "--seed", "1",
                 "--input", str(tmp / "records.csv"), "--output", str(tmp / "o.json"),
                 *args])
    assert code == 1
    assert message in capsys.readouterr().err
    assert not (tmp / "o.json").exists()


def test_bad_input_files_fail_with_a_message(files, capsys):
    tmp, _ = files
    (tmp / "bad.csv").write_text("patient,code\n1,401\n")
    assert main(["disassociate", "--k", "3", "--m", "2", "--seed", "1", "--input",
                 str(tmp / "bad.csv"), "--output", str(tmp / "o.json")]) == 2
    assert "patient_id" in capsys.readouterr().err
    (tmp / "bad.json").write_text(json.dumps({"k": 3, "m": 2, "clusters": [{"size": 2}]}))
    assert main(["reconstruct", "--input", str(tmp / "bad.json"), "--seed", "1",
                 "--output", str(tmp / "o.csv")]) == 2
    assert "clusters[0]" in capsys.readouterr().err
    (tmp / "overlap.json").write_text(json.dumps([["401.0"], ["401.0"]]))
    assert disassociate(tmp, "--utility-policy", str(tmp / "overlap.json")) == 2
    assert "disjoint" in capsys.readouterr().err
