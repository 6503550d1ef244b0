"""UGACLIP released twice while the warehouse's members change (issue 25):
the second run is append-only (``deid.append_only``) and passes validate's
cross-release check against the first; the same run with the defence off
is refused by it; the Releases view shows every run and what it was checked
against.

300 synthetic members; after the first run 30 arrive and 30 others leave.
The release file's copy lets a trigger turn ``successive_defence`` off
(``overrides: any``), so that the negative run is the same DAG.
"""

from __future__ import annotations

import pytest
from deid import history

from tests.dags.release_copies import forget_history
from tests.dags.successive_runs import (
    Members,
    audit,
    checked_cell,
    passed_against,
    release_copies,
    released,
    releases_page,
    row,
    run,
    table_rows,
)

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

RELEASE = "ugaclip_diagnoses"
ITEMS, RECORDS = f"{RELEASE}_items", f"{RELEASE}_records"
OFF, ON = {"successive_defence": False}, {"successive_defence": True}


release_files = release_copies(overrides={RELEASE: {"successive_defence": "any"}})


@pytest.fixture(scope="module")
def runs(warehouse):
    """Run 1; turnover; run 2 with the defence off; run 3 with it on."""
    members = Members(warehouse, [RELEASE])
    first = run(RELEASE)
    members.turn_over()
    published = {t: table_rows(warehouse, t) for t in (ITEMS, RECORDS)}
    digest = released(warehouse, RECORDS)
    off = run(RELEASE, OFF)
    after_off = released(warehouse, RECORDS)
    second = run(RELEASE, ON)
    yield first, off, second, published, digest, after_off, members
    forget_history(warehouse, RELEASE)


def test_without_the_defence_validate_refuses_the_second_run(runs, warehouse):
    first, off, _, _, digest, after_off, _ = runs
    assert str(first.state).endswith("success"), audit(warehouse, RELEASE, first.run_id)["error"]
    assert str(off.state).endswith("failed"), off.state
    states = {ti.task_id: str(ti.state) for ti in off.get_task_instances()}
    assert states["validate"].endswith("failed") and not states["load"].endswith("success")
    row_ = audit(warehouse, RELEASE, off.run_id)
    assert row_["outcome"] == "failed" and row_["checked_against"] == [first.run_id]
    assert "k-anonymity of ugaclip composed over 2 releases" in row_["error"]
    assert after_off == digest  # the first release stayed published
    assert first.run_id in [p.run_id for p in history.published(RELEASE)]


def test_with_the_defence_the_second_run_is_checked_and_published(runs, warehouse):
    first, _, second, published, _, _, members = runs
    row_ = passed_against(warehouse, RELEASE, first, second)
    carried, = [v for v in row_["verdicts"]["verdicts"] if v["property"].startswith("append-only")]
    assert carried["ok"] and first.run_id in carried["property"]
    figures = row_["metrics"]["ugaclip"]
    assert 3 <= figures["new_patients"] <= len(members.newcomers)
    assert figures["held_back"] == 0 and figures["persisting_patients"] <= 300 - 30
    # everyone in the cohort now (who has a code) is either published before or new
    assert figures["persisting_patients"] + figures["new_patients"] == \
        figures["n_records_without_defence"]
    first_figures = audit(warehouse, RELEASE, first.run_id)["metrics"]["ugaclip"]
    assert figures["carried_patients"] == first_figures["n_records"]
    assert [p.run_id for p in history.published(RELEASE)] == [first.run_id, second.run_id]


def test_the_release_carries_the_first_and_appends_the_new_patients(runs, warehouse):
    _, _, second, published, _, _, _ = runs
    items, records = table_rows(warehouse, ITEMS), table_rows(warehouse, RECORDS)
    assert set(published[ITEMS]) <= set(items) and set(published[RECORDS]) <= set(records)
    added = [r for r in records if r not in set(published[RECORDS])]
    assert added and all(p.startswith("G2-") for p, _ in added)
    first_items = {i for i, _ in published[ITEMS]}
    assert all(i not in first_items for _, i in added)  # new items, numbered after
    state = history.read_parts(RELEASE, second.run_id, history.STATE)
    links = state["state/published.links"]["link"]
    figures = audit(warehouse, RELEASE, second.run_id)["metrics"]["ugaclip"]
    assert len(links) == figures["new_patients"]
    assert not set(links) & Members.present_in(warehouse)  # keyed links, not source ids


def test_utility_with_and_without_the_defence_is_reported(runs, warehouse):
    second = runs[2]
    figures = audit(warehouse, RELEASE, second.run_id)["metrics"]["ugaclip"]
    for name in ("suppressed_share", "suppressed_share_without_defence", "published_share",
                 "stale_pairs"):
        assert name in figures, name
    assert 0 <= figures["suppressed_share"] <= 1
    assert 0 <= figures["suppressed_share_without_defence"] <= 1
    # append-only publishes no code a persisting patient gained, and none of
    # the leavers' is current: the publications carry part of the current pairs
    assert 0 < figures["published_share"] <= 1


def test_the_releases_view_shows_every_run_and_what_it_was_checked_against(runs):
    first, off, second = runs[:3]
    runs_table, history_table = releases_page(RELEASE)
    assert "no earlier release (the first)" in checked_cell(runs_table, first.run_id)
    for later in (off, second):
        assert f"<code>{first.run_id}</code>" in checked_cell(runs_table, later.run_id)
    assert "failed" in row(runs_table, off.run_id)
    assert off.run_id not in history_table
    assert f"<code>{first.run_id}</code>" in row(history_table, second.run_id)
    assert first.run_id in history_table
