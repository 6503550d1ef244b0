"""Extract: COPY of the normalized claims into owner-only Parquet staging."""

from __future__ import annotations

import stat

import pandas as pd
import pytest
from deid import staging
from tools.demo_data import load_synthetic
from deid.extract import extract_to_parquet

from anonymizers.errors import InputError

pytestmark = pytest.mark.warehouse


@pytest.fixture
def synthetic(empty_source):
    return load_synthetic(n_members=200, seed=7)


def test_extract_matches_the_source_claims(synthetic, empty_source, tmp_path):
    out = tmp_path / "claims.parquet"
    stats = extract_to_parquet(out)
    df = pd.read_parquet(out)
    assert list(df.columns) == ["patient_id", "claim_id", "service_date", "age_at_service",
                                "code"]
    assert stats["rows"] == len(df) and stats["patients"] == df["patient_id"].nunique()
    with empty_source.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM (SELECT desynpuf_id, clm_id FROM source.carrier_claims"
                    " UNION ALL SELECT desynpuf_id, clm_id FROM source.inpatient_claims"
                    " UNION ALL SELECT desynpuf_id, clm_id FROM source.outpatient_claims) c")
        n_claims = cur.fetchone()[0]
    assert df["claim_id"].nunique() == n_claims
    assert not df.duplicated(["claim_id", "code"]).any()
    assert df["age_at_service"].between(0, 103).all()
    assert df["service_date"].min() >= pd.Timestamp("2008-01-01").date()


def test_scope_filter_restricts_claims(synthetic, tmp_path):
    all_rows = extract_to_parquet(tmp_path / "a.parquet")["rows"]
    scoped = extract_to_parquet(tmp_path / "b.parquet", "c.clm_from_dt >= '2010-01-01'")
    assert 0 < scoped["rows"] < all_rows
    with pytest.raises(InputError, match="one SQL expression"):
        extract_to_parquet(tmp_path / "c.parquet", "TRUE; DROP TABLE source.carrier_claims")
    with pytest.raises(InputError, match="subquery"):
        extract_to_parquet(tmp_path / "d.parquet",
                           "(SELECT count(*) FROM source.beneficiary_summary) > 0")
    assert not (tmp_path / "c.parquet").exists() and not (tmp_path / "d.parquet").exists()


def test_a_data_error_names_no_source_value(synthetic, tmp_path):
    """A cast that fails on a source value: PostgreSQL would quote the value
    (an identifier here); the run's error withholds the message."""
    extract_to_parquet(tmp_path / "a.parquet")
    ids = pd.read_parquet(tmp_path / "a.parquet")["patient_id"].unique()
    with pytest.raises(InputError, match="withheld") as err:
        extract_to_parquet(tmp_path / "e.parquet", "CAST(c.desynpuf_id AS integer) = 0")
    assert "22P02" in str(err.value) and err.value.__cause__ is None
    assert not any(i in str(err.value) for i in ids)
    assert not (tmp_path / "e.parquet").exists()


def test_extract_transactions_are_read_only(synthetic):
    """The second wall behind the scope check: the extracts' connection
    cannot write, whatever its query holds."""
    import psycopg2.errors
    from deid.warehouse import connect

    with pytest.raises(psycopg2.errors.ReadOnlySqlTransaction), \
            connect(readonly=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        cur.execute("DELETE FROM source.carrier_claims")
    with connect(readonly=True) as conn, conn.cursor() as cur:
        cur.execute("SHOW transaction_read_only")
        assert cur.fetchone()[0] == "on"
        cur.execute("SELECT count(*) FROM source.carrier_claims")
        assert cur.fetchone()[0] > 0


def test_bad_code_in_the_warehouse_names_table_and_field(synthetic, empty_source, tmp_path):
    first = "clm_id = (SELECT min(clm_id) FROM source.carrier_claims)"
    with empty_source.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT icd9_dgns_cd_2 FROM source.carrier_claims WHERE {first}")
        before = cur.fetchone()[0]
        cur.execute(f"UPDATE source.carrier_claims SET icd9_dgns_cd_2 = 'NOT-A-CODE' "
                    f"WHERE {first}")
    with pytest.raises(InputError) as err:
        extract_to_parquet(tmp_path / "claims.parquet")
    assert err.value.source == "source.carrier_claims" and err.value.field == "code"
    assert err.value.row is not None and "NOT-A-CODE" not in str(err.value)
    with empty_source.connect() as conn, conn.cursor() as cur:  # a test after may extract it
        cur.execute(f"UPDATE source.carrier_claims SET icd9_dgns_cd_2 = %s WHERE {first}",
                    (before,))


def test_staging_is_owner_only_and_removed(tmp_path):
    path = staging.run_dir("medco_codes", "manual__2026-01-01T00:00:00+00:00")
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert "dags" not in path.parts
    (path / "x").write_text("identifiable")
    assert staging.cleanup("medco_codes", "manual__2026-01-01T00:00:00+00:00")
    assert not path.exists()


def test_an_unparsable_row_stops_without_its_content_in_the_message():
    import io

    from deid.extract import SCHEMA, read_blocks

    bad = io.BufferedReader(io.BytesIO(b"P1,c1,2008-01-01,70,4019\nSECRETID,c2,not-a-date,70,4019\n"))
    with pytest.raises(InputError) as err:
        list(read_blocks(bad, SCHEMA, "the extract", True))
    assert "SECRETID" not in str(err.value) and "does not fit the schema" in str(err.value)
    short = io.BufferedReader(io.BytesIO(b"SECRETID,c1\n"))
    with pytest.raises(InputError) as err:
        list(read_blocks(short, SCHEMA, "the extract", True))
    assert "SECRETID" not in str(err.value)
