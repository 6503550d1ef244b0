"""The report and the Releases view escape every value they show (jinja2
templates with autoescape, ``deid/templates``): a release name, a metric or
a run note holding markup is shown as text, never run as markup."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pytest

from tests.dags.test_report_utility import Text, holds, verdicts

SCRIPT = "<script>alert(1)</script>"
# a release name is a file name in the report's path: no slash in it
NAME = "<script>alert('name')"
QUOTE = "x' onmouseover='alert(2)"  # leaves a single-quoted attribute if unescaped
METRICS = {"suppressed_share": 0.5, SCRIPT: SCRIPT, "note": QUOTE}
RECORD = {"triggered_by": SCRIPT, "scope": f"c.code = '{SCRIPT}'", "overrides": {"k": SCRIPT}}


def assert_inert(raw: str, *shown: str) -> None:
    """No markup of ours in the page, and each value shown as text."""
    assert "<script" not in raw.lower() and "onmouseover='" not in raw
    text = Text(raw).text
    for value in shown:
        assert value in text, value


def test_the_report_escapes_release_name_metrics_and_run_record(tmp_path, monkeypatch):
    monkeypatch.setenv("DEID_REPORTS_DIR", str(tmp_path))
    from deid.report import write_report

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    verdict = verdicts(holds(SCRIPT), {"property": "threshold x", "ok": False, "checked": 1,
                                       "violations": [SCRIPT]})
    path = write_report(NAME, f"manual__{SCRIPT}", "ugaclip",
                        {"k": 5, "run_record": RECORD, QUOTE: SCRIPT}, METRICS, verdict,
                        [(QUOTE, fig)])
    raw = path.read_text()
    assert_inert(raw, NAME, SCRIPT, QUOTE, RECORD["scope"])
    assert raw.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5


def test_the_releases_view_escapes_release_name_metrics_and_run_notes(monkeypatch):
    from deid import releases, releases_view

    rel = SimpleNamespace(name=NAME, description=SCRIPT, method="ugaclip", schedule=SCRIPT,
                          destination=QUOTE)
    run = {"run_id": SCRIPT, "method": "ugaclip", "outcome": QUOTE, "seed": 1,
           "params": {"k": 5, "note": SCRIPT}, "metrics": {"ugaclip": METRICS, SCRIPT: {"a": 1}},
           "verdicts": verdicts(), "error": SCRIPT, "report_path": f"/x/{QUOTE}.html",
           "ended_at": SCRIPT, "output_rows": 3, "checked_against": [SCRIPT], **RECORD}
    failed = {**run, "outcome": "failed"}
    published = [{"published_at": SCRIPT, "run_id": SCRIPT, "scope": SCRIPT,
                  "fingerprint": "0" * 64, "checked_against": [QUOTE], "parts": [SCRIPT]}]
    monkeypatch.setattr(releases_view, "recent_runs", lambda name: ([run, failed], published))
    monkeypatch.setattr(releases, "load_all_with_errors", lambda: (
        [rel], [(Path(f"{QUOTE}.yaml"), SCRIPT, SCRIPT)]))
    raw = releases_view.releases_page()
    assert_inert(raw, NAME, SCRIPT, QUOTE, f"failed: {SCRIPT}", RECORD["scope"])
    assert "<section class='broken'>" in raw and "<table class='runs'>" in raw  # ours stay


@pytest.mark.parametrize("piece", ["_run_row", "_history_table"])
def test_each_piece_of_the_view_escapes_on_its_own(piece):
    from deid import releases_view

    if piece == "_run_row":
        raw = releases_view._run_row(NAME, {"run_id": SCRIPT, "method": "medco",
                                            "outcome": "loaded", "params": {}, "metrics": {},
                                            "verdicts": verdicts(), "ended_at": QUOTE,
                                            "overrides": {"k": SCRIPT}})
    else:
        raw = releases_view._history_table([{"published_at": QUOTE, "run_id": SCRIPT,
                                             "scope": SCRIPT, "fingerprint": SCRIPT,
                                             "checked_against": [SCRIPT], "parts": None}])
    assert_inert(raw, SCRIPT[:16])
