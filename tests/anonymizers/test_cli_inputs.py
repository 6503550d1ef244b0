"""Malformed inputs through every command of ``python -m anonymizers`` (issue 26, item 8).

Each one ends in exit status 2 and one line on stderr naming the file, the row
and the field, without a traceback, without quoting a value of the file (it
may be a patient id), and without writing any output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anonymizers.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
SECRET = "SECRETPATIENT"
CODES = ["250", "401", "428", "272"]
AGED = ("lda",)


def good_rows(with_age: bool) -> list[list[str]]:
    """Twelve patients with two codes each, ids that must never reach stderr."""
    rows = []
    for p in range(12):
        for j in range(2):
            row = [f"{SECRET}{p}", CODES[(p + j) % len(CODES)]]
            rows.append(row + [str(40 + j)] if with_age else row)
    return rows


def csv_bytes(header: list[str] | None, rows: list[list[str]]) -> bytes:
    lines = ([",".join(header)] if header else []) + [",".join(r) for r in rows]
    return ("\n".join(lines) + "\n").encode()


def non_utf8(header, rows):
    body = csv_bytes(header, rows).split(b"\n")
    body[3] = body[3].replace(SECRET.encode(), SECRET.encode() + "\u00e9".encode("latin-1"))
    return b"\n".join(body)


def extra_field(header, rows):
    rows = [list(r) for r in rows]
    rows[4].append("2009")
    return csv_bytes(header, rows)


def extra_field_every_row(header, rows):
    return csv_bytes(header, [r + ["2009"] for r in rows])


def missing_field(header, rows):
    rows = [list(r) for r in rows]
    rows[3].pop()
    return csv_bytes(header, rows)


def empty_value(header, rows):
    rows = [list(r) for r in rows]
    rows[1][1] = ""
    return csv_bytes(header, rows)


def single_line_10mb(header, rows):
    unit = f"{SECRET},250,".encode()
    return unit * (10_000_000 // len(unit))


def bare_cr(header, rows):
    """Old Mac OS line endings: no LF, so the whole file is its first line."""
    return csv_bytes(header, rows).replace(b"\n", b"\r")


def bare_cr_long(header, rows):
    """The same, longer than HEADER_LIMIT (it was 'the first line is longer')."""
    return bare_cr(header, rows * 400)


# case -> (file content from (header, rows), what the one line must say)
CASES = {
    "non_utf8": (non_utf8, ["row 3", "field 'patient_id'", "not UTF-8"]),
    "extra_field": (extra_field, ["row 5", "fields where the header has"]),
    "extra_field_every_row": (extra_field_every_row, ["row 1", "fields where the header has"]),
    "missing_field": (missing_field, ["row 4", "fields where the header has"]),
    "empty_value": (empty_value, ["row 2", "field 'code'", "empty value"]),
    "no_header": (lambda header, rows: csv_bytes(None, rows),
                  ["field 'patient_id'", "header"]),
    "single_line_10mb": (single_line_10mb, ["first line is longer than", "header"]),
    "header_only": (lambda header, rows: csv_bytes(header, []), ["no data rows"]),
    "empty_file": (lambda header, rows: b"", ["file is empty"]),
    "bare_cr": (bare_cr, ["line endings are bare CR (\\r); convert to LF or CRLF"]),
    "bare_cr_long": (bare_cr_long, ["line endings are bare CR (\\r)"]),
}


def command(name: str, d: Path, csv_in: Path) -> list[str]:
    """The command line of ``name`` reading ``csv_in``; every other file is valid."""
    good = str(d / "good.csv")
    out = str(d / "out" / "release")
    return {
        "ppe": ["ppe", "--k", "2", "--input", str(csv_in), "--output", out],
        "cluster-codes": ["cluster-codes", "--min-anonymity-set", "2", "--input", str(csv_in),
                          "--output", out],
        "dummies": ["dummies", "--clusters", str(d / "clusters.json"), "--seed", "1",
                    "--input", str(csv_in), "--output", out,
                    "--dummy-map", str(d / "out" / "dummy_map")],
        "ugaclip": ["ugaclip", "--k", "2", "--seed", "1", "--privacy-policy", str(d / "policy.json"),
                    "--utility-policy", str(d / "utility.json"), "--input", str(csv_in),
                    "--output", out],
        "disassociate": ["disassociate", "--k", "2", "--m", "1", "--seed", "1",
                         "--utility-policy", str(d / "utility.json"), "--input", str(csv_in),
                         "--output", out],
        "gccens --input": ["gccens", "--k", "1", "--cap", "2", "--seed", "1",
                           "--population", good, "--input", str(csv_in), "--output", out,
                           "--key", str(d / "out" / "key")],
        "gccens --population": ["gccens", "--k", "1", "--cap", "2", "--seed", "1",
                                "--population", str(csv_in), "--input", good, "--output", out,
                                "--key", str(d / "out" / "key")],
        "lda": ["lda", "--k", "2", "--seed", "1", "--input", str(csv_in), "--output", out,
                "--map", str(d / "out" / "map")],
    }[name]


CSV_COMMANDS = ["ppe", "cluster-codes", "dummies", "ugaclip", "disassociate",
                "gccens --input", "gccens --population", "lda"]


def setup_files(d: Path, name: str) -> list[list[str]]:
    """good.csv, the JSON side inputs and an empty output folder in ``d``."""
    aged = name in AGED
    rows = good_rows(aged)
    header = ["patient_id", "code"] + (["age"] if aged else [])
    (d / "good.csv").write_bytes(csv_bytes(header, rows))
    (d / "clusters.json").write_text(json.dumps({"clusters": [CODES[:2], CODES[2:]]}))
    (d / "policy.json").write_text(json.dumps({"k": 2, "filter": "all-visits",
                                               "constraints": [CODES[:2]]}))
    (d / "utility.json").write_text(json.dumps([CODES[:2]]))
    (d / "out").mkdir()
    return header, rows


def refused(capsys, argv, path: Path | str, expected, out_folder: Path) -> str:
    """Run ``argv``; assert the one-line refusal and that nothing was written."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    err = captured.err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert str(path) in err, err
    for words in expected:
        assert words in err, err
    assert SECRET not in err and SECRET not in captured.out
    assert "Traceback" not in err
    assert not any(out_folder.iterdir()), list(out_folder.iterdir())
    return err


@pytest.mark.parametrize("name", CSV_COMMANDS)
def test_the_valid_files_run(tmp_path, capsys, name):
    """The setup is valid: each refusal below comes from the malformed file alone."""
    setup_files(tmp_path, name)
    code = main(command(name, tmp_path, tmp_path / "good.csv"))
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "release").exists()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", CSV_COMMANDS)
def test_a_malformed_csv_is_refused_in_one_line(tmp_path, capsys, name, case):
    header, rows = setup_files(tmp_path, name)
    make, expected = CASES[case]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(make(header, rows))
    refused(capsys, command(name, tmp_path, bad), bad, expected, tmp_path / "out")


@pytest.mark.parametrize("name", CSV_COMMANDS)
def test_crlf_line_endings_are_read(tmp_path, capsys, name):
    """Windows line endings stay accepted beside the bare-CR refusal (the
    releases of several commands draw a fresh key, so they are not compared:
    the next test compares what is read)."""
    header, rows = setup_files(tmp_path, name)
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(csv_bytes(header, rows).replace(b"\n", b"\r\n"))
    assert main(command(name, tmp_path, crlf)) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "release").exists()


@pytest.mark.parametrize("gz", [False, True])
def test_a_crlf_file_reads_as_its_lf_copy(tmp_path, gz):
    import gzip

    from anonymizers.io import read_table
    header, rows = setup_files(tmp_path, "lda")
    data = csv_bytes(header, rows)
    lf, crlf = tmp_path / "lf.csv", tmp_path / "crlf.csv"
    lf.write_bytes(gzip.compress(data) if gz else data)
    data = data.replace(b"\n", b"\r\n")
    crlf.write_bytes(gzip.compress(data) if gz else data)
    read = read_table(crlf, header)
    assert read.equals(read_table(lf, header))
    assert read["age"].tolist()[:2] == ["40", "41"]  # no CR left on the last column


@pytest.mark.parametrize("name", CSV_COMMANDS)
def test_a_gzip_csv_is_read_and_checked_alike(tmp_path, capsys, name):
    import gzip
    header, rows = setup_files(tmp_path, name)
    good = tmp_path / "good.csv.gz"
    good.write_bytes(gzip.compress(csv_bytes(header, rows)))
    assert main(command(name, tmp_path, good)) == 0, capsys.readouterr().err
    capsys.readouterr()  # what the good run printed (lda: the verifier's line)
    (tmp_path / "out" / "release").unlink()
    for extra in ("dummy_map", "key", "map"):
        (tmp_path / "out" / extra).unlink(missing_ok=True)
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gzip.compress(extra_field_every_row(header, rows)))
    refused(capsys, command(name, tmp_path, bad), bad, ["row 1"], tmp_path / "out")


@pytest.mark.parametrize("damage, expected", [
    (lambda gz: gz[: len(gz) // 2], "cannot be read after row"),
    (lambda gz: gz[:20] + b"x" * 50 + gz[70:], "cannot be read"),
    (None, "Is a directory"),
])
@pytest.mark.parametrize("name", ["disassociate", "gccens --population", "lda"])
def test_a_damaged_gzip_or_a_folder_is_refused_in_one_line(tmp_path, capsys, name, damage,
                                                           expected):
    import gzip
    header, rows = setup_files(tmp_path, name)
    bad = tmp_path / "bad.csv.gz"
    if damage is None:
        bad.mkdir()
    else:
        bad.write_bytes(damage(gzip.compress(csv_bytes(header, rows * 50))))
    refused(capsys, command(name, tmp_path, bad), bad, [expected], tmp_path / "out")


@pytest.mark.parametrize("name", CSV_COMMANDS)
def test_a_missing_output_folder_is_refused_before_any_work(tmp_path, capsys, name):
    """Checked before the input is read: a malformed input is not even looked at."""
    header, rows = setup_files(tmp_path, name)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(extra_field(header, rows))
    argv = command(name, tmp_path, bad)
    out = argv.index("--output") + 1
    argv[out] = str(tmp_path / "nowhere" / "release")
    refused(capsys, argv, argv[out], ["--output", "does not exist"], tmp_path / "out")


@pytest.mark.parametrize("name, option", [("dummies", "--dummy-map"),
                                          ("gccens --input", "--key"), ("lda", "--map")])
def test_a_second_output_in_a_missing_folder_is_refused_first(tmp_path, capsys, name, option):
    setup_files(tmp_path, name)
    argv = command(name, tmp_path, tmp_path / "good.csv")
    argv[argv.index(option) + 1] = str(tmp_path / "nowhere" / "private.csv")
    refused(capsys, argv, tmp_path / "nowhere", [option, "does not exist"], tmp_path / "out")


@pytest.mark.parametrize("name, option", [("dummies", "--clusters"),
                                          ("ugaclip", "--privacy-policy"),
                                          ("ugaclip", "--utility-policy"),
                                          ("disassociate", "--utility-policy")])
def test_a_non_utf8_json_input_is_refused_in_one_line(tmp_path, capsys, name, option):
    setup_files(tmp_path, name)
    argv = command(name, tmp_path, tmp_path / "good.csv")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'[\n["250",\n"' + "\u00e9".encode("latin-1") + b'"]]')
    argv[argv.index(option) + 1] = str(bad)
    refused(capsys, argv, bad, ["row 3", "not UTF-8"], tmp_path / "out")


RELEASE_CASES = {
    "non_utf8": (b'{"k": 2,\n"m": "' + "\u00e9".encode("latin-1") + b'"}', ["row 2", "UTF-8"]),
    "single_line_10mb": (f"{SECRET},".encode() * 700_000, ["row 1", "not valid JSON"]),
    "empty_file": (b"", ["not valid JSON"]),
}


@pytest.mark.parametrize("case", RELEASE_CASES)
def test_reconstruct_refuses_a_malformed_release_in_one_line(tmp_path, capsys, case):
    (tmp_path / "out").mkdir()
    content, expected = RELEASE_CASES[case]
    bad = tmp_path / "release.json"
    bad.write_bytes(content)
    argv = ["reconstruct", "--input", bad, "--seed", "1", "--output", tmp_path / "out" / "r"]
    refused(capsys, argv, bad, expected, tmp_path / "out")


def test_reconstruct_refuses_a_missing_output_folder(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    argv = ["reconstruct", "--input", tmp_path / "absent.json", "--seed", "1",
            "--output", tmp_path / "nowhere" / "r.csv"]
    refused(capsys, argv, tmp_path / "nowhere", ["does not exist"], tmp_path / "out")


@pytest.mark.parametrize("case", ["non_utf8", "extra_field_every_row", "no_header",
                                  "single_line_10mb", "bare_cr"])
def test_the_real_entry_point_prints_one_line(tmp_path, case):
    """``python -m anonymizers`` itself: no traceback, one line, exit 2."""
    header, rows = setup_files(tmp_path, "disassociate")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(CASES[case][0](header, rows))
    run = subprocess.run([sys.executable, "-m", "anonymizers",
                          *command("disassociate", tmp_path, bad)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert SECRET not in run.stderr and run.stdout == ""
    assert not any((tmp_path / "out").iterdir())
