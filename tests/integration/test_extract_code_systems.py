"""The extract checks codes against the release file's code system (issue 27):
normalised, validated, CMS's version flags honoured, mixed data refused or
mapped through the GEM as the file says; the RIF tables feed it beside
DE-SynPUF, and ``python -m deid.rif_loader DIR`` loads a CCW RIF folder."""

from __future__ import annotations

import pandas as pd
import pytest
from deid import admin_setup
from deid.extract import extract_claims_table, extract_to_parquet
from deid.releases import CodePolicy

from anonymizers.codesystems import is_valid
from anonymizers.errors import InputError
from tools.demo_data import load_synthetic

pytestmark = pytest.mark.warehouse

ICD10 = CodePolicy("icd10cm")
RIF_TABLES = ", ".join(f"source.{t}" for t in admin_setup.RIF_TABLES)
# a tiny GEM in anonymizers.io.GEM_COLUMNS' layout: 4011 (benign hypertension) -> I10
GEM = ("icd9cm,icd10cm,no_map,combination,scenario,choice_list,approximate\n"
       "4011,I10,0,0,0,0,1\n25000,E119,0,0,0,0,1\n")


@pytest.fixture(autouse=True)
def no_rif_claims_after(warehouse):
    """Other tests' extracts read the RIF tables too: none is left behind."""
    yield
    _sql(warehouse, f"TRUNCATE {RIF_TABLES}")


@pytest.fixture
def icd10_source(empty_source):
    """ICD-10-CM claims in the DE-SynPUF tables, emptied afterwards: a test
    that extracts whatever the source holds expects ICD-9-CM."""
    from tools.demo_data import TABLES

    _sql(empty_source, f"TRUNCATE {RIF_TABLES}")
    load_synthetic(n_members=60, seed=3, code_system="icd10cm")
    yield empty_source
    _sql(empty_source, "TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))


def _sql(warehouse, *statements):
    with warehouse.connect() as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def test_icd10_claims_extract_under_icd10_and_are_refused_as_icd9(icd10_source, tmp_path):
    stats = extract_to_parquet(tmp_path / "a.parquet", codes=ICD10)
    codes = pd.read_parquet(tmp_path / "a.parquet")["code"]
    assert stats["rows"] == len(codes) > 0 and stats["code_system"] == "icd10cm"
    assert is_valid(codes.to_numpy(dtype=object), "icd10cm").all()
    assert (stats["unknown_codes_dropped"], stats["codes_mapped"]) == (0, 0)
    with pytest.raises(InputError) as err:  # a release file left at its default, icd9cm
        extract_to_parquet(tmp_path / "b.parquet")
    assert err.value.source.startswith("source.") and err.value.field == "code"
    assert err.value.row >= 1 and "not a code of ICD-9-CM" in err.value.problem
    assert not any(c in str(err.value) for c in set(codes))  # no diagnosis in the message
    assert not (tmp_path / "b.parquet").exists()


def test_codes_are_normalised_and_unknown_ones_refused_or_dropped(icd10_source, tmp_path):
    first = "(SELECT min(clm_id) FROM source.carrier_claims)"
    _sql(icd10_source, f"UPDATE source.carrier_claims SET icd9_dgns_cd_1 = ' e11.9 ', "
         f"icd9_dgns_cd_2 = 'Q99.9ZZ' WHERE clm_id = {first}")
    with pytest.raises(InputError) as err:
        extract_to_parquet(tmp_path / "a.parquet", codes=ICD10)
    assert (err.value.source, err.value.field) == ("source.carrier_claims", "code")
    assert "Q99" not in str(err.value) and "not a code of ICD-10-CM" in str(err.value)
    stats = extract_to_parquet(tmp_path / "b.parquet",
                               codes=CodePolicy("icd10cm", drop_unknown=True))
    df = pd.read_parquet(tmp_path / "b.parquet")
    claim = df[df["claim_id"].str.startswith("carrier:")].groupby("claim_id")["code"].apply(set)
    assert "E119" in set().union(*claim) and stats["unknown_codes_dropped"] == 1
    assert not df["code"].str.contains(r"[.\s]|Q999ZZ").any()


def _rif_claim(warehouse, flags: dict[str, str]) -> None:
    """One RIF beneficiary and carrier claim whose codes carry ``flags``."""
    rows = ", ".join(f"('carrier', '-7', '-70', NULL, "
                     f"'{'PRNCPAL_DGNS_CD' if i == 0 else f'ICD_DGNS_CD{i}'}', '{code}', "
                     f"'{system}')" for i, (code, system) in enumerate(flags.items()))
    _sql(warehouse, f"TRUNCATE {RIF_TABLES}",
         "INSERT INTO source.rif_beneficiary VALUES (2015, '-7', '1950-03-01', 2, 1, '22', "
         "'090')",
         "INSERT INTO source.rif_claims VALUES ('carrier', '-7', '-70', '2015-05-30', "
         "'2015-05-30')",
         "INSERT INTO source.rif_diagnoses (claim_type, bene_id, clm_id, line_num, field, code, "
         f"code_system) VALUES {rows}")


def test_mixed_rif_codes_are_refused_by_default_naming_table_row_and_field(icd10_source,
                                                                           tmp_path):
    _rif_claim(icd10_source, {"E119": "icd10cm", "4011": "icd9cm"})
    with pytest.raises(InputError) as err:
        extract_to_parquet(tmp_path / "a.parquet", codes=ICD10)
    assert err.value.source == "source.rif_diagnoses (carrier claims)"
    assert err.value.field == "code" and err.value.row >= 1
    assert "mixed: refuse" in err.value.problem
    assert not any(v in str(err.value) for v in ("4011", "-7", "-70"))
    assert "\n" not in str(err.value)
    with pytest.raises(InputError) as err:  # the per-claim extract (HHP, screening) too
        extract_claims_table(tmp_path / "b.parquet", codes=ICD10)
    assert err.value.source == "source.rif_diagnoses (carrier claims)"
    assert err.value.field == "other_dx_codes" and "4011" not in str(err.value)


def test_mixed_rif_codes_are_mapped_through_the_gem_when_the_file_says(icd10_source,
                                                                        tmp_path):
    _rif_claim(icd10_source, {"4011": "icd9cm", "E119": "icd10cm", "25000": "icd9cm"})
    gem = tmp_path / "gem.csv"
    gem.write_text(GEM)
    codes = CodePolicy("icd10cm", "map-to-icd10", gem=str(gem))
    stats = extract_to_parquet(tmp_path / "a.parquet", codes=codes)
    df = pd.read_parquet(tmp_path / "a.parquet")
    rif = df[df["claim_id"] == "rif_carrier:-70"]
    assert sorted(rif["code"]) == ["E119", "I10"] and stats["codes_mapped"] == 2
    assert rif["age_at_service"].tolist() == [65] * 2
    extract_claims_table(tmp_path / "b.parquet", codes=codes)
    claim = pd.read_parquet(tmp_path / "b.parquet").set_index("claim_id").loc["rif_carrier:-70"]
    assert (claim["dx_code"], claim["other_dx_codes"]) == ("I10", "E119;E119")
    assert claim["sex"] == "2"


def test_an_icd9_release_refuses_icd10_flagged_codes(icd10_source, tmp_path):
    """The flag decides a RIF code's system, whichever the release's: an
    ICD-9 release over ICD-10-flagged RIF rows refuses them (mixed)."""
    _sql(icd10_source, "TRUNCATE source.beneficiary_summary, source.carrier_claims, "
         "source.inpatient_claims, source.outpatient_claims")
    _rif_claim(icd10_source, {"E119": "icd10cm"})
    with pytest.raises(InputError, match="refuses mixed code systems") as err:
        extract_to_parquet(tmp_path / "a.parquet")
    assert err.value.field == "code"
    assert "an ICD-10-CM code in a release over ICD-9-CM" in str(err.value)


@pytest.mark.datasets
def test_the_rif_cli_loads_the_sample_and_the_extract_reads_it(empty_source, datasets_dir,
                                                               tmp_path, capsys):
    from deid.rif_loader import main

    folder = datasets_dir / "rif_synthea"
    assert main([str(folder), "--replace"]) == 2  # Synthea's partial codes (M8000X) refused
    assert "ICD_DGNS_CD8" in capsys.readouterr().err
    assert main([str(folder), "--replace", "--drop-unknown"]) == 0
    out = capsys.readouterr().out
    assert "source.rif_claims: 89 rows" in out and "diagnoses dropped for an unknown code: 4" in out
    assert "not read: beneficiary_history.csv.gz, export_summary.csv.gz, pde.csv.gz" in out
    stats = extract_to_parquet(tmp_path / "a.parquet", codes=ICD10)
    df = pd.read_parquet(tmp_path / "a.parquet")
    with empty_source.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(DISTINCT (claim_type, clm_id, code)), count(DISTINCT bene_id) "
                    "FROM source.rif_diagnoses")
        n_codes, n_benes = cur.fetchone()
    assert (stats["rows"], stats["patients"]) == (n_codes, n_benes) == (len(df), 3)
    assert df["claim_id"].str.match(r"rif_(carrier|dme|hha|hospice|inpatient|outpatient|snf):")\
        .all()
    assert is_valid(df["code"].to_numpy(dtype=object), "icd10cm").all()
    assert extract_claims_table(tmp_path / "b.parquet", codes=ICD10)["claims"] == 89
