"""The synthetic generator's CCW RIF writer (anonymizers.synthetic_rif,
issue 27): the files parse with deid.rif_loader's reader, hold what was
generated, carry the CCW column lists, and are the same bytes for a seed."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from anonymizers.errors import ParameterError
from anonymizers.synthetic import CLAIM_TYPES, SyntheticConfig, generate
from anonymizers.synthetic_rif import (
    COLUMNS,
    RIF_TYPES,
    rif_chunks,
    rif_date,
    shift_years,
    write_rif,
)


def digest(directory) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.glob("*.csv"))}


def generated(cfg: SyntheticConfig):
    """(clm_id, code) pairs and claim ids of the generator's own tables."""
    pairs, ids = set(), []
    for chunk in generate(cfg):
        for kind in CLAIM_TYPES:
            c = chunk[f"{kind}_claims"]
            ids += c["clm_id"].tolist()
            dx = c.filter(like="icd9_dgns_cd_").to_numpy(dtype=object).tolist()
            pairs |= {(clm, code) for clm, row in zip(c["clm_id"], dx)
                      for code in row if pd.notna(code)}
    return pairs, ids


@pytest.fixture(scope="module")
def icd10_files(tmp_path_factory):
    cfg = SyntheticConfig(n_members=80, seed=21, code_system="icd10cm", chunk_members=30)
    out = tmp_path_factory.mktemp("rif10")
    return cfg, out, write_rif(cfg, out)


def test_files_parse_with_rif_loader_and_counts_match(icd10_files):
    from deid.rif_loader import read_files, read_table

    cfg, out, records = icd10_files
    assert set(records) == {*RIF_TYPES, "beneficiary_2016", "beneficiary_2017",
                            "beneficiary_2018"}
    frames = read_files(sorted(out.glob("*.csv")))
    pairs, ids = generated(cfg)
    claims = frames["rif_claims"]
    # every generated claim once, in one file, and the counts returned
    assert sorted(claims["clm_id"]) == sorted(ids)
    assert claims.groupby("claim_type").size().to_dict() == {t: records[t] for t in RIF_TYPES}
    assert len(frames["rif_beneficiary"]) == 3 * cfg.n_members
    assert sorted(frames["rif_beneficiary"]["year"].unique()) == [2016, 2017, 2018]
    dx = frames["rif_diagnoses"]
    assert set(dx["code_system"]) == {"icd10cm"}
    assert set(zip(dx["clm_id"], dx["code"])) == pairs
    # lines: what rif_chunks made, one claim per CLM_ID spread over its lines
    lines = {t: 0 for t in RIF_TYPES}
    for chunk in rif_chunks(cfg):
        for t in RIF_TYPES:
            lines[t] += len(chunk[t])
    for t in RIF_TYPES:
        table = read_table(out / f"{t}.csv")
        assert len(table) == lines[t] and list(table.columns) == COLUMNS[t]
    assert lines["carrier"] > records["carrier"]  # multi-line claims


def test_dates_moved_into_icd10_years(icd10_files):
    from deid.rif_loader import read_files

    cfg, out, _ = icd10_files
    frames = read_files(sorted(out.glob("*.csv")))
    dates = pd.to_datetime(frames["rif_claims"]["clm_from_dt"])
    assert dates.min() >= pd.Timestamp("2016-01-01") and dates.max() <= pd.Timestamp("2018-12-31")
    # ages kept: the generator's birth dates, 8 years on
    bene = next(generate(cfg))["beneficiary_summary"].drop_duplicates("desynpuf_id")
    born = frames["rif_beneficiary"].drop_duplicates("bene_id").set_index("bene_id")
    got = pd.to_datetime(born.loc[bene["desynpuf_id"], "bene_birth_dt"]).to_numpy()
    want = shift_years(bene["bene_birth_dt"].to_numpy().astype("datetime64[D]"), 8)
    assert (got.astype("datetime64[D]") == want).all()


def test_same_seed_same_bytes(tmp_path, icd10_files):
    cfg, out, _ = icd10_files
    again = write_rif(cfg, tmp_path / "again")
    assert digest(tmp_path / "again") == digest(out) and again == icd10_files[2]
    write_rif(cfg, tmp_path / "again")  # written over, not appended
    assert digest(tmp_path / "again") == digest(out)
    other = SyntheticConfig(n_members=80, seed=22, code_system="icd10cm", chunk_members=30)
    write_rif(other, tmp_path / "other")
    assert digest(tmp_path / "other")["carrier.csv"] != digest(out)["carrier.csv"]


def test_icd9_with_version_flag_9(tmp_path):
    from deid.rif_loader import read_files

    cfg = SyntheticConfig(n_members=40, seed=5, chunk_members=40)
    records = write_rif(cfg, tmp_path)
    frames = read_files(sorted(tmp_path.glob("*.csv")))
    assert set(frames["rif_diagnoses"]["code_system"]) == {"icd9cm"}
    assert "beneficiary_2008" in records
    raw = pd.read_csv(tmp_path / "inpatient.csv", sep="|", dtype=str, keep_default_na=False)
    filled = raw["ICD_DGNS_CD1"] != ""
    assert (raw.loc[filled, "ICD_DGNS_VRSN_CD1"] == "9").all() and filled.any()
    assert (raw["PRNCPAL_DGNS_CD"] == raw["ICD_DGNS_CD1"]).all()
    pairs, _ = generated(cfg)
    assert set(zip(frames["rif_diagnoses"]["clm_id"], frames["rif_diagnoses"]["code"])) == pairs


def test_columns_are_the_ccw_files(datasets_dir):
    """Headers as in CMS's BFD Synthea RIF sample (../shared/datasets/rif_synthea)."""
    folder = datasets_dir / "rif_synthea"
    if not folder.is_dir():
        pytest.skip(f"rif_synthea not present at {folder}")
    for kind, cols in COLUMNS.items():
        name = "beneficiary_2015" if kind == "beneficiary" else kind
        header = pd.read_csv(folder / f"{name}.csv.gz", sep="|", nrows=0,
                             encoding="utf-8-sig").columns
        assert list(header) == cols, kind


def test_date_helpers():
    d = np.array(["2008-02-29", "2010-12-31", "1940-02-29", "NaT"], dtype="datetime64[D]")
    assert list(rif_date(shift_years(d, 8))) == ["29-Feb-2016", "31-Dec-2018", "29-Feb-1948", ""]
    assert rif_date(shift_years(d[:1], 1))[0] == "28-Feb-2009"
    assert rif_date(np.array(["2015-05-30"], dtype="datetime64[D]"))[0] == "30-May-2015"
    with pytest.raises(ParameterError):
        next(rif_chunks(SyntheticConfig(n_members=5, seed=1), first_year=20016))


def test_demo_data_cli_writes_rif(tmp_path, capsys):
    from tools.demo_data import main

    assert main(["--layout", "rif", "--out", str(tmp_path / "cli"), "--members", "25",
                 "--seed", "3", "--code-system", "icd10cm"]) == 0
    assert "beneficiary_2016" in capsys.readouterr().out
    write_rif(SyntheticConfig(n_members=25, seed=3, code_system="icd10cm"), tmp_path / "api")
    assert digest(tmp_path / "cli") == digest(tmp_path / "api")
    with pytest.raises(SystemExit):
        main(["--layout", "rif"])  # no --out
