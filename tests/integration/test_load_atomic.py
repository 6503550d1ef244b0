"""Atomic loads and least-privilege roles against the real warehouse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import psycopg2
import pytest
from deid import load
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.warehouse
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _audit(run_id):
    return {"release_name": "atomic_test", "run_id": run_id, "method": "medco", "params": {},
            "seed": 1, "started_at": "2026-01-01T00:00:00+00:00"}


def _frame(n, prefix):
    return pd.DataFrame({"patient_pseudonym": [f"{prefix}{i}" for i in range(n)],
                         "code_token": ["0" * 16] * n})


def _release_rows(warehouse):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*), min(patient_pseudonym) FROM release.atomic_test")
        return cur.fetchone()


def _load(run_id, n, prefix):
    built = load.build_all("atomic_test", run_id, "atomic_test",
                           {"medco_records": _frame(n, prefix)})
    load.swap("atomic_test", run_id, built, {}, _audit(run_id))


CHILD = """
import sys, time
sys.path[:0] = [{root!r}, {root!r} + "/plugins"]
import pandas as pd
from deid import load, warehouse
frame = pd.DataFrame({{"patient_pseudonym": [f"new{{i}}" for i in range(500)],
                      "code_token": ["1" * 16] * 500}})
built = load.build_all("atomic_test", "run-2", "atomic_test", {{"medco_records": frame}})
with warehouse.connect() as conn, conn.cursor() as cur:
    load.swap_in(cur, "atomic_test", "run-2", built, {{}}, {audit!r})
    print("swapped, not committed", flush=True)
    time.sleep(60)
"""


def test_killing_the_load_midway_keeps_the_previous_release(warehouse):
    _load("run-1", 100, "old")
    assert _release_rows(warehouse) == (100, "old0")
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=ROOT, audit=_audit("run-2"))],
                             stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        for line in child.stdout:  # Airflow's log lines (the warehouse lookup) may come first
            if line.strip() == "swapped, not committed":
                break
        else:
            pytest.fail("the child ended without saying it had swapped")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    for _ in range(50):  # the server notices the dead client and rolls back
        try:
            assert _release_rows(warehouse) == (100, "old0")
            break
        except psycopg2.Error:
            time.sleep(0.1)
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM audit.release_runs WHERE run_id = 'run-2'")
        assert cur.fetchone()[0] == 0
    _load("run-3", 50, "next")  # the next run succeeds over the leftover build table
    assert _release_rows(warehouse) == (50, "next0")


def test_reader_role_reads_release_and_nothing_else(warehouse):
    if not warehouse.is_embedded():
        pytest.skip("logs in as a new role without a password: embedded warehouse only")
    _load("run-r", 10, "r")
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("DROP ROLE IF EXISTS test_analyst")
        cur.execute("CREATE ROLE test_analyst LOGIN IN ROLE deid_reader")
    reader = psycopg2.connect(warehouse.dsn(), user="test_analyst")
    reader.autocommit = True
    try:
        with reader.cursor() as cur:
            cur.execute("SELECT current_user")
            assert cur.fetchone()[0] == "test_analyst"
            cur.execute("SELECT count(*) FROM release.atomic_test")
            assert cur.fetchone()[0] == 10
            for table in ("source.carrier_claims", "restricted.dummy_map",
                          "restricted.token_keys", "audit.release_runs"):
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(f"SELECT 1 FROM {table} LIMIT 1")
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute("CREATE TABLE release.sneaky (x int)")
    finally:
        reader.close()


def _naive_policy_rows(policy, release, run_id):
    return [(release, run_id, policy["k"], policy["filter"], i, c)
            for i, cons in enumerate(policy["constraints"]) for c in cons]


CODES = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)


@given(st.lists(st.lists(CODES, max_size=6), max_size=12), st.integers(1, 50),
       st.one_of(st.none(), st.text(max_size=5)))
@settings(max_examples=60, deadline=None)
def test_policy_frame_has_one_row_per_constraint_code(constraints, k, filt):
    policy = {"k": k, "filter": filt, "constraints": constraints}
    frame = load.policy_frame(policy, "rel", "run-1")
    assert list(frame.columns) == ["release_name", "run_id", "k", "filter", "constraint_id",
                                   "code"]
    rows = [tuple(None if v is None or (isinstance(v, float) and v != v) else v for v in r)
            for r in frame.astype(object).itertuples(index=False)]
    assert rows == _naive_policy_rows(policy, "rel", "run-1")


def test_swap_writes_the_policy_rows(warehouse):
    policy = {"k": 5, "filter": "icd9", "constraints": [["250", "401.9"], [], ["V70"]]}
    built = load.build_all("atomic_test", "run-p", "atomic_test",
                           {"medco_records": _frame(3, "p")})
    load.swap("atomic_test", "run-p", built, {"policy": policy}, _audit("run-p"))
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT k, filter, constraint_id, code FROM restricted.privacy_policies "
                    "WHERE release_name = 'atomic_test' AND run_id = 'run-p' "
                    "ORDER BY constraint_id, code")
        assert cur.fetchall() == [(5, "icd9", 0, "250"), (5, "icd9", 0, "401.9"),
                                  (5, "icd9", 2, "V70")]
