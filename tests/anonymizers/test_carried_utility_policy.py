"""ICD-9-CM's hierarchy-level utility policies carried into ICD-10-CM
(``anonymizers.level_policies``): the diseases an
ICD-9 analysis grouped, written in ICD-10-CM codes through CMS's GEM
(docs/methods/ugaclip.md#ugaclip-policy).  Issue 27: the same utility policy on the
same data in either code system."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.__main__ import main
from anonymizers.codesystems import FORWARD_GEM, REPOSITORY
from anonymizers.io import read_gem
from anonymizers.level_policies import carried_level
from anonymizers.policies import hierarchy_groups

FLAGS = {"flags": "00000", "approximate": "0", "no_map": "0", "combination": "0",
         "scenario": "0", "choice_list": "0"}
# 2724 (272, lipids) -> E119 is not CMS's entry: it makes two categories reach one target
PAIRS = [("25000", "E119"), ("25001", "E109"), ("2720", "E780"), ("2724", "E119"),
         ("4011", "I10"), ("4019", "I10"), ("5990", "N390")]


def gem_table(pairs=PAIRS) -> pd.DataFrame:
    return pd.DataFrame([{"icd9cm": a, "icd10cm": b, **FLAGS} for a, b in pairs],
                        columns=["icd9cm", "icd10cm", *FLAGS])


def gem_file(path: Path, pairs=PAIRS) -> str:
    with gzip.open(path, "wt") as f:
        gem_table(pairs).to_csv(f, index=False)
    return str(path)


def test_level_1_groups_each_code_by_the_category_most_of_its_links_lead_to():
    policy = carried_level(1, ["E119", "E109", "E780", "I10", "N390", "E11.9"], gem_table())
    # E119 has a link to 250 and one to 272 (a tie): the first in the tabular list, 250
    assert dict(zip(policy.names, policy.constraints)) == {
        "250": ("E109", "E11.9", "E119"), "272": ("E780",), "401": ("I10",), "599": ("N390",)}


def test_a_combination_entry_votes_only_for_a_code_nothing_else_links():
    # 115.05 (histoplasmosis with pneumonia) needs B39.2 + J17; 484.8 -> J17 plainly
    forward = pd.DataFrame([{**FLAGS, "icd9cm": "11505", "icd10cm": "J17", "combination": "1"},
                            {**FLAGS, "icd9cm": "11515", "icd10cm": "J17", "combination": "1"},
                            {**FLAGS, "icd9cm": "4848", "icd10cm": "J17"},
                            {**FLAGS, "icd9cm": "11505", "icd10cm": "B392", "combination": "1"}])
    policy = carried_level(1, ["J17", "B392", "D4959"], forward)
    assert dict(zip(policy.names, policy.constraints)) == {"115": ("B392",), "484": ("J17",)}


def test_a_code_newer_than_the_gems_takes_its_longest_listed_prefix():
    backward = pd.DataFrame([{**FLAGS, "icd10cm": "D495", "icd9cm": "2395"}])
    policy = carried_level(1, ["D4959", "D49", "Q9999"], gem_table([]), backward)
    assert dict(zip(policy.names, policy.constraints)) == {"239": ("D49", "D4959")}


def test_the_backward_gem_and_a_category_reach_codes_the_forward_gem_does_not():
    backward = pd.DataFrame([{"icd10cm": "E1165", "icd9cm": "25080", **FLAGS},
                             {"icd10cm": "E1165", "icd9cm": "7902", **FLAGS}])
    # E1165 (forward: none; backward: 250 once, 790 once -> 250 first); E11 (a category,
    # as gem_forward's rule 4 maps header codes): its codes' links, 250 twice
    policy = carried_level(1, ["E1165", "E11", "Z9989"], gem_table(), backward)
    assert dict(zip(policy.names, policy.constraints)) == {"250": ("E11", "E1165")}


def test_level_3_groups_by_icd9_chapter():
    policy = carried_level(3, ["E119", "E109", "E780", "I10", "N390"], gem_table())
    assert dict(zip(policy.names, policy.constraints)) == {
        "240-279": ("E109", "E119", "E780"), "390-459": ("I10",), "580-629": ("N390",)}


ICD9 = ["25000", "25001", "25002", "2720", "2724", "4011", "4019", "4280", "42731", "5990",
        "7245", "49390", "V5861", "E8809"]
ICD10 = ["E119", "E109", "E780", "I10", "I509", "I4891", "N390", "M545", "J45909", "Z7901"]
ORDER = {"E": 2, "V": 1}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ICD9), st.sampled_from(ICD10)), max_size=25),
       st.lists(st.tuples(st.sampled_from(ICD9), st.sampled_from(ICD10)), max_size=25),
       st.lists(st.sampled_from(ICD10), min_size=1, max_size=10), st.sampled_from([1, 2, 3]))
def test_each_code_joins_the_node_most_of_its_links_lead_to(pairs, back, codes, level):
    """Against a direct reading: count the distinct ICD-9 codes linked to each
    code by either GEM, by node; the most, ties to the tabular list's first; no
    link, no group (no code here prefixes another)."""
    backward = gem_table(back)[["icd10cm", "icd9cm", *FLAGS]]  # CMS's column order
    policy = carried_level(level, codes, gem_table(pairs), backward)
    pairs = pairs + back
    node = {c: n for n, g in hierarchy_groups(ICD9, level, code_system="icd9cm").items()
            for c in g}
    expected: dict = {}
    for code in dict.fromkeys(codes):
        votes: dict = {}
        for nine in {a for a, b in pairs if b == code}:
            votes[node[nine]] = votes.get(node[nine], 0) + 1
        if votes:
            best = max(votes.values())
            pick = min((n for n, v in votes.items() if v == best),
                       key=lambda n: (ORDER.get(n[0], 0), n))
            expected.setdefault(pick, []).append(code)
    assert dict(zip(policy.names, policy.constraints)) == {
        n: tuple(sorted(g)) for n, g in expected.items()}
    flat = [c for u in policy.constraints for c in u]
    assert len(flat) == len(set(flat))


# --- the command line -----------------------------------------------------------------

def icd10_claims(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    codes = ["E119", "E109", "E780", "I10", "N390", "U071"]  # U07.1 (2020): no GEM link
    rows = [(f"p{p}", c) for p in range(n)
            for c in rng.choice(codes, size=rng.integers(1, 4), replace=False)]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def ppe(tmp_path, claims: str, *flags) -> str:
    policy = tmp_path / "ppe.json"
    assert main(["ppe", "--k", "3", "--input", claims, "--output", str(policy), *flags]) == 0
    return str(policy)


def ugaclip(tmp_path, claims: str, utility: str, *flags) -> tuple[int, Path]:
    out = tmp_path / "release.json"
    code = main(["ugaclip", "--k", "3", "--seed", "1", "--privacy-policy",
                 ppe(tmp_path, claims, "--code-system", "icd10cm"), "--utility-policy", utility,
                 "--input", claims, "--output", str(out), "--code-system", "icd10cm", *flags])
    return code, out


def test_ugaclip_carries_icd9_level_1_into_icd10_data_through_the_gem(tmp_path):
    claims = str(tmp_path / "claims.csv")
    icd10_claims().to_csv(claims, index=False)
    code, out = ugaclip(tmp_path, claims, "icd9-level-1", "--gem", gem_file(tmp_path / "g.gz"))
    assert code == 0
    release = json.loads(out.read_text())
    # the carried groups: {E109, E119} (250), {E780}, {I10}, {N390}; ICD-10's own level 1
    # would put E109 and E119 apart (E10, E11), so E109 + E119 together is the carried policy
    assert release["metrics"]["utility_constraints"]["n_present"] == 4
    assert release["metrics"]["utility_constraints"]["codes_in_no_constraint"] == 1  # U071
    together = [set(i) for i in release["items"] if len(i) > 1]
    assert all(i <= {"E109", "E119"} for i in together)


def test_icd9_level_on_icd10_data_without_a_gem_is_one_clear_line(tmp_path, capsys):
    claims = str(tmp_path / "claims.csv")
    icd10_claims().to_csv(claims, index=False)
    capsys.readouterr()
    code, out = ugaclip(tmp_path, claims, "icd9-level-1")
    err = capsys.readouterr().err.strip()
    assert code == 1 and not out.exists()  # a parameter error (2 is bad input)
    assert "\n" not in err and "--gem" in err and "icd10-level-1" in err


def test_an_icd10_level_is_not_carried_back_into_icd9_data(tmp_path, capsys):
    claims = tmp_path / "claims.csv"
    pd.DataFrame({"patient_id": ["a", "b", "c"], "code": ["25000", "4011", "25000"]}) \
        .to_csv(claims, index=False)
    out = tmp_path / "d.json"
    capsys.readouterr()
    code = main(["disassociate", "--k", "2", "--m", "2", "--seed", "1", "--utility-policy",
                 "icd10-level-1", "--gem", gem_file(tmp_path / "g.gz"), "--input", str(claims),
                 "--output", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and not out.exists() and "\n" not in err and "icd9-level-1" in err


def test_disassociate_takes_the_carried_policy(tmp_path):
    claims = str(tmp_path / "claims.csv")
    icd10_claims().to_csv(claims, index=False)
    out = tmp_path / "d.json"
    assert main(["disassociate", "--k", "3", "--m", "2", "--seed", "1", "--utility-policy",
                 "icd9-level-1", "--gem", gem_file(tmp_path / "g.gz"), "--code-system",
                 "icd10cm", "--input", claims, "--output", str(out)]) == 0
    assert out.exists()


def test_the_shipped_forward_gem_is_cms_file_as_sources_says():
    """anonymizers/data/hhp/SOURCES.md: 23,912 rows, raw sha256 a4da8e8a59b3f7c6..."""
    import hashlib

    raw = gzip.decompress((REPOSITORY / FORWARD_GEM).read_bytes())
    assert hashlib.sha256(raw).hexdigest().startswith("a4da8e8a59b3f7c6")
    assert raw.count(b"\n") == 23_913  # header and rows


@pytest.mark.parametrize("level", [1, 2, 3])
def test_cms_gems_group_every_code_they_link(level):
    """On CMS's GEMs as shipped, every ICD-10-CM code either GEM lists joins a
    group named by an ICD-9-CM node (E11.9 with 250 at level 1)."""
    from anonymizers.codesystems import BACKWARD_GEM
    from anonymizers.io import GEM_COLUMNS, read_table

    forward = read_gem(str(REPOSITORY / FORWARD_GEM))
    backward = read_table(REPOSITORY / BACKWARD_GEM, GEM_COLUMNS)
    codes = sorted(set(forward["icd10cm"]) | set(backward["icd10cm"]))
    policy = carried_level(level, codes, forward, backward)
    flat = [c for u in policy.constraints for c in u]
    assert len(flat) == len(set(flat))
    linked = {c for g in (forward, backward) for c in g.loc[g["no_map"] == "0", "icd10cm"]}
    assert linked - {"NoDx"} <= set(flat)  # every code a GEM links to an ICD-9 code
    assert ("250" in policy.names) == (level == 1)
    if level == 1:
        assert "E119" in dict(zip(policy.names, policy.constraints))["250"]


@pytest.mark.parametrize("command, extra", [
    ("disassociate", ["--k", "2", "--m", "2", "--utility-policy", "icd9-level-1"]),
    ("disassociate", ["--k", "2", "--m", "2"]),
    ("ugaclip", ["--k", "2", "--utility-policy", "icd9-level-1", "--privacy-policy",
                 "never-read.json"]),
    ("lda", ["--k", "2"]),
    ("ugaclip", ["--k", "2", "--code-system", "icd10cm", "--utility-policy", "policy.json",
                 "--privacy-policy", "never-read.json"]),  # a policy file is read as it is
])
def test_a_gem_the_run_would_not_read_is_refused_before_any_work(tmp_path, capsys, command,
                                                                   extra):
    """ICD-9-CM data and no --mixed map-to-icd10: nothing reads --gem, so the
    run stops with one line (exit 1, a parameter) and writes nothing, as the
    release file refuses an unread ``gem``."""
    claims = tmp_path / "claims.csv"
    pd.DataFrame({"patient_id": ["a", "b", "c"], "code": ["25000", "4011", "25000"],
                  "age": [60, 61, 62]}).to_csv(claims, index=False)
    out = tmp_path / "out.json"
    capsys.readouterr()
    code = main([command, *extra, "--seed", "1", "--gem", gem_file(tmp_path / "g.gz"),
                 "--input", str(claims), "--output", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and not out.exists() and "\n" not in err
    assert "gem" in err and "would not read it" in err
