"""UGACLIP and LDA over successive releases (issue 25): independent runs of
overlapping cohorts are breached by the linking attack, append-only
publication is not; the cross-release verifier finds what the attack finds;
each release keeps its own guarantee."""

from __future__ import annotations

import pytest

from anonymizers.cli.lda import release_json
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.successive import kanon
from anonymizers.successive.check import breaches, check
from anonymizers.successive.harness import overlapping_cohorts, random_pool
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.verify.longitudinal import verify_lda
from anonymizers.verify.ugaclip import verify_release

K = 3


def run_ugaclip(records):
    policy = [list(c) for c in extract_policy(records, PPEConfig(K)).constraints]
    utility = hierarchy_policy(sorted(records["code"].unique()), 2)
    return ugaclip(records, policy, utility, UGACLIPConfig(K, seed=1)).to_dict(), policy


@pytest.fixture(scope="module")
def ugaclip_pair():
    cohorts = overlapping_cohorts(random_pool(600, 60, seed=5), 200, 170, seed=2, gain=0.3)
    return cohorts, run_ugaclip(cohorts.first), run_ugaclip(cohorts.second)


def test_ugaclip_independent_runs_are_breached(ugaclip_pair):
    cohorts, (d1, p1), (d2, p2) = ugaclip_pair
    report = kanon.attack_ugaclip([d1, d2], [cohorts.first, cohorts.second], constraints=p1 + p2)
    assert report["breached"]
    found = breaches("ugaclip", [{"release": d1, "truth": cohorts.first}],
                     {"release": d2, "truth": cohorts.second}, {"k": K, "constraints": p1 + p2})
    # same adversary, same linkage (global recoding): the same breaches
    assert report["sets_breached"] == len(found)
    assert {(tuple(b["releases"]), tuple(b["atoms"])) for b in report["breaches"]} <= \
        {(tuple(r + 1 for r in sig), atoms) for sig, atoms, _ in found}


def test_ugaclip_append_only_defends(ugaclip_pair):
    cohorts, (d1, p1), _ = ugaclip_pair
    delta, held = kanon.new_patients(cohorts.second, set(cohorts.first["patient_id"]), K)
    assert held == 0 and set(delta["patient_id"]) == set(cohorts.arrived)
    dd, pd_ = run_ugaclip(delta)
    assert verify_release(delta, dd, pd_, K).ok
    verdict = check("ugaclip", [{"release": d1, "truth": cohorts.first}],
                    {"release": dd, "truth": delta}, {"k": K, "constraints": p1 + pd_})
    assert verdict.ok, verdict.violations
    report = kanon.attack_ugaclip([d1, dd], [cohorts.first, delta], constraints=p1 + pd_)
    assert not report["breached"]
    cover = kanon.coverage(cohorts.second, [cohorts.first, delta])
    assert 0 < cover["stale_pairs"] < cover["current_pairs"]


def test_new_patients_holds_back_fewer_than_k():
    cohorts = overlapping_cohorts(random_pool(100, 20, seed=1), 40, 38, seed=1)
    rows, held = kanon.new_patients(cohorts.second, set(cohorts.first["patient_id"]), K)
    assert held == 2 and rows.empty


def run_lda(records):
    result = lda(records, LDAConfig(k=K, seed=1))
    return release_json(result), result.pseudonym_map, result


@pytest.fixture(scope="module")
def lda_pair():
    pool = random_pool(300, 30, seed=5, ages=True, max_codes=3)
    cohorts = overlapping_cohorts(pool, 100, 85, seed=2, gain=0.3)
    return cohorts, run_lda(cohorts.first), run_lda(cohorts.second)


def test_lda_independent_runs_are_breached_and_the_check_agrees(lda_pair):
    cohorts, (d1, m1, _), (d2, m2, _) = lda_pair
    report = kanon.attack_lda([d1, d2], [cohorts.first, cohorts.second], maps=[m1, m2])
    assert report["breached"]
    found = breaches("lda", [{"release": d1, "truth": cohorts.first, "map": m1}],
                     {"release": d2, "truth": cohorts.second, "map": m2}, {"k": K})
    assert len(found) == report["targets_breached"]
    assert all("p0" not in str(b) for b in report["breaches"])  # no patient id shown


def test_lda_append_only_defends(lda_pair):
    cohorts, (d1, m1, _), _ = lda_pair
    delta, _ = kanon.new_patients(cohorts.second, set(cohorts.first["patient_id"]), K)
    dd, md, result = run_lda(delta)
    assert verify_lda(result.records, md, delta, K).ok
    verdict = check("lda", [{"release": d1, "truth": cohorts.first, "map": m1}],
                    {"release": dd, "truth": delta, "map": md}, {"k": K})
    assert verdict.ok, verdict.violations
    assert not kanon.attack_lda([d1, dd], [cohorts.first, delta], maps=[m1, md])["breached"]


def _visits(rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=["patient_id", "visit_id", "code"])


def test_under_a_single_visit_policy_a_constraint_is_known_of_one_visit():
    """x holds A and B only on different claims: the single-visit adversary
    (PPE's f1, what a single-visit release file assumes) cannot know {A, B}
    of x, so another release's constraint {A, B} does not target x; read
    over whole records (no ``visit_id``) it does, and x has no other
    candidate holding both."""
    first = _visits([("x", 1, "A"), ("x", 2, "B")] + [(f"a{i}", 1, "A") for i in range(3)]
                    + [(f"b{i}", 1, "B") for i in range(3)])
    second = _visits([("q1", 1, "A"), ("q1", 1, "B"), ("q2", 1, "C"), ("q3", 1, "C")])
    r1 = {"release": {"items": [["A"], ["B"]], "suppressed": []}, "truth": first}
    r2 = {"release": {"items": [["C"]], "suppressed": ["A", "B"]}, "truth": second}
    params = {"k": K, "constraints": [["A", "B"]]}
    assert check("ugaclip", [r1], r2, params).ok
    whole = [{**r, "truth": r["truth"].drop(columns="visit_id")} for r in (r1, r2)]
    found = breaches("ugaclip", [whole[0]], whole[1], params)
    assert found == [((0,), ("A", "B"), 1)]
    # the harness's attack reads the adversary the same way
    docs = [r["release"] for r in (r1, r2)]
    assert not kanon.attack_ugaclip(docs, [first, second], k=K,
                                     constraints=[["A", "B"]])["breached"]
    report = kanon.attack_ugaclip(docs, [r["truth"] for r in whole], k=K,
                                  constraints=[["A", "B"]])
    assert report["breached"] and report["breaches"][0]["candidates"] == 1
