"""Issue 27's newcomer test of the CLI's code-system options: every command
reading source codes validates them (cluster-codes, dummies,
attack-successive's truth), a row whose code is not of its flag's system is
an unknown code (refused or dropped and counted), the refusal of mixed
systems names ``--mixed`` (the DAG keeps the release file's wording), the
summary lines count dropped rows, and a backward GEM is refused.

Bad input follows the project standard: exit 2, one line naming the file,
row and field, no traceback, no code value echoed, nothing written.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonymizers import codesystems as cs
from anonymizers.__main__ import main
from anonymizers.errors import InputError
from anonymizers.io import CODE_VERSION, clean_codes

UNKNOWN = "Q99ZZ9X"  # not an ICD-10-CM code (nor an ICD-9-CM one)
ICD10_CODES = ["E119", "I10", "E785", "J449", "N179", "I509", "K219", "M545"]
BUNDLED_BACKWARD_GEM = (Path(__file__).parents[2] / "anonymizers" / "data" / "hhp" / "gem"
                        / "icd10cmtoicd9gem.csv.gz")


def icd10_claims(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """``n`` patients with 1-4 ICD-10-CM codes each (seeded)."""
    rng = np.random.default_rng(seed)
    rows = [(f"p{p}", c) for p in range(n)
            for c in rng.choice(ICD10_CODES, size=rng.integers(1, 5), replace=False)]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def with_unknown(df: pd.DataFrame, row: int = 3) -> pd.DataFrame:
    """``df`` whose data row ``row`` (1-based) holds ``UNKNOWN``."""
    out = df.copy()
    out.loc[row - 1, "code"] = UNKNOWN
    return out


def write(df: pd.DataFrame, path: Path) -> str:
    df.to_csv(path, index=False)
    return str(path)


def one_line_error(err: str, path: str, row: int, field: str = "code") -> str:
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    assert line.startswith(f"error: {path}, row {row}, field '{field}': "), err
    assert UNKNOWN not in line and "K50919" not in line
    return line


# --- 1. cluster-codes, dummies, attack-successive take the options -----------------

def cluster(tmp_path, source: str, *flags) -> tuple[int, Path]:
    out = tmp_path / "clusters.json"
    return main(["cluster-codes", "--min-anonymity-set", "2", "--n-clusters", "2",
                 "--input", source, "--output", str(out), *flags]), out


def dummies(tmp_path, source: str, clusters: Path, *flags) -> tuple[int, Path, Path]:
    out, dmap = tmp_path / "released.csv", tmp_path / "dummy_map.csv"
    return main(["dummies", "--clusters", str(clusters), "--seed", "3", "--input", source,
                 "--output", str(out), "--dummy-map", str(dmap), *flags]), out, dmap


def test_cluster_codes_refuses_an_unknown_code_or_drops_and_counts_it(tmp_path, capsys):
    source = write(with_unknown(icd10_claims()), tmp_path / "claims.csv")
    code, out = cluster(tmp_path, source, "--code-system", "icd10cm")
    assert code == 2 and not out.exists()
    one_line_error(capsys.readouterr().err, source, 3)
    code, out = cluster(tmp_path, source, "--code-system", "icd10cm", "--drop-unknown")
    assert code == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["rows_dropped_unknown_code"] == 1 and metrics["code_system"] == "icd10cm"
    clustered = {c for group in json.loads(out.read_text())["clusters"] for c in group}
    assert UNKNOWN not in clustered and clustered == set(ICD10_CODES)


def test_cluster_codes_default_is_icd9cm(tmp_path, capsys):
    source = write(icd10_claims(), tmp_path / "claims.csv")
    code, _ = cluster(tmp_path, source)
    assert code == 2 and "not a code of ICD-9-CM" in capsys.readouterr().err


def test_dummies_refuses_an_unknown_code_or_keeps_it_out_of_the_release(tmp_path, capsys):
    clean = write(icd10_claims(), tmp_path / "clean.csv")
    assert cluster(tmp_path, clean, "--code-system", "icd10cm")[0] == 0
    capsys.readouterr()
    source = write(with_unknown(icd10_claims()), tmp_path / "claims.csv")
    code, out, dmap = dummies(tmp_path, source, tmp_path / "clusters.json",
                              "--code-system", "icd10cm")
    assert code == 2 and not out.exists() and not dmap.exists()
    one_line_error(capsys.readouterr().err, source, 3)
    code, out, _ = dummies(tmp_path, source, tmp_path / "clusters.json",
                           "--code-system", "icd10cm", "--drop-unknown")
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metrics"]["rows_dropped_unknown_code"] == 1 and report["verdict"]["ok"]
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert UNKNOWN not in set(released["code"])


def test_attack_successive_checks_the_truth_codes(tmp_path, capsys):
    releases = []
    for i in (1, 2):
        path = tmp_path / f"r{i}.json"
        path.write_text("{}")
        releases.append(str(path))
    truth = [write(icd10_claims(), tmp_path / "t1.csv"),
             write(with_unknown(icd10_claims(seed=1), row=5), tmp_path / "t2.csv")]
    code = main(["attack-successive", "--method", "disassociation", "--releases", *releases,
                 "--truth", *truth, "--code-system", "icd10cm"])
    assert code == 2
    one_line_error(capsys.readouterr().err, truth[1], 5)


def test_reconstruct_reads_a_release_and_says_why_it_takes_no_code_options(capsys):
    from anonymizers.cli import reconstruct
    assert "is a release" in reconstruct.__doc__.replace("\n", " ")
    with pytest.raises(SystemExit):
        main(["reconstruct", "--help"])
    assert "--code-system" not in capsys.readouterr().out


# --- 2. a code that is not of its flag's system is an unknown code -----------------

def wrong_flag(tmp_path) -> str:
    """ICD-10-CM rows, the fourth flagged '9' but holding an ICD-10 code."""
    df = icd10_claims().assign(**{CODE_VERSION: "0"})
    df.loc[3, ["code", CODE_VERSION]] = ["K50919", "9"]
    return write(df, tmp_path / "wrongflag.csv")


def ppe(tmp_path, source: str, *flags) -> tuple[int, Path]:
    out = tmp_path / "ppe.json"
    return main(["ppe", "--k", "2", "--input", source, "--output", str(out), *flags]), out


def test_a_wrongly_flagged_code_is_unknown_not_another_systems_code(tmp_path, capsys):
    source = wrong_flag(tmp_path)
    code, out = ppe(tmp_path, source, "--code-system", "icd10cm", "--mixed", "refuse")
    assert code == 2 and not out.exists()
    line = one_line_error(capsys.readouterr().err, source, 4)
    assert "not a code of the code system its version flag names" in line
    assert "ICD-9-CM code" not in line


def test_drop_unknown_drops_and_counts_a_wrongly_flagged_code(tmp_path, capsys):
    source = wrong_flag(tmp_path)
    code, out = ppe(tmp_path, source, "--code-system", "icd10cm", "--drop-unknown")
    assert code == 0
    assert json.loads(out.read_text())["metrics"]["rows_dropped_unknown_code"] == 1
    assert "1 row dropped (--drop-unknown)" in capsys.readouterr().out


def test_the_first_row_in_error_is_named_whichever_its_error():
    codes = ["I10", "4011", UNKNOWN]
    systems = [cs.ICD10CM, cs.ICD9CM, cs.ICD10CM]
    with pytest.raises(InputError, match="an ICD-9-CM code in a release over ICD-10-CM") as err:
        cs.unify(codes, systems, cs.ICD10CM)
    assert err.value.row == 2
    with pytest.raises(InputError, match="not a code of the code system its version") as err:
        cs.unify(codes[::-1], systems[::-1], cs.ICD10CM)
    assert err.value.row == 1


# --- 3. the refusal names --mixed on the command line, the release file in the DAG ---

def test_the_cli_refusal_names_the_option_and_an_icd9_code(tmp_path, capsys):
    df = icd10_claims().assign(**{CODE_VERSION: "0"})
    df.loc[1, ["code", CODE_VERSION]] = ["4011", "9"]
    source = write(df, tmp_path / "mixed.csv")
    code, out = ppe(tmp_path, source, "--code-system", "icd10cm")
    assert code == 2 and not out.exists()
    line = one_line_error(capsys.readouterr().err, source, 2)
    assert "an ICD-9-CM code in a release over ICD-10-CM" in line
    assert "--mixed" in line and "release file" not in line and "4011" not in line


def test_the_release_file_wording_is_passed_in_by_the_extract():
    df = pd.DataFrame({"patient_id": ["a", "b"], "code": ["I10", "4011"],
                       CODE_VERSION: ["0", "9"]})
    with pytest.raises(InputError) as err:
        clean_codes(df, "the extract", "icd10cm", refusal=cs.RELEASE_FILE_REFUSAL)
    assert err.value.problem.endswith("the release file refuses mixed code systems "
                                      "(mixed: refuse)")

def test_the_extract_refuses_in_the_release_files_words():
    import numpy as np
    import pyarrow as pa
    from deid.extract import clean_block_codes
    from deid.releases import CodePolicy

    code, version = pa.array(["I10", "4011"]), pa.array(["0", "9"])
    claims = pa.array(["carrier:1", "carrier:2"])
    with pytest.raises(InputError) as err:
        clean_block_codes(code, version, CodePolicy("icd10cm"), claims, 0, np.arange(2),
                          "icd9_dgns_cd_1", "version")
    assert err.value.row == 2 and "(mixed: refuse)" in err.value.problem
    assert "--mixed" not in err.value.problem and "4011" not in str(err.value)


# --- 4. summary lines count the rows --drop-unknown dropped ----------------------------

@pytest.mark.parametrize("command", ["ppe", "lda", "ugaclip", "gccens"])
def test_summary_line_counts_dropped_rows_without_the_code(tmp_path, capsys, command):
    df = with_unknown(icd10_claims())
    flags = ["--code-system", "icd10cm", "--drop-unknown"]
    source = write(df, tmp_path / "claims.csv")
    out = tmp_path / "out.json"
    if command == "ppe":
        args = ["ppe", "--k", "2"]
    elif command == "lda":
        source = write(df.assign(age=70), tmp_path / "claims.csv")
        args = ["lda", "--k", "2", "--seed", "1"]
    elif command == "ugaclip":
        assert ppe(tmp_path, source, *flags)[0] == 0
        args = ["ugaclip", "--k", "2", "--seed", "1", "--privacy-policy",
                str(tmp_path / "ppe.json"), "--utility-policy", "icd10-level-1"]
    else:
        args = ["gccens", "--k", "2", "--cap", "1", "--seed", "1", "--population", source]
    capsys.readouterr()
    assert main([*args, "--input", source, "--output", str(out), *flags]) == 0
    stdout = capsys.readouterr().out
    assert "1 row dropped (--drop-unknown)" in stdout and UNKNOWN not in stdout


# --- 5. a backward GEM is refused --------------------------------------------------------

GEM_FLAGS = {"flags": "00000", "approximate": "0", "no_map": "0", "combination": "0",
             "scenario": "0", "choice_list": "0"}


def gem_file(path: Path, first: str, pairs: list[tuple[str, str]]) -> str:
    """A GEM in the project's layout, ``first`` ('icd9cm' or 'icd10cm') the first
    column, ``pairs`` the (first column, second column) values, gzip'd."""
    second = "icd10cm" if first == "icd9cm" else "icd9cm"
    df = pd.DataFrame([{first: a, second: b, **GEM_FLAGS} for a, b in pairs])
    with gzip.open(path, "wt") as f:
        df.to_csv(f, index=False)
    return str(path)


def map_run(tmp_path, gem: str) -> tuple[int, Path]:
    df = icd10_claims().assign(**{CODE_VERSION: "0"})
    df.loc[0, ["code", CODE_VERSION]] = ["4011", "9"]
    return ppe(tmp_path, write(df, tmp_path / "mixed.csv"), "--code-system", "icd10cm",
               "--mixed", "map-to-icd10", "--gem", gem)


@pytest.mark.parametrize("backward", ["bundled", "icd10cm first", "relabelled"])
def test_a_backward_gem_is_refused_naming_the_file(tmp_path, capsys, backward):
    if backward == "bundled":
        gem = str(BUNDLED_BACKWARD_GEM)
    elif backward == "icd10cm first":  # CMS's 2018_I10gem in the project's layout
        gem = gem_file(tmp_path / "gem.csv.gz", "icd10cm", [("I10", "4011"), ("E119", "25000")])
    else:  # the same file with its columns named as the forward GEM's
        gem = gem_file(tmp_path / "gem.csv.gz", "icd9cm", [("I10", "4011"), ("E119", "25000")])
    code, out = map_run(tmp_path, gem)
    assert code == 2 and not out.exists()
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith(f"error: {gem}") and "backward" in line
    assert "I10" not in line and "4011" not in line


def test_a_forward_gem_maps(tmp_path, capsys):
    from anonymizers.io import read_gem
    gem = gem_file(tmp_path / "gem.csv.gz", "icd9cm", [("4011", "I10"), ("25000", "E119")])
    assert len(read_gem(gem)) == 2
    code, out = map_run(tmp_path, gem)
    assert code == 0
    assert json.loads(out.read_text())["metrics"]["rows_mapped_to_code_system"] == 1
    assert "1 mapped" in capsys.readouterr().out


@pytest.mark.parametrize("ending", [b"\r", b"\r\n"])
def test_a_gem_with_bare_cr_line_endings_is_refused_a_crlf_one_maps(tmp_path, capsys, ending):
    forward = gem_file(tmp_path / "forward.csv.gz", "icd9cm", [("4011", "I10"),
                                                               ("25000", "E119")])
    gem = tmp_path / "gem.csv"
    gem.write_bytes(gzip.decompress(Path(forward).read_bytes()).replace(b"\n", ending))
    code, out = map_run(tmp_path, str(gem))
    err = capsys.readouterr().err.strip()
    if ending == b"\r\n":
        assert code == 0, err
        return
    assert code == 2 and not out.exists()
    assert err == f"error: {gem}: line endings are bare CR (\\r); convert to LF or CRLF"
