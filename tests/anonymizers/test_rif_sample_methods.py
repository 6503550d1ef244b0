"""Issue 27 on CMS's Synthea RIF sample: UGACLIP, disassociation, MedCo and HHP
through the CLI on ICD-10-CM claims, each with its verifier running (the CLI
runs it by default).  LDA, PPE and GCCens are in test_icd10_cli.py.

The sample (``../shared/datasets/rif_synthea``) holds 3 beneficiaries and 45
distinct ICD-10-CM codes; Synthea writes a few placeholder stems without
their 7th character (M80.00X), which ``--drop-unknown`` drops and counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import anonymizers
from anonymizers import codesystems as cs
from anonymizers.__main__ import main
from anonymizers.io import CODE_VERSION
from tests.anonymizers.test_icd10_cli import RIF_CLAIMS, write

GEM = str(Path(anonymizers.__file__).parent / "data" / "hhp" / "gem" / "icd9toicd10cmgem.csv.gz")
ICD10 = ["--code-system", "icd10cm", "--drop-unknown"]


@pytest.fixture(scope="module")
def rif(datasets_dir):
    path = datasets_dir / "rif_synthea"
    if not path.is_dir():
        pytest.skip(f"CMS's Synthea RIF sample not present at {path}")
    return path


@pytest.fixture(scope="module")
def claim_codes(rif) -> pd.DataFrame:
    """Every diagnosis of the sample's inpatient, outpatient and carrier
    claims, one row per (claim, slot): patient_id, claim_id, service_date
    (ISO), slot (1 = ICD_DGNS_CD1), code, code_version."""
    frames = []
    for kind in RIF_CLAIMS:
        claims = pd.read_csv(rif / f"{kind}.csv.gz", sep="|", dtype=str)
        slots = sorted(int(c[len("ICD_DGNS_CD"):]) for c in claims.columns
                       if c.startswith("ICD_DGNS_CD"))
        for s in slots:
            frames.append(pd.DataFrame({
                "patient_id": claims["BENE_ID"], "claim_id": f"{kind}:" + claims["CLM_ID"],
                "service_date": pd.to_datetime(claims["CLM_FROM_DT"], format="%d-%b-%Y")
                .dt.strftime("%Y-%m-%d"),
                "slot": s, "code": claims[f"ICD_DGNS_CD{s}"],
                CODE_VERSION: claims.get(f"ICD_DGNS_VRSN_CD{s}")}))
    df = pd.concat(frames, ignore_index=True)
    # a carrier claim is one row per line, each repeating the claim's diagnoses
    df = df[df["code"].fillna("").str.strip() != ""].drop_duplicates(["claim_id", "slot"])
    df = df.reset_index(drop=True)
    assert df["patient_id"].nunique() == 3 and set(df[CODE_VERSION]) == {"0"}
    return df


@pytest.fixture(scope="module")
def records(claim_codes) -> pd.DataFrame:
    """patient_id, code, visit_id (the claim): one row per distinct code of a
    claim, as ``synthetic_csv``'s records.csv."""
    return (claim_codes.rename(columns={"claim_id": "visit_id"})
            [["patient_id", "code", "visit_id"]].drop_duplicates().reset_index(drop=True))


def unknown(df: pd.DataFrame) -> int:
    """Rows of ``df`` whose code is not an ICD-10-CM code."""
    return int((~cs.is_valid(df["code"].to_numpy(), "icd10cm")).sum())


def valid_codes(df: pd.DataFrame) -> set[str]:
    return set(df["code"][cs.is_valid(df["code"].to_numpy(), "icd10cm")])


@pytest.mark.datasets
def test_sample_shape(records):
    """What the assertions below rely on: 45 distinct ICD-10-CM codes, and
    2 claim rows holding stems that are not codes (M80.00X, S82.90X), so
    --drop-unknown has work to do."""
    assert len(valid_codes(records)) == 45
    assert unknown(records) == 2


# --- UGACLIP after PPE ---------------------------------------------------------------

@pytest.mark.datasets
@pytest.mark.parametrize("filter_", ["single-visit", "all-visits"])
def test_ugaclip_after_ppe_on_the_rif_sample(tmp_path, capsys, records, filter_):
    """PPE (k=2) extracts the privacy policy from the claims; UGACLIP (k=2)
    releases under it, verified, with an ICD-10-CM level and with ICD-9-CM's
    categories carried through the GEMs, which group every code (the 2 newer
    than the GEMs through their parents)."""
    data = write(records, tmp_path / "records.csv")
    policy = tmp_path / "ppe.json"
    assert main(["ppe", "--k", "2", "--filter", filter_, "--input", data,
                 "--output", str(policy), *ICD10]) == 0
    ppe = json.loads(policy.read_text())
    assert ppe["constraints"] and ppe["metrics"]["code_system"] == "icd10cm"
    assert ppe["metrics"]["rows_dropped_unknown_code"] == unknown(records)
    assert {c for cons in ppe["constraints"] for c in cons} <= valid_codes(records)
    capsys.readouterr()
    out = tmp_path / "ugaclip.json"
    ugaclip = ["ugaclip", "--k", "2", "--seed", "2", "--privacy-policy", str(policy),
               "--input", data, "--output", str(out), *ICD10]
    for level, flags, in_none in (("icd10-level-1", [], 0),
                                  # D49.59, N18.30 (newer than the GEMs) via D49.5, N18.3
                                  ("icd9-level-1", ["--gem", GEM], 0)):
        out.unlink(missing_ok=True)
        assert main([*ugaclip, "--utility-policy", level, *flags]) == 0, level
        said = capsys.readouterr().out
        assert f"({in_none} codes in none)" in said
        assert f"{unknown(records)} rows dropped (--drop-unknown)" in said
        release = json.loads(out.read_text())  # written only once verified
        m = release["metrics"]
        assert m["code_system"] == "icd10cm" and m["rows_dropped_unknown_code"] == unknown(records)
        assert m["unplaced_codes"] == []
        assert m["utility_constraints"]["codes_in_no_constraint"] == in_none, level
        assert m["utility_constraints"]["n_present"] > 0
        assert m["n_records"] == records["patient_id"].nunique()
        released = {c for item in release["items"] for c in item}
        assert released | set(release["suppressed"]) == valid_codes(records)


# --- disassociation ------------------------------------------------------------------

@pytest.mark.datasets
@pytest.mark.parametrize("utility", [[], ["--utility-policy", "icd10-level-1"]],
                         ids=["no-policy", "icd10-level-1"])
def test_disassociate_on_the_rif_sample(tmp_path, capsys, records, utility):
    out = tmp_path / "dis.json"
    code = main(["disassociate", "--k", "2", "--m", "2", "--seed", "1",
                 "--input", write(records[["patient_id", "code"]], tmp_path / "records.csv"),
                 "--output", str(out), *ICD10, *utility])
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    verdict, metrics = json.loads(lines[-2]), json.loads(lines[-1])
    assert verdict["ok"]
    assert metrics["code_system"] == "icd10cm"
    assert metrics["rows_dropped_unknown_code"] == unknown(records)
    release = json.loads(out.read_text())
    assert release["k"] == 2 and release["m"] == 2
    released = {c for cluster in release["clusters"] for c in cluster["item_chunk"]} | \
        {c for cluster in release["clusters"] for chunk in cluster["record_chunks"]
         for c in chunk["codes"]} | \
        {c for chunk in release["shared_chunks"] for c in chunk["codes"]}
    assert released == valid_codes(records)  # every known code, none of the dropped
    assert sum(cluster["size"] for cluster in release["clusters"]) == 3


# --- MedCo: cluster-codes, then dummies ------------------------------------------------

@pytest.mark.datasets
def test_medco_on_the_rif_sample(tmp_path, capsys, records):
    """The minimum anonymity set A counts codes per cluster, not patients, so
    3 patients do not bound it: A=5 over 45 codes is met, and the dummies
    (verified against the clusters and A) flatten every cluster.  An A above
    the code count puts every code in one cluster and says so."""
    data = write(records[["patient_id", "code"]], tmp_path / "records.csv")
    clusters, released, private = (tmp_path / f for f in ("clusters.json", "release.csv",
                                                          "map.csv"))
    assert main(["cluster-codes", "--input", data, "--output", str(clusters),
                 "--min-anonymity-set", "5", *ICD10]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["anonymity_set_met"] and m["smallest_cluster"] >= 5 and m["n_codes"] == 45
    assert m["code_system"] == "icd10cm" and m["rows_dropped_unknown_code"] == unknown(records)
    assert main(["dummies", "--input", data, "--clusters", str(clusters), "--output",
                 str(released), "--dummy-map", str(private), "--min-anonymity-set", "5",
                 "--seed", "1", *ICD10]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["verdict"]["ok"] and said["metrics"]["flat"]
    assert said["metrics"]["n_real_patients"] == 3 and said["metrics"]["n_dummies"] > 0
    assert said["metrics"]["rows_dropped_unknown_code"] == unknown(records)
    release, dummy_map = pd.read_csv(released, dtype=str), pd.read_csv(private, dtype=str)
    assert set(release["code"]) == valid_codes(records)
    assert set(release["patient_id"]) == set(dummy_map["pseudonym"])
    assert set(dummy_map["source_patient_id"]) <= set(records["patient_id"])
    assert main(["cluster-codes", "--input", data, "--output", str(clusters),
                 "--min-anonymity-set", "46", *ICD10]) == 0
    m = json.loads(capsys.readouterr().out)
    assert not m["anonymity_set_met"] and m["cluster_sizes"] == [45]


# --- HHP --------------------------------------------------------------------------------

def hhp_inputs(rif, claim_codes, tmp_path) -> tuple[str, str, pd.DataFrame]:
    """members.csv (member_id,sex,birth_date) from the beneficiary history and
    claims.csv (member_id,claim_id,service_date,dx_code,other_dx_codes,
    code_version), one row per claim: ICD_DGNS_CD1 as dx_code, the claim's
    other diagnoses ';'-joined, ISO dates (the layout of synthetic_csv)."""
    bene = pd.read_csv(rif / "beneficiary_history.csv.gz", sep="|", dtype=str,
                       usecols=["BENE_ID", "BENE_SEX_IDENT_CD", "BENE_BIRTH_DT"])
    bene = bene.drop_duplicates("BENE_ID")
    members = pd.DataFrame({
        "member_id": bene["BENE_ID"], "sex": bene["BENE_SEX_IDENT_CD"],
        "birth_date": pd.to_datetime(bene["BENE_BIRTH_DT"], format="%d-%b-%Y")
        .dt.strftime("%Y-%m-%d")})
    by_claim = claim_codes.sort_values(["claim_id", "slot"]).groupby("claim_id", sort=False)
    claims = by_claim.agg(member_id=("patient_id", "first"),
                          service_date=("service_date", "first"),
                          dx_code=("code", "first"),
                          other_dx_codes=("code", lambda c: ";".join(c.iloc[1:])),
                          code_version=(CODE_VERSION, "first")).reset_index()
    assert (by_claim[CODE_VERSION].nunique() == 1).all()  # one flag per claim
    claims = claims[["member_id", "claim_id", "service_date", "dx_code", "other_dx_codes",
                     CODE_VERSION]]
    return (write(members, tmp_path / "members.csv"), write(claims, tmp_path / "claims.csv"),
            claims)


@pytest.mark.datasets
def test_hhp_on_the_rif_sample_refuses_what_screening_leaves(tmp_path, capsys, rif,
                                                            claim_codes):
    """HHP's ICD-10-CM screening (hhp-2012-icd10-v1, section 2) removes 2 of
    the 3 members (a pregnancy-loss code, a substance-use code), so the one
    left is alone in every equivalence class: no lattice node has risk under
    MaxSup at any k >= 2 and nothing may be released.  The command says so in
    one line and writes nothing; without --drop-unknown it first refuses
    Synthea's stems, naming the row and field, not the code."""
    members, claims, table = hhp_inputs(rif, claim_codes, tmp_path)
    stems = set(claim_codes["code"]) - valid_codes(claim_codes)
    holds = [[f for f, v in zip(("dx_code", "other_dx_codes"), row)
              if set(str(v).split(";")) & stems]
             for row in zip(table["dx_code"], table["other_dx_codes"])]
    first = next(i for i, fields in enumerate(holds) if fields)
    out = tmp_path / "release"
    hhp = ["hhp", "--members", members, "--claims", claims, "--output", str(out),
           "--seed", "1", "--k", "2", "--code-system", "icd10cm",
           "--screening-policy", "hhp-2012-icd10-v1"]
    assert main(hhp) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"claims.csv, row {first + 1}, field '{holds[first][0]}'" in err[0]
    assert "not a code" in err[0] and not any(s in err[0] for s in stems)
    assert main([*hhp, "--drop-unknown"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_sup" in err[0] and "no node meets it" in err[0]
    assert "screening left 1 of 3 members" in err[0]  # the cause, not only the knobs
    assert not out.exists() or not any(out.iterdir())
