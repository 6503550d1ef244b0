"""UGACLIP's plan under a deterministic work budget (``plan_nodes``,
``plan_rounds``; docs/methods/ugaclip.md#ugaclip-plan): the plan, and so the
release, is a function of the input and the settings, however fast the
host's clock runs, and ``metrics["plan"]["deterministic"]`` says when a
wall-clock limit bound instead."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anonymizers.ugaclip.bound as bound_module
from anonymizers.errors import ParameterError
from anonymizers.hierarchy import icd9cm
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.records import encode
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.ugaclip.bound import build_problem, feasible
from anonymizers.ugaclip.plan import suppression_plan
from anonymizers.verify.ugaclip import verify_release

K = 4
KEY = b"k" * 32


def random_case(seed: int, n: int = 80, n_codes: int = 32):
    """Records of 1-4 codes drawn from a skewed (Zipf) distribution, so many
    combinations are rare, and utility groups of 4 consecutive codes.  With
    seed 0 the plan's covering MILP needs branching: rounds stop on the node
    budget (checked below), which is what the budget has to make repeatable."""
    rng = np.random.default_rng(seed)
    drawn = rng.zipf(1.3, size=(n, 4)) % n_codes
    rows = sorted({(f"p{i:03d}", f"c{c:02d}") for i in range(n) for c in drawn[i]})
    df = pd.DataFrame(rows, columns=["patient_id", "code"])
    codes = sorted(df["code"].unique())
    groups = [codes[i:i + 4] for i in range(0, len(codes), 4)]
    policy = [list(c) for c in extract_policy(df, PPEConfig(K)).constraints]
    return df, policy, groups


class FastClock:
    """A ``time.perf_counter`` that runs ``step`` seconds ahead at every
    reading: the loop sees an arbitrarily slow host."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def milp_calls(monkeypatch):
    """The options and HiGHS status of every covering MILP solved."""
    calls, real = [], bound_module.milp

    def spy(*args, **kwargs):
        options = dict(kwargs.get("options") or {})  # scipy pops from the dict
        res = real(*args, **kwargs)
        calls.append((options, res.status))
        return res
    monkeypatch.setattr(bound_module, "milp", spy)
    return calls


def plan_of(case, **budget):
    df, policy, groups = case
    return suppression_plan(encode(df), policy, groups, K, **budget)


def test_node_budget_gives_the_same_plan_on_any_clock(monkeypatch, milp_calls):
    case = random_case(0)
    first = plan_of(case, nodes=1, rounds=8)
    assert first["deterministic"] and first["rounds"] == 8
    options = [o for o, _ in milp_calls]
    assert all(o == {"node_limit": 1} for o in options)  # no wall-clock limit at all
    assert any(status == 4 for _, status in milp_calls)  # a round stopped on its nodes
    assert first == plan_of(case, nodes=1, rounds=8)
    # a slow host (every clock reading 50 s later), and a time cap that does not bind
    monkeypatch.setattr(bound_module, "time", FastClock(50.0))
    assert plan_of(case, nodes=1, rounds=8) == first
    monkeypatch.setattr(bound_module, "time", time)
    capped = plan_of(case, nodes=1, rounds=8, seconds=3600.0)
    assert capped["deterministic"]
    assert {k: v for k, v in capped.items() if k != "budget"} == \
        {k: v for k, v in first.items() if k != "budget"}
    assert feasible(build_problem(encode(case[0]), case[1], case[2], K), first["codes"])


def test_a_time_cap_that_binds_is_reported(monkeypatch):
    case = random_case(0)
    monkeypatch.setattr(bound_module, "time", FastClock(50.0))
    capped = plan_of(case, nodes=1, rounds=8, seconds=120.0)
    assert not capped["deterministic"] and capped["rounds"] < 8
    timed = plan_of(case, seconds=120.0)  # wall-clock budget only, as before
    assert not timed["deterministic"]
    problem = build_problem(encode(case[0]), case[1], case[2], K)
    assert feasible(problem, capped["codes"]) and feasible(problem, timed["codes"])


def test_the_wall_clock_budget_keeps_its_limits(milp_calls):
    """plan_nodes = 0: the plan as before, 20 s a round at most, no node limit."""
    plan = plan_of(random_case(1), seconds=300.0)
    assert plan["budget"] == {"seconds": 300.0, "nodes": 0, "rounds": 200}
    assert all(set(o) == {"time_limit"} and o["time_limit"] <= 20.0 for o, _ in milp_calls)
    assert plan["deterministic"]  # small enough that no limit bound


def test_a_plan_needs_a_budget():
    with pytest.raises(ParameterError, match="plan_seconds"):
        plan_of(random_case(1))
    with pytest.raises(ParameterError, match="plan_nodes"):
        UGACLIPConfig(K, plan_nodes=-1)
    with pytest.raises(ParameterError, match="plan_rounds"):
        UGACLIPConfig(K, plan_rounds=0)


def release(df, policy, groups, **config):
    return ugaclip(df, policy, groups, UGACLIPConfig(K, seed=3, re_queries=20,
                                                     pseudonym_key=KEY, **config),
                   hierarchy=icd9cm())


@pytest.mark.parametrize("weights", ["codes", "occurrences"])
def test_the_release_with_a_node_budget_is_repeatable(monkeypatch, weights):
    """The whole release, metrics included, is the same twice and on a slow
    clock; it passes the verifier and records its budget."""
    df, policy, groups = random_case(0)
    budget = {"plan_nodes": 1, "plan_rounds": 8, "plan_weights": weights, "realise_plan": True}
    first = release(df, policy, groups, **budget).to_dict()
    assert release(df, policy, groups, **budget).to_dict() == first
    monkeypatch.setattr(bound_module, "time", FastClock(50.0))
    assert release(df, policy, groups, **budget).to_dict() == first
    plan = first["metrics"]["plan"]
    assert plan["deterministic"] and plan["realised"] and plan["weights"] == weights
    assert plan["budget"] == {"seconds": 0.0, "nodes": 1, "rounds": 8}
    assert verify_release(df, first, policy, K).ok


@settings(max_examples=15, deadline=None)
@given(st.lists(st.frozensets(st.sampled_from([f"c{i}" for i in range(8)]), min_size=1,
                              max_size=4), min_size=2, max_size=14),
       st.integers(1, 3), st.integers(1, 3), st.booleans())
def test_node_budget_plans_are_feasible_and_repeatable(recs, k, nodes, occurrences):
    rows = [(f"p{i}", c) for i, rec in enumerate(recs) for c in sorted(rec)]
    df = pd.DataFrame(rows, columns=["patient_id", "code"])
    codes = sorted(df["code"].unique())
    groups = [codes[i:i + 3] for i in range(0, len(codes), 3)]
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    enc = encode(df)
    plans = [suppression_plan(enc, policy, groups, k, nodes=nodes, rounds=5,
                              weigh_occurrences=occurrences) for _ in range(2)]
    assert plans[0] == plans[1] and plans[0]["deterministic"]
    assert feasible(build_problem(enc, policy, groups, k), plans[0]["codes"])


def test_realise_plan_accepts_a_node_budget_alone():
    df, policy, groups = random_case(1)
    result = release(df, policy, groups, plan_nodes=1, plan_rounds=3, realise_plan=True)
    assert result.metrics["plan"]["realised"]
    with pytest.raises(ParameterError, match="realise_plan"):
        release(df, policy, groups, realise_plan=True)

