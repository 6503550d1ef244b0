"""The Releases view reads the audit table with or without the run-record
columns (``triggered_by``, ``scope``, ``overrides``), and shows them when
they are there.  Each case runs in a transaction that is rolled back."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.warehouse

ROW = {"release_name": "view_audit_test", "run_id": "manual__1", "method": "ugaclip",
       "params": {"k": 5}, "seed": 1, "started_at": "2026-11-27 10:00:00+00",
       "outcome": "loaded", "output_rows": 3, "verdicts": {"verdicts": [], "gates": []},
       "metrics": {"ugaclip": {"suppressed_share": 0.888, "suppressed_codes": 516,
                               "n_codes": 601}}}


@pytest.fixture
def cur(warehouse):
    from deid.load import insert_audit

    conn = warehouse.psycopg2.connect(warehouse.dsn())
    try:
        with conn.cursor() as cur:
            insert_audit(cur, ROW)
            yield cur
    finally:
        conn.rollback()
        conn.close()


def test_runs_without_run_record_columns(cur):
    from deid.releases_view import _run_row, fetch_runs

    cur.execute("ALTER TABLE audit.release_runs DROP COLUMN IF EXISTS triggered_by, "
                "DROP COLUMN IF EXISTS scope, DROP COLUMN IF EXISTS overrides")
    run, = fetch_runs(cur, "view_audit_test")
    assert "triggered_by" not in run and run["metrics"]["ugaclip"]["suppressed_share"] == 0.888
    assert "low utility" in _run_row("view_audit_test", run)


def test_runs_with_run_record_columns(cur):
    from deid.releases_view import _run_row, fetch_runs

    cur.execute("ALTER TABLE audit.release_runs ADD COLUMN IF NOT EXISTS triggered_by text, "
                "ADD COLUMN IF NOT EXISTS scope text, ADD COLUMN IF NOT EXISTS overrides jsonb")
    cur.execute("UPDATE audit.release_runs SET triggered_by = 'alice', scope = 'TRUE', "
                "overrides = '{\"k\": 7}' WHERE release_name = 'view_audit_test'")
    run, = fetch_runs(cur, "view_audit_test")
    assert (run["triggered_by"], run["overrides"]) == ("alice", {"k": 7})
    row = _run_row("view_audit_test", run)
    assert "alice" in row and "overrides: <code>{&#34;k&#34;: 7}</code>" in row  # escaped


def test_a_bad_release_file_is_a_red_line_and_the_others_are_listed(warehouse, tmp_path,
                                                                      monkeypatch):
    """One bad file (k: 1) beside the good ones: the view answers, names the
    file and the field in a red line, and lists every good release."""
    from deid.releases_view import releases_page

    from tests.dags.release_copies import write_copies

    folder = write_copies(tmp_path / "releases")
    (folder / "broken.yaml").write_text("name: broken\nmethod: medco\nparams: {k: 1}\n")
    monkeypatch.setenv("DEID_RELEASES_DIR", str(folder))
    page = releases_page()
    broken = page[page.index("class='broken'"):page.index("</section>")]
    assert "<code>broken.yaml</code>, field <code>params.k</code>" in broken
    for path in folder.glob("*.yaml"):
        if path.name != "broken.yaml":
            assert f"<h2>{path.stem}</h2>" in page
