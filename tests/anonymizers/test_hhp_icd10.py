"""The HHP lists in ICD-10-CM (policy ``hhp-2012-icd10-v1``): El Emam et al.
2012 appendix section 2 (screening) and section 7 (primary condition groups)
translated through CMS's GEMs by anonymizers/data/hhp/translate_icd10.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.claims import HHPConfig, hhp_release, screen
from anonymizers.claims.codes import expand_prefixes
from anonymizers.claims.groupings import group_of, load_hierarchies
from anonymizers.claims.policy import DATA, load_policy
from anonymizers.claims.screening import named_policy
from anonymizers.errors import InputError
from anonymizers.verify.claims import verify_hhp
from tests.anonymizers.test_claims_release import FAST, synthetic

ICD10 = "hhp-2012-icd10-v1"
BACKWARD = DATA / "gem" / "icd10cmtoicd9gem.csv.gz"
GENERATED = ("screening_policy_icd10_v1.yaml", "screening_icd10_trace.csv", "icd10_pcg.csv",
             "hierarchies_icd10_v1.yaml")


def forward_gem(datasets_dir: Path) -> Path:
    return datasets_dir / "icd9" / "icd9toicd10cmgem.csv.gz"


def read(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def claims(member_dx: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame({"member_id": [m for m, _ in member_dx],
                         "claim_id": [f"C{i}" for i in range(len(member_dx))],
                         "service_date": "20160105", "age_at_service": 50, "sex": "1",
                         "dx_code": [d for _, d in member_dx], "procedure_code": "99213",
                         "place_of_service": "11"})


def flagged(df: pd.DataFrame, policy) -> set:
    return set(screen(df, policy, compare=False).removed_members["member_id"])


# --- loading -----------------------------------------------------------------

def test_policies_load_by_name_and_icd9_is_the_default():
    p10, p9 = named_policy(ICD10), named_policy("hhp-2012-v1")
    assert p10.version == ICD10 and p9 == load_policy()
    assert [r.name for r in p10.member_rules] == [r.name for r in p9.member_rules]
    assert p10.claim_rules == p9.claim_rules
    for r10, r9 in zip(p10.member_rules, p9.member_rules):
        if r9.field != "dx":  # CPT and place of service are not ICD-9: unchanged
            assert r10 == r9
    with pytest.raises(InputError, match="unknown screening policy"):
        named_policy("hhp-2012-icd11")


def test_hierarchies_load_by_name_and_share_the_other_qis():
    h10, h9 = load_hierarchies(ICD10), load_hierarchies("hhp-2012-v1")
    assert h9.keys() == h10.keys() and h9 == load_hierarchies()
    assert h10["dx"].levels[0]["kind"] == "icd10_prefixes"
    for name in h9.keys() - {"dx"}:
        assert h10[name].levels == h9[name].levels


@pytest.mark.parametrize("icd10, icd9", [
    ("I21.01", "41001"), ("I214", "41071"), ("S72.001A", "82000"), ("J189", "486"),
    ("E119", "25000"), ("C50911", "1749"), ("N390", "5990")])
def test_groups_agree_with_the_icd9_group_of_the_equivalent_code(icd10, icd9):
    lv10 = load_hierarchies(ICD10)["dx"].levels[0]
    lv9 = load_hierarchies()["dx"].levels[0]
    code = icd10.replace(".", "").upper()
    assert group_of(lv10, code) == group_of(lv9, icd9) != lv9["fallback"]


PCG = read(DATA / "icd10_pcg.csv")
UNIVERSE_SAMPLE = sorted(PCG["prefix"].str.pad(7, side="right", fillchar="X").str[:7])[::97]
icd10_like = st.one_of(
    st.sampled_from(UNIVERSE_SAMPLE + ["B20", "F1011", "T7411XD", "I10", "Z0000", "S72001A"]),
    st.from_regex(r"[A-Z][0-9][0-9A-Z](\.?[0-9A-Z]{0,4})?", fullmatch=True))


PCG_BY_LETTER = {k: list(zip(g["prefix"], g["group"]))
                 for k, g in PCG.groupby(PCG["prefix"].str[0])}
POLICY10 = named_policy(ICD10)
LISTED10 = tuple(p for r in POLICY10.member_rules if r.field == "dx" for p in r.prefixes)


@settings(max_examples=150, deadline=None)
@given(code=icd10_like, lower=st.booleans())
def test_group_and_screening_of_any_icd10_string_follow_the_files(code, lower):
    """Against a brute force over the files: the group is the one of the
    longest prefix in icd10_pcg.csv (else OTHER), and a member is flagged
    iff a listed prefix starts the code; dots and case do not matter."""
    written = code.lower() if lower else code
    clean = code.replace(".", "")
    hits = [(len(p), g) for p, g in PCG_BY_LETTER.get(clean[0], []) if clean.startswith(p)]
    want = max(hits)[1] if hits else "OTHER"
    assert group_of(load_hierarchies(ICD10)["dx"].levels[0], clean) == want
    assert hhp_groups(written) == want
    assert (flagged(claims([("A", written)]), POLICY10) == {"A"}) == clean.startswith(LISTED10)


def hhp_groups(dx: str) -> str:
    """The dx group a release encodes for one claim (normalisation included)."""
    from anonymizers.claims.codes import undotted
    enc = load_hierarchies(ICD10)["dx"].encode(undotted([dx]))
    return enc.labels[0][enc.code0[0]]


# --- traceability --------------------------------------------------------------

def test_every_screening_prefix_is_traced_to_an_entry_of_the_icd9_rule():
    doc = yaml.safe_load((DATA / "screening_policy_icd10_v1.yaml").read_text())
    icd9 = {r["name"]: r for r in yaml.safe_load(
        (DATA / "screening_policy_v1.yaml").read_text())["member_rules"]}
    trace = read(DATA / doc["trace"])
    assert set(trace["gem"]) <= {"forward", "backward", "extension"}
    for rule in doc["member_rules"]:
        if rule["field"] != "dx" or not rule["prefixes"]:
            continue
        rows = trace[trace["rule"] == rule["name"]]
        assert set(rows["icd10_prefix"]) == set(rule["prefixes"]), rule["name"]
        assert (rows["icd10"] != "").all()
        assert all(c.startswith(p) for c, p in zip(rows["icd10"], rows["icd10_prefix"]))
        assert set(rows["icd9_entry"]) <= set(map(str, icd9[rule["name"]]["prefixes"]))
        for entry, code in zip(rows["icd9_entry"], rows["icd9"]):
            assert code.startswith(expand_prefixes([entry])), (entry, code)


@pytest.mark.datasets
def test_traced_pairs_are_rows_of_the_gems(datasets_dir):
    trace = read(DATA / "screening_icd10_trace.csv")
    fwd = read(forward_gem(datasets_dir))
    bwd = read(BACKWARD)
    pairs = {"forward": set(zip(fwd["icd9cm"], fwd["icd10cm"])),
             "backward": set(zip(bwd["icd9cm"], bwd["icd10cm"]))}
    for gem, rows in trace.groupby("gem"):
        got = set(zip(rows["icd9"], rows["icd10"]))
        if gem == "extension":  # a sibling of a listed code with the same source
            listed = set(trace.loc[trace["gem"] != "extension", "icd10"])
            assert all(any(c[:6] == x[:6] for x in listed) for c in rows["icd10"])
        else:
            assert got <= pairs[gem], gem


def test_every_group_row_names_icd9_sources_of_its_group():
    pcg = read(DATA / "icd10_pcg.csv")
    lv9 = load_hierarchies()["dx"].levels[0]
    assert pcg["prefix"].is_unique and (pcg["icd9_sources"] != "").all()
    sample = pcg.sample(2000, random_state=7) if len(pcg) > 2000 else pcg
    for group, sources in zip(sample["group"], sample["icd9_sources"]):
        assert group in {group_of(lv9, c) for c in sources.split()}, (group, sources)
    assert set(pcg["group"]) <= set(read(DATA / "icd9_pcg.csv")["group"])


# --- screening ICD-10 claims against the same claims in ICD-9 -------------------

@pytest.mark.datasets
def test_screening_icd10_claims_flags_every_member_the_icd9_claims_flag(datasets_dir):
    """Each ICD-9 claim becomes one claim per forward-GEM target.  The ICD-10
    lists take every target, so no member the ICD-9 lists remove is kept;
    members flagged only in ICD-10 share a target with a listed ICD-9 code
    (e.g. 305.1 tobacco use and 649.0x tobacco use in pregnancy both map to
    F17.2xx), and each such code is in the trace."""
    fwd = read(forward_gem(datasets_dir))
    fwd = fwd[fwd["icd10cm"] != "NoDx"]
    listed9 = [p for r in named_policy("hhp-2012-v1").member_rules if r.field == "dx"
               for p in r.prefixes]
    codes9 = fwd["icd9cm"].unique()
    on_list = np.array([c.startswith(tuple(listed9)) for c in codes9])
    rng = np.random.default_rng(27)
    chosen = np.concatenate([codes9[on_list],
                             rng.choice(codes9[~on_list], 1500, replace=False)])
    members = {c: f"M{i}" for i, c in enumerate(chosen)}
    df9 = claims([(m, c) for c, m in members.items()])
    rows10 = fwd[fwd["icd9cm"].isin(members)]
    df10 = claims(list(zip(rows10["icd9cm"].map(members), rows10["icd10cm"])))
    got9, got10 = flagged(df9, "hhp-2012-v1"), flagged(df10, ICD10)
    assert len(got9) == on_list.sum() > 300
    assert got9 <= got10
    traced = set(read(DATA / "screening_icd10_trace.csv")["icd10"])
    for m in got10 - got9:
        assert traced & set(df10.loc[df10["member_id"] == m, "dx_code"]), m


@pytest.mark.datasets
def test_testb_claims_lose_only_members_whose_listed_codes_the_gem_lacks(datasets_dir):
    """DE-SynPUF TestB diagnoses (IP, OP, carrier), each ICD-9 code replaced
    by its first forward-GEM target (one ICD-10 code per ICD-9 code, as a
    recoded claim would carry).  Measured: 169 members flagged in ICD-9, 168
    in ICD-10; the 6 members lost carry 'V51', a category that is not a
    billable ICD-9-CM code and has no GEM row (V51.0 and V51.8 do); the 5
    extra share a target with a listed code."""
    folder = datasets_dir / "synpuf" / "cms_bfd_sample_testB"
    parts = []
    for f in sorted(folder.glob("*_Claims_*.csv.gz")):
        df = pd.read_csv(f, dtype=str)
        cols = [c for c in df.columns if "ICD9_DGNS_CD" in c]
        parts.append(df.melt(id_vars=["DESYNPUF_ID"], value_vars=cols)
                     .dropna()[["DESYNPUF_ID", "value"]])
    dx = pd.concat(parts).drop_duplicates().set_axis(["member", "icd9"], axis=1)
    fwd = read(forward_gem(datasets_dir))
    first = fwd[fwd["icd10cm"] != "NoDx"].drop_duplicates("icd9cm")
    dx10 = dx.merge(first, left_on="icd9", right_on="icd9cm")
    got9 = flagged(claims(list(zip(dx["member"], dx["icd9"]))), "hhp-2012-v1")
    got10 = flagged(claims(list(zip(dx10["member"], dx10["icd10cm"]))), ICD10)
    listed9 = tuple(p for r in named_policy("hhp-2012-v1").member_rules if r.field == "dx"
                    for p in r.prefixes)
    for m in got9 - got10:
        codes = set(dx.loc[dx["member"] == m, "icd9"])
        assert not {c for c in codes if c.startswith(listed9)} & set(first["icd9cm"]), m
    assert (len(got9), len(got10), len(got9 - got10)) == (169, 168, 6)


@pytest.mark.parametrize("code", ["B20", "F10.20", "F1011", "O03.9", "O00.1", "F70",
                                  "T74.11XA", "T74.11XD", "T74.21XS", "Z41.1", "F64.1"])
def test_listed_icd10_codes_remove_the_member(code):
    df = claims([("A", code), ("A", "I10"), ("B", "I10")])
    assert flagged(df, ICD10) == {"A"}


@pytest.mark.parametrize("code", ["I10", "E119", "F32.9", "O80", "Z00.00", "T7491XA"])
def test_unlisted_icd10_codes_keep_the_member(code):
    """T74.91XA (unspecified maltreatment) maps back to 995.80, which the
    ICD-9 list leaves out as well (995.81-995.83 only)."""
    assert flagged(claims([("A", code)]), ICD10) == set()


def test_icd10_policy_does_not_flag_icd9_codes_and_vice_versa():
    """A policy reads one code system: 042 (HIV, ICD-9) is not an ICD-10 code,
    and B20 is not an ICD-9 code; mixed data must be mapped first (issue 27)."""
    assert flagged(claims([("A", "042")]), ICD10) == set()
    assert flagged(claims([("A", "B20")]), "hhp-2012-v1") == set()


# --- the release end to end --------------------------------------------------

# the synthetic table's ICD-9 codes and their first forward-GEM targets
TO_ICD10 = {"4019": "I10", "25000": "E119", "4280": "I509", "V5869": "Z79899",
            "E8889": "W19XXXA", "41401": "I2510", "486": "J189", "5990": "N390",
            "78650": "R0789", "0420": "B20"}


def test_release_on_icd10_claims_matches_the_icd9_release_of_the_same_claims():
    """Through the bundled files (``HHPConfig`` takes paths): same members
    screened out, same lattice node, risk and information loss; each passes
    the independent verifier against its own policy."""
    d9 = synthetic()
    d10 = d9.assign(dx_code=d9["dx_code"].map(TO_ICD10))
    r9 = hhp_release(d9, HHPConfig(seed=11, **FAST))
    r10 = hhp_release(d10, HHPConfig(
        seed=11, policy_path=str(DATA / "screening_policy_icd10_v1.yaml"),
        hierarchies_path=str(DATA / "hierarchies_icd10_v1.yaml"), **FAST))
    assert r10.metrics["policy_version"] == ICD10
    for key in ("members_removed_by_screening", "screened", "chosen_levels", "risk",
                "information_loss", "ungrouped"):
        assert r10.metrics[key] == r9.metrics[key], key
    assert r9.metrics["members_removed_by_screening"] > 0
    assert verify_hhp(r9, d9).ok and verify_hhp(r10, d10, ICD10).ok


# --- the script rebuilds the data ---------------------------------------------

@pytest.mark.datasets
def test_the_script_rebuilds_the_bundled_files(datasets_dir, tmp_path):
    spec = importlib.util.spec_from_file_location("translate_icd10",
                                                  DATA / "translate_icd10.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--gem", str(forward_gem(datasets_dir)), "--backward-gem", str(BACKWARD),
                 "--out", str(tmp_path)])
    for name in GENERATED:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
