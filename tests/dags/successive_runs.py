"""What the successive-release DAG tests share (issue 25): a warehouse whose
members change between two runs of a release, and readers of what the runs
left (audit row, release tables, the Releases view)."""

from __future__ import annotations

import os

import pytest
from tools.demo_data import TABLES, load_synthetic

from tests.dags.release_copies import TEST_POLICY, forget_history, write_copies

TURNOVER = 30  # of 300 members, as the 300 of 3,000


def query(warehouse, sql, *args):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else None


class Members:
    """The source schema's 300 + ``TURNOVER`` synthetic members, ``TURNOVER``
    of them held back (in a schema of the test's) to arrive later; the
    history of ``releases`` is forgotten, so that their next runs are first
    releases."""

    HELD = "test_successive_held"

    def __init__(self, warehouse, releases):
        self.warehouse = warehouse
        query(warehouse, "TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))
        for release in releases:
            forget_history(warehouse, release)
        load_synthetic(n_members=300 + TURNOVER, seed=5)
        ids = sorted(self.present())
        self.newcomers, self.leavers = ids[:TURNOVER], ids[TURNOVER:2 * TURNOVER]
        query(warehouse, f"DROP SCHEMA IF EXISTS {self.HELD} CASCADE; CREATE SCHEMA {self.HELD}")
        for table in TABLES:
            query(warehouse, f"CREATE TABLE {self.HELD}.{table} AS SELECT * FROM "
                  f"source.{table} WHERE desynpuf_id = ANY(%s)", self.newcomers)
        self.remove_from(warehouse, self.newcomers)

    @staticmethod
    def remove_from(warehouse, ids) -> None:
        for table in TABLES:
            query(warehouse, f"DELETE FROM source.{table} WHERE desynpuf_id = ANY(%s)",
                  list(ids))

    def turn_over(self) -> None:
        """The newcomers arrive and the leavers leave."""
        for table in TABLES:
            query(self.warehouse, f"INSERT INTO source.{table} SELECT * FROM {self.HELD}.{table}")
        query(self.warehouse, f"DROP SCHEMA {self.HELD} CASCADE")
        self.remove_from(self.warehouse, self.leavers)

    def present(self) -> set[str]:
        return self.present_in(self.warehouse)

    @staticmethod
    def present_in(warehouse) -> set[str]:
        return {r[0] for r in query(warehouse, "SELECT DISTINCT desynpuf_id FROM "
                                               "source.beneficiary_summary")}


def dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(dag_id)


def audit(warehouse, release: str, run_id: str) -> dict:
    (row,) = query(warehouse, "SELECT outcome, error, checked_against, verdicts, metrics "
                   "FROM audit.release_runs WHERE release_name = %s AND run_id = %s",
                   release, run_id)
    return dict(zip(("outcome", "error", "checked_against", "verdicts", "metrics"), row))


def released(warehouse, table: str):
    """Rows and a digest of a release table."""
    return query(warehouse, f"SELECT count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) "
                            f"FROM release.{table} t")[0]


def table_rows(warehouse, table: str) -> list[tuple]:
    return query(warehouse, f"SELECT * FROM release.{table}")


def releases_page(release: str) -> tuple[str, str]:
    """The Releases view's section of ``release``: (its runs table, its
    release history table)."""
    from deid.releases import load_all_with_errors
    from deid.releases_view import _release_section

    rel, = [r for r in load_all_with_errors()[0] if r.name == release]
    page = _release_section(rel)
    cut = page.index("<h3>Release history</h3>")
    return page[:cut], page[cut:]


def row(table: str, run_id: str) -> str:
    start = table.index(f"<td>{run_id}</td>")
    return table[table.rindex("<tr>", 0, start):table.index("</tr>", start)]


def checked_cell(runs_table: str, run_id: str) -> str:
    cell = row(runs_table, run_id)
    cell = cell[cell.index("class='checked'"):]
    return cell[:cell.index("</td>")]


def crossed(audit_row: dict, n: int) -> list[dict]:
    """The cross-release verdicts over ``n`` releases of a run's audit row."""
    return [v for v in audit_row["verdicts"]["verdicts"] if f"over {n} releases" in v["property"]]


def release_copies(policy: dict = TEST_POLICY, overrides: dict | None = None):
    """A module's autouse fixture pointing ``DEID_RELEASES_DIR`` at copies of
    the release files (``release_copies.write_copies``)."""

    @pytest.fixture(scope="module", autouse=True)
    def release_files(tmp_path_factory):
        mp = pytest.MonkeyPatch()
        folder = write_copies(tmp_path_factory.mktemp("releases"), policy, overrides)
        mp.setenv("DEID_RELEASES_DIR", str(folder))
        mp.setenv("AIRFLOW_VAR_DEID_TOKEN_KEY", os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY")
                  or "test-key-not-secret")
        yield folder
        mp.undo()

    return release_files


def run(release: str, conf: dict | None = None):
    """One run of the release's DAG, parsed afresh (dag.test keeps a run's
    conf in its DAG's params)."""
    return dag(f"deid_{release}").test(run_conf=conf or {})


def two_runs(warehouse, release: str, table: str | None = None):
    """Run 1; the members turn over; run 2.  Returns the runs and, with
    ``table``, that release table's rows after run 1."""
    members = Members(warehouse, [release])
    first = run(release)
    published = table_rows(warehouse, table) if table else None
    members.turn_over()
    return first, run(release), published


def passed_against(warehouse, release: str, first, second) -> dict:
    """Assert that ``second`` loaded after validate checked it against
    ``first`` (one cross-release verdict over 2 releases, passed); its audit row."""
    assert str(first.state).endswith("success"), audit(warehouse, release, first.run_id)["error"]
    row_ = audit(warehouse, release, second.run_id)
    assert str(second.state).endswith("success"), row_["error"]
    assert row_["checked_against"] == [first.run_id]
    check, = crossed(row_, 2)
    assert check["ok"] and check["checked"] > 0, check
    return row_
