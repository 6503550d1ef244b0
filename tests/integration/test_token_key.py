"""The token key lives only in Airflow's secrets (issue 26, item 5): the
warehouse keeps its fingerprint; code tokens and pseudonyms use separate
subkeys derived from it."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import pytest
from deid import secret

from tests.dags.release_copies import forget_history, write_copies

KEY = os.environ["AIRFLOW_VAR_DEID_TOKEN_KEY"]
TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb", "name")


def test_hkdf_expand_matches_an_independent_implementation():
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

    # RFC 5869 test case 1: its PRK and info
    prk = bytes.fromhex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    expected = HKDFExpand(hashes.SHA256(), 32, info).derive(prk)
    assert secret.hkdf_expand(prk, info) == expected
    assert expected.hex().startswith("3cb25f25faacd57a90434f64d0362f2a")  # RFC 5869 A.1 OKM


def test_subkeys_are_distinct_and_none_is_the_key_or_its_plain_hash():
    values = {secret.code_token_key(KEY), secret.pseudonym_key(KEY),
              bytes.fromhex(secret.key_fingerprint(KEY))}
    assert len(values) == 3 and all(len(v) == 32 for v in values)
    plain = {KEY.encode(), hashlib.sha256(KEY.encode()).digest(),
             hashlib.sha256(b"fingerprint:" + KEY.encode()).digest()}  # the old fingerprint
    assert not values & plain
    assert secret.code_token_key(KEY) == secret.code_token_key(KEY)  # stable
    other = "another-key-entirely"
    assert secret.code_token_key(other) != secret.code_token_key(KEY)
    assert secret.key_fingerprint(other) != secret.key_fingerprint(KEY)


def test_derivation_follows_its_definition(monkeypatch):
    """scrypt of the key, then HKDF-Expand under each label, with nothing else
    mixed in: the key read from the environment gives the same values."""
    monkeypatch.setenv(secret.ENV, KEY)
    prk = hashlib.scrypt(KEY.encode(), salt=secret.SALT, n=2 ** 14, r=8, p=1, dklen=32)
    for purpose, label in secret.LABELS.items():
        assert secret.derive(purpose) == hmac.new(prk, label + b"\x01",
                                                  hashlib.sha256).digest()
    assert secret.pseudonym_key() == secret.pseudonym_key(KEY)


def test_missing_key_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(secret.ENV, "")
    monkeypatch.setattr("airflow.sdk.Variable.get", lambda *a, **k: (_ for _ in ()).throw(
        KeyError("deid_token_key")))
    with pytest.raises(RuntimeError, match="deid_token_key"):
        secret.pseudonym_key()


def _text_columns(cur) -> list[tuple[str, str, str]]:
    cur.execute("SELECT table_schema, table_name, column_name FROM information_schema.columns "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                "AND table_schema NOT LIKE 'pg_toast%%' AND data_type = ANY(%s)",
                (list(TEXT_TYPES),))
    return cur.fetchall()


def _columns_holding(cur, needles: list[str]) -> list[str]:
    """Every text-typed column with a value that contains one of ``needles``."""
    found = []
    for schema, table, column in _text_columns(cur):
        cur.execute(f'SELECT count(*) FROM "{schema}"."{table}" WHERE '
                    + " OR ".join([f'position(%s IN "{column}"::text) > 0'] * len(needles)),
                    needles)
        if cur.fetchone()[0]:
            found.append(f"{schema}.{table}.{column}")
    return found


@pytest.mark.airflow
@pytest.mark.warehouse
def test_after_a_medco_run_no_column_holds_the_key_and_the_fingerprint_is_there(
        warehouse, tmp_path, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag
    from tools.demo_data import TABLES, load_synthetic

    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))
    forget_history(warehouse, "medco_codes")  # new members: a first release
    load_synthetic(n_members=200, seed=8)
    # the tests' copy of the release file is the run's policy (k 3 on 200 members)
    monkeypatch.setenv("DEID_RELEASES_DIR", str(write_copies(tmp_path / "releases")))
    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag("deid_medco_codes")
    run = dag.test(run_conf={"scope": "TRUE"})
    assert str(run.state).endswith("success"), run.state
    needles = [KEY, secret.code_token_key(KEY).hex(), secret.pseudonym_key(KEY).hex()]
    with warehouse.connect() as conn, conn.cursor() as cur:
        columns = _text_columns(cur)
        assert ("restricted", "token_keys", "key_sha256") in columns  # the scan sees it
        assert ("release", "medco_codes", "code_token") in columns
        assert _columns_holding(cur, needles) == []
        cur.execute("SELECT key_sha256 FROM restricted.token_keys WHERE release_name = "
                    "'medco_codes' AND run_id = %s", (run.run_id,))
        assert cur.fetchall() == [(secret.key_fingerprint(KEY),)]
        assert _columns_holding(cur, [secret.key_fingerprint(KEY)]) == [
            "restricted.token_keys.key_sha256"]  # the scan finds what is there
        cur.execute("SELECT report_path FROM audit.release_runs WHERE run_id = %s "
                    "AND release_name = 'medco_codes'", (run.run_id,))
        report = Path(cur.fetchone()[0]).read_text()
    assert KEY not in report


def test_medco_tokens_are_keyed_by_the_code_token_subkey(tmp_path):
    """Not by the secret itself, nor by the pseudonym subkey."""
    import pandas as pd
    from deid.methods import medco

    class Run:
        def path(self, name):
            return tmp_path / name

    codes = ["250.00", "401.9", "V70"]
    pd.DataFrame({"patient_id": ["p1", "p2", "p3"], "code": codes}).to_parquet(
        tmp_path / "released.parquet")
    tokens = list(medco.release_tables(Run(), {}, KEY)["medco_records"]["code_token"])

    def keyed(key):
        return [hmac.new(key, c.encode(), hashlib.sha256).hexdigest()[:16] for c in codes]

    assert tokens == keyed(secret.code_token_key(KEY))
    assert tokens != keyed(KEY.encode()) and tokens != keyed(secret.pseudonym_key(KEY))


@pytest.mark.warehouse
def test_setup_removes_a_key_kept_in_clear_from_the_table_file(warehouse):
    """An older warehouse kept the key in restricted.token_keys.token_key: the
    setup drops the column and rewrites the table, so that the key leaves the
    data file too (checked on the file itself, after a checkpoint)."""
    if not warehouse.is_embedded():
        pytest.skip("reads the table's data file: embedded (superuser) warehouse only")
    from deid import admin_setup

    old_key = "old-clear-key-" + os.urandom(8).hex()
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("ALTER TABLE restricted.token_keys ADD COLUMN token_key text")
        cur.execute("INSERT INTO restricted.token_keys VALUES ('old_release', 'old-run', "
                    "'fp', %s)", (old_key,))
    try:
        assert old_key.encode() in _table_file(warehouse)  # the check can see it
        admin_setup.setup()
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT column_name FROM information_schema.columns WHERE "
                        "table_schema = 'restricted' AND table_name = 'token_keys'")
            assert {r[0] for r in cur.fetchall()} == {"release_name", "run_id", "key_sha256"}
            cur.execute("SELECT key_sha256 FROM restricted.token_keys WHERE run_id = 'old-run'")
            assert cur.fetchall() == [("fp",)]
        assert old_key.encode() not in _table_file(warehouse)
    finally:
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute("DELETE FROM restricted.token_keys WHERE run_id = 'old-run'")
            cur.execute("ALTER TABLE restricted.token_keys DROP COLUMN IF EXISTS token_key")


def _table_file(warehouse) -> bytes:
    with warehouse.connect(autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CHECKPOINT")
        cur.execute("SELECT pg_read_binary_file(pg_relation_filepath('restricted.token_keys'))")
        return bytes(cur.fetchone()[0])
