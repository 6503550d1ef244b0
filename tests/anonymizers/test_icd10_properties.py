"""Property tests with ICD-10-CM code strings (issue 27): each method's
anonymizer against its independent verifier on random data built from
realistic ICD-10-CM codes, and UGACLIP's code placement on them.

The codes: real codes of the tabular list (``anonymizers.hierarchy.icd10cm``,
categories to 7-character codes) and random codes of valid shape (a letter,
a digit, then up to 5 digits or letters; 7-character codes padded with the
placeholder ``X`` before their 7th character, as T81.4XXA), written dotted
or undotted, upper- or lower-case.  Data mixes the two, so that a code the
tree does not list (a random shape) sits beside listed ones.  Example counts
are modest (the file runs in well under two minutes); edge cases (one
patient, identical records, codes differing only in their dot, one category
only) are drawn explicitly.
"""

from __future__ import annotations

import re
from functools import lru_cache

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymizers.codesystems import is_valid, normalize
from anonymizers.hierarchy import ROOT, icd10cm
from anonymizers.policies import hierarchy_policy
from anonymizers.ugaclip.codes import dotted, place

FEW = settings(max_examples=15, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SHAPE = re.compile(r"^[A-Z]\d[0-9A-Z]{1,5}$")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DIGITS = "0123456789"
SEVENTH = "ADS"  # initial encounter, subsequent, sequela


@lru_cache(maxsize=1)
def real_codes() -> list[str]:
    return sorted(n for n in icd10cm().parent if "-" not in n)


@st.composite
def real_code(draw) -> str:
    return draw(st.sampled_from(real_codes()))


@st.composite
def shaped_code(draw) -> str:
    """A random code of valid ICD-10-CM shape, 3 to 7 characters undotted."""
    head = draw(st.sampled_from(LETTERS)) + draw(st.sampled_from(DIGITS)) \
        + draw(st.sampled_from(DIGITS + "AB"))
    length = draw(st.integers(3, 7))
    if length < 7:
        tail = draw(st.text(DIGITS + "X", min_size=length - 3, max_size=length - 3))
        return head + tail
    body = draw(st.text(DIGITS, min_size=0, max_size=3))
    return head + body.ljust(3, "X") + draw(st.sampled_from(SEVENTH))


@st.composite
def written(draw, code=None) -> str:
    """A code as people write it: dotted after the category or not, any case."""
    c = draw(real_code() | shaped_code()) if code is None else code
    if len(c) > 3 and draw(st.booleans()):
        c = c[:3] + "." + c[3:]
    return c.lower() if draw(st.integers(0, 4)) == 0 else c


@st.composite
def code_pool(draw, max_size: int = 10) -> list[str]:
    """Distinct written codes; sometimes one code both dotted and undotted,
    sometimes codes of a single category."""
    pool = draw(st.lists(written(), min_size=1, max_size=max_size, unique=True))
    if draw(st.booleans()):
        c = draw(real_code().filter(lambda x: len(x) > 3))
        pool += [c, c[:3] + "." + c[3:]]
    if draw(st.booleans()):
        category = draw(st.sampled_from([c for c in real_codes() if len(c) == 3]))
        pool += [c for c in real_codes() if c.startswith(category)][:4]
    return list(dict.fromkeys(pool))


@st.composite
def record_sets(draw, max_patients: int = 16) -> list[list[str]]:
    """Records over a pool of ICD-10 codes, with the edge cases drawn in."""
    pool = draw(code_pool())
    shape = draw(st.sampled_from(["random", "one patient", "identical"]))
    n = 1 if shape == "one patient" else draw(st.integers(1, max_patients))
    sets = [draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6, unique=True))
            for _ in range(n)]
    if shape == "identical":
        sets = [sets[0]] * draw(st.integers(2, 8)) + sets[1:]
    return sets


def long(sets, visits: bool = False) -> pd.DataFrame:
    rows = [(f"p{i}", c, f"v{j % 2}") for i, s in enumerate(sets) for j, c in enumerate(s)]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "visit_id"])
    return df if visits else df.drop(columns="visit_id")


# --- the codes themselves ---------------------------------------------------

@FEW
@given(st.data())
def test_real_codes_are_valid_and_placed_at_their_node(data):
    code = data.draw(real_code())
    text = data.draw(written(code))
    assert is_valid([text], "icd10cm").all()
    assert place(text, icd10cm(), "icd10cm") == code
    assert dotted(text, "icd10cm").replace(".", "") == code
    assert len(code) < 4 or dotted(code, "icd10cm")[3] == "."


@settings(max_examples=40, deadline=None)
@given(shaped_code().flatmap(written))
def test_shaped_codes_are_placed_under_their_deepest_listed_prefix(text):
    code = str(normalize([text])[0])
    assert SHAPE.match(code) and 3 <= len(code) <= 7
    node = place(text, icd10cm(), "icd10cm")
    listed = [code[:end] for end in range(len(code), 2, -1) if code[:end] in icd10cm()]
    assert node == (listed[0] if listed else None)


def test_placeholder_codes_of_the_tabular_list():
    tree = icd10cm()
    assert place("T81.49XA", tree, "icd10cm") == "T8149XA"
    assert place("T81.4XXA", tree, "icd10cm") == "T814"  # deleted FY2023: its listed parent
    assert place("t360x1a", tree, "icd10cm") == "T360X1A"
    assert place("T36.0X1Z", tree, "icd10cm") == "T360X1"  # no such 7th character: its parent
    assert dotted("T814XXA", "icd10cm") == "T81.4XXA"


# --- each method against its verifier ---------------------------------------

@FEW
@given(record_sets(), st.integers(1, 4), st.sampled_from(["single-visit", "all-visits"]))
def test_ppe_on_icd10_codes(sets, k, filt):
    from anonymizers.ppe import PPEConfig, extract_policy
    from anonymizers.verify.ppe import verify_policy

    df = long(sets, visits=True)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k, filt)).constraints]
    verdict = verify_policy(df, policy, k, filt)
    assert verdict.ok, verdict.violations


@FEW
@given(record_sets(), st.integers(1, 5), st.sampled_from([1, 2, 3]))
def test_ugaclip_on_icd10_codes_and_tree(sets, k, level):
    from anonymizers.errors import InputError
    from anonymizers.ppe import PPEConfig, extract_policy
    from anonymizers.ugaclip import UGACLIPConfig, ugaclip
    from anonymizers.ugaclip.loss import SemanticWeights
    from anonymizers.verify.ugaclip import verify_release

    df = long(sets)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    utility = hierarchy_policy(df["code"].unique(), level, code_system="icd10cm")
    try:
        result = ugaclip(df, policy, utility, UGACLIPConfig(k, re_queries=5),
                         hierarchy=icd10cm())
    except InputError as exc:  # only when every code lies in a privacy constraint
        assert "would hold nothing" in str(exc)
        assert set(df["code"]) <= {c for p in policy for c in p}
        return
    verdict = verify_release(df, result.to_dict(), policy, k)
    assert verdict.ok, verdict.violations
    owner = {c: n for n, grp in enumerate(utility) for c in grp}
    for item in result.items:  # generalization inside one utility constraint
        assert len({owner.get(c, "none") for c in item}) == 1
    # every code that is or extends a listed code gets a weight from the tree
    weights = SemanticWeights(sorted(set(df["code"])), icd10cm(), code_system="icd10cm")
    unplaced = {c for c in df["code"] if place(c, icd10cm(), "icd10cm") is None}
    assert set(weights.unplaced) == unplaced
    assert set(result.metrics["unplaced_codes"]) == unplaced


@FEW
@given(record_sets(max_patients=20), st.integers(2, 4), st.integers(1, 3), st.booleans(),
       st.integers(0, 2 ** 16))
def test_disassociation_on_icd10_policies(sets, k, m, with_policy, seed):
    from anonymizers.disassociation import (
        DisassociationConfig,
        TooFewRecords,
        disassociate,
    )
    from anonymizers.verify.disassociation import verify_disassociation

    df = long(sets)
    policy = hierarchy_policy(df["code"].unique(), 1, code_system="icd10cm") \
        if with_policy else None
    cfg = DisassociationConfig(k, m, utility_policy=policy or None, seed=seed)
    if len(sets) < k:
        with pytest.raises(TooFewRecords):
            disassociate(df, cfg)
        return
    result = disassociate(df, cfg)
    verdict = verify_disassociation(df, result.to_json())
    assert verdict.ok, verdict.violations


@FEW
@given(st.data(), st.integers(1, 6), st.integers(0, 2 ** 16))
def test_gccens_on_icd10_codes(data, k, seed):
    from anonymizers.censoring import GCCensConfig, gccens
    from anonymizers.errors import ParameterError
    from anonymizers.verify.censoring import verify_gccens

    pool = data.draw(code_pool(max_size=5))
    population = data.draw(st.lists(st.lists(st.sampled_from(pool), min_size=1, max_size=8),
                                    min_size=1, max_size=12))
    chosen = data.draw(st.lists(st.integers(0, len(population) - 1), unique=True))
    pop = pd.DataFrame([(f"p{i}", c) for i, r in enumerate(population) for c in r],
                       columns=["patient_id", "code"])
    sample = pop[pop["patient_id"].isin([f"p{i}" for i in chosen])].reset_index(drop=True)
    caps = data.draw(st.none() | st.integers(0, 4))
    config = GCCensConfig(k=k, caps=caps, seed=seed)
    if k > len(population):
        with pytest.raises(ParameterError):
            gccens(sample, pop, config)
        return
    result, key = gccens(sample, pop, config)
    verdict = verify_gccens(result.patients, result.records, key, sample, pop, k,
                            result.final_caps)
    assert verdict.ok, verdict.violations


@FEW
@given(st.data(), st.integers(1, 4), st.integers(0, 3))
def test_lda_on_the_icd10_tree(data, k, seed):
    from anonymizers.longitudinal import LDAConfig, lda
    from anonymizers.longitudinal.framework import NothingToRelease
    from anonymizers.longitudinal.hierarchies import icd_hierarchy
    from anonymizers.verify.longitudinal import verify_lda

    pool = data.draw(code_pool(max_size=8))
    trajectories = data.draw(st.lists(
        st.lists(st.tuples(st.sampled_from(pool), st.integers(0, 110)), min_size=1, max_size=6),
        min_size=1, max_size=10))
    df = pd.DataFrame([(f"id{i}", c, a) for i, t in enumerate(trajectories) for c, a in t],
                      columns=["patient_id", "code", "age"])
    tree = icd_hierarchy("icd10cm")
    try:
        result = lda(df, LDAConfig(k=k, seed=seed, icd_hierarchy=tree))
    except NothingToRelease:
        # refused: fewer than k patients, or every value would be released as '*'
        return
    verdict = verify_lda(result.records, result.pseudonym_map, df, k, icd_hierarchy=tree)
    assert verdict.ok, verdict.violations
    released = result.records["code"].astype(str)
    # a released ICD value is '*' or a node of the ICD-10 tree (never an ICD-9 one)
    assert all(c == ROOT or c in icd10cm() for c in released)


@FEW
@given(record_sets(), st.integers(1, 5), st.sampled_from([None, 1, 2]), st.integers(0, 2 ** 16))
def test_medco_dummies_on_icd10_codes(sets, a, n_clusters, seed):
    from anonymizers.dummies import (
        ClusterConfig,
        DummyConfig,
        NoReleaseError,
        cluster_codes,
        generate_dummies,
    )
    from anonymizers.verify.dummies import verify_clusters, verify_dummies

    df = long(sets)
    clusters = cluster_codes(df, ClusterConfig(a, n_clusters)).clusters
    assert verify_clusters(df, clusters, a).ok
    try:
        result = generate_dummies(df, clusters, DummyConfig(seed=seed))
    except NoReleaseError as err:
        assert "no release exists" in str(err)
        return
    verdict = verify_dummies(df, result.released, result.dummy_map, clusters, a)
    assert verdict.ok, verdict.violations
