"""Property tests: PPE against a literal transcription of Algorithm 1 and
against the independent verifier, on random data; and the verifier catching
broken policies."""

from __future__ import annotations

import pandas as pd
from hypothesis import assume, given
from hypothesis import strategies as st

import pytest

from anonymizers.errors import InputError
from anonymizers.ppe import PPEConfig, extract_policy, extract_policy_batches
from anonymizers.verify.ppe import verify_policy, verify_policy_batches

CODES = ["-1", "-9", "V15.4", "E950", "10292", "401", "493.00", "Δ", "é", "a", "b", "c"]

visit = st.frozensets(st.sampled_from(CODES), min_size=1, max_size=5)
patient = st.lists(visit, min_size=1, max_size=3)
dataset = st.lists(patient, min_size=0, max_size=12)


def to_df(patients) -> pd.DataFrame:
    rows = [(f"p{i}", f"v{j}", c) for i, visits in enumerate(patients)
            for j, codes in enumerate(visits) for c in sorted(codes)]
    return pd.DataFrame(rows, columns=["patient_id", "visit_id", "code"], dtype=str)


def algorithm1(filtered: list[frozenset], patients: list[frozenset], k: int) -> set:
    """Algorithm 1, line by line; support counts patient records (see ppe.py)."""
    d = sorted(filtered, key=len, reverse=True)           # line 2
    alive = [True] * len(d)
    for i in range(len(d)):                                # line 3
        if not alive[i]:
            continue
        for j in range(i + 1, len(d)):                     # line 4
            if alive[j] and d[j] <= d[i]:                  # line 5
                alive[j] = False                           # line 6
        if sum(d[i] <= p for p in patients) >= k:          # line 9
            alive[i] = False                               # line 10
    return {d[i] for i in range(len(d)) if alive[i]}       # line 13


def records(patients, filt):
    unions = [frozenset().union(*visits) for visits in patients]
    if filt == "all-visits":
        return unions, unions
    return [v for visits in patients for v in visits], unions


@given(dataset, st.integers(1, 6), st.sampled_from(["single-visit", "all-visits"]))
def test_matches_literal_algorithm_and_verifier(patients, k, filt):
    df = to_df(patients)
    result = extract_policy(df, PPEConfig(k, filt))
    filtered, unions = records(patients, filt)
    assert {frozenset(c) for c in result.constraints} == algorithm1(filtered, unions, k)
    assert len(set(result.constraints)) == len(result.constraints)
    assert all(list(c) == sorted(c) for c in result.constraints)
    sizes = [len(c) for c in result.constraints]
    assert sizes == sorted(sizes, reverse=True)
    assert verify_policy(df, result.to_dict(), k, filt).ok


@given(dataset, st.integers(2, 6), st.sampled_from(["single-visit", "all-visits"]),
       st.data())
def test_verifier_catches_broken_policies(patients, k, filt, data):
    df = to_df(patients)
    good = [list(c) for c in extract_policy(df, PPEConfig(k, filt)).constraints]
    filtered, unions = records(patients, filt)
    protected = [r for r in set(filtered) if sum(r <= p for p in unions) >= k]
    mutations = []
    if good:
        i = data.draw(st.integers(0, len(good) - 1))
        mutations.append(good[:i] + good[i + 1:])                 # a record left uncovered
        mutations.append(good + [good[i]])                        # listed twice
        if len(good[i]) > 1:
            mutations.append(good + [good[i][1:]])                # contained in another
            mutations.append(good[:i] + [good[i][::-1]] + good[i + 1:])  # not sorted
    if protected:
        mutations.append(good + [sorted(protected[0])])           # already protected
    mutations.append(good + [["not-a-code"]])                     # not a filtered record
    for bad in mutations:
        assert not verify_policy(df, bad, k, filt).ok, bad


@given(dataset)
def test_single_visit_policy_is_never_weaker_than_visit_counting(patients):
    """Every visit supported by fewer than k patients is inside some constraint,
    even when it occurs in k or more visit records."""
    assume(patients)
    df = to_df(patients)
    k = 2
    cons = [frozenset(c) for c in extract_policy(df, PPEConfig(k, "single-visit")).constraints]
    filtered, unions = records(patients, "single-visit")
    for v in filtered:
        if sum(v <= p for p in unions) < k:
            assert any(v <= c for c in cons)


@given(dataset, st.integers(2, 6), st.sampled_from(["single-visit", "all-visits"]), st.data())
def test_batched_verifier_reports_what_the_whole_one_does(patients, k, filt, data):
    df = to_df(patients)
    good = [list(c) for c in extract_policy(df, PPEConfig(k, filt)).constraints]
    policies = [good, good[1:], good + [["not-a-code"]], good + good[:1]]
    if good and len(good[0]) > 1:
        policies.append(good + [good[0][1:]])
    cuts = sorted(data.draw(st.lists(st.integers(0, len(patients)), max_size=4)))
    bounds = [0, *cuts, len(patients)]
    ids = [f"p{i}" for i in range(len(patients))]

    def batches():  # whole patients per batch, some batches empty
        return [df[df["patient_id"].isin(ids[a:b])] for a, b in zip(bounds, bounds[1:])]

    for policy in policies:
        whole = verify_policy(df, policy, k, filt)
        split = verify_policy_batches(batches, policy, k, filt)
        assert split.ok == whole.ok
        assert sorted(split.violations) == sorted(whole.violations)


def test_batched_verifier_reports_a_patient_split_over_batches():
    df = to_df([[frozenset({"a", "b"})], [frozenset({"a"}), frozenset({"b"})]] * 3)
    policy = [list(c) for c in extract_policy(df, PPEConfig(5, "all-visits")).constraints]
    assert verify_policy_batches(lambda: [df], policy, 5, "all-visits").ok
    halves = lambda: [df.iloc[::2], df.iloc[1::2]]  # noqa: E731 - visits of one patient apart
    verdict = verify_policy_batches(halves, policy, 5, "all-visits")
    assert not verdict.ok and "two batches" in " ".join(verdict.violations)


@given(dataset, st.integers(1, 6), st.sampled_from(["single-visit", "all-visits"]), st.data())
def test_batched_extraction_gives_the_whole_policy(patients, k, filt, data):
    df = to_df(patients)
    whole = extract_policy(df, PPEConfig(k, filt))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(df)), max_size=4)))
    bounds = [0, *cuts, len(df)]  # anywhere: a patient's rows may fall in two batches
    batches = [df.iloc[a:b] for a, b in zip(bounds, bounds[1:])]
    order = data.draw(st.permutations(range(len(batches))))  # and in any order
    split = extract_policy_batches((batches[i] for i in order), PPEConfig(k, filt))
    assert split.constraints == whole.constraints
    assert split.metrics == whole.metrics


def test_visit_keys_do_not_collide_whatever_the_ids_hold():
    df = pd.DataFrame({"patient_id": ["a:1", "a", "a"], "visit_id": ["x", ":1x", "1:x"],
                       "code": ["c", "c", "c"]})
    policy = extract_policy_batches([df.iloc[:1], df.iloc[1:]], PPEConfig(2, "single-visit"))
    assert policy.metrics["n_filtered_records"] == 3


def test_batched_extraction_names_the_row_of_an_empty_code():
    df = to_df([[frozenset({"a", "b"})], [frozenset({"c"})]])
    bad = df.copy()
    bad.loc[bad.index[2], "code"] = None
    with pytest.raises(InputError, match="row 3, field 'code'"):
        extract_policy_batches([bad.iloc[:2], bad.iloc[2:]], PPEConfig(2, "all-visits"))


@given(st.lists(st.frozensets(st.sampled_from(CODES), min_size=1, max_size=6), max_size=15,
                unique=True),
       st.frozensets(st.sampled_from(CODES + ["absent"]), max_size=4))
def test_the_verifiers_code_index_finds_exactly_the_holding_constraints(cons, codes):
    """The verifier's index (each code's constraints as a sorted array) against
    a brute-force scan, for any code set, and for each constraint itself."""
    from anonymizers.verify.ppe import _by_code, _holders, _key

    keys = [_key(c) for c in cons]
    index = _by_code(keys)
    brute = [j for j, c in enumerate(cons) if codes and codes <= c]
    assert _holders(index, sorted(codes)).tolist() == brute
    for j, c in enumerate(cons):
        assert _holders(index, keys[j], alone=j).tolist() == \
            [i for i, d in enumerate(cons) if c <= d]
