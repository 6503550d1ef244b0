"""The LDA benchmark still runs (small input); figures are checked for sense.
``synthetic_views.trajectories`` is checked against a plain re-derivation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.errors import ParameterError
from anonymizers.longitudinal import LDAConfig
from anonymizers.synthetic import SyntheticConfig, generate
from anonymizers.synthetic_views import _age, top_codes, trajectories
from benchmarks import bench_lda

SMALL = SyntheticConfig(n_members=150, seed=11, claims_per_member=12, chunk_members=60)


@pytest.fixture(scope="module")
def record():
    rec = bench_lda.main(small=True)
    saved = json.loads((bench_lda.RESULTS / "lda_small.json").read_text())
    assert saved["figures"] == json.loads(json.dumps(rec["figures"], default=str))
    return rec


def test_small_benchmark_runs_and_verifies(record):
    d50 = record["figures"]["d50_synthetic"]
    assert d50["data"]["patients"] == 300 and d50["data"]["distinct_codes"] <= 50
    assert 7 < d50["data"]["avg_pairs_per_t"] < 12
    for alignment in ("a-gs", "baseline"):
        run = d50[alignment]
        assert run["verifier_ok"] and run["min_cluster_size"] >= bench_lda.K
        assert 0 <= run["ilm"] <= 1 and 0 <= run["alm"] <= 1
        assert sum(run["ilm_by_level"].values()) == pytest.approx(run["ilm"])
        assert sum(run["icd_levels"].values()) == pytest.approx(100)
    assert d50["a-gs"]["ilm"] + d50["a-gs"]["alm"] < d50["baseline"]["ilm"] + d50["baseline"]["alm"]
    assert all(r["verifier_ok"] for r in d50["readings"].values())
    assert "D50Pop" in record["figures"]["thesis"]


def test_thesis_size_case_runs_the_thesis_setting_and_verifies():
    rec = bench_lda.thesis_size((200, 240), name="lda_thesis_size_small")
    data, run = rec["figures"]["data"], rec["figures"]["a-gs"]
    assert data["patients"] == 200 and 7 < data["avg_pairs_per_t"] < 12
    assert run["verifier_ok"] and run["min_cluster_size"] >= bench_lda.K
    assert 0 <= run["icd_kept_3digit_or_finer"] <= 100 and rec["wall_seconds"] > 0
    assert bench_lda.THESIS_SIZE[0] == 27_639  # D_50^Pop's |D|, Table 3


@pytest.mark.datasets
def test_small_benchmark_on_synpuf(record, datasets_dir):
    for name in ("synpuf_release", "synpuf_d4", "synpuf_d50", "synpuf_d4_categories"):
        syn = record["figures"][name]
        assert syn["data"]["patients"] > 10
        assert syn["a-gs"]["verifier_ok"] and syn["baseline"]["verifier_ok"]
    assert record["figures"]["synpuf_d50"]["data"]["distinct_codes"] == 50


@pytest.mark.datasets
def test_synpuf_pairs_follow_the_extract(datasets_dir):
    """Admitting and line codes count, placeholders do not, one pair per
    distinct (code, age) of a patient, age in whole years at the claim date;
    ``per_claim`` keeps one pair per distinct code of a claim."""
    pairs = bench_lda.synpuf_pairs(limit=40)
    assert not pairs.duplicated(["patient_id", "code", "age"]).any()
    per_claim = bench_lda.synpuf_pairs(limit=40, per_claim=True)
    assert len(per_claim) > len(pairs)
    pd.testing.assert_frame_equal(
        per_claim.drop_duplicates(["patient_id", "code", "age"])[["patient_id", "code", "age"]]
        .sort_values(["patient_id", "code", "age"]).reset_index(drop=True),
        pairs[["patient_id", "code", "age"]].sort_values(["patient_id", "code", "age"])
        .reset_index(drop=True))
    assert not pairs["code"].isin(["OTHER", "XX000", ""]).any()
    assert pairs["age"].between(0, 120).all()
    assert list(pairs.columns) == ["patient_id", "code", "age", "service_date"]
    cohorts = bench_lda.synpuf_cohorts(pairs)
    assert set(cohorts["synpuf_d4"]["code"].str[:3]) <= set(bench_lda.D4_CATEGORIES)
    cats = cohorts["synpuf_d4_categories"]
    assert set(cats["code"]) <= set(bench_lda.D4_CATEGORIES)
    assert not cats.duplicated(["patient_id", "code", "age"]).any()


@pytest.mark.datasets
def test_sample1_pairs_are_the_kept_claims_of_the_summary_subset(datasets_dir):
    """benchmarks/data/SOURCES.md: 1,231 claims of 1,052 beneficiaries, every
    one with a birth date in the 10,000-beneficiary subset; pairs built as
    TestB's (distinct code and age per patient, no placeholder)."""
    claims = pd.read_csv(bench_lda.SAMPLE1_CLAIMS, dtype=str)
    assert len(claims) == 1231 and claims["DESYNPUF_ID"].nunique() == 1052
    assert claims["CLM_THRU_DT"].str.startswith("2010").all()
    pairs = bench_lda.sample1_pairs()
    assert pairs["patient_id"].nunique() == 1052
    assert not pairs.duplicated(["patient_id", "code", "age"]).any()
    assert not pairs["code"].isin(["OTHER", "XX000", ""]).any()
    assert pairs["age"].between(20, 110).all()
    assert bench_lda.synpuf_cohorts(pairs)["synpuf_d50"]["code"].nunique() == 50


def test_kept_bound_on_a_small_example():
    """Three patients: b and c share 250 then 401 with a, in order; k=3 needs
    two others, so a keeps at most min(LCS(a,b), LCS(a,c)) = 1 (c has 401
    before 250), b and c at most 1 each: 3 of 7 values."""
    rows = [("a", "25000", 60), ("a", "4011", 61), ("a", "2724", 61),
            ("b", "25002", 70), ("b", "4019", 71),
            ("c", "4010", 50), ("c", "25001", 51)]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    assert bench_lda.kept_bound(df, k=3) == pytest.approx(100 * 3 / 7)
    assert bench_lda.kept_bound(df, k=2) == pytest.approx(100 * 5 / 7)  # 2 + 2 + 1
    assert bench_lda.kept_bound(df, k=4) == 0.0


def test_codes_first_keeps_each_clusters_common_subsequence():
    """k = 2, a (250 272 401) the longest: codes alone pair it with b (the
    same three categories, 35 years older), keeping 3 + 3, and c (250 724)
    with d (401), keeping none: 6 of 9.  Within 16-year nodes a takes c
    (250 shared) and b takes d (401 shared): 2 + 2 of 9."""
    rows = [("a", "25000", 60), ("a", "4011", 60), ("a", "2724", 60),
            ("b", "25001", 95), ("b", "4019", 95), ("b", "2720", 95),
            ("c", "25002", 61), ("c", "7245", 61), ("d", "4010", 96)]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    assert bench_lda.codes_first(df, k=2) == pytest.approx(100 * 6 / 9)
    assert bench_lda.codes_first(df, k=2, width=16) == pytest.approx(100 * 4 / 9)
    assert bench_lda.codes_first(df, k=4) == 0.0  # one cluster: nothing common to all four


def test_codes_first_sizes_clusters_as_mdav_and_starts_from_the_longest():
    """Three patients, k = 2: MDAV makes one cluster of three (not two and
    one), so only 250 is common: 3 of 7.  Four patients, k = 2, the longest
    (z) last in id order: z takes x (250 401 in common; y ties, x is first),
    then w and y share nothing: 4 of 9.  Starting from the first id (w) would
    pair w with x (250) and y with z (272 401): 6 of 9."""
    rows = [("a", "25000", 60), ("a", "4011", 60), ("a", "2724", 60),
            ("b", "25001", 60), ("b", "4019", 60), ("b", "2720", 60), ("c", "25002", 61)]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    assert bench_lda.codes_first(df, k=2) == pytest.approx(100 * 3 / 7)
    rows = [("w", "25000", 60), ("w", "7245", 60),
            ("x", "25001", 60), ("x", "4019", 60),
            ("y", "2720", 70), ("y", "4010", 70),
            ("z", "25002", 70), ("z", "2724", 70), ("z", "4011", 70)]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    assert bench_lda.codes_first(df, k=2) == pytest.approx(100 * 4 / 9)


def test_codes_first_and_kept_bound_on_too_few_patients():
    empty = pd.DataFrame({"patient_id": [], "code": [], "age": []})
    assert bench_lda.kept_bound(empty) == 0.0 and bench_lda.codes_first(empty) == 0.0
    one = pd.DataFrame([("a", "25000", 60)], columns=["patient_id", "code", "age"])
    assert bench_lda.codes_first(one, k=5) == 0.0 and bench_lda.kept_bound(one, k=5) == 0.0


def _lcs_length(a, b) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1],
                                                                     table[i + 1][j])
    return table[-1][-1]


def _is_subsequence(sub, seq) -> bool:
    it = iter(seq)
    return all(any(x == y for y in it) for x in sub)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=12), st.lists(st.integers(0, 4), max_size=12))
def test_lcs_is_a_longest_common_subsequence(a, b):
    a, b = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    common = bench_lda._lcs(a, b)
    assert len(common) == _lcs_length(a.tolist(), b.tolist())
    assert _is_subsequence(common.tolist(), a.tolist())
    assert _is_subsequence(common.tolist(), b.tolist())
    table = np.full((1, max(len(b), 1)), -1)
    table[0, :len(b)] = b
    assert bench_lda.lcs_lengths(a, table, np.array([len(b)]))[0] == len(common)


def test_release_settings_are_what_the_pipeline_runs(tmp_path):
    """The opt-ins the benchmark reads are the ones the plugin names for the
    file's runs; a file that moves the benchmark's own setting is refused."""
    from deid.methods import lda as plugin

    for path in (bench_lda.RELEASE, bench_lda.RELEASE_ICD10):
        params = yaml.safe_load(path.read_text())["params"]
        settings_ = bench_lda.release_settings(path)
        assert settings_["seed"] == params["seed"]
        assert LDAConfig(k=5, **settings_).deviations() == plugin.deviations(params) != {}
    moved = yaml.safe_load(bench_lda.RELEASE.read_text())
    moved["params"]["w_icd"] = 0.55
    (tmp_path / "moved.yaml").write_text(yaml.safe_dump(moved))
    with pytest.raises(ValueError, match="w_icd"):
        bench_lda.release_settings(tmp_path / "moved.yaml")


def _expected_pairs(config: SyntheticConfig) -> pd.DataFrame:
    """Distinct (member, code, age) with the first date, re-derived with pandas."""
    rows = []
    for chunk in generate(config):
        bene = chunk["beneficiary_summary"].drop_duplicates("desynpuf_id")
        born = bene.set_index("desynpuf_id")["bene_birth_dt"]
        for kind in ("inpatient", "outpatient", "carrier"):
            c = chunk[f"{kind}_claims"]
            dx = [x for x in c.columns if x.startswith("icd9_dgns_cd_")]
            long = c.melt(id_vars=["desynpuf_id", "clm_from_dt"], value_vars=dx,
                          value_name="code").dropna(subset=["code"])
            b = pd.to_datetime(long["desynpuf_id"].map(born))
            s = pd.to_datetime(long["clm_from_dt"])
            had_birthday = (s.dt.month > b.dt.month) | ((s.dt.month == b.dt.month)
                                                         & (s.dt.day >= b.dt.day))
            long["age"] = s.dt.year - b.dt.year - (~had_birthday).astype(int)
            rows.append(long[["desynpuf_id", "code", "age", "clm_from_dt"]])
    out = pd.concat(rows).sort_values("clm_from_dt").drop_duplicates(
        ["desynpuf_id", "code", "age"])
    return out.rename(columns={"desynpuf_id": "patient_id", "clm_from_dt": "service_date"})


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    df = df.astype({"patient_id": str, "code": str, "age": np.int64, "service_date": str})
    return df.sort_values(["patient_id", "code", "age"]).reset_index(drop=True)


def test_trajectories_are_the_distinct_code_age_pairs():
    got = trajectories(SMALL, n_codes=SMALL.n_codes)  # no restriction, no subsampling
    assert list(got.columns) == ["patient_id", "code", "age", "service_date"]
    pd.testing.assert_frame_equal(_sorted(got), _sorted(_expected_pairs(SMALL)))


def test_restriction_keeps_the_codes_held_by_most_members():
    full = _expected_pairs(SMALL)
    held = full.drop_duplicates(["patient_id", "code"])["code"].value_counts()
    top = top_codes(SMALL, 8)
    assert len(top) == 8
    assert held[top].min() >= held.drop(top).max()
    got = trajectories(SMALL, n_codes=8)
    assert set(got["code"]) <= set(top)
    want = full[full["code"].isin(top)]
    pd.testing.assert_frame_equal(_sorted(got), _sorted(want))


def test_subsampling_drops_whole_codes_towards_the_target():
    full = trajectories(SMALL, n_codes=SMALL.n_codes)
    got = trajectories(SMALL, n_codes=SMALL.n_codes, pairs_per_member=4.0, seed=3)
    assert got.merge(full, how="left", indicator=True)["_merge"].eq("both").all()
    assert set(got["patient_id"]) == set(full["patient_id"])  # everyone keeps a code
    kept = got[["patient_id", "code"]].drop_duplicates()
    whole = full.merge(kept)  # every pair of a kept code is kept
    assert len(whole) == len(got)
    assert abs(got.groupby("patient_id").size().mean() - 4.0) < 1.0
    assert full.groupby("patient_id").size().mean() > 6
    again = trajectories(SMALL, n_codes=SMALL.n_codes, pairs_per_member=4.0, seed=3)
    pd.testing.assert_frame_equal(got, again)


def test_n_patients_keeps_the_first_members_in_generation_order():
    full = trajectories(SMALL, n_codes=SMALL.n_codes)
    got = trajectories(SMALL, n_codes=SMALL.n_codes, n_patients=20)
    first = pd.unique(full["patient_id"])[:20]
    assert list(pd.unique(got["patient_id"])) == list(first)
    pd.testing.assert_frame_equal(got, full[full["patient_id"].isin(first)]
                                  .reset_index(drop=True))


def test_age_counts_a_birthday_on_its_day():
    born = np.array(["1950-03-15", "1950-03-15", "1952-02-29", "1952-02-29", "2008-12-31"],
                    dtype="datetime64[D]")
    seen = np.array(["2008-03-14", "2008-03-15", "2009-02-28", "2009-03-01", "2009-01-01"],
                    dtype="datetime64[D]")
    assert _age(born, seen).tolist() == [57, 58, 56, 57, 0]


@pytest.mark.parametrize("kwargs", [{"n_codes": 0}, {"pairs_per_member": 0},
                                    {"n_patients": 0}])
def test_trajectories_reject_bad_parameters(kwargs):
    with pytest.raises(ParameterError):
        trajectories(SMALL, **kwargs)
