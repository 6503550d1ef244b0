"""Property tests: UGACLIP against its independent verifier on random data and
policies (PPE's and arbitrary ones), and the verifier catching broken releases."""

from __future__ import annotations

import copy

import pandas as pd
from hypothesis import assume, given
from hypothesis import strategies as st

from anonymizers.errors import InputError
from anonymizers.hierarchy import icd9cm
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.records import encode
from anonymizers.ugaclip.algorithm import Run
from anonymizers.ugaclip.exchange import exchange_pass
from anonymizers.ugaclip.regroup import group_restore_pass
from anonymizers.ugaclip.loss import SemanticWeights
from anonymizers.ugaclip.policy import UtilityPolicy
from anonymizers.verify.ugaclip import verify_release

CODES = ["-1", "V15.4", "E950", "10292", "401", "4011", "493.00", "493.01", "493.02", "250",
         "Δ", "é", "a"]

record = st.frozensets(st.sampled_from(CODES), min_size=1, max_size=6)
records = st.lists(record, min_size=0, max_size=14)
groups = st.lists(st.sampled_from([None, 0, 1, 2, 3]), min_size=len(CODES), max_size=len(CODES))
extra = st.lists(st.frozensets(st.sampled_from(CODES + ["absent"]), min_size=1, max_size=4),
                 max_size=5)


def to_df(recs) -> pd.DataFrame:
    rows = [(f"p{i}", c) for i, rec in enumerate(recs) for c in sorted(rec)]
    return pd.DataFrame(rows, columns=["patient_id", "code"], dtype=str)


def utility(assignment) -> list[list[str]]:
    out: dict[int, list[str]] = {}
    for code, g in zip(CODES, assignment):
        if g is not None:
            out.setdefault(g, []).append(code)
    return list(out.values())


def anonymize(recs, k, assignment, more=()):
    """(df, policy, release JSON); release None where UGACLIP refused because
    it would suppress every code, which it may only do when every code of
    the input lies in some privacy constraint (it never touches other codes)."""
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    policy += [sorted(c) for c in more]
    try:
        result = ugaclip(df, policy, utility(assignment), UGACLIPConfig(k, re_queries=5),
                         hierarchy=icd9cm())
    except InputError as exc:
        assert "would hold nothing" in str(exc)
        assert set(df["code"]) <= {c for p in policy for c in p}
        return df, policy, None
    return df, policy, result.to_dict()


@given(records, st.integers(1, 6), groups, extra)
def test_release_passes_the_verifier(recs, k, assignment, more):
    df, policy, release = anonymize(recs, k, assignment, more)
    assume(release is not None)
    verdict = verify_release(df, release, policy, k)
    assert verdict.ok, verdict.violations
    assert len(release["records"]) == len(recs)
    u = utility(assignment)
    owner = {c: n for n, grp in enumerate(u) for c in grp}
    for item in release["items"]:  # generalization stays inside one utility constraint
        assert len({owner.get(c, "uncovered") for c in item}) == 1


@given(st.lists(record, min_size=1, max_size=4), st.integers(1, 5), groups)
def test_identical_records_and_one_patient(recs, k, assignment):
    recs = recs * 3 if len(recs) > 1 else recs  # repeated records; or a single patient
    df, policy, release = anonymize(recs, k, assignment)
    assume(release is not None)
    assert verify_release(df, release, policy, k).ok


def test_very_long_records():
    long = frozenset([f"X{i:03d}" for i in range(230)] + CODES)
    recs = [long, frozenset(list(long)[:120]), frozenset(list(long)[100:210]), frozenset(CODES)]
    groups_ = [[f"X{i:03d}" for i in range(j, j + 10)] for j in range(0, 230, 10)]
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(2)).constraints]
    release = ugaclip(df, policy, groups_, UGACLIPConfig(2), hierarchy=icd9cm()).to_dict()
    assert verify_release(df, release, policy, 2).ok


def identity_release(recs) -> dict:
    codes = sorted(set().union(*recs)) if recs else []
    return {"k": 0, "items": [[c] for c in codes], "suppressed": [],
            "records": [{"patient_id": f"x{i}", "items": [[c] for c in sorted(r)]}
                        for i, r in enumerate(recs)]}


@given(records, st.integers(2, 6), groups, st.data())
def test_verifier_catches_broken_releases(recs, k, assignment, data):
    df, policy, good = anonymize(recs, k, assignment)
    assume(good is not None)
    broken = []
    if good["records"]:
        b = copy.deepcopy(good)
        b["records"].pop(data.draw(st.integers(0, len(b["records"]) - 1)))
        broken.append(b)                                          # a record lost
        b = copy.deepcopy(good)
        b["records"][0]["items"].append(["not-an-item"])
        broken.append(b)                                          # undeclared item
        b = copy.deepcopy(good)
        b["records"].append(copy.deepcopy(b["records"][0]))
        broken.append(b)                                          # repeated pseudonym, extra record
    if good["suppressed"]:
        b = copy.deepcopy(good)
        b["suppressed"].pop()
        broken.append(b)                                          # a code mapped nowhere
    if good["items"]:
        b = copy.deepcopy(good)
        b["suppressed"].append(b["items"][0][0])
        broken.append(b)                                          # both suppressed and released
    open_constraint = any(
        sum(set(p) <= r for r in recs) in range(1, k) for p in policy)
    if open_constraint:
        broken.append(identity_release(recs))                     # nothing anonymized
    for b in broken:
        assert not verify_release(df, b, policy, k).ok


@given(records, st.integers(2, 6), groups)
def test_verifier_catches_undone_generalization(recs, k, assignment):
    """Splitting a generalized item back into its codes exposes the constraints
    that needed it, unless the split keeps every constraint at k."""
    df, policy, good = anonymize(recs, k, assignment)
    assume(good is not None)
    merged = [i for i in good["items"] if len(i) > 1]
    if not merged:
        return
    target = merged[0]
    split = copy.deepcopy(good)
    split["items"] = [i for i in split["items"] if i != target] + [[c] for c in target]
    by_patient = {f"p{n}": r for n, r in enumerate(recs)}
    # rebuild each record's split items from the input (records are pseudonymous,
    # so use the identity: one released record per input record, in input order)
    split["records"] = []
    item_of = {c: tuple(i) for i in split["items"] for c in i}
    for pid, rec in by_patient.items():
        items = sorted({item_of[c] for c in rec if c in item_of})
        split["records"].append({"patient_id": pid, "items": [list(i) for i in items]})
    verdict = verify_release(df, split, policy, k)
    # the split release is a valid rewrite, so it fails exactly when some
    # constraint drops below k; check that the verifier says so, independently
    held = {}
    for n, r in enumerate(split["records"]):
        for i in r["items"]:
            held.setdefault(tuple(i), set()).add(n)
    supp = set(split["suppressed"])
    exposed = False
    for p in policy:
        left = set(p) - supp
        if not left or not any(set(p) <= r for r in recs):
            continue
        if len(set.intersection(*(held[item_of[c]] for c in left))) < k:
            exposed = True
    assert verdict.ok == (not exposed)


def rewrite(df: pd.DataFrame, items: list, suppressed: list) -> dict:
    """A release JSON from items and suppressed codes, every record rewritten."""
    item_of = {c: tuple(i) for i in items for c in i}
    records = [{"patient_id": pid, "items": sorted({item_of[c] for c in codes if c in item_of})}
               for pid, codes in df.groupby("patient_id")["code"]]
    return {"items": [list(i) for i in items], "suppressed": suppressed,
            "records": [{**r, "items": [list(i) for i in r["items"]]} for r in records]}


@given(records, st.integers(2, 5), groups)
def test_no_suppressed_code_could_be_given_back(recs, k, assignment):
    """The restore pass leaves no code suppressed whose return, into an item
    of its utility constraint or alone, the verifier would accept."""
    df, policy, release = anonymize(recs, k, assignment)
    assume(release is not None and release["suppressed"])
    u = utility(assignment)
    owner = {c: n for n, grp in enumerate(u) for c in grp}
    items = [tuple(i) for i in release["items"]]
    for c in release["suppressed"]:
        rest = [x for x in release["suppressed"] if x != c]
        same = [i for i in items if owner.get(i[0], "uncovered") == owner.get(c, "uncovered")]
        for target in same + [None]:
            grown = [tuple(sorted(i + (c,))) if i == target else i for i in items]
            if target is None:
                grown.append((c,))
            assert not verify_release(df, rewrite(df, grown, rest), policy, k).ok, (c, target)


def post_pass_run(recs, k, assignment, more):
    """A Run after Algorithm 2 and the restore pass, and the records' codes."""
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    policy += [sorted(c) for c in more]
    enc = encode(df)
    run = Run(enc, policy, UtilityPolicy.from_lists(utility(assignment)), k,
              SemanticWeights(enc.codes, icd9cm()))
    run.algorithm2()
    run._restore_pass()
    return run, policy, list(enc.codes)


def n_suppressed(run) -> int:
    return int(run.state.suppressed[:run.state.n_codes].sum())


def lost_occurrences(run) -> int:
    """Occurrences of the suppressed codes in the records (Fig. S1A)."""
    s = run.state
    return int(s.code_support[s.suppressed[:s.n_codes]].sum())


def assert_every_constraint_held(run, policy, codes, recs, k) -> None:
    """Every non-vacuous constraint is held by k records or fully suppressed,
    counted over the records independently of the run's bitsets."""
    s = run.state
    holders = {c: {n for n, r in enumerate(recs) if c in r} for c in codes}
    for p in policy:
        if any(c not in holders for c in p) or not any(set(p) <= r for r in recs):
            continue
        left = [codes.index(c) for c in set(p) if not s.suppressed[codes.index(c)]]
        items = {int(s.rep[c]) for c in left}
        matching = set.intersection(*({n for m in s.members[r] for n in holders[codes[m]]}
                                      for r in items)) if items else set(range(len(recs)))
        assert not left or len(matching) >= k, (p, left)


@given(records, st.integers(2, 5), groups, extra)
def test_exchanges_never_add_suppressions_and_keep_every_constraint(recs, k, assignment, more):
    """The exchange pass (suppress one code, give back two, or one held by more
    records) after the restore pass: never more suppressed codes than before
    it, every kept exchange gave back at least two codes, every swap one code
    held by more records than the code it suppressed, and every non-vacuous constraint is held by k
    records or fully suppressed, as an independent count over the records finds."""
    run, policy, codes = post_pass_run(recs, k, assignment, more)
    before, lost_before = n_suppressed(run), lost_occurrences(run)
    exchange_pass(run)
    after = n_suppressed(run)
    assert after <= before
    exchanges = [t for t in run.trace if t[0] == "exchange"]
    assert all(len(back) >= 2 for _, _, back in exchanges)
    assert run.counts["exchanges"] == len(exchanges)
    if exchanges:
        assert after < before
    swaps = [t for t in run.trace if t[0] == "swap"]
    support = run.state.code_support
    assert all(len(back) == 1 and support[back[0]] > support[x] for _, x, back in swaps)
    assert run.counts["swaps"] == len(swaps)
    if swaps and after == before:
        assert lost_occurrences(run) < lost_before
    assert_every_constraint_held(run, policy, codes, recs, k)


@given(records, st.integers(2, 5), groups, extra)
def test_group_restores_give_back_sets_and_keep_every_constraint(recs, k, assignment, more):
    """The group restore pass: each kept move gives back two or more codes of
    one utility constraint into one item and suppresses nothing else, so the
    suppressed codes fall by exactly what the moves gave back, and every
    non-vacuous constraint is still held by k records or fully suppressed."""
    run, policy, codes = post_pass_run(recs, k, assignment, more)
    before = n_suppressed(run)
    returned = group_restore_pass(run)
    moves = [t for t in run.trace if t[0] == "group-restore"]
    assert all(len(back) >= 2 for _, back, _ in moves)
    assert returned == sum(len(back) for _, back, _ in moves) == run.counts["group_restored"]
    assert n_suppressed(run) == before - returned
    s = run.state
    for _, back, _ in moves:
        assert not s.suppressed[back].any()
        assert len({int(s.rep[c]) for c in back}) == 1
        assert len({int(run.util_of[c]) for c in back}) == 1
    assert_every_constraint_held(run, policy, codes, recs, k)


def test_group_restore_gives_back_a_pair_no_single_return_can():
    """Utility constraint {401, 4011}, privacy constraints {401} and {4011},
    k = 3, each code held by 2 of 5 records, both suppressed: alone neither
    comes back (2 < 3 records), together as one item they are held by 4."""
    df = to_df([{"401"}, {"401"}, {"4011"}, {"4011"}, {"250"}])
    enc = encode(df)
    run = Run(enc, [["401"], ["4011"]], UtilityPolicy.from_lists([["401", "4011"]]), 3,
              SemanticWeights(enc.codes, icd9cm()))
    pair = [list(enc.codes).index(c) for c in ("401", "4011")]
    for c in pair:
        run.state.suppress(c)
    run._restore_pass()
    assert run.state.suppressed[pair].all()
    assert group_restore_pass(run) == 2
    assert not run.state.suppressed[pair].any()
    assert run.state.item_of(pair[0]) == sorted(pair)
    assert run.state.item_support[run.state.rep[pair[0]]] == 4
