"""GCCens against the independent verifier and against a literal transcription of
Algorithm 1 (Tamersoy 2011, III.5) on random data, edge cases, and broken
releases the verifier must catch."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.censoring import GCCensConfig, gccens, release_document
from anonymizers.errors import ParameterError
from anonymizers.verify.censoring import _Holders, _tally, records_from_document, verify_gccens

CODES = ["250", "272", "401", "724", "-1", "V15.4", "E950", "10292", "é-ü", "糖尿病", "0"]


def long(records: dict) -> pd.DataFrame:
    rows = [(p, c) for p, codes in records.items() for c in codes]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def reference(population: dict, sample: dict, k: int, caps) -> tuple:
    """Algorithm 1 word for word, on Counters (slow, obvious).  Its only readings:
    codes with cap 0 are not candidates; ties go to the first code in sorted order."""
    codes = sorted({c for r in [*population.values(), *sample.values()] for c in r}
                   | set(caps if isinstance(caps, dict) else ()))
    if caps is None:
        C = {d: max((Counter(r)[d] for r in sample.values()), default=0) for d in codes}
    elif isinstance(caps, int):
        C = {d: caps for d in codes}
    else:
        C = {d: caps.get(d, 0) for d in codes}
    pop = [Counter(r) for r in population.values()]
    Y = {p: Counter({c: min(n, C[c]) for c, n in Counter(r).items()}) for p, r in sample.items()}

    def dis(D):
        return sum(all(q[c] >= n for c, n in D.items()) for q in pop)

    steps, cap_only = [], Counter()
    while any(dis(+y) < k for y in Y.values()):
        R = {d: [p for p, y in Y.items() if y[d] == C[d]] for d in codes if C[d] >= 1}
        o = min(R, key=lambda d: (len(R[d]), d))
        for p in R[o]:
            Y[p][o] -= 1
        C[o] -= 1
        if R[o]:
            steps.append((o, len(R[o]), C[o]))
        else:
            cap_only[o] += 1
    return {p: dict(+y) for p, y in Y.items()}, C, steps, cap_only


@st.composite
def cases(draw, max_population=14, max_len=9):
    records = draw(st.lists(st.lists(st.sampled_from(CODES), min_size=1, max_size=max_len),
                            min_size=1, max_size=max_population))
    population = {f"p{i}": r for i, r in enumerate(records)}
    chosen = draw(st.lists(st.sampled_from(sorted(population)), unique=True))
    sample = {}
    for p in chosen:
        keep = draw(st.lists(st.booleans(), min_size=len(population[p]),
                             max_size=len(population[p])))
        part = [c for c, b in zip(population[p], keep) if b]
        sample[p] = population[p] if draw(st.booleans()) or not part else part
    used = sorted({c for r in sample.values() for c in r})
    caps = draw(st.one_of(
        st.none(), st.integers(0, 4),
        st.fixed_dictionaries({c: st.integers(0, 4) for c in used},
                              optional={c: st.integers(0, 4) for c in CODES if c not in used})))
    k = draw(st.integers(1, len(population) + 2))
    return population, sample, k, caps


def released(result, key) -> dict:
    orig = dict(zip(key["patient_id"], key["original_id"]))
    out = {orig[p]: {} for p in result.patients}
    for p, c, n in result.records.itertuples(index=False):
        out[orig[p]][c] = int(n)
    return out


def verdict_of(result, key, population, sample, k, caps=None, records=None, patients=None):
    return verify_gccens(result.patients if patients is None else patients,
                         result.records if records is None else records, key,
                         long(sample), long(population), k,
                         result.final_caps if caps is None else caps)


@given(cases(), st.integers(0, 2**32 - 1))
def test_gccens_matches_algorithm_1_and_passes_the_verifier(case, seed):
    population, sample, k, caps = case
    if k > len(population):
        with pytest.raises(ParameterError, match="exceeds the population size"):
            gccens(long(sample), long(population), GCCensConfig(k=k, caps=caps, seed=seed))
        return
    result, key = gccens(long(sample), long(population), GCCensConfig(k=k, caps=caps, seed=seed))
    verdict = verdict_of(result, key, population, sample, k)
    assert verdict.ok, verdict.violations
    Y, C, steps, cap_only = reference(population, sample, k, caps)
    assert released(result, key) == Y
    assert [(s.code, s.records_censored, s.cap_after) for s in result.steps] == steps
    assert result.final_caps == {c: C[c] for c in result.final_caps}
    assert result.metrics["cap_only_iterations"] == sum(
        n for c, n in cap_only.items() if c in result.final_caps)
    assert all(0 <= x <= y <= 1 for x, y in zip(result.cul, result.cul_total))
    doc = release_document(result)
    pats, recs, doc_k, doc_caps = records_from_document(doc)
    assert verify_gccens(pats, recs, key, long(sample), long(population), doc_k, doc_caps).ok


@given(cases(), st.data())
def test_verifier_catches_a_restored_censored_copy(case, data):
    population, sample, k, caps = case
    if k > len(population):
        return
    result, key = gccens(long(sample), long(population), GCCensConfig(k=k, caps=caps, seed=0))
    censored = [i for i, x in enumerate(result.cul) if x > 0]
    if not censored:
        return
    who = result.patients[data.draw(st.sampled_from(censored))]
    codes = {s.code for s in result.steps}
    recs = result.records
    rows = recs[(recs["patient_id"] == who) & recs["code"].isin(codes)]
    original = dict(zip(key["patient_id"], key["original_id"]))[who]
    capped_less = [c for c in codes if Counter(sample[original])[c] >
                   int(recs[(recs["patient_id"] == who) & (recs["code"] == c)]["count"].sum())]
    code = data.draw(st.sampled_from(sorted(capped_less)))
    if code in set(rows["code"]):
        broken = recs.copy()
        broken.loc[rows.index[rows["code"] == code], "count"] += 1
    else:
        extra = pd.DataFrame({"patient_id": [who], "code": [code], "count": [1]})
        broken = pd.concat([recs, extra], ignore_index=True)
    verdict = verdict_of(result, key, population, sample, k, records=broken)
    assert not verdict.ok
    assert any("exceed its final cap" in v for v in verdict.violations)


@given(st.integers(1, 80), st.integers(0, 2**32 - 1),
       st.lists(st.tuples(st.sampled_from(CODES[:5]), st.integers(1, 3)), min_size=1,
                max_size=4))
def test_verifier_dis_is_containment_in_sorted_rows_and_bitsets(n, seed, multiset):
    """The verifier's dis equals a count by definition whichever way its sets are held:
    ``DENSE`` 1 holds every set as sorted rows, 10**6 every non-empty one as a bitset,
    the values between mix the two (CODES[4] is held by no one).  The population is
    drawn by numpy from ``seed``: hypothesis' small lists rarely mix the two."""
    counts = np.random.default_rng(seed).integers(0, 4, size=(n, 4))
    counts = counts[counts.any(axis=1)]
    population = {f"p{i}": [c for c, m in zip(CODES, row) for _ in range(m)]
                  for i, row in enumerate(counts)}
    D = tuple(sorted(dict(multiset).items()))
    expected = sum(all(Counter(r)[c] >= t for c, t in D) for r in population.values())
    tally = _tally(long(population))
    for dense in (1, 2, 3, 5, 8, 13, 10**6):
        holders = _Holders(tally)
        holders.DENSE = dense
        assert holders.containing(D) == expected, dense


# --- edge cases --------------------------------------------------------------

def check(population, sample, k, caps=None):
    result, key = gccens(long(sample), long(population), GCCensConfig(k=k, caps=caps, seed=5))
    verdict = verdict_of(result, key, population, sample, k)
    assert verdict.ok, verdict.violations
    return result, key


def test_empty_sample():
    result, key = check({"a": ["250"], "b": ["401"]}, {}, k=2, caps=3)
    assert len(result.patients) == 0 and result.records.empty and key.empty
    assert result.metrics["cul_mean"] is None and result.metrics["n_records"] == 0
    assert release_document(result)["records"] == []


def test_one_patient():
    result, key = check({"a": ["250", "250"]}, {"a": ["250", "250"]}, k=1)
    assert released(result, key) == {"a": {"250": 2}}
    with pytest.raises(ParameterError):
        check({"a": ["250"]}, {"a": ["250"]}, k=2)


def test_a_patient_with_500_occurrences():
    big = ["250"] * 300 + ["401"] * 150 + [f"V{i}" for i in range(50)]
    population = {"big": big, "x": ["250"] * 299 + ["401"] * 150, "y": ["250"] * 10,
                  "z": ["V7", "V9"]}
    result, key = check(population, {"big": big}, k=1)
    assert released(result, key) == {"big": dict(Counter(big))}
    # Every code has one record (big) at its cap, so step 11 ties throughout and
    # goes in code order: all of 250, all of 401, then V0, V1, V10, ..., V8,
    # leaving {V9}, which z also contains.
    result, key = check(population, {"big": big}, k=2)
    assert released(result, key) == {"big": {"V9": 1}}
    assert result.metrics["iterations"] == 499
    assert result.cul[0] == pytest.approx(499 / 500)
    assert released(result, key) == reference(population, {"big": big}, 2, None)[0]


def test_all_identical_records():
    population = {f"p{i}": ["272", "272", "724"] for i in range(6)}
    result, key = check(population, {f"p{i}": ["272", "272", "724"] for i in range(4)}, k=6)
    assert result.metrics["iterations"] == 0 and not result.cul.any()
    assert released(result, key) == {f"p{i}": {"272": 2, "724": 1} for i in range(4)}
    population["q"] = ["272"]
    # ties go to 272 (twice: {272, 724}, then {724}), then 724
    result, key = check(population, {"p0": ["272", "272", "724"]}, k=7)
    assert released(result, key) == {"p0": {}}
    assert [s.code for s in result.steps] == ["272", "272", "724"]


def test_unusual_code_strings_survive_unchanged():
    codes = ["-1", "V15.4", "E950", "10292", "é-ü", "糖尿病", "0", "007", " 250"]
    population = {"a": codes, "b": codes, "c": codes[:4] + codes}
    result, key = check(population, {"a": codes, "c": codes[:4] + codes}, k=2, caps=5)
    assert released(result, key) == {"a": {c: 1 for c in codes},
                                     "c": {c: 1 for c in codes}}
    assert set(result.final_caps) == set(codes)
    # ties are broken in code point order: ' 250' < '-1' < '0' < '007' < '10292'
    assert [s.code for s in result.steps] == ["-1", "10292", "E950", "V15.4"]


# --- the verifier catches broken releases -----------------------------------

POP = {"Dan": ["250"], "Bella": ["250", "250", "272"], "John": ["250", "250", "272", "272"],
       "Ada": ["401"] * 4, "Tom": ["272", "272", "724"], "Alan": ["250"], "Eric": ["272", "724"]}
SAMPLE = {"Alan": ["250"], "Tom": ["272", "272", "724"], "Bella": ["250", "250", "272"]}


@pytest.fixture
def example():
    result, key = check(POP, SAMPLE, k=2, caps={"250": 2, "272": 2, "401": 0, "724": 1})
    return result, key


def pseudonym(key, who):
    return dict(zip(key["original_id"], key["patient_id"]))[who]


def test_verifier_catches_a_record_below_k(example):
    result, key = example
    caps = {"250": 2, "272": 2, "724": 1}
    recs = result.records.copy()
    recs.loc[(recs["patient_id"] == pseudonym(key, "Tom")) & (recs["code"] == "272"), "count"] = 2
    v = verdict_of(result, key, POP, SAMPLE, 2, caps=caps, records=recs)
    assert not v.ok and any("contained in 1 population record" in x for x in v.violations)


def test_verifier_catches_a_code_not_in_the_original(example):
    result, key = example
    extra = pd.DataFrame({"patient_id": [pseudonym(key, "Alan")], "code": ["724"], "count": [1]})
    recs = pd.concat([result.records, extra], ignore_index=True)
    v = verdict_of(result, key, POP, SAMPLE, 2, records=recs)
    assert not v.ok and any("its original holds 0" in x for x in v.violations)


def test_verifier_catches_a_swapped_key(example):
    result, key = example
    swapped = key.copy()
    swapped["original_id"] = swapped["original_id"].to_numpy()[[1, 2, 0]]
    assert not verdict_of(result, swapped, POP, SAMPLE, 2).ok


def test_verifier_catches_a_dropped_or_duplicated_record(example):
    result, key = example
    v = verdict_of(result, key, POP, SAMPLE, 2, patients=result.patients[1:])
    assert not v.ok and any("not released" in x or "no released record" in x
                            for x in v.violations)
    dup = list(result.patients) + [result.patients[0]]
    assert not verdict_of(result, key, POP, SAMPLE, 2, patients=dup).ok


def test_verifier_catches_malformed_rows_and_missing_caps(example):
    result, key = example
    recs = result.records.copy()
    recs.loc[0, "count"] = 0
    assert not verdict_of(result, key, POP, SAMPLE, 2, records=recs).ok
    stray = pd.concat([result.records, pd.DataFrame(
        {"patient_id": ["R9"], "code": ["250"], "count": [1]})], ignore_index=True)
    assert not verdict_of(result, key, POP, SAMPLE, 2, records=stray).ok
    v = verdict_of(result, key, POP, SAMPLE, 2, caps={"250": 1})
    assert not v.ok and any("no final cap" in x for x in v.violations)


def test_verifier_catches_a_sample_outside_the_population(example):
    result, key = example
    population = {p: r for p, r in POP.items() if p != "Alan"}
    v = verdict_of(result, key, population, SAMPLE, 2)
    assert not v.ok and any("'Alan' is not in the population" in x for x in v.violations)


def test_verifier_rejects_a_meaningless_k(example):
    result, key = example
    with pytest.raises(ValueError):
        verdict_of(result, key, POP, SAMPLE, 0)
