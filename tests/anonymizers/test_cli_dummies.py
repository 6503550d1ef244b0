"""``python -m anonymizers cluster-codes`` and ``dummies`` on CSV/JSON files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.verify.dummies import verify_dummies


@pytest.fixture()
def patients(tmp_path):
    rng = np.random.default_rng(0)
    # ICD-9-CM codes (the commands' default code system), some spelled with a
    # dot or a leading zero, which the release keeps
    codes = ["V15.4", "E950", "4011", "401", "250", "0401", "7140", "496"]
    codes += ["4019", "2724", "4280", "42731", "5849", "5990", "2449", "41401", "25000",
              "V5861", "53081", "311"]
    rows = [(f"{1000 + p}", c) for p in range(120)
            for c in rng.choice(codes, size=rng.integers(1, 5), replace=False)]
    path = tmp_path / "patients.csv"
    pd.DataFrame(rows, columns=["patient_id", "code"]).to_csv(path, index=False)
    return path


def test_cluster_then_dummies(tmp_path, patients, capsys):
    clusters = tmp_path / "clusters.json"
    assert main(["cluster-codes", "--min-anonymity-set", "5", "--n-clusters", "2",
                 "--input", str(patients), "--output", str(clusters)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    data = json.loads(clusters.read_text())
    assert list(data) == ["clusters"] and metrics["n_clusters"] == len(data["clusters"])
    assert min(map(len, data["clusters"])) >= 5
    released, private = tmp_path / "released.csv", tmp_path / "private.csv"
    assert main(["dummies", "--clusters", str(clusters), "--seed", "7", "--input", str(patients),
                 "--output", str(released), "--dummy-map", str(private),
                 "--min-anonymity-set", "5"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["ok"] and report["metrics"]["flat"]
    rel = pd.read_csv(released, dtype=str, keep_default_na=False)
    dmap = pd.read_csv(private, dtype=str, keep_default_na=False)
    assert list(rel.columns) == ["patient_id", "code"]
    assert list(dmap.columns) == ["pseudonym", "is_dummy", "source_patient_id"]
    assert set(rel["code"]) >= {"V15.4", "0401"}  # codes keep their spelling
    original = pd.read_csv(patients, dtype=str, keep_default_na=False)
    assert verify_dummies(original, rel, dmap, data["clusters"], 5).ok
    assert rel["patient_id"].is_monotonic_increasing  # pseudonym order, not real-then-dummy


def test_missing_column_names_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("patient,code\n1,401\n")
    assert main(["cluster-codes", "--min-anonymity-set", "1", "--input", str(bad),
                 "--output", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "patient_id" in err


def test_bad_parameter_is_reported(patients, tmp_path, capsys):
    assert main(["cluster-codes", "--min-anonymity-set", "0", "--input", str(patients),
                 "--output", str(tmp_path / "c.json")]) == 1
    assert "min_anonymity_set" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ('{"groups": []}', "expected a JSON object"),
    ('{"clusters": [["401"]]}', "in no cluster"),
    ("{not json", "not valid JSON"),
])
def test_bad_clusters_file(patients, tmp_path, capsys, content, message):
    clusters = tmp_path / "clusters.json"
    clusters.write_text(content)
    out = tmp_path / "released.csv"
    assert main(["dummies", "--clusters", str(clusters), "--seed", "1", "--input", str(patients),
                 "--output", str(out), "--dummy-map", str(tmp_path / "m.csv")]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_input_without_release_exits_2_with_one_line(tmp_path, capsys):
    # 250 needs a second occurrence, but both one-code sets are taken
    src = tmp_path / "p.csv"
    src.write_text("patient_id,code\n1,401\n2,401\n3,401\n4,250\n")
    clusters = tmp_path / "c.json"
    clusters.write_text('{"clusters": [["401", "250"]]}')
    out, dmap = tmp_path / "released.csv", tmp_path / "m.csv"
    assert main(["dummies", "--clusters", str(clusters), "--seed", "1", "--input", str(src),
                 "--output", str(out), "--dummy-map", str(dmap)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("error: ") and "no release exists" in err and "\n" not in err
    assert captured.out == "" and not out.exists() and not dmap.exists()


def test_cluster_codes_merge_overflowing_flag(tmp_path, patients, capsys):
    """--merge-overflowing reaches the clustering: without it nothing is merged;
    with it the section-4 merges happen and every cluster still holds A codes."""
    runs = {}
    for flag in ([], ["--merge-overflowing"]):
        clusters = tmp_path / f"clusters{len(flag)}.json"
        assert main(["cluster-codes", "--min-anonymity-set", "2", *flag,
                     "--input", str(patients), "--output", str(clusters)]) == 0
        runs[bool(flag)] = (json.loads(capsys.readouterr().out), json.loads(clusters.read_text()))
    assert runs[False][0]["clusters_merged_section4"] == 0
    metrics, data = runs[True]
    assert metrics["clusters_merged_section4"] > 0
    assert metrics["n_clusters"] == len(data["clusters"]) < runs[False][0]["n_clusters"]
    assert min(map(len, data["clusters"])) >= 2
