"""LDA's release step: the pairs it anonymizes are each patient's distinct
(code, age) pairs (docs/methods/lda.md#longitudinal-trajectories), and the
opt-in deviations declared in LDAConfig reach the method from a release file."""

from __future__ import annotations

import pandas as pd
import pytest
from deid import staging
from deid.methods import check_params
from deid.methods import lda as method

BASE = {"k": 2, "seed": 1, "w_icd": 0.5, "alignment": "a-gs"}


class _Run:
    def __init__(self, folder):
        self.folder = folder

    def path(self, name):
        return self.folder / name


def _claims(tmp_path) -> _Run:
    rows = [("a", "4011", 67), ("a", "4011", 67), ("a", "4011", 68), ("a", "25000", 67),
            ("b", "4011", 70), ("b", "4011", 70), ("b", "7245", 70)]
    pd.DataFrame(rows, columns=["patient_id", "code", "age_at_service"]).to_parquet(
        tmp_path / staging.CLAIMS)
    return _Run(tmp_path)


def test_a_code_billed_twice_at_one_age_is_one_pair(tmp_path):
    pairs = method._pairs(_claims(tmp_path), {})
    assert sorted(map(tuple, pairs[["patient_id", "code", "age"]].to_numpy().tolist())) == [
        ("a", "25000", 67), ("a", "4011", 67), ("a", "4011", 68),
        ("b", "4011", 70), ("b", "7245", 70)]
    kept = method._pairs(_claims(tmp_path), {"lda_codes": ["401"]})
    assert set(kept["code"]) == {"4011"} and len(kept) == 3


def test_the_deviations_are_release_parameters_checked_before_a_run():
    for name in ("member_weighted", "refine_rounds", "shared_code_bonus", "age_block",
                 "lookahead"):
        assert name in method.PARAMS, name
    check_params("lda", {**BASE, "member_weighted": True, "refine_rounds": 2})
    with pytest.raises(ValueError, match="refine_rounds"):
        check_params("lda", {**BASE, "refine_rounds": -1})
    with pytest.raises(ValueError, match="shared_code_bonus"):
        check_params("lda", {**BASE, "shared_code_bonus": -0.5})
    check_params("lda", {**BASE, "shared_code_bonus": 4.0, "age_block": 16})
    with pytest.raises(ValueError, match="age_block: .*shared_code_bonus"):
        check_params("lda", {**BASE, "age_block": 16})
    with pytest.raises(ValueError, match="age_block"):
        check_params("lda", {**BASE, "shared_code_bonus": 4.0, "age_block": -16})
    check_params("lda", {**BASE, "shared_code_bonus": 4.0, "age_block": 16, "lookahead": 20})
    with pytest.raises(ValueError, match="lookahead: .*age_block"):
        check_params("lda", {**BASE, "shared_code_bonus": 4.0, "lookahead": 20})


def test_the_method_gets_the_deviations(monkeypatch, tmp_path):
    seen = {}

    def spy(pairs, config):
        seen["config"] = config
        raise RuntimeError("stop")
    monkeypatch.setattr(method, "pseudonym_key", lambda: b"k" * 32)
    monkeypatch.setattr("anonymizers.longitudinal.lda", spy)
    pairs = method._pairs(_claims(tmp_path), {})
    with pytest.raises(RuntimeError, match="stop"):
        method._lda(pairs, {**BASE, "member_weighted": True, "refine_rounds": 3,
                            "shared_code_bonus": 1.5, "age_block": 16, "lookahead": 5})
    assert seen["config"].member_weighted and seen["config"].refine_rounds == 3
    assert seen["config"].shared_code_bonus == 1.5 and seen["config"].age_block == 16
    assert seen["config"].lookahead == 5
    with pytest.raises(RuntimeError, match="stop"):
        method._lda(pairs, BASE)
    assert not seen["config"].member_weighted and seen["config"].refine_rounds == 0
    assert seen["config"].shared_code_bonus == 0.0 and seen["config"].age_block == 0
    assert seen["config"].lookahead == 0


def test_every_opt_in_field_has_its_words():
    from anonymizers.longitudinal.config import OPT_IN

    assert set(method.DEVIATION_WORDS) == set(OPT_IN)


def test_the_metrics_name_the_deviations_a_run_uses():
    assert method.deviations(BASE) == {}
    assert method.deviations({**BASE, "member_weighted": False, "refine_rounds": 0,
                              "shared_code_bonus": 0.0, "age_block": 0}) == {}
    assert method.deviations({**BASE, "shared_code_bonus": 2}) == {"shared_code_bonus": 2.0}
    assert method.deviations({**BASE, "shared_code_bonus": 4, "age_block": 16,
                              "lookahead": 20}) == {
        "shared_code_bonus": 4.0, "age_block": 16, "lookahead": 20}
    assert method.deviations({**BASE, "member_weighted": True, "refine_rounds": 4}) == {
        "member_weighted": True, "refine_rounds": 4}
    words = method._deviation_metrics({**BASE, "member_weighted": True, "refine_rounds": 4})
    assert list(words) == ["deviations_from_paper"]
    assert words["deviations_from_paper"].startswith("member_weighted = true (")
    assert "; refine_rounds = 4 (" in words["deviations_from_paper"]
    assert method._deviation_metrics(BASE) == {}


class _StagedRun(_Run):
    release, run_id = "lda_trajectories", "manual__2"

    def write_json(self, name, obj):
        import json

        self.path(name).write_text(json.dumps(obj, default=str))

    @staticmethod
    def small(metrics):
        from deid.steps import Run

        return Run.small(metrics)


@pytest.mark.parametrize("all_new", [True, False])
def test_the_run_without_defence_is_reused_only_when_every_patient_is_new(
        monkeypatch, tmp_path, all_new):
    """An append-only run compares its utility with an independent run over
    the whole cohort with the same parameters (deviations included).  When
    every patient is new its own run is that run: LDA runs once and the
    figures without the defence are its own; otherwise LDA runs again."""
    from deid import append_only

    rows = [(p, code, age) for p, age in (("a", 67), ("b", 70), ("c", 67), ("d", 71))
            for code in ("4011", "25000")] + [("c", "2724", 68)]
    pd.DataFrame(rows, columns=["patient_id", "code", "age_at_service"]).to_parquet(
        tmp_path / staging.CLAIMS)
    run = _StagedRun(tmp_path)
    pairs = method._pairs(run, {})
    fresh = pairs if all_new else pairs[pairs["patient_id"].isin(["c", "d"])].reset_index(
        drop=True)
    plan = append_only.Plan(2, fresh, fresh["patient_id"].nunique(), 0, 4 - 2 * (not all_new),
                            0 if all_new else 2)
    monkeypatch.setattr(method, "pseudonym_key", lambda: b"k" * 32)
    monkeypatch.setattr(append_only, "begin", lambda run, pairs, params: plan)
    monkeypatch.setattr(method.history, "published", lambda release, run_id: [])
    monkeypatch.setattr(method.history, "earlier_inputs", lambda release, published: [])
    monkeypatch.setattr(method, "_linked_pairs",
                        lambda run, params, key: method._linked(fresh, key))
    calls, lda_once = [], method._lda

    def counted(frame, params):
        calls.append(sorted(frame["patient_id"].unique()))
        return lda_once(frame, params)
    monkeypatch.setattr(method, "_lda", counted)
    params = {**BASE, "member_weighted": True, "refine_rounds": 2}
    metrics = method.anonymize(run, params)
    if all_new:
        assert calls == [["a", "b", "c", "d"]]
        for name in method.COMPARED:
            assert metrics[f"{name}_without_defence"] == metrics[name], name
    else:
        assert calls == [["c", "d"], ["a", "b", "c", "d"]]
        whole = lda_once(pairs, params).metrics
        for name in method.COMPARED:
            assert metrics[f"{name}_without_defence"] == whole[name], name
    assert metrics["deviations_from_paper"].startswith("member_weighted = true")
