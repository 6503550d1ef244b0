"""The cross-release verifier against the attacks, on random small histories
(hypothesis), and its input checks.  The verifier is told the truth (each
record's cluster); the attack works it out, so for disassociation every
breach the attack finds must be one the verifier reports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymizers.disassociation import DisassociationConfig
from anonymizers.errors import InputError, ParameterError
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.successive import disassociation as dis
from anonymizers.successive import kanon
from anonymizers.successive.check import breaches, check
from anonymizers.successive.harness import random_pool
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.verify.disassociation import verify_disassociation

SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def history(pool: pd.DataFrame, n: int, churn: int, runs: int, seed: int) -> list[pd.DataFrame]:
    """``runs`` cohorts of ``n`` patients of ``pool``: each run ``churn``
    members leave and as many arrive (churn 0 allowed: the same cohort)."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(pd.unique(pool["patient_id"]))
    members, nxt, out = list(ids[:n]), n, []
    for _ in range(runs):
        out.append(pool[pool["patient_id"].isin(members)].reset_index(drop=True))
        gone = set(rng.choice(members, churn, replace=False).tolist()) if churn else set()
        members = [p for p in members if p not in gone] + list(ids[nxt:nxt + churn])
        nxt += churn
    return out


def disassociation_case(case):
    seed, k, m, churn, runs = case
    pool = random_pool(200, 15, seed=seed, max_codes=4)
    return k, m, churn, history(pool, 40, churn, runs, seed), \
        DisassociationConfig(k=k, m=m, seed=seed)


cases = st.tuples(st.integers(0, 10_000), st.integers(2, 4), st.integers(1, 2),
                  st.integers(0, 12), st.integers(2, 3))


@SETTINGS
@given(cases)
def test_disassociation_check_reports_every_attack_breach(case):
    k, m, churn, truths, config = disassociation_case(case)
    plain = [dis.release(t, config) for t in truths]
    found = {(tuple(r + 1 for r in sig), atoms) for sig, atoms, _ in
             breaches("disassociation", [p.tables() for p in plain[:-1]], plain[-1].tables(),
                      {"k": k, "m": m})}
    report = dis.attack([p.release for p in plain], [p.records for p in plain], k, m)
    assert report["sets_breached"] <= len(found)
    assert {(tuple(b["releases"]), tuple(b["atoms"])) for b in report["breaches"]} <= found
    if churn == 0:  # the same cohort again: the same release, nothing new to intersect
        assert not found


@SETTINGS
@given(cases)
def test_stable_clusters_pass_the_check_over_any_history(case):
    k, m, _, truths, config = disassociation_case(case)
    published = [dis.release(truths[0], config)]
    for t in truths[1:]:
        published.append(dis.release_stable(t, config, published[-1]))
        last = published[-1]
        assert verify_disassociation(last.records, last.release, k, m).ok
    verdict = check("disassociation", [p.tables() for p in published[:-1]],
                    published[-1].tables(), {"k": k, "m": m})
    assert verdict.ok, verdict.violations
    assert not dis.attack([p.release for p in published], [p.records for p in published],
                          k, m)["breached"]


@SETTINGS
@given(st.tuples(st.integers(0, 10_000), st.integers(2, 4), st.integers(1, 12)))
def test_ugaclip_check_equals_attack(case):
    seed, k, churn = case
    pool = random_pool(200, 20, seed=seed, max_codes=4)
    truths = history(pool, 60, churn, 2, seed)
    docs, policy = [], []
    for t in truths:
        constraints = [list(c) for c in extract_policy(t, PPEConfig(k)).constraints]
        utility = hierarchy_policy(sorted(t["code"].unique()), 2)
        docs.append(ugaclip(t, constraints, utility, UGACLIPConfig(k, seed=seed)).to_dict())
        policy += constraints
    found = breaches("ugaclip", [{"release": docs[0], "truth": truths[0]}],
                     {"release": docs[1], "truth": truths[1]}, {"k": k, "constraints": policy})
    report = kanon.attack_ugaclip(docs, truths, k, constraints=policy)
    assert report["sets_breached"] == len(found)


def test_unknown_method_and_bad_parameters_are_refused():
    with pytest.raises(ParameterError):
        check("medco", [], {}, {"k": 2})
    with pytest.raises(ParameterError):
        check("disassociation", [], {}, {"k": 0, "m": 2})


def test_membership_naming_an_unknown_patient_is_refused():
    pool = random_pool(30, 5, seed=1)
    release = dis.release(pool, DisassociationConfig(k=2, m=1, seed=1))
    tables = release.tables()
    tables["membership"] = tables["membership"].assign(patient_id="someone else")
    with pytest.raises(InputError):
        check("disassociation", [], tables, {"k": 2, "m": 1})


def test_a_single_release_is_judged_by_its_own_guarantee():
    pool = random_pool(60, 8, seed=2)
    release = dis.release(pool, DisassociationConfig(k=3, m=2, seed=2))
    assert check("disassociation", [], release.tables(), {"k": 3, "m": 2}).ok


def test_registry_imports_attacks_on_use():
    from anonymizers.successive.registry import ATTACKS, attack_for
    assert attack_for("disassociation") is dis.attack
    assert attack_for("ugaclip") is kanon.attack_ugaclip
    assert ATTACKS["medco"] == "anonymizers.successive.medco:attack"
    with pytest.raises(ParameterError):
        attack_for("hhp")


def test_a_patient_holding_nothing_throughout_is_judged_by_its_presence():
    """Four patients whose codes all changed between the runs hold nothing
    throughout: the empty set is checked, and their presence pattern leaves
    4 candidates, enough for k = 2, not for k = 5."""
    first = pd.DataFrame({"patient_id": ["a", "b", "c", "d"], "code": ["401", "401", "250", "250"]})
    second = pd.DataFrame({"patient_id": ["a", "b", "c", "d"], "code": ["250", "250", "401", "401"]})
    config = DisassociationConfig(k=2, m=1, seed=1)
    r1, r2 = dis.release(first, config), dis.release(second, config)
    assert check("disassociation", [r1.tables()], r2.tables(), {"k": 2, "m": 1}).ok
    found = breaches("disassociation", [r1.tables()], r2.tables(), {"k": 5, "m": 1})
    assert ((0, 1), (), 4) in found
