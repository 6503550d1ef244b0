"""The Python API (anonymizers.api): each method's Release holds the tables
its library function gives for the same seeded input, with the seed in the
metrics and the verifier's verdict; a failed verdict raises; the step plans
of disassociation and HHP, run step by step, give the one-call release."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import anonymizers
from anonymizers import api
from anonymizers.release import Release, VerificationFailed

KEY = b"api-test-key-0123456789abcdef"  # the same key both sides: equal pseudonyms
CODES = ["250", "401", "493", "714", "272", "428", "414", "530"]


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(24)
    rows = [(f"p{p}", c) for p in range(60)
            for c in rng.choice(CODES, size=rng.integers(1, 5), replace=False)]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


@pytest.fixture(scope="module")
def claims() -> pd.DataFrame:
    n = range(120)
    return pd.DataFrame({"member_id": [f"m{i % 40}" for i in n],
                         "claim_id": [f"c{i}" for i in n], "service_date": "2009-03-01",
                         "age_at_service": [30 + i % 40 // 8 for i in n], "sex": "1",
                         "dx_code": ["4019", "25000", "4280"] * 40})


def _same(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for name in a:
        assert_frame_equal(a[name].reset_index(drop=True), b[name].reset_index(drop=True),
                           check_dtype=False, obj=name)


def _sets(table: pd.DataFrame, by: str) -> list:
    return [tuple(g["code"]) for _, g in table.groupby(by, sort=True)]


def test_ppe_and_ugaclip_match_the_library(df):
    from anonymizers.ppe import PPEConfig, extract_policy
    from anonymizers.ugaclip import UGACLIPConfig, ugaclip

    ppe = anonymizers.run("ppe", df, PPEConfig(k=3))
    policy = extract_policy(df, PPEConfig(k=3))
    assert _sets(ppe.tables["constraints"], "constraint") == policy.constraints
    assert ppe.verdict.ok and ppe.metrics["seed"] is None  # PPE draws no random number
    utility = [CODES[:4], CODES[4:]]
    uga = api.method("ugaclip").run({"records": df, "privacy_policy": ppe,
                                     "utility_policy": utility}, UGACLIPConfig(k=3, seed=5, pseudonym_key=KEY))
    lib = ugaclip(df, policy, utility, UGACLIPConfig(k=3, seed=5, pseudonym_key=KEY))
    assert _sets(uga.tables["items"], "item") == lib.items
    assert uga.tables["suppressed"]["code"].tolist() == lib.suppressed
    assert uga.tables["patients"]["patient_id"].tolist() == list(lib.patients)
    _same({"r": uga.tables["record_items"]}, {"r": lib.record_items})
    assert uga.metrics["seed"] == 5 and uga.verdict.ok


def test_disassociation_matches_the_library(df):
    from anonymizers.disassociation import DisassociationConfig, disassociate

    config = DisassociationConfig(k=3, m=2, seed=3)
    release = anonymizers.run("disassociation", df, config)
    _same(release.tables, disassociate(df, config).tables())
    assert release.verdict.ok and release.metrics["seed"] == 3
    assert anonymizers.check("disassociation", df, release).ok


def test_gccens_matches_the_library_and_records_a_drawn_seed(df):
    from anonymizers.censoring import GCCensConfig, gccens

    population = pd.concat([df, df.assign(patient_id=df["patient_id"] + "x")])
    inputs = {"records": df, "population": population}
    release = anonymizers.run("gccens", inputs, GCCensConfig(k=2, seed=None, pseudonym_key=KEY))
    seed = release.metrics["seed"]
    assert isinstance(seed, int) and release.config.seed == seed
    result, key = gccens(df, population, GCCensConfig(k=2, seed=seed, pseudonym_key=KEY))
    _same(release.tables, {"records": result.records,
                           "patients": pd.DataFrame({"patient_id": result.patients})})
    _same(release.private, {"key": key})
    assert release.verdict.ok


def test_lda_matches_the_library(df):
    from anonymizers.longitudinal import LDAConfig, lda

    pairs = df.assign(code=df["code"] + ".0", age=40 + df.index % 7)
    release = anonymizers.run("lda", pairs, LDAConfig(k=3, seed=2, pseudonym_key=KEY))
    result = lda(pairs, LDAConfig(k=3, seed=2, pseudonym_key=KEY))
    _same(release.tables, {"records": result.records,
                           "patients": pd.DataFrame({"patient_id": result.patients})})
    _same(release.private, {"pseudonym_map": result.pseudonym_map})
    assert release.verdict.ok and release.metrics["seed"] == 2


def test_medco_cluster_step_and_dummies_match_the_library(df):
    from anonymizers.dummies import ClusterConfig, DummyConfig, cluster_codes, generate_dummies

    clusters = anonymizers.run("medco_clusters", df, ClusterConfig(min_anonymity_set=2))
    lib_clusters = cluster_codes(df, ClusterConfig(min_anonymity_set=2)).clusters
    assert _sets(clusters.tables["clusters"], "cluster") == [tuple(c) for c in lib_clusters]
    assert clusters.verdict.ok
    release = anonymizers.run("medco", {"records": df, "clusters": clusters},
                              DummyConfig(seed=4, pseudonym_key=KEY))
    result = generate_dummies(df, lib_clusters, DummyConfig(seed=4, pseudonym_key=KEY))
    _same(release.tables, {"records": result.released})
    _same(release.private, {"dummy_map": result.dummy_map})
    assert release.verdict.ok and release.metrics["seed"] == 4


def test_hhp_matches_the_library_and_its_plan_gives_the_same_release(claims):
    from anonymizers.claims import HHPConfig, hhp_release
    from anonymizers.claims.release import finish, search_parts

    config = HHPConfig(seed=7, sample_size=300, max_evaluations=15, pseudonym_key=KEY)
    release = anonymizers.run("hhp", claims, config)
    result = hhp_release(claims, config)
    _same(release.tables, {"members": result.members, "claims": result.claims})
    _same(release.private, {"key": result.key})
    assert release.verdict.ok and release.metrics["seed"] == 7
    steps = anonymizers.plan("hhp", {"claims": claims}, config)
    parts = [p for step in steps.steps for p in step["parts"]]
    assert parts == list(range(len(parts))) and len(parts) >= 1
    found = [r for step in steps.steps for r in search_parts(steps.state, config, step["parts"])]
    planned = finish(steps.state, steps.config, found, 0.0)
    _same(release.tables, {"members": planned.members, "claims": planned.claims})
    unkeyed = anonymizers.plan("hhp", {"claims": claims}, dataclasses.replace(
        config, pseudonym_key=None))
    assert unkeyed.config.pseudonym_key not in (None, KEY)  # a fresh key for its finish


def test_without_a_key_the_recorded_seed_does_not_replay_the_pseudonyms(df):
    """A config with no pseudonym_key gets a fresh, unkept one: the release
    says so, its content is the seed's, and drawing the pseudonyms from the
    recorded seed (what happened before) does not give them back."""
    from anonymizers.longitudinal import LDAConfig, lda

    pairs = df.assign(code=df["code"] + ".0", age=40 + df.index % 7)
    one, two = (anonymizers.run("lda", pairs, LDAConfig(k=3, seed=2)) for _ in range(2))
    assert one.metrics["pseudonyms"] == "fresh key, not replayable"
    replay = lda(pairs, LDAConfig(k=3, seed=one.metrics["seed"]))
    assert not one.private["pseudonym_map"].equals(replay.pseudonym_map)
    assert not one.private["pseudonym_map"].equals(two.private["pseudonym_map"])

    def content(release):
        link = release.private["pseudonym_map"].set_index("pseudonym")["patient_id"]
        records = release.tables["records"]
        return records.assign(patient_id=records["patient_id"].map(link)).sort_values(
            list(records.columns)).reset_index(drop=True)

    assert_frame_equal(content(one), content(two))
    assert one.config.pseudonym_key is None  # the fresh key is not kept with the release
    keyed = anonymizers.run("lda", pairs, LDAConfig(k=3, seed=2, pseudonym_key=KEY))
    assert keyed.metrics["pseudonyms"] == "keyed (pseudonym_key)"
    assert keyed.config.pseudonym_key == KEY
    assert "pseudonyms" not in anonymizers.run("ppe", df, anonymizers.config("ppe", k=3)).metrics


def test_the_disassociation_plan_gives_the_same_release(df):
    from anonymizers.disassociation import DisassociationConfig
    from anonymizers.disassociation.batches import Fragment, combine, run_batch

    config = DisassociationConfig(k=3, m=2, refine_window=2, seed=1)
    steps = anonymizers.plan("disassociation", df, config, batch_size=2)
    assert len(steps.steps) > 1  # the test must cut the work
    rows = steps.state.rows
    fragments: list[Fragment] = []
    for step in steps.steps:
        mine = rows[(rows["cluster"] >= step["first_cluster"])
                    & (rows["cluster"] < step["stop_cluster"])]
        fragments.append(run_batch(df, mine, config, steps.state.n_clusters))
    combined, _ = combine(steps.state, fragments, config)
    _same(anonymizers.run("disassociation", df, config).tables, combined.tables())


def test_a_failed_verdict_raises_instead_of_returning_a_release(df):
    from anonymizers.ppe import PPEConfig, PPEResult

    def no_constraints(inputs, config):  # a policy that protects nothing
        none = pd.DataFrame({"constraint": pd.Series(dtype="int64"), "code": pd.Series(dtype=object)})
        return {"constraints": none}, {}, {}, PPEResult(config.k, config.filter, [])

    broken = dataclasses.replace(api.method("ppe"), make=no_constraints)
    assert anonymizers.run("ppe", df, PPEConfig(k=3)).tables["constraints"].size > 0
    with pytest.raises(VerificationFailed) as failed:
        broken.run(df, PPEConfig(k=3))
    assert not failed.value.verdict.ok and failed.value.verdict.violations
    assert broken.run(df, PPEConfig(k=3), verify=False).verdict is None


def test_verify_rejects_a_release_of_other_records(df):
    from anonymizers.disassociation import DisassociationConfig

    release = anonymizers.run("disassociation", df, DisassociationConfig(k=3, m=2, seed=1))
    other = pd.concat([df, pd.DataFrame({"patient_id": ["new"], "code": ["250"]})])
    assert not api.verify("disassociation", other, release).ok


def test_names_and_misuse_are_refused(df):
    from anonymizers.methods import METHODS as DECLARED
    from anonymizers.ppe import PPEConfig

    assert set(api.METHODS) == set(DECLARED) - {"reconstruct"}
    with pytest.raises(KeyError, match="the methods are"):
        anonymizers.run("nope", df, PPEConfig(k=2))
    release = anonymizers.run("ppe", df, PPEConfig(k=2))
    assert isinstance(release, Release)
    with pytest.raises(ValueError, match="ppe release"):
        anonymizers.check("disassociation", df, release)
    with pytest.raises(ValueError, match="no step plan"):
        anonymizers.plan("ppe", df, PPEConfig(k=2))


def test_verify_reads_the_tables_that_would_be_published(df):
    from anonymizers.ppe import PPEConfig
    from anonymizers.ugaclip import UGACLIPConfig

    ppe = anonymizers.run("ppe", df, PPEConfig(k=3))
    emptied = {"constraints": ppe.tables["constraints"].iloc[:0]}
    assert not anonymizers.check("ppe", df, dataclasses.replace(ppe, tables=emptied)).ok
    inputs = {"records": df, "privacy_policy": ppe, "utility_policy": [CODES]}
    uga = anonymizers.run("ugaclip", inputs, UGACLIPConfig(k=3, seed=1))
    dropped = {**uga.tables, "record_items": uga.tables["record_items"].iloc[1:]}
    assert not anonymizers.check("ugaclip", inputs, dataclasses.replace(uga, tables=dropped)).ok


def test_the_module_examples_run():
    import doctest

    result = doctest.testmod(api, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
