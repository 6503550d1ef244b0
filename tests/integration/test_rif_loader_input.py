"""The CCW RIF loader on damaged files built from a generated RIF folder
(anonymizers.synthetic_rif): truncated or ragged lines, header-only files,
missing columns, non-UTF-8 bytes, and the unit of the drop count.  The
command is run with the warehouse replaced by stand-ins that fail if used:
a bad file must be refused before the warehouse is started or touched."""

from __future__ import annotations

import gzip
import shutil

import pandas as pd
import pytest
from deid import rif_loader
from deid.rif_loader import read_claims, read_files

from anonymizers.errors import InputError
from anonymizers.synthetic import SyntheticConfig
from anonymizers.synthetic_rif import write_rif

UNKNOWN = "Q99.9ZZ"  # ICD-10-CM-shaped, not a code


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("rif")
    write_rif(SyntheticConfig(n_members=20, seed=1, code_system="icd10cm"), out)
    return out


@pytest.fixture
def folder(generated, tmp_path):
    """A private copy of the generated folder, to damage."""
    return shutil.copytree(generated, tmp_path / "rif")


def _table(path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)


def _rewrite(path, df: pd.DataFrame) -> None:
    df.to_csv(path, sep="|", index=False)


def _refused(paths, **kw) -> InputError:
    with pytest.raises(InputError) as err:
        read_files(paths, **kw)
    return err.value


def test_a_file_cut_short_is_refused_at_its_last_line(folder):
    path = folder / "inpatient.csv"
    data = path.read_bytes()
    cut = data[:len(data) // 2].rstrip(b"\n")
    path.write_bytes(cut)
    lines = cut.split(b"\n")
    fields = lines[-1].count(b"|") + 1
    assert fields < 275
    err = _refused([path])
    assert (err.source, err.row) == (str(path), len(lines) - 1)
    assert str(err) == (f"{path}, row {len(lines) - 1}: {fields} fields where the header "
                        "has 275")


def test_a_line_with_too_many_fields_is_refused(folder):
    path = folder / "carrier.csv"
    lines = path.read_bytes().split(b"\n")
    lines[7] += b"|extra"
    path.write_bytes(b"\n".join(lines))
    err = _refused([path])
    assert err.row == 7 and "101 fields where the header has 100" in str(err)


def test_a_truncated_gzip_file_is_refused(folder):
    path = folder / "snf.csv.gz"
    data = gzip.compress((folder / "snf.csv").read_bytes())
    path.write_bytes(data[:len(data) // 2])
    err = _refused([path])
    assert err.source == str(path) and "not a complete gzip file" in str(err)


def test_a_header_only_claim_file_is_accepted_and_counted(folder):
    path = folder / "hha.csv"
    path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")
    frames = read_files([path, folder / "dme.csv"])
    assert frames["rows"] == {"hha.csv": 0, "dme.csv": 42}
    assert set(frames["rif_claims"]["claim_type"]) == {"dme"}


def test_blank_lines_at_the_end_are_a_terminator_but_not_inside(folder):
    path = folder / "dme.csv"
    path.write_bytes(path.read_bytes() + b"\n\r\n\n")
    assert read_files([path])["rows"] == {"dme.csv": 42}
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*lines[:3], b"", *lines[3:]]))
    err = _refused([path])
    assert err.row == 3 and "1 fields where the header has" in str(err)


@pytest.mark.parametrize("drop, missing", [
    (["ICD_DGNS_CD1"], "ICD_DGNS_CD1"),             # its version flag still there
    (["ICD_DGNS_VRSN_CD4"], "ICD_DGNS_VRSN_CD4"),   # its code still there
    (["ICD_DGNS_CD3", "ICD_DGNS_VRSN_CD3"], "ICD_DGNS_CD3"),  # a gap in the series
    (["ICD_DGNS_E_CD1", "ICD_DGNS_E_VRSN_CD1"], "ICD_DGNS_E_CD1"),
    (["CLM_THRU_DT"], "CLM_THRU_DT"),
])
def test_a_missing_column_the_loader_reads_is_refused(folder, drop, missing):
    path = folder / "inpatient.csv"
    _rewrite(path, _table(path).drop(columns=drop))
    err = _refused([path])
    assert (err.source, err.row, err.field) == (str(path), None, missing)
    assert f"missing column {missing}" in str(err)


def test_line_diagnoses_need_their_line_number(folder):
    path = folder / "carrier.csv"
    _rewrite(path, _table(path).drop(columns=["LINE_NUM"]))
    assert _refused([path]).field == "LINE_NUM"


def test_a_nul_byte_is_refused_with_its_row(folder):
    path = folder / "dme.csv"
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"|", b"\x00|", 1)
    path.write_bytes(b"\n".join(lines))
    err = _refused([path])
    assert err.row == 3 and "NUL" in str(err)


def test_a_diagnosis_column_the_loader_does_not_read_is_refused(folder):
    path = folder / "inpatient.csv"
    _rewrite(path, _table(path).assign(ICD_DGNS_CD26="", ICD_DGNS_VRSN_CD26=""))
    assert _refused([path]).field == "ICD_DGNS_CD26"


def test_a_header_only_file_still_needs_its_columns(folder):
    path = folder / "inpatient.csv"
    _rewrite(path, _table(path).drop(columns=["ICD_DGNS_CD1"]).iloc[:0])
    assert _refused([path]).field == "ICD_DGNS_CD1"


BARE_CR = "line endings are bare CR (\\r); convert to LF or CRLF"


def _line_ends(path, end: bytes) -> None:
    """Rewrite ``path`` (plain or gzip) with its lines ending in ``end``."""
    data = path.read_bytes()
    gz = data[:2] == b"\x1f\x8b"
    data = (gzip.decompress(data) if gz else data).replace(b"\n", end)
    path.write_bytes(gzip.compress(data) if gz else data)


@pytest.mark.parametrize("name", ["inpatient.csv", "beneficiary_2016.csv", "snf.csv.gz"])
def test_bare_cr_line_endings_are_refused_naming_the_file_only(folder, name):
    """Old Mac OS line endings: the file was one header line, refused as
    'column named twice' or 'missing column', with a row's value as the field."""
    path = folder / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress((folder / name.removesuffix(".gz")).read_bytes()))
    _line_ends(path, b"\r")
    err = _refused([path])
    assert (err.source, err.row, err.field) == (str(path), None, None)
    assert str(err) == f"{path}: {BARE_CR}"


def test_a_bare_cr_file_with_no_empty_value_names_no_value(folder):
    """The old header split on '|' alone made a repeated value a column
    'named twice' (here a claim date) and quoted it as the field."""
    path = folder / "carrier.csv"
    path.write_bytes(b"BENE_ID|CLM_ID|CLM_FROM_DT|CLM_THRU_DT\r"
                     b"PATIENT7|C1|01-Jan-2016|02-Jan-2016\r"
                     b"PATIENT7|C2|01-Jan-2016|02-Jan-2016\r")
    err = _refused([path])
    assert str(err) == f"{path}: {BARE_CR}"


def test_a_bare_cr_in_a_data_line_is_refused_with_its_row(folder):
    """Mixed line endings (LF header, CR rows) or a CR inside a value: the
    row is named, and the value is not loaded with a CR in it."""
    path = folder / "dme.csv"
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b"|", b"\r|", 1)
    path.write_bytes(b"\n".join(lines))
    err = _refused([path])
    assert (err.row, err.field) == (4, None) and "bare CR" in str(err)
    path.write_bytes(b"\n".join(lines[:2]) + b"\n" + b"\r".join(lines[2:]))
    assert _refused([path]).row == 2


def test_crlf_files_read_as_their_lf_copies(folder):
    lf = read_files(sorted(folder.iterdir()))
    for path in folder.iterdir():
        _line_ends(path, b"\r\n")
    crlf = read_files(sorted(folder.iterdir()))
    assert crlf["rows"] == lf["rows"] and crlf["rows"]["carrier.csv"] == 810
    for table in rif_loader.TABLES:
        pd.testing.assert_frame_equal(crlf[table], lf[table])


def _spoil_utf8(path, row: int) -> int:
    """Put a byte that is no UTF-8 at the end of data row ``row`` (its other
    values intact, so a test can look for them in the message); its offset."""
    data = bytearray(path.read_bytes())
    ends = [i for i, b in enumerate(data) if b == ord("\n")]
    at = ends[row] - 1
    while data[at] in b"|\r":  # the last byte of the row's last non-empty value
        at -= 1
    assert at > ends[row - 1] + len("|".join(["x"] * 30))  # far right of the row's ids
    data[at] = 0xFF
    path.write_bytes(bytes(data))
    return at


def test_non_utf8_bytes_name_the_row_and_offset(folder):
    path = folder / "carrier.csv"
    offset = _spoil_utf8(path, 5)
    err = _refused([path])
    assert err.row == 5 and f"byte offset {offset}" in str(err)


class _WarehouseUsed(AssertionError):
    pass


@pytest.fixture
def no_warehouse(monkeypatch):
    """The warehouse functions main may reach, each failing the test if called."""
    from deid import warehouse

    def used(*a, **k):
        raise _WarehouseUsed("the warehouse was used")

    for name in ("is_embedded", "ensure_schemas", "connect"):
        monkeypatch.setattr(warehouse, name, used)


def test_the_command_refuses_bad_bytes_in_one_line_before_the_warehouse(folder, no_warehouse,
                                                                        capsys):
    path = folder / "carrier.csv"
    row = _table(path).iloc[4]
    _spoil_utf8(path, 5)
    assert rif_loader.main([str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(path) in err and "row 5" in err
    for field in ("BENE_ID", "CLM_ID", "CLM_FROM_DT", "ICD_DGNS_CD1"):
        assert row[field] and row[field] not in err, field


def test_the_command_refuses_a_cut_file_before_the_warehouse(folder, no_warehouse, capsys):
    path = folder / "inpatient.csv"
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    assert rif_loader.main([str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "where the header has 275" in err


def test_the_command_refuses_bare_cr_before_the_warehouse(folder, no_warehouse, capsys):
    path = folder / "carrier.csv"
    row = _table(path).iloc[0]
    _line_ends(path, b"\r")
    assert rif_loader.main([str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: {BARE_CR}\n"
    for field in ("BENE_ID", "CLM_ID", "CLM_FROM_DT"):
        assert row[field] and row[field] not in err, field


def test_the_summary_lists_rows_per_file_header_only_included(folder, monkeypatch, capsys):
    from deid import warehouse

    path = folder / "hha.csv"
    path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")
    monkeypatch.setattr(warehouse, "is_embedded", lambda: False)
    loaded = {}

    def load_frames(frames, replace=False):
        loaded.update(frames)
        return {**{t: len(frames[t]) for t in rif_loader.TABLES},
                "unknown_diagnoses_dropped": 0}

    monkeypatch.setattr(rif_loader, "load_frames", load_frames)
    assert rif_loader.main([str(folder)]) == 0
    out = capsys.readouterr().out
    assert "hha.csv: 0 rows (header only)" in out and "dme.csv: 42 rows" in out
    assert "diagnoses dropped for an unknown code: 0" in out
    assert set(loaded["rif_claims"]["claim_type"]) == {"carrier", "dme", "hospice", "inpatient",
                                                       "outpatient", "snf"}


def test_the_drop_count_is_per_diagnosis_not_per_claim_line(folder):
    path = folder / "inpatient.csv"
    df = _table(path)
    lines = df["CLM_ID"].value_counts()
    clm = lines.index[0]
    assert lines.iloc[0] >= 2  # a claim of several lines repeats its claim-level codes
    on = df["CLM_ID"] == clm
    df.loc[on, "ICD_DGNS_CD1"], df.loc[on, "ICD_DGNS_VRSN_CD1"] = UNKNOWN, "0"
    _rewrite(path, df)
    got = read_claims(path, drop_unknown=True)
    assert got.dropped_diagnoses == 1
    dx = got.diagnoses
    assert dx[(dx["clm_id"] == clm) & (dx["field"] == "ICD_DGNS_CD1")].empty
    assert read_files([path], drop_unknown=True)["dropped_diagnoses"] == {"inpatient.csv": 1}
    with pytest.raises(InputError) as err:  # refused by default, at the claim's first line
        read_claims(path)
    assert (err.value.row, err.value.field) == (int(on.to_numpy().argmax()) + 1, "ICD_DGNS_CD1")
