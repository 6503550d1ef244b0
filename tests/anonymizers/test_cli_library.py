"""Every method command writes what the library gives for the config its
options describe: the options derived from the config declaration
(``anonymizers.cli.options``) reach the method unchanged, and a default left
out on the command line is the config's default.  The commands that draw
pseudonyms are given a key file here and the library the same key, so that
their pseudonyms compare too (without one they are drawn under a fresh key:
test_cli_pseudonyms).  (HHP: test_cli_hhp.)"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.censoring import GCCensConfig, gccens, release_document
from anonymizers.disassociation import Disassociated, DisassociationConfig, disassociate
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.dummies import (
    ClusterConfig,
    DummyConfig,
    cluster_codes,
    generate_dummies,
)
from anonymizers.io import read_table
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.synthetic import SyntheticConfig, generate
from anonymizers.ugaclip import UGACLIPConfig, load_utility_policy, ugaclip

KEY = b"test_cli_library pseudonym key, 32+ bytes"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """patient_id,code[,visit_id] of 150 synthetic members, a sample of half of
    them, (code, age) pairs, and a utility policy grouping codes by prefix."""
    d = tmp_path_factory.mktemp("cli_library")
    chunk = next(generate(SyntheticConfig(n_members=150, seed=5, claims_per_member=6)))
    c = chunk["carrier_claims"]
    visits = pd.DataFrame({"patient_id": c["desynpuf_id"], "visit_id": c["clm_id"],
                           "code": c["icd9_dgns_cd_1"]}).dropna()
    visits = visits[visits["code"].str.len() > 0]
    visits.to_csv(d / "claims.csv", index=False)
    records = visits[["patient_id", "code"]]
    records.to_csv(d / "records.csv", index=False)
    patients = sorted(records["patient_id"].unique())
    records[records["patient_id"].isin(patients[::2])].to_csv(d / "sample.csv", index=False)
    pairs = records.drop_duplicates().reset_index(drop=True)
    pairs["age"] = [40 + i % 30 for i in range(len(pairs))]
    pairs.to_csv(d / "pairs.csv", index=False)
    groups: dict[str, list] = {}
    for code in sorted(records["code"].unique()):
        groups.setdefault(code[:2], []).append(code)
    (d / "utility.json").write_text(json.dumps(list(groups.values())))
    (d / "pseudonym.key").write_bytes(KEY + b"\n")
    (d / "pseudonym.key").chmod(0o600)
    return d


def run(*argv) -> None:
    assert main([str(a) for a in argv]) == 0


def read(path) -> pd.DataFrame:
    return read_table(path, ["patient_id", "code"])


def test_ppe_and_ugaclip(files):
    d = files
    run("ppe", "--k", "3", "--filter", "single-visit", "--input", d / "claims.csv",
        "--output", d / "policy.json")
    visits = read_table(d / "claims.csv", ["patient_id", "code", "visit_id"])
    policy = extract_policy(visits, PPEConfig(k=3, filter="single-visit"))
    written = json.loads((d / "policy.json").read_text())
    assert written["constraints"] == policy.to_dict()["constraints"]
    run("ugaclip", "--k", "3", "--seed", "4", "--re-queries", "20", "--re-query-sizes", "1,3",
        "--privacy-policy", d / "policy.json", "--utility-policy", d / "utility.json",
        "--input", d / "records.csv", "--output", d / "ugaclip.json",
        "--pseudonym-key-file", d / "pseudonym.key")
    config = UGACLIPConfig(k=3, seed=4, re_queries=20, re_query_sizes=(1, 3), pseudonym_key=KEY)
    lib = ugaclip(read(d / "records.csv"), policy.constraints,
                  load_utility_policy(str(d / "utility.json")), config).to_dict()
    cli = json.loads((d / "ugaclip.json").read_text())
    assert cli["metrics"].pop("seed") == 4
    assert cli["metrics"].pop("pseudonyms") == "keyed (--pseudonym-key-file)"
    assert cli["metrics"].pop("code_system") == "icd9cm"
    assert cli["metrics"].pop("rows_dropped_unknown_code") == 0
    assert cli["metrics"].pop("rows_mapped_to_code_system") == 0
    assert cli == json.loads(json.dumps(lib))


def test_disassociate_and_reconstruct(files):
    d = files
    codes = sorted(read(d / "records.csv")["code"].unique())[:2]
    run("disassociate", "--k", "3", "--m", "2", "--seed", "1", "--max-joint-clusters", "3",
        "--sensitive-codes", ",".join(codes), "--utility-policy", d / "utility.json",
        "--input", d / "records.csv", "--output", d / "dis.json")
    utility = json.loads((d / "utility.json").read_text())
    config = DisassociationConfig(k=3, m=2, seed=1, max_joint_clusters=3,
                                  sensitive_codes=codes, utility_policy=utility)
    lib = disassociate(read(d / "records.csv"), config).to_json()
    assert json.loads((d / "dis.json").read_text()) == json.loads(json.dumps(lib))
    run("reconstruct", "--input", d / "dis.json", "--seed", "2", "--linking", "random",
        "--output", d / "drawn.csv")
    drawn = reconstruct(Disassociated.from_json(lib), seed=2, linking="random")
    pd.testing.assert_frame_equal(read(d / "drawn.csv"), drawn.astype(str),
                                  check_dtype=False)


def test_gccens(files):
    d = files
    run("gccens", "--k", "2", "--cap", "2", "--seed", "3", "--population", d / "records.csv",
        "--input", d / "sample.csv", "--output", d / "gccens.json",
        "--pseudonym-key-file", d / "pseudonym.key")
    result, _ = gccens(read(d / "sample.csv"), read(d / "records.csv"),
                       GCCensConfig(k=2, caps=2, seed=3, pseudonym_key=KEY))
    cli, lib = json.loads((d / "gccens.json").read_text()), release_document(result)
    assert cli["metrics"]["seed"] == 3
    assert cli["records"] == lib["records"] and cli["final_caps"] == lib["final_caps"]


def test_lda(files):
    d = files
    run("lda", "--k", "3", "--seed", "6", "--alignment", "baseline", "--input",
        d / "pairs.csv", "--output", d / "lda.json", "--map", d / "map.csv",
        "--pseudonym-key-file", d / "pseudonym.key")
    pairs = read_table(d / "pairs.csv", ["patient_id", "code", "age"])
    result = lda(pairs, LDAConfig(k=3, seed=6, alignment="baseline", pseudonym_key=KEY))
    cli = json.loads((d / "lda.json").read_text())
    assert cli["metrics"]["seed"] == 6 and cli["metrics"]["alignment"] == "baseline"
    released = pd.DataFrame([(r["patient_id"], str(c), str(a)) for r in cli["records"]
                             for c, a in r["trajectory"]], columns=["patient_id", "code", "age"])
    lib = result.records[["patient_id", "code", "age"]].astype(str).reset_index(drop=True)
    assert released.sort_values(list(released.columns)).to_numpy().tolist() == \
        lib.sort_values(list(lib.columns)).to_numpy().tolist()


def test_cluster_codes_and_dummies(files):
    d = files
    run("cluster-codes", "--min-anonymity-set", "4", "--n-clusters", "2", "--linkage",
        "average", "--input", d / "records.csv", "--output", d / "clusters.json")
    clusters = cluster_codes(read(d / "records.csv"),
                             ClusterConfig(min_anonymity_set=4, n_clusters=2,
                                           linkage="average")).clusters
    assert json.loads((d / "clusters.json").read_text())["clusters"] == \
        json.loads(json.dumps(clusters))
    run("dummies", "--clusters", d / "clusters.json", "--seed", "9", "--repair-passes", "5",
        "--input", d / "records.csv", "--output", d / "released.csv",
        "--dummy-map", d / "map.csv", "--pseudonym-key-file", d / "pseudonym.key")
    lib = generate_dummies(read(d / "records.csv"), clusters,
                           DummyConfig(seed=9, repair_passes=5, pseudonym_key=KEY))
    pd.testing.assert_frame_equal(read(d / "released.csv"),
                                  lib.released.astype(str).reset_index(drop=True))
