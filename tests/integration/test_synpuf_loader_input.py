"""The DE-SynPUF loader's reading of line endings, with the warehouse replaced
by stand-ins (no PostgreSQL): unlike the RIF loader and the commands' CSV
reader, which refuse bare-CR (old Mac OS) files, it reads them, because
pandas' C reader takes CR, LF and CRLF alike as line ends (no whole-file
header, no misleading error), so its rows and row numbers are right."""

from __future__ import annotations

import contextlib
import gzip

import pandas as pd
import pytest
from deid import synpuf_loader

from anonymizers.errors import InputError

BENE = "DE1_0_2008_Beneficiary_Summary_File_Sample_1.csv"
COLUMNS = [("desynpuf_id", "text"), ("year", "smallint"), ("bene_birth_dt", "date"),
           ("bene_sex_ident_cd", "text")]
HEADER = '"DESYNPUF_ID","BENE_BIRTH_DT","BENE_SEX_IDENT_CD"'  # quoted, as CMS writes it
ROWS = ["00013D2EFD8E45D1,19230501,1", "00016F745862898F,19430101,2",
        "0001FDD721E223DC,19361201,2"]


@pytest.fixture
def loaded(monkeypatch):
    """The frames load_files would copy, per table; the warehouse is never reached."""
    frames = {}

    class Conn:
        def cursor(self):
            return contextlib.nullcontext()

    monkeypatch.setattr(synpuf_loader, "table_columns", lambda conn, table: COLUMNS)

    monkeypatch.setattr(synpuf_loader, "connect", lambda: contextlib.nullcontext(Conn()))
    monkeypatch.setattr(synpuf_loader, "copy_frame",
                        lambda cur, table, frame: frames.setdefault(table, []).append(frame))
    return frames


def _write(tmp_path, end: bytes, gz: bool, rows=ROWS):
    data = end.join(s.encode() for s in [HEADER, *rows]) + end
    path = tmp_path / (BENE + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("end", [b"\r", b"\r\n"])
def test_cr_and_crlf_files_load_as_their_lf_copy(tmp_path, loaded, end, gz):
    lf = synpuf_loader.load_files([_write(tmp_path, b"\n", gz)])
    want = pd.concat(loaded.pop("source.beneficiary_summary"))
    assert lf == {BENE + (".gz" if gz else ""): 3}
    assert synpuf_loader.load_files([_write(tmp_path, end, gz)]) == lf
    got = pd.concat(loaded.pop("source.beneficiary_summary"))
    pd.testing.assert_frame_equal(got, want)
    assert got["bene_birth_dt"].tolist() == ["1923-05-01", "1943-01-01", "1936-12-01"]


def test_a_bad_row_of_a_cr_file_is_named_by_its_data_row(tmp_path, loaded):
    rows = [*ROWS[:2], "0001FDD721E223DC,1936-12-01,2"]
    with pytest.raises(InputError) as err:
        synpuf_loader.load_files([_write(tmp_path, b"\r", False, rows)])
    assert (err.value.row, err.value.field) == (3, "BENE_BIRTH_DT")
