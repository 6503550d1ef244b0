"""LDA released twice while the warehouse's members change (issue 25): the
second run is append-only (``deid.append_only``): it aligns only the
patients not published yet, carries the first run's trajectories, and
passes validate's cross-release check against the first run; the Releases
view shows both.  300 synthetic members; after the first run 30 arrive and
30 others leave."""

from __future__ import annotations

import pytest
from deid import history

from tests.dags.release_copies import forget_history
from tests.dags.successive_runs import (
    audit,
    checked_cell,
    passed_against,
    release_copies,
    releases_page,
    row,
    run,
    table_rows,
    two_runs,
)

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

RELEASE = "lda_trajectories"


release_files = release_copies()


@pytest.fixture(scope="module")
def runs(warehouse):
    yield two_runs(warehouse, RELEASE, RELEASE)
    forget_history(warehouse, RELEASE)


def test_the_second_run_is_append_only_and_passes_the_cross_release_check(runs, warehouse):
    first, second, _ = runs
    row_ = passed_against(warehouse, RELEASE, first, second)
    carried, = [v for v in row_["verdicts"]["verdicts"] if v["property"].startswith("append-only")]
    assert carried["ok"]
    figures = row_["metrics"]["lda"]
    assert figures["new_patients"] >= 3 and figures["held_back"] == 0
    assert figures["persisting_patients"] > 0
    assert [p.run_id for p in history.published(RELEASE)] == [first.run_id, second.run_id]


def test_the_release_carries_the_first_trajectories_and_appends_the_new(runs, warehouse):
    _, second, published = runs
    now = table_rows(warehouse, RELEASE)
    assert now[:len(published)] == published or set(published) <= set(now)
    added = [r for r in now if r not in set(published)]
    assert added and all(r[0].startswith("G2-") for r in added)
    figures = audit(warehouse, RELEASE, second.run_id)["metrics"]["lda"]
    assert len({r[0] for r in added}) == figures["new_patients"]


def test_utility_with_and_without_the_defence_is_reported(runs, warehouse):
    figures = audit(warehouse, RELEASE, runs[1].run_id)["metrics"]["lda"]
    for name in ("ilm", "ilm_without_defence", "icd_kept_3digit_or_finer",
                 "icd_kept_3digit_or_finer_without_defence", "published_share", "stale_pairs"):
        assert name in figures, name
    assert 0 < figures["published_share"] <= 1
    # the release file's opt-in deviations are named beside the figures (both runs)
    for run in runs[:2]:
        words = audit(warehouse, RELEASE, run.run_id)["metrics"]["lda"]["deviations_from_paper"]
        assert words.startswith("member_weighted = true (")
        assert "; shared_code_bonus = 4" in words and "; lookahead = 20 (" in words


def test_the_releases_view_shows_both_runs(runs):
    first, second, _ = runs
    runs_table, history_table = releases_page(RELEASE)
    assert "no earlier release (the first)" in checked_cell(runs_table, first.run_id)
    assert f"<code>{first.run_id}</code>" in checked_cell(runs_table, second.run_id)
    assert f"<code>{first.run_id}</code>" in row(history_table, second.run_id)
    assert first.run_id in history_table


def test_a_third_run_with_nobody_new_loads_and_its_floor_is_not_measured(runs, warehouse):
    """Nobody arrived since the second run: the run publishes nothing new and
    carries the release.  It loads; the file's utility floor
    (``min_icd_kept_3digit_or_finer``) reads "not measured" instead of failing
    a scheduled run over a figure no new row has.  (Last in this module: it
    adds a run to the history.)"""
    third = run(RELEASE)
    row_ = audit(warehouse, RELEASE, third.run_id)
    assert str(third.state).endswith("success"), row_["error"]
    assert row_["metrics"]["lda"]["nothing_new_published"] is True
    floor, = [v for v in row_["verdicts"]["verdicts"]
              if v["property"].startswith("threshold icd_kept_3digit_or_finer")]
    assert floor["ok"] and floor["checked"] == 0 and floor["note"].startswith("not measured")
