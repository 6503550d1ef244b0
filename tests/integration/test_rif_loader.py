"""The CCW RIF loader: CMS's Synthea RIF sample (its own export summary's
counts) and malformed files naming the file, row and field."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest
from deid.admin_setup import RIF_TABLES
from deid.rif_loader import (
    kind_of,
    load_files,
    read_beneficiaries,
    read_claims,
    read_files,
)

from anonymizers.errors import InputError

TRUNCATE_RIF = "TRUNCATE " + ", ".join(f"source.{t}" for t in RIF_TABLES)
SUMMARY_COLUMNS = {"carrier": "CARRIER_CLAIMS", "dme": "DME_CLAIMS", "hha": "HHA_CLAIMS",
                   "hospice": "HOSPICE_CLAIMS", "inpatient": "INPATIENT_CLAIMS",
                   "outpatient": "OUTPATIENT_CLAIMS", "snf": "SNF_CLAIMS"}


@pytest.fixture
def rif(datasets_dir):
    return datasets_dir / "rif_synthea"


@pytest.mark.datasets
def test_sample_reproduces_the_export_summary(rif):
    summary = pd.read_csv(rif / "export_summary.csv.gz", dtype={"BENE_ID": str})
    files = [rif / f"{kind}.csv.gz" for kind in SUMMARY_COLUMNS]
    frames = read_files(files + [rif / "beneficiary_2015.csv.gz"], drop_unknown=True)
    claims = frames["rif_claims"]
    counts = claims.groupby(["bene_id", "claim_type"]).size().unstack(fill_value=0)
    for kind, col in SUMMARY_COLUMNS.items():
        expected = dict(zip(summary["BENE_ID"], summary[col]))
        got = counts[kind].to_dict() if kind in counts else {}
        assert {b: got.get(b, 0) for b in expected} == expected, kind
    assert claims["clm_id"].is_unique
    assert len(frames["rif_beneficiary"]) == 3
    dx = frames["rif_diagnoses"]
    assert set(dx["code_system"]) == {"icd10cm"} and dx["code"].str.len().ge(3).all()
    # Synthea wrote placeholder-padded partial codes (M8000X, S8290X: the
    # 7th character missing); ICD-10-CM has no such code, so they are dropped
    assert frames["dropped_diagnoses"] == {"carrier.csv.gz": 0, "dme.csv.gz": 2, "hha.csv.gz": 0,
                                       "hospice.csv.gz": 0, "inpatient.csv.gz": 2,
                                       "outpatient.csv.gz": 0, "snf.csv.gz": 0}


@pytest.mark.datasets
def test_sample_partial_codes_are_refused_by_default(rif):
    with pytest.raises(InputError) as err:
        read_claims(rif / "dme.csv.gz")
    assert err.value.row == 1 and err.value.field == "ICD_DGNS_CD8"
    assert "M80" not in str(err.value)


@pytest.mark.datasets
def test_claim_lines_are_deduplicated_to_claims(rif):
    got = read_claims(rif / "carrier.csv.gz")
    assert (got.lines, len(got.claims)) == (221, 37)
    line_dx = got.diagnoses[got.diagnoses["field"] == "LINE_ICD_DGNS_CD"]
    assert line_dx["line_num"].notna().all()
    claim_dx = got.diagnoses[got.diagnoses["field"] != "LINE_ICD_DGNS_CD"]
    assert not claim_dx.duplicated(["clm_id", "field"]).any()


HEADER = ["DML_IND", "BENE_ID", "CLM_ID", "CLM_FROM_DT", "CLM_THRU_DT", "PRNCPAL_DGNS_CD",
          "PRNCPAL_DGNS_VRSN_CD", "ICD_DGNS_CD1", "ICD_DGNS_VRSN_CD1", "LINE_NUM",
          "LINE_ICD_DGNS_CD", "LINE_ICD_DGNS_VRSN_CD"]


def _line(clm="-1", line="1", date="30-May-2015", dx="I10", flag="0", dx1="E11.9",
          flag1="0", line_dx="S52.521A"):
    return ["INSERT", "-1000006", clm, date, date, dx, flag, dx1, flag1, line, line_dx, "0"]


def _write(tmp_path, name, rows, bom=False):
    text = "\n".join("|".join(r) for r in [HEADER, *rows])
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def test_reads_lines_bom_versions_and_mixed_systems(tmp_path):
    path = _write(tmp_path, "carrier.csv.gz",
                  [_line(), _line(line="2", line_dx="T36.0X1A"),
                   _line(clm="-2", dx="4011", flag="9", dx1="", flag1=" ")], bom=True)
    got = read_claims(path)
    assert got.claims["clm_id"].tolist() == ["-1", "-2"]
    assert got.claims["clm_from_dt"].tolist() == ["2015-05-30", "2015-05-30"]
    dx = got.diagnoses
    # claim-level codes once for the claim's two lines, line codes per line
    assert sorted(dx.loc[dx["clm_id"] == "-1", "code"]) == ["E119", "I10", "S52521A",
                                                            "T360X1A"]
    assert dx.loc[dx["code"] == "4011", "code_system"].tolist() == ["icd9cm"]


@pytest.mark.parametrize("rows, row, field", [
    ([_line(), _line(line="2", date="2015-05-30")], 2, "CLM_FROM_DT"),
    ([_line(), _line(clm="")], 2, "CLM_ID"),
    ([_line(), _line(clm="-2", flag="1")], 2, "PRNCPAL_DGNS_VRSN_CD"),
    ([_line(clm="-2", dx="I10", flag="9")], 1, "PRNCPAL_DGNS_CD"),
    ([_line(), _line(clm="-2"), _line(clm="-2", line="2", dx="E11.9")], 3, "PRNCPAL_DGNS_CD"),
    ([_line(), _line(line="2", line_dx="Q99.9ZZ")], 2, "LINE_ICD_DGNS_CD"),
])
def test_malformed_row_names_file_row_and_field(tmp_path, rows, row, field):
    path = _write(tmp_path, "carrier.csv", rows)
    with pytest.raises(InputError) as err:
        read_claims(path)
    assert (err.value.source, err.value.row, err.value.field) == (str(path), row, field)


def test_missing_column_and_file_names(tmp_path):
    path = tmp_path / "inpatient.csv"
    path.write_text("BENE_ID|CLM_ID\n-1|-2\n")
    with pytest.raises(InputError) as err:
        read_claims(path)
    assert err.value.field == "CLM_FROM_DT"
    assert kind_of(Path("beneficiary_2019.csv.gz")) == ("beneficiary", 2019)
    with pytest.raises(InputError):
        kind_of(Path("pde.csv.gz"))


def test_beneficiary_birth_date_is_required(tmp_path):
    path = tmp_path / "beneficiary_2015.csv"
    path.write_bytes(b"\xef\xbb\xbfDML_IND|BENE_ID|STATE_CODE|BENE_COUNTY_CD|BENE_BIRTH_DT|"
                     b"BENE_SEX_IDENT_CD|BENE_RACE_CD\nUPDATE|-1|22|22090||2|1")
    with pytest.raises(InputError) as err:
        read_beneficiaries(path)
    assert (err.value.row, err.value.field) == (1, "BENE_BIRTH_DT")


@pytest.mark.warehouse
@pytest.mark.datasets
def test_sample_loads_into_the_rif_source_tables(warehouse, rif):
    # the warehouse's setup creates the RIF tables (sql/source_schema.sql)
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(TRUNCATE_RIF)
    try:
        files = [rif / f"{kind}.csv.gz" for kind in SUMMARY_COLUMNS] + [rif / "beneficiary_2015.csv.gz"]
        counts = load_files(files, drop_unknown=True)
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT claim_type, count(*) FROM source.rif_claims GROUP BY 1")
            per_type = dict(cur.fetchall())
            cur.execute("SELECT count(*) FROM source.rif_diagnoses")
            n_dx = cur.fetchone()[0]
        assert per_type == {"carrier": 37, "dme": 1, "hha": 14, "hospice": 1, "inpatient": 16,
                            "outpatient": 19, "snf": 1}
        assert counts["rif_claims"] == 89 and counts["rif_diagnoses"] == n_dx > 0
        assert counts["unknown_diagnoses_dropped"] == 4
    finally:  # other tests' extracts read the RIF tables too
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute(TRUNCATE_RIF)
