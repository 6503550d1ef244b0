"""Disassociation over successive releases (issue 25): the linking attack
finds breaches in independent runs, none under stable clusters; the
cross-release verifier agrees with the attack; each release keeps Guarantee 1."""

from __future__ import annotations

import pytest

from anonymizers.disassociation import DisassociationConfig
from anonymizers.successive import disassociation as dis
from anonymizers.successive.check import breaches, check
from anonymizers.successive.harness import overlapping_cohorts, random_pool
from anonymizers.verify.disassociation import verify_disassociation

K, M = 3, 2


@pytest.fixture(scope="module")
def pair():
    pool = random_pool(500, 40, seed=11)
    cohorts = overlapping_cohorts(pool, 180, 150, seed=3, gain=0.3)
    config = DisassociationConfig(k=K, m=M, seed=1)
    first = dis.release(cohorts.first, config)
    return cohorts, config, first, dis.release(cohorts.second, config)


def test_independent_runs_are_breached_and_the_check_sees_it(pair):
    _, _, first, second = pair
    report = dis.attack([first.release, second.release], [first.records, second.records])
    assert report["breached"] and report["targets_breached"] > 0
    verdict = check("disassociation", [first.tables()], second.tables(), {"k": K, "m": M})
    assert not verdict.ok
    assert all(b["candidates"] < K for b in report["breaches"])


def test_stable_clusters_defend_and_keep_guarantee_1(pair):
    cohorts, config, first, _ = pair
    second = dis.release_stable(cohorts.second, config, first)
    report = dis.attack([first.release, second.release], [first.records, second.records])
    assert not report["breached"], report["breaches"][:3]
    verdict = check("disassociation", [first.tables()], second.tables(), {"k": K, "m": M})
    assert verdict.ok, verdict.violations
    single = verify_disassociation(second.records, second.release, K, M)
    assert single.ok, single.violations
    # everyone present now is published, and those who left are retained
    published = set(second.membership["patient_id"])
    assert set(cohorts.second["patient_id"]) <= published
    assert set(cohorts.left) <= published


def test_attack_breaches_are_check_breaches(pair):
    """The attack places records by fitting them (it is not told the
    membership), so it may see more candidates than there are, never fewer:
    every breach it finds, the verifier reports too."""
    _, _, first, second = pair
    report = dis.attack([first.release, second.release], [first.records, second.records])
    checked = {(tuple(r + 1 for r in sig), atoms) for sig, atoms, _ in
               breaches("disassociation", [first.tables()], second.tables(), {"k": K, "m": M})}
    assert report["sets_breached"] <= len(checked)
    for b in report["breaches"]:
        assert (tuple(b["releases"]), tuple(b["atoms"])) in checked
