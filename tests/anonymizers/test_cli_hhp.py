"""``python -m anonymizers hhp`` (El Emam et al. 2012) on small DE-SynPUF-shaped
claims from ``anonymizers.synthetic``: the written release verifies on its own,
equals the library's, and bad inputs give one line and exit 2."""

from __future__ import annotations

import datetime as dt
import io
import json
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
import yaml

from anonymizers.__main__ import main
from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.cli.hhp import read_claims
from anonymizers.synthetic import SyntheticConfig, generate
from anonymizers.verify.claims import verify_release
from anonymizers.verify.verdict import Verdict

SEED = 11
# small risk experiment so that a run takes seconds; the same in CLI and library
FAST = {"sample_size": 300, "ci_halfwidth": 0.02, "max_evaluations": 15}
FAST_ARGS = ["--sample-size", "300", "--ci-halfwidth", "0.02", "--max-evaluations", "15"]
KEY = b"test_cli_hhp pseudonym key of 32 bytes"  # the run's key file, the library's key


def synpuf_tables(n_members: int = 200, seed: int = 5, code_system: str = "icd9cm"):
    """Members (member_id, sex, birth_date) and claims from the generator's
    beneficiary summary and inpatient, outpatient and carrier claims."""
    chunk = next(generate(SyntheticConfig(n_members=n_members, seed=seed,
                                          claims_per_member=6, code_system=code_system)))
    bene = chunk["beneficiary_summary"]
    bene = bene[bene["year"] == 2008]
    members = pd.DataFrame({"member_id": bene["desynpuf_id"],
                            "sex": bene["bene_sex_ident_cd"].astype(str),
                            "birth_date": bene["bene_birth_dt"]})
    parts = []
    for table in ("inpatient_claims", "outpatient_claims", "carrier_claims"):
        c = chunk[table]
        parts.append(pd.DataFrame({
            "member_id": c["desynpuf_id"], "claim_id": c["clm_id"],
            "service_date": c["clm_from_dt"], "dx_code": c["icd9_dgns_cd_1"],
            "procedure_code": c["hcpcs_cd_1"],
            "length_of_stay": c["clm_utlztn_day_cnt"] if "clm_utlztn_day_cnt" in c else 0}))
    return members.reset_index(drop=True), pd.concat(parts, ignore_index=True)


def age(birth: str, day: str) -> int:
    """Whole years, written apart from the CLI's vectorised version."""
    b, d = dt.date.fromisoformat(birth), dt.date.fromisoformat(day)
    return d.year - b.year - ((d.month, d.day) < (b.month, b.day))


def library_input(members: pd.DataFrame, claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table of ``anonymizers.claims`` built here, not by the CLI."""
    m = members.set_index("member_id")
    out = claims.copy()
    out["sex"] = m.loc[out["member_id"], "sex"].to_numpy()
    out["birth_date"] = m.loc[out["member_id"], "birth_date"].to_numpy()
    out["age_at_service"] = [age(b, d) for b, d in zip(out["birth_date"], out["service_date"])]
    return out


@pytest.fixture(scope="module")
def tables():
    return synpuf_tables()


def write(folder, members, claims):
    members.to_csv(folder / "members.csv", index=False)
    claims.to_csv(folder / "claims.csv", index=False)
    return folder / "members.csv", folder / "claims.csv"


def hhp(members, claims, out, *extra):
    return main(["hhp", "--members", str(members), "--claims", str(claims),
                 "--output", str(out), *extra])


@pytest.fixture(scope="module")
def run(tables, tmp_path_factory):
    """One CLI run, its exit status, stdout report and files."""
    folder = tmp_path_factory.mktemp("hhp")
    members, claims = write(folder, *tables)
    (folder / "pseudonym.key").write_bytes(KEY)
    (folder / "pseudonym.key").chmod(0o600)
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        rc = hhp(members, claims, folder / "release", "--seed", str(SEED),
                 "--key", str(folder / "key.csv"), *FAST_ARGS,
                 "--pseudonym-key-file", str(folder / "pseudonym.key"))
    return rc, json.loads(buffer.getvalue()), folder


def read(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_release_is_written_and_verifies_independently(tables, run):
    rc, report, folder = run
    assert rc == 0
    assert report["seed"] == SEED == report["metrics"]["seed"]
    assert report["verdict"]["ok"] and report["metrics"]["policy_version"] == "hhp-2012-v1"
    assert report["metrics"]["pseudonyms"] == "keyed (--pseudonym-key-file)"
    release = folder / "release"
    members, claims = read(release / "members.csv"), read(release / "claims.csv")
    metrics = json.loads((release / "metrics.json").read_text())
    assert len(members) == report["metrics"]["released"]["members"] > 0
    assert len(claims) == report["metrics"]["released"]["claims"] > 0
    source = set(tables[0]["member_id"]) | set(tables[1]["claim_id"])
    assert not source & (set(members["member_id"]) | set(claims["member_id"]))
    verdict = verify_release(members, claims, metrics, read(folder / "key.csv"),
                             library_input(*tables))
    assert verdict.ok, verdict.violations


def test_cli_release_equals_library(tables, run):
    _, report, folder = run
    lib = hhp_release(library_input(*tables), HHPConfig(seed=SEED, pseudonym_key=KEY, **FAST))
    release = folder / "release"
    pd.testing.assert_frame_equal(read(release / "members.csv"), lib.members.astype(str))
    pd.testing.assert_frame_equal(read(release / "claims.csv"), lib.claims.astype(str))
    pd.testing.assert_frame_equal(read(folder / "key.csv"), lib.key.astype(str))
    assert report["metrics"]["chosen_node"] == lib.metrics["chosen_node"]


def test_ages_are_whole_calendar_years(tmp_path):
    members = pd.DataFrame({"member_id": ["a", "b"], "sex": ["1", "F"],
                            "birth_date": ["19600229", "1950-06-15"]})
    claims = pd.DataFrame({"member_id": ["a", "a", "b", "b"], "claim_id": list("1234"),
                           "service_date": ["2009-02-28", "2009-03-01", "20100614",
                                            "2010-06-15"], "dx_code": ["4019", "", "", ""]})
    df = read_claims(*write(tmp_path, members, claims))
    assert df["age_at_service"].tolist() == [48, 49, 59, 60]
    assert df["sex"].tolist() == ["M", "M", "F", "F"]  # the members file's, mapped


def test_claims_age_column_is_used_when_given(tmp_path):
    members = pd.DataFrame({"member_id": ["a"], "sex": ["2"]})
    claims = pd.DataFrame({"member_id": ["a"], "claim_id": ["1"], "service_date": ["20090101"],
                           "dx_code": ["4019"], "age_at_service": ["70"]})
    assert read_claims(*write(tmp_path, members, claims))["age_at_service"].tolist() == ["70"]


def one_error_line(capsys, *fragments):
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.err
    assert "Traceback" not in out.err and out.out == ""
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def test_missing_column(tables, tmp_path, capsys):
    m, c = write(tmp_path, tables[0], tables[1].drop(columns=["service_date"]))
    assert hhp(m, c, tmp_path / "out", "--seed", "1") == 2
    one_error_line(capsys, str(c), "'service_date'")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("file, row, column, value", [
    ("claims", 2, "service_date", "2008-13-45"),
    ("members", 4, "sex", "X"),  # sex comes from the members file: located there
    ("members", 3, "birth_date", "19501332"),
    ("claims", 0, "member_id", "NOT-A-MEMBER"),
    ("claims", 5, "age_at_service", "-3"),  # refused by the library's normalize
])
def test_a_bad_value_names_file_row_field_but_not_the_value(tables, tmp_path, capsys, file,
                                                            row, column, value):
    frames = {"members": tables[0].copy(), "claims": tables[1].copy()}
    if column == "age_at_service":
        frames["claims"][column] = "70"
    frames[file].loc[row, column] = value
    paths = dict(zip(("members", "claims"), write(tmp_path, frames["members"],
                                                   frames["claims"])))
    assert hhp(paths["members"], paths["claims"], tmp_path / "out", "--seed", "1") == 2
    line = one_error_line(capsys, str(paths[file]), f"row {row + 1}", f"'{column}'")
    assert value not in line.replace(str(tmp_path), "")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("file", ["members", "claims"])
def test_bare_cr_line_endings_are_refused_naming_the_file(tables, tmp_path, capsys, file):
    paths = dict(zip(("members", "claims"), write(tmp_path, *tables)))
    bad = paths[file]
    bad.write_bytes(bad.read_bytes().replace(b"\n", b"\r"))
    assert hhp(paths["members"], paths["claims"], tmp_path / "out", "--seed", "1") == 2
    line = one_error_line(capsys, f"{bad}: line endings are bare CR")
    assert tables[0]["member_id"].iloc[0] not in line.replace(str(tmp_path), "")
    assert not (tmp_path / "out").exists()


def test_unknown_file(tables, tmp_path, capsys):
    m, _ = write(tmp_path, *tables)
    assert hhp(m, tmp_path / "nope.csv", tmp_path / "out", "--seed", "1") == 2
    one_error_line(capsys, "nope.csv", "file not found")


def test_output_that_is_a_file(tables, tmp_path, capsys):
    m, c = write(tmp_path, *tables)
    assert hhp(m, c, m, "--seed", "1") == 2
    one_error_line(capsys, "--output", "is a file")


def test_release_keeping_nothing_is_an_error(tables, tmp_path, capsys):
    claims = tables[1].copy()
    claims["dx_code"] = "042"  # HIV: screening removes every member (section 2)
    m, c = write(tmp_path, tables[0], claims)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", *FAST_ARGS) == 2
    one_error_line(capsys, str(c), "keep no member")
    assert not (tmp_path / "out").exists()


def test_icd10_claims_with_ccsr_groups(tmp_path, capsys):
    """Generated ICD-10-CM claims, the ICD-10-CM screening lists (a policy
    file) and ``--hierarchies hhp-2012-icd10-ccsr-v1``: written, verified by
    the CLI and again here against the CCSR hierarchies, every diagnosis a
    CCSR label of the chosen level."""
    from anonymizers.claims.groupings import load_hierarchies
    from anonymizers.claims.policy import DATA

    ccsr = "hhp-2012-icd10-ccsr-v1"
    policy = str(DATA / "screening_policy_icd10_v1.yaml")
    tables = synpuf_tables(code_system="icd10cm")
    m, c = write(tmp_path, *tables)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--screening-policy", policy,
               "--hierarchies", ccsr, "--code-system", "icd10cm", "--key", str(tmp_path / "key.csv"), *FAST_ARGS) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["ok"] and report["metrics"]["hierarchies"] == ccsr
    out = tmp_path / "out"
    metrics = json.loads((out / "metrics.json").read_text())
    claims = read(out / "claims.csv")
    verdict = verify_release(read(out / "members.csv"), claims, metrics,
                             read(tmp_path / "key.csv"), library_input(*tables),
                             "hhp-2012-icd10-v1", ccsr)
    assert verdict.ok, verdict.violations
    dx = load_hierarchies(ccsr)["dx"]
    level = dx.level_names.index(metrics["chosen_node"]["dx"])
    assert set(claims["dx"]) <= set(dx.encode(tables[1]["dx_code"].fillna("").to_numpy(
        dtype=object)).labels[level])


def test_a_release_failing_verification_is_not_written(tables, tmp_path, capsys, monkeypatch):
    import anonymizers.cli.hhp as cli

    monkeypatch.setattr(cli, "verify_hhp", lambda *a: Verdict.from_violations(
        "test", 1, ["a planted violation"]))
    m, c = write(tmp_path, *tables)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", *FAST_ARGS) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["verdict"]["violations"] == ["a planted violation"]
    assert "failed verification" in out.err and not (tmp_path / "out").exists()


def test_unknown_screening_policy(tables, tmp_path, capsys):
    m, c = write(tmp_path, *tables)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--screening-policy", "hhp-1999") == 2
    one_error_line(capsys, "--screening-policy hhp-1999", "hhp-2012-v1")


def test_options_reach_the_config(tables, tmp_path, capsys):
    m, c = write(tmp_path, *tables)
    assert hhp(m, c, tmp_path / "out", "--seed", "4", "--max-sup", "0.2", "--k", "3",
               "--qis", "dx,age,sex", "--node", "dx=suppressed,age=suppressed,sex=value",
               *FAST_ARGS) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["chosen_node"] == {"dx": "suppressed", "age": "suppressed", "sex": "value"}
    assert metrics["qis_used"] == ["dx", "age", "sex"]
    assert (metrics["k"], metrics["max_sup"], metrics["sample_size"]) == (3, 0.2, 300)


def test_seed_is_required(tables, tmp_path, capsys):
    m, c = write(tmp_path, *tables)
    with pytest.raises(SystemExit) as exc:
        hhp(m, c, tmp_path / "out")
    assert exc.value.code == 2 and "--seed" in capsys.readouterr().err


def tiny(folder, dx, *, other=None, version=None):
    """Three members, one claim each (ISO dates), diagnoses ``dx``."""
    members = pd.DataFrame({"member_id": ["a", "b", "c"], "sex": ["1", "2", "1"],
                            "birth_date": ["1950-01-01", "1960-02-03", "1970-04-05"]})
    claims = pd.DataFrame({"member_id": ["a", "b", "c"], "claim_id": ["1", "2", "3"],
                           "service_date": ["2020-01-02"] * 3, "dx_code": dx})
    if other is not None:
        claims["other_dx_codes"] = other
    if version is not None:
        claims["code_version"] = version
    return write(folder, members, claims)


ICD10 = ["I10", "M549", "J449"]  # not of ICD-9-CM's form (E119 is: an E code)
UNKNOWN = "Q99ZZ9X"  # not an ICD-10-CM code


@pytest.mark.parametrize("dx, other, row, field", [
    ([ICD10[0], UNKNOWN, ICD10[2]], None, 2, "dx_code"),
    (ICD10, ["", f"I10;{UNKNOWN}", ""], 2, "other_dx_codes"),
])
def test_an_unknown_code_is_refused(tmp_path, capsys, dx, other, row, field):
    m, c = tiny(tmp_path, dx, other=other)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--code-system", "icd10cm",
               *FAST_ARGS) == 2
    line = one_error_line(capsys, str(c), f"row {row}", f"'{field}'", "ICD-10-CM")
    assert UNKNOWN not in line and not (tmp_path / "out").exists()


def test_icd10_claims_under_the_default_icd9_code_system_are_refused(tmp_path, capsys):
    m, c = tiny(tmp_path, ICD10)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", *FAST_ARGS) == 2
    one_error_line(capsys, str(c), "row 1", "'dx_code'", "ICD-9-CM")


def test_a_flag_of_another_code_system_is_refused(tmp_path, capsys):
    m, c = tiny(tmp_path, ICD10[:2] + ["4019"], version=["0", "0", "9"])
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--code-system", "icd10cm",
               *FAST_ARGS) == 2
    one_error_line(capsys, str(c), "row 3")


def test_drop_unknown_drops_and_counts_the_code(tmp_path, capsys):
    tables = synpuf_tables(n_members=60, code_system="icd10cm")
    claims = tables[1].copy()
    claims.loc[3, "dx_code"] = UNKNOWN
    m, c = write(tmp_path, tables[0], claims)
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--code-system", "icd10cm",
               "--drop-unknown", *FAST_ARGS) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["ok"]
    codes = report["metrics"]["codes"]
    assert (codes["code_system"], codes["codes_dropped_unknown"]) == ("icd10cm", 1)
    assert codes["codes_mapped_to_code_system"] == codes["legacy_icd9_codes"] == 0


@pytest.mark.parametrize("policy", [None, "hhp-2012-icd10-v1"])
def test_icd10_policy_by_name_or_by_code_system(tmp_path, capsys, policy):
    """``--screening-policy hhp-2012-icd10-v1`` (docs/methods/hhp.md's name)
    is a bundled policy, and the default under ``--code-system icd10cm``."""
    m, c = write(tmp_path, *synpuf_tables(n_members=60, code_system="icd10cm"))
    extra = [] if policy is None else ["--screening-policy", policy]
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--code-system", "icd10cm", *extra,
               *FAST_ARGS) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["ok"]
    assert report["metrics"]["policy_version"] == "hhp-2012-icd10-v1"
    assert report["metrics"]["hierarchies"] == "hhp-2012-icd10-v1"


@pytest.mark.parametrize("extra, option", [
    (["--hierarchies", "hhp-2012-icd10-v1"], "--hierarchies hhp-2012-icd10-v1"),
    (["--hierarchies", "hhp-2012-icd10-ccsr-v1"], "--hierarchies hhp-2012-icd10-ccsr-v1"),
    (["--screening-policy", "hhp-2012-icd10-v1"], "--screening-policy hhp-2012-icd10-v1"),
    (["--code-system", "icd10cm", "--screening-policy", "hhp-2012-v1"],
     "--screening-policy hhp-2012-v1"),
    (["--code-system", "icd10cm", "--hierarchies", "hhp-2012-v1"], "--hierarchies hhp-2012-v1"),
])
def test_code_systems_that_disagree_are_refused(tmp_path, capsys, extra, option):
    m, c = tiny(tmp_path, ["4019", "25000", "7242"])
    assert hhp(m, c, tmp_path / "out", "--seed", "1", *extra, *FAST_ARGS) == 2
    one_error_line(capsys, option, "--code-system")
    assert not (tmp_path / "out").exists()


def test_a_policy_file_is_taken_at_its_version(tmp_path, capsys):
    from anonymizers.claims.policy import DATA

    m, c = tiny(tmp_path, ["4019", "25000", "7242"])
    policy = str(DATA / "screening_policy_icd10_v1.yaml")
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--screening-policy", policy,
               *FAST_ARGS) == 2
    one_error_line(capsys, "--screening-policy", "icd10cm", "--code-system is icd9cm")


def test_desynpuf_placeholders_and_legacy_icd9_codes_are_kept(tmp_path):
    """As the Airflow extract keeps them for this method: CMS's ``OTHER``
    and an ICD-9-CM-form code the v32 list lacks (``0421``), which DE-SynPUF
    writes; an ICD-10-CM release keeps no such code."""
    import argparse

    from anonymizers.cli.hhp import clean_dx_codes

    claims = pd.DataFrame({"dx_code": ["OTHER", "0421", "401.9"],
                           "other_dx_codes": ["", "4019;0421", np.nan]})
    args = argparse.Namespace(code_system="icd9cm", drop_unknown=False, mixed="refuse", gem=None)
    out, counts = clean_dx_codes(claims, "c.csv", args)
    assert out["dx_code"].tolist() == ["OTHER", "0421", "4019"]
    assert out["other_dx_codes"].tolist()[1] == "4019;0421"
    assert (counts["placeholder_codes"], counts["legacy_icd9_codes"]) == (1, 2)
    ten = argparse.Namespace(code_system="icd10cm", drop_unknown=True, mixed="refuse", gem=None)
    out, counts = clean_dx_codes(claims, "c.csv", ten)
    assert out["dx_code"][0] == "OTHER" and out["dx_code"][1:].isna().all()
    assert out["other_dx_codes"].isna().all() and counts["codes_dropped_unknown"] == 4


def test_help_names_every_bundled_name_and_the_input_formats(capsys):
    from anonymizers.claims.groupings import NAMED
    from anonymizers.claims.screening import NAMED_POLICIES

    with pytest.raises(SystemExit):
        main(["hhp", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    text = text.replace("- ", "-")  # argparse wraps at hyphens
    for name in [*NAMED_POLICIES, *NAMED]:
        assert f"{name}:" in text, name
    for option in ("--code-system", "--drop-unknown", "--mixed", "--gem"):
        assert option in text
    assert "code_version" in text and "YYYY-MM-DD" in text
    assert "ICD-9 codes" not in text


def test_listed_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "hhp" in capsys.readouterr().out


def synpuf_files(folder):
    """members.csv and claims.csv from the DE-SynPUF TestB files as CMS
    publishes them: the 2008 beneficiary summary, inpatient, outpatient and
    carrier (TestBA) claims; claims without a from-date are left out."""
    bene = pd.read_csv(folder / "DE1_0_2008_Beneficiary_Summary_File_Sample_TestB.csv.gz",
                       dtype=str, keep_default_na=False)
    members = pd.DataFrame({"member_id": bene["DESYNPUF_ID"],
                            "sex": bene["BENE_SEX_IDENT_CD"],
                            "birth_date": bene["BENE_BIRTH_DT"]})
    parts = []
    for kind in ("Inpatient_Claims_Sample_TestB", "Outpatient_Claims_Sample_TestB",
                 "Carrier_Claims_Sample_TestBA"):
        c = pd.read_csv(folder / f"DE1_0_2008_to_2010_{kind}.csv.gz", dtype=str,
                        keep_default_na=False)
        c = c[c["CLM_FROM_DT"] != ""]
        parts.append(pd.DataFrame({
            "member_id": c["DESYNPUF_ID"], "claim_id": c["CLM_ID"],
            "service_date": c["CLM_FROM_DT"], "dx_code": c["ICD9_DGNS_CD_1"],
            "procedure_code": c["HCPCS_CD_1"],
            "length_of_stay": c.get("CLM_UTLZTN_DAY_CNT", "0")}))
    return members, pd.concat(parts, ignore_index=True)


@pytest.mark.datasets
def test_synpuf_testb_release_verifies(datasets_dir, tmp_path, capsys):
    members, claims = synpuf_files(datasets_dir / "synpuf" / "cms_bfd_sample_testB")
    m, c = write(tmp_path, members, claims)
    assert hhp(m, c, tmp_path / "release", "--seed", "2012", "--key", str(tmp_path / "key.csv"),
               "--sample-size", "1000", "--max-evaluations", "20") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["ok"] and report["seed"] == 2012
    assert 0 < report["metrics"]["members_removed_by_screening"]
    release = tmp_path / "release"
    iso = {c: [f"{d[:4]}-{d[4:6]}-{d[6:]}" for d in t[c]]
           for t, c in ((members, "birth_date"), (claims, "service_date"))}
    independent = library_input(members.assign(birth_date=iso["birth_date"]),
                                claims.assign(service_date=iso["service_date"]))
    verdict = verify_release(read(release / "members.csv"), read(release / "claims.csv"),
                             json.loads((release / "metrics.json").read_text()),
                             read(tmp_path / "key.csv"), independent)
    assert verdict.ok, verdict.violations


def test_the_bundled_icd10_policy_given_as_a_file_gets_the_icd10_hierarchies(tmp_path, capsys):
    """Without --hierarchies the groups follow the policy's version, not ICD-9-CM's."""
    from anonymizers.claims.policy import DATA

    m, c = write(tmp_path, *synpuf_tables(n_members=60, code_system="icd10cm"))
    policy = str(DATA / "screening_policy_icd10_v1.yaml")
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--code-system", "icd10cm",
               "--screening-policy", policy, *FAST_ARGS) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"]["ok"] and report["metrics"]["hierarchies"] == "hhp-2012-icd10-v1"


def test_default_hierarchies_that_disagree_are_named_as_the_default(tmp_path, capsys):
    from anonymizers.claims.policy import DATA

    m, c = tiny(tmp_path, ["4019", "25000", "7242"])
    own = yaml.safe_load((DATA / "screening_policy_icd10_v1.yaml").read_text())
    own["version"] = "custodian-v1"  # a custodian's own policy: its system is unknown
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(own))
    assert hhp(m, c, tmp_path / "out", "--seed", "1", "--code-system", "icd10cm",
               "--screening-policy", str(path), *FAST_ARGS) == 2
    line = one_error_line(capsys, "the default hierarchies hhp-2012-v1", "icd10cm")
    assert "--hierarchies" not in line


def test_the_dag_side_table_of_policy_code_systems_is_the_librarys():
    """plugins/deid/releases.py keeps a light copy for DAG parsing; it must agree."""
    from deid import releases

    from anonymizers.claims import screening

    assert releases.POLICY_CODE_SYSTEM == screening.POLICY_CODE_SYSTEM
    assert set(releases.SCREENING_POLICIES) - {None, "none"} == set(screening.NAMED_POLICIES)


def test_a_bad_version_flag_is_refused_even_on_a_claim_without_codes(tmp_path, capsys):
    m, c = tiny(tmp_path, ["4019", "", "7242"], version=["9", "X", "9"])
    assert hhp(m, c, tmp_path / "out", "--seed", "1", *FAST_ARGS) == 2
    line = one_error_line(capsys, str(c), "row 2", "'code_version'")
    assert "'X'" not in line and not (tmp_path / "out").exists()
