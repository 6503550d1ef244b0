"""UGACLIP's plan options reach a release: declared once in UGACLIPConfig,
offered by the release file and the trigger form, checked together before a
run, and passed to the method."""

from __future__ import annotations

import pandas as pd
import pytest
from deid.methods import check_params
from deid.methods import ugaclip as method

BASE = {"k": 2, "seed": 1, "utility_policy": "icd9-level-2"}


def test_the_plan_fields_are_release_parameters():
    for name in method.SEARCH_FIELDS:
        assert name in method.PARAMS, name
    assert method.PARAMS["plan_weights"]["enum"] == ["codes", "occurrences"]


def test_realising_a_plan_without_time_to_make_it_is_refused():
    with pytest.raises(ValueError, match="realise_plan"):
        check_params("ugaclip", {**BASE, "realise_plan": True})
    with pytest.raises(ValueError, match="plan_weights"):
        check_params("ugaclip", {**BASE, "plan_weights": "rows"})
    check_params("ugaclip", {**BASE, "realise_plan": True, "plan_seconds": 5})
    check_params("ugaclip", {**BASE, "realise_plan": True, "plan_nodes": 1})


def test_the_method_step_passes_the_plan_fields(monkeypatch):
    monkeypatch.setattr(method, "pseudonym_key", lambda: b"k" * 32)
    records = pd.DataFrame({"patient_id": ["a", "a", "b", "c", "c", "d"],
                            "code": ["4011", "25000", "4011", "25001", "4019", "4019"]})
    params = {**BASE, "realise_plan": True, "plan_seconds": 5, "plan_weights": "occurrences"}
    result = method._anonymize(records, [["4011", "25000"]], params)
    assert result.metrics["plan"]["realised"] is True
    assert result.metrics["plan"]["weights"] == "occurrences"
    budget = {**BASE, "realise_plan": True, "plan_nodes": 1, "plan_rounds": 3}
    planned = [method._anonymize(records, [["4011", "25000"]], budget) for _ in range(2)]
    assert planned[0].metrics["plan"]["budget"]["nodes"] == 1
    assert planned[0].metrics["plan"]["deterministic"] is True
    assert planned[0].metrics["plan"] == planned[1].metrics["plan"]
    assert planned[0].suppressed == planned[1].suppressed
    audit = method._plan_scalars(planned[0].metrics["plan"])
    assert audit["plan_deterministic"] is True and audit["plan_realised"] is True
    assert (audit["plan_nodes"], audit["plan_rounds"]) == (1, 3)
    assert all(not isinstance(v, (dict, list)) for v in audit.values())  # the audit's scalars
    without = method._anonymize(records, [["4011", "25000"]], BASE)
    assert without.metrics["plan"] is None


def test_the_report_names_realising_a_plan_and_the_search_but_not_guidance():
    from deid import utility_summary

    realised = method._deviation_metrics({**BASE, "realise_plan": True, "plan_nodes": 1})
    words = utility_summary.deviations(realised)
    assert words.startswith("realise_plan = true (the plan's codes suppressed before")
    searched = utility_summary.deviations(method._deviation_metrics({**BASE, "search_moves": 50}))
    assert searched.startswith("search_moves = 50 (") and "realise_plan" not in searched
    assert method._deviation_metrics({**BASE, "plan_nodes": 1}) == {}  # guidance reads line 17
    assert method._deviation_metrics(BASE) == {}
