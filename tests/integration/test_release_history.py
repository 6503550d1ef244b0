"""The release history in the restricted schema (deid.history, issue 25):
written in the swap's transaction, read back as it was published, append-only
for a loader login, invisible to a reader login."""

from __future__ import annotations

import contextlib

import psycopg2
import pandas as pd
import pytest
from deid import cross_release, history, load, steps

from tests.integration.test_least_privilege import _cursor

pytestmark = pytest.mark.warehouse
RELEASE = "history_test"


def _frame(n: int, tag: str) -> pd.DataFrame:
    return pd.DataFrame({"patient_pseudonym": [f"{tag}{i}" for i in range(n)],
                         "code_token": [f"{i % 7:016x}" for i in range(n)]})


def _publish(run_id: str, frame: pd.DataFrame, parts: dict, checked: list) -> None:
    built = load.build_all(RELEASE, run_id, RELEASE, {"medco_records": frame})
    entry = {"method": "medco", "scope": "TRUE", "params": {"k": 3},
             "fingerprint": history.fingerprint({"medco_records": frame}),
             "checked_against": checked}
    load.swap(RELEASE, run_id, built, {"history": {"entry": entry, "parts": parts}},
              {"method": "medco", "params": {"k": 3}, "seed": 1,
               "started_at": "2026-11-27 10:00:00+00", "checked_against": checked})


@pytest.fixture
def clean(warehouse):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("DELETE FROM restricted.release_history WHERE release_name = %s", (RELEASE,))
        cur.execute("DELETE FROM audit.release_runs WHERE release_name = %s", (RELEASE,))
    return warehouse


def test_fingerprint_is_of_the_tables_content():
    a, b = _frame(5, "p"), _frame(5, "p")
    assert history.fingerprint({"x": a}) == history.fingerprint({"x": b})
    assert history.fingerprint({"x": a}) != history.fingerprint({"y": a})
    b.loc[4, "code_token"] = "f" * 16
    assert history.fingerprint({"x": a}) != history.fingerprint({"x": b})


def test_a_streamed_table_has_the_fingerprint_of_its_frame(tmp_path, monkeypatch):
    from deid.parquet_io import ParquetFrame

    frame = _frame(11, "s")
    frame.to_parquet(tmp_path / "t.parquet", index=False, row_group_size=3)
    monkeypatch.setattr(history, "CHUNK_ROWS", 4)
    assert history.fingerprint({"x": ParquetFrame(tmp_path / "t.parquet")}) == \
        history.fingerprint({"x": frame})


def test_link_is_keyed_and_stable():
    ids = pd.Series(["A1", "B2", "A1"])
    one, other = history.link(ids, b"k1"), history.link(ids, b"k2")
    assert one[0] == one[2] != one[1] and "A1" not in one[0]
    assert (one != other).all()


def test_published_releases_and_their_parts_read_back(clean, monkeypatch):
    monkeypatch.setattr(history, "CHUNK_ROWS", 4)  # several chunks per part
    first, second = _frame(10, "a"), _frame(3, "b")
    truth = pd.DataFrame({"pseudonym": first["patient_pseudonym"], "is_dummy": [True, False] * 5})
    _publish("run-1", first, {"release/medco_records": first, "truth": truth,
                              "state/empty": truth.iloc[:0]}, [])
    _publish("run-2", second, {"release/medco_records": second}, ["run-1"])
    runs = history.published(RELEASE)
    assert [(p.run_id, p.checked_against, p.scope) for p in runs] == \
        [("run-1", [], "TRUE"), ("run-2", ["run-1"], "TRUE")]
    assert runs[0].fingerprint == history.fingerprint({"medco_records": first})
    assert [p.run_id for p in history.published(RELEASE, before="run-2")] == ["run-1"]
    parts = history.read_parts(RELEASE, "run-1")
    pd.testing.assert_frame_equal(parts["release/medco_records"], first)
    pd.testing.assert_frame_equal(parts["truth"], truth)
    assert list(parts["state/empty"].columns) == ["pseudonym", "is_dummy"]
    assert list(history.read_parts(RELEASE, "run-1", history.STATE)) == ["state/empty"]
    with clean.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT checked_against FROM audit.release_runs WHERE release_name = %s "
                    "ORDER BY run_id", (RELEASE,))
        assert [r[0] for r in cur.fetchall()] == [[], ["run-1"]]


def test_a_load_retried_after_its_swap_publishes_once(clean):
    frame = _frame(4, "r")
    _publish("run-r", frame, {"release/medco_records": frame}, [])
    _publish("run-r", frame, {"release/medco_records": frame.iloc[:1]}, [])
    assert len(history.published(RELEASE)) == 1
    assert len(history.read_parts(RELEASE, "run-r")["release/medco_records"]) == 4


def test_a_release_published_after_the_check_stops_the_swap(clean):
    """Validate checked against the history as it was; the swap, under the
    release's lock, refuses to publish beside a release it was not checked
    against, and rolls back."""
    frame = _frame(4, "c")
    _publish("run-1", frame, {}, [])
    with pytest.raises(history.StaleCheck, match=r"checked against \[\], but the published "
                                                 r"releases are now \['run-1'\]"):
        _publish("run-2", frame, {}, [])
    assert [p.run_id for p in history.published(RELEASE)] == ["run-1"]


def test_a_failed_swap_publishes_nothing(clean):
    frame = _frame(4, "f")
    built = load.build_all(RELEASE, "run-f", RELEASE, {"medco_records": frame})
    with pytest.raises(psycopg2.Error):  # the audit row lacks its method: the swap rolls back
        load.swap(RELEASE, "run-f", built, {"history": {"entry": {
            "method": "medco", "scope": "TRUE", "params": {}, "fingerprint": "x",
            "checked_against": []}, "parts": {"release/medco_records": frame}}},
            {"params": {}, "seed": 1, "started_at": "2026-11-27 10:00:00+00"})
    assert history.published(RELEASE) == []


@contextlib.contextmanager
def _as(warehouse, role: str):
    """An autocommit cursor of a fresh login holding ``role`` only."""
    if not warehouse.is_embedded():
        pytest.skip("logs in as a new role without a password: embedded warehouse only")
    login = f"test_history_{role}"
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(f"DROP ROLE IF EXISTS {login}")
        cur.execute(f"CREATE ROLE {login} LOGIN IN ROLE {role}")
    try:
        with _cursor(warehouse, login) as cur:
            yield cur
    finally:
        with warehouse.connect() as c, c.cursor() as cur:
            cur.execute(f"DROP ROLE IF EXISTS {login}")


@pytest.mark.parametrize("statement", [
    "DELETE FROM restricted.release_history",
    "DELETE FROM restricted.release_parts",
    "UPDATE restricted.release_history SET checked_against = '[]'",
    "UPDATE restricted.release_parts SET data = ''",
    "TRUNCATE restricted.release_history CASCADE",
])
def test_a_loader_may_not_rewrite_the_history(clean, statement):
    """The loader adds history in the swap; it may not change what was published."""
    with _as(clean, "deid_loader") as cur:
        cur.execute("SET ROLE deid_loader")
        cur.execute("SELECT count(*) FROM restricted.release_history")  # it reads it
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute(statement)


def test_a_reader_does_not_see_the_history(clean):
    with _as(clean, "deid_reader") as cur:
        for table in ("restricted.release_history", "restricted.release_parts"):
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(f"SELECT 1 FROM {table} LIMIT 1")


def test_the_releases_view_lists_the_history_with_what_each_was_checked_against(clean):
    from deid.releases_view import _history_table, _run_row, fetch_history, fetch_runs

    frame = _frame(3, "v")
    _publish("run-1", frame, {"check/records": frame}, [])
    _publish("run-2", frame, {"check/records": frame, "state/x": frame}, ["run-1"])
    with clean.connect() as conn, conn.cursor() as cur:
        published, runs = fetch_history(cur, RELEASE), fetch_runs(cur, RELEASE)
    assert [(p["run_id"], p["checked_against"], p["parts"]) for p in published] == \
        [("run-2", ["run-1"], ["check/records", "state/x"]), ("run-1", [], ["check/records"])]
    table = _history_table(published)
    assert "<code>run-1</code>" in table and "no earlier release (the first)" in table
    assert table.count("<tr>") == 3  # the header and two releases
    row = _run_row(RELEASE, {**[r for r in runs if r["run_id"] == "run-2"][0]})
    assert "<td class='checked'><code>run-1</code></td>" in row
    assert "not checked" in _run_row(RELEASE, {**runs[0], "checked_against": None})


def _earlier(method: str) -> list:
    return [history.Published(RELEASE, "run-1", method, "TRUE", {}, None, "f", [])]


def test_a_first_release_has_no_cross_release_verdict():
    assert cross_release.verdicts(None, "hhp", {"k": 3}, []) == []


def test_a_method_without_a_cross_release_verifier_is_not_published_twice():
    with pytest.raises(steps.ValidationFailed, match=rf"^HHP release {RELEASE} already published \['run-1'\] and HHP has no cross-release guarantee"):
        cross_release.verdicts(None, "hhp", {"k": 3}, _earlier("hhp"))


def test_an_earlier_release_of_another_method_is_not_compared():
    verdict, = cross_release.verdicts(None, "ugaclip", {"k": 3}, _earlier("lda"))
    assert not verdict["ok"] and "run-1 (lda)" in verdict["violations"][0]


def test_an_earlier_release_that_kept_nothing_fails_the_check(clean):
    frame = _frame(3, "n")
    _publish("run-1", frame, {}, [])
    run = steps.Run(RELEASE, "run-2")  # reads nothing of its own staging here
    verdict, = cross_release.verdicts(run, "ugaclip", {"k": 3}, _earlier("ugaclip"))
    assert not verdict["ok"] and "['run-1'] kept nothing" in verdict["violations"][0]
