"""The DE-SynPUF loader against a real PostgreSQL: real files, malformed files."""

from __future__ import annotations

import gzip

import pytest
from tools.demo_data import source_counts
from deid.synpuf_loader import load_files

from anonymizers.errors import InputError

pytestmark = pytest.mark.warehouse

BENE_HEADER = ("DESYNPUF_ID,BENE_BIRTH_DT,BENE_DEATH_DT,BENE_SEX_IDENT_CD,BENE_RACE_CD,"
               "BENE_ESRD_IND,SP_STATE_CODE,BENE_COUNTY_CD")
CARRIER_HEADER = ",".join(["DESYNPUF_ID", "CLM_ID", "CLM_FROM_DT", "CLM_THRU_DT"]
                          + [f"ICD9_DGNS_CD_{i}" for i in range(1, 9)]
                          + [f"HCPCS_CD_{i}" for i in range(1, 14)]
                          + [f"LINE_ICD9_DGNS_CD_{i}" for i in range(1, 14)])


def _carrier_row(bene="00013D2EFD8E45D1", clm="1", date="20090725", code="7245"):
    return ",".join([bene, clm, date, date, code] + [""] * 7 + ["97001"] + [""] * 12
                    + [""] * 13)


def _write(tmp_path, name, lines, gz=False, quote_header=False):
    header, *rows = lines
    if quote_header:
        header = ",".join(f'"{h}"' for h in header.split(","))
    text = "\n".join([header, *rows]) + "\n"
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def _bene(tmp_path, **kw):
    return _write(tmp_path, "DE1_0_2008_Beneficiary_Summary_File_Sample_1.csv",
                  [BENE_HEADER, "00013D2EFD8E45D1,19230501,,1,1,0,26,950"], **kw)


def test_loads_gzip_with_quoted_header_and_plain(tmp_path, empty_source):
    bene = _bene(tmp_path, gz=True, quote_header=True)
    car = _write(tmp_path, "DE1_0_2008_to_2010_Carrier_Claims_Sample_1A.csv",
                 [CARRIER_HEADER, _carrier_row(), _carrier_row(clm="2", code="V1588")])
    assert load_files([bene, car]) == {bene.name: 1, car.name: 2}
    counts = source_counts()
    assert counts["beneficiary_summary"] == 1 and counts["carrier_claims"] == 2


@pytest.mark.parametrize("row, field, problem, value", [
    (_carrier_row(date="2009-07-25"), "CLM_FROM_DT", "unparseable date", "2009-07-25"),
    (_carrier_row(code="ABC12"), "ICD9_DGNS_CD_1", "not an ICD-9-CM", "ABC12"),
    (_carrier_row(bene=""), "DESYNPUF_ID", "empty identifier", None),
])
def test_malformed_row_names_file_row_field_and_loads_nothing(tmp_path, empty_source,
                                                              row, field, problem, value):
    bene = _bene(tmp_path)
    car = _write(tmp_path, "DE1_0_2008_to_2010_Carrier_Claims_Sample_1A.csv",
                 [CARRIER_HEADER, _carrier_row(), row])
    with pytest.raises(InputError) as err:
        load_files([bene, car])
    assert err.value.row == 2 and err.value.field == field
    assert problem in str(err.value) and car.name in str(err.value)
    assert value is None or value not in str(err.value)  # a claim's value is patient data
    assert source_counts() == dict.fromkeys(source_counts(), 0)


def test_icd10_codes_in_the_synpuf_layout_load_with_their_code_system(tmp_path, empty_source):
    """DE-SynPUF-layout files holding ICD-10-CM codes (as the generator
    writes them): refused as ICD-9-CM, loaded as ICD-10-CM, whose unknown
    codes are refused without their value."""
    bene = _bene(tmp_path)
    rows = [CARRIER_HEADER, _carrier_row(code="E119"), _carrier_row(clm="2", code="S52521A")]
    car = _write(tmp_path, "DE1_0_2008_to_2010_Carrier_Claims_Sample_1A.csv", rows)
    with pytest.raises(InputError, match="not an ICD-9-CM"):
        load_files([bene, car])
    assert load_files([bene, car], code_system="icd10cm") == {bene.name: 1, car.name: 2}
    bad = _write(tmp_path, "DE1_0_2008_to_2010_Carrier_Claims_Sample_1B.csv",
                 [CARRIER_HEADER, _carrier_row(clm="3", code="Q999ZZ")])
    with pytest.raises(InputError) as err:
        load_files([bad], code_system="icd10cm")
    assert (err.value.row, err.value.field) == (1, "ICD9_DGNS_CD_1")
    assert "Q999ZZ" not in str(err.value) and "not an ICD-10-CM" in str(err.value)


def test_missing_column_is_named(tmp_path, empty_source):
    header = CARRIER_HEADER.replace("CLM_THRU_DT,", "")
    row = _carrier_row().split(",")
    del row[3]
    car = _write(tmp_path, "DE1_0_2008_to_2010_Carrier_Claims_Sample_1A.csv",
                 [header, ",".join(row)])
    with pytest.raises(InputError) as err:
        load_files([car])
    assert err.value.field == "CLM_THRU_DT"


@pytest.mark.datasets
def test_loads_testB_with_the_documented_counts(datasets_dir, empty_source):
    folder = datasets_dir / "synpuf" / "cms_bfd_sample_testB"
    files = sorted(p for p in folder.glob("*.csv.gz") if "Prescription" not in p.name)
    counts = load_files(files)
    # rows per file, from ../shared/datasets/SOURCES.md
    expected = {"DE1_0_2008_Beneficiary_Summary_File_Sample_TestB": 500,
                "DE1_0_2009_Beneficiary_Summary_File_Sample_TestB": 492,
                "DE1_0_2010_Beneficiary_Summary_File_Sample_TestB": 485,
                "DE1_0_2008_to_2010_Inpatient_Claims_Sample_TestB": 264,
                "DE1_0_2008_to_2010_Outpatient_Claims_Sample_TestB": 3454,
                "DE1_0_2008_to_2010_Carrier_Claims_Sample_TestBA": 21187,
                "DE1_0_2008_to_2010_Carrier_Claims_Sample_TestBB": 0}
    assert {k.removesuffix(".csv.gz"): v for k, v in counts.items()} == expected
    with empty_source.connect() as conn, conn.cursor() as cur:
        distinct = {}
        for table in ("inpatient_claims", "outpatient_claims", "carrier_claims"):
            cur.execute(f"SELECT count(DISTINCT desynpuf_id) FROM source.{table}")
            distinct[table] = cur.fetchone()[0]
        cur.execute("SELECT year, count(DISTINCT desynpuf_id) FROM source.beneficiary_summary "
                    "GROUP BY year ORDER BY year")
        years = dict(cur.fetchall())
    assert distinct == {"inpatient_claims": 155, "outpatient_claims": 367,
                        "carrier_claims": 422}
    assert years == {2008: 500, 2009: 492, 2010: 485}
