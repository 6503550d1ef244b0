"""Release DAGs on ICD-10-CM claims (issue 27): the generator's ICD-10-CM
claims through the releases/*_icd10*.yaml files (HHP, MedCo, UGACLIP,
disassociation, LDA, GCCens) end to end, with the verifiers passing, and an
ICD-9-CM release refusing them at the extract."""

from __future__ import annotations

import hashlib
import os

import pytest
import yaml
from deid.admin_setup import RIF_TABLES
from deid.paths import ROOT

from anonymizers.codesystems import FORWARD_GEM, is_valid
from tests.dags.release_copies import TEST_POLICY, forget_history, write_copies
from tools.demo_data import TABLES, load_synthetic

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]


# a tiny GEM in anonymizers.io.GEM_COLUMNS' layout
GEM = ("icd9cm,icd10cm,no_map,combination,scenario,choice_list,approximate\n"
       "4011,I10,0,0,0,0,1\n25000,E119,0,0,0,0,1\n")


@pytest.fixture(scope="module", autouse=True)
def release_files(tmp_path_factory):
    folder = write_copies(tmp_path_factory.mktemp("releases"))
    # medco_codes_icd10 mapping ICD-9-CM-flagged codes through the GEM
    gem = folder.parent / "gem.csv"
    gem.write_text(GEM)
    text = (folder / "medco_codes_icd10.yaml").read_text()
    (folder / "medco_mixed.yaml").write_text(
        text.replace("name: medco_codes_icd10", "name: medco_mixed")
        .replace("table: medco_codes_icd10", "table: medco_mixed")
        .replace("mixed: refuse", f"mixed: map-to-icd10\ngem: {gem}"))
    least = yaml.safe_load(text)  # MedCo's least-ratio frequency step, 3 clusters
    least.update(name="medco_least_ratio", destination={"table": "medco_least_ratio"})
    least["params"].update(frequency_step="least_ratio", n_clusters=3)
    (folder / "medco_least_ratio.yaml").write_text(yaml.safe_dump(least))
    # ugaclip_diagnoses_icd10 keeping ICD-9's sections: icd9-level-2 carried through the GEM
    carried = yaml.safe_load((folder / "ugaclip_diagnoses_icd10.yaml").read_text())
    carried.update(name="ugaclip_carried", destination={"table": "ugaclip_carried"},
                   gem=FORWARD_GEM)
    carried["params"]["utility_policy"] = "icd9-level-2"
    (folder / "ugaclip_carried.yaml").write_text(yaml.safe_dump(carried))
    before = os.environ.get("DEID_RELEASES_DIR")
    os.environ["DEID_RELEASES_DIR"] = str(folder)
    os.environ.setdefault("AIRFLOW_VAR_DEID_TOKEN_KEY", "test-key-not-secret")
    yield folder
    if before is None:
        del os.environ["DEID_RELEASES_DIR"]
    else:
        os.environ["DEID_RELEASES_DIR"] = before


# the repository's ICD-10-CM files of the methods without a screening step
ICD10_RELEASES = ("disassociation_diagnoses_icd10", "gccens_repeated_codes_icd10",
                  "lda_trajectories_icd10", "ugaclip_diagnoses_icd10")


def _truncate(warehouse) -> None:
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in (*TABLES, *RIF_TABLES)))


@pytest.fixture(scope="module")
def icd10_ids(warehouse):
    """300 generated members with ICD-10-CM diagnoses; the source is emptied
    afterwards (a later test extracting what it finds expects ICD-9-CM)."""
    _truncate(warehouse)
    forget_history(warehouse)  # new members: no release of them published yet
    load_synthetic(n_members=300, seed=5, code_system="icd10cm")
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT DISTINCT desynpuf_id FROM source.beneficiary_summary")
        yield {r[0] for r in cur.fetchall()}
    _truncate(warehouse)


def _dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(dag_id)


def _query(warehouse, sql, *args):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def _audit(warehouse, release: str, run_id: str) -> dict:
    (row,), = _query(warehouse, "SELECT to_jsonb(r) FROM audit.release_runs r "
                     "WHERE release_name = %s AND run_id = %s", release, run_id)
    return row


@pytest.mark.parametrize("release, hierarchies", [
    ("hhp_claims_icd10", "hhp-2012-icd10-v1"),  # translated primary-condition groups
    ("hhp_claims_icd10_ccsr", "hhp-2012-icd10-ccsr-v1")])  # AHRQ CCSR
def test_hhp_release_on_icd10_claims_uses_the_icd10_policy_and_passes_its_verifier(
        icd10_ids, warehouse, release, hierarchies):
    run = _dag(f"deid_{release}").test(run_conf=TEST_POLICY[release])
    assert str(run.state).endswith("success"), run.state
    audit = _audit(warehouse, release, run.run_id)
    assert audit["metrics"]["hhp"]["hierarchies"] == hierarchies
    assert audit["outcome"] == "loaded" and audit["params"]["code_system"] == "icd10cm"
    verdicts = audit["verdicts"]["verdicts"]
    assert verdicts and all(v["ok"] for v in verdicts)
    assert any("hhp" in v["property"].lower() or "risk" in v["property"].lower()
               for v in verdicts), [v["property"] for v in verdicts]
    assert audit["policy_versions"]["hhp_policy"] == "hhp-2012-icd10-v1"
    extract = audit["metrics"]["extract"]
    assert extract["code_system"] == "icd10cm" and extract["unknown_codes_dropped"] == 0
    assert audit["metrics"]["hhp"]["risk"] <= 0.05
    members = {m for (m,) in _query(warehouse, "SELECT DISTINCT member_pseudonym FROM "
                                    f"release.{release}_members")}
    assert members and not members & icd10_ids


def test_medco_release_on_icd10_claims_end_to_end(icd10_ids, warehouse):
    run = _dag("deid_medco_codes_icd10").test(run_conf=TEST_POLICY["medco_codes_icd10"])
    assert str(run.state).endswith("success"), run.state
    rows = _query(warehouse, "SELECT patient_pseudonym, code_token FROM "
                  "release.medco_codes_icd10")
    assert rows and not {p for p, _ in rows} & icd10_ids
    audit = _audit(warehouse, "medco_codes_icd10", run.run_id)
    assert audit["outcome"] == "loaded" and audit["params"]["code_system"] == "icd10cm"
    assert all(v["ok"] for v in audit["verdicts"]["verdicts"])
    assert audit["policy_versions"]["screening"] == "hhp-2012-icd10-v1"
    assert audit["metrics"]["extract"]["code_system"] == "icd10cm"
    assert audit["metrics"]["screen"]["policy_version"] == "hhp-2012-icd10-v1"
    (codes,), = _query(warehouse, "SELECT array_agg(DISTINCT icd9_dgns_cd_1) FROM "
                       "source.carrier_claims")
    assert is_valid(codes, "icd10cm").all()


def test_an_icd9_release_refuses_icd10_claims_at_the_extract(icd10_ids, warehouse):
    """medco_codes.yaml says no code system: ICD-9-CM, so the run stops at
    the extract naming the table, row and field, with no code in the error."""
    run = _dag("deid_medco_codes").test(run_conf=TEST_POLICY["medco_codes"])
    assert str(run.state).endswith("failed")
    audit = _audit(warehouse, "medco_codes", run.run_id)
    error = audit["error"]
    assert audit["outcome"] == "failed" and error.startswith("extract: source.")
    # the failure row keeps the versions the open row recorded at the run's start
    assert audit["policy_versions"]["release_file"] == 1
    assert "field 'code'" in error and "not a code of ICD-9-CM" in error and ", row " in error
    (codes,), = _query(warehouse, "SELECT array_agg(DISTINCT icd9_dgns_cd_1) FROM "
                       "source.carrier_claims")
    assert not any(f"'{c}'" in error or f" {c} " in error for c in codes)


def _rif_icd9_claims(warehouse, n: int = 4) -> None:
    """``n`` RIF beneficiaries, each with a carrier claim whose codes CMS
    flags ICD-9-CM (4011, 25000) beside an ICD-10-CM one (E119)."""
    with warehouse.connect() as conn, conn.cursor() as cur:
        for b in range(n):
            bene, clm = f"-9{b}", f"-90{b}"
            cur.execute("INSERT INTO source.rif_beneficiary VALUES (2015, %s, '1950-03-01', "
                        "1, 1, '22', '090')", (bene,))
            cur.execute("INSERT INTO source.rif_claims VALUES ('carrier', %s, %s, "
                        "'2015-05-30', '2015-05-30')", (bene, clm))
            for field, code, system in (("PRNCPAL_DGNS_CD", "4011", "icd9cm"),
                                        ("ICD_DGNS_CD1", "E119", "icd10cm"),
                                        ("ICD_DGNS_CD2", "25000", "icd9cm")):
                cur.execute("INSERT INTO source.rif_diagnoses VALUES ('carrier', %s, %s, NULL, "
                            "%s, %s, %s)", (bene, clm, field, code, system))


def test_mixed_code_systems_are_refused_or_mapped_as_the_release_file_says(icd10_ids,
                                                                           warehouse):
    """The generated ICD-10-CM claims and RIF claims with ICD-9-CM-flagged
    codes: medco_codes_icd10 (mixed: refuse) stops at the extract; its copy
    saying map-to-icd10 maps them through the GEM and loads."""
    _rif_icd9_claims(warehouse)
    try:
        refused = _dag("deid_medco_codes_icd10").test(run_conf=TEST_POLICY["medco_codes_icd10"])
        assert str(refused.state).endswith("failed")
        error = _audit(warehouse, "medco_codes_icd10", refused.run_id)["error"]
        assert error.startswith("extract: source.rif_diagnoses (carrier claims), row ")
        assert "mixed: refuse" in error and "4011" not in error and "-90" not in error
        mapped = _dag("deid_medco_mixed").test(run_conf=TEST_POLICY["medco_codes_icd10"])
        assert str(mapped.state).endswith("success"), mapped.state
        audit = _audit(warehouse, "medco_mixed", mapped.run_id)
        assert audit["outcome"] == "loaded"
        assert audit["metrics"]["extract"]["codes_mapped"] == 8  # two codes of four claims
        assert all(v["ok"] for v in audit["verdicts"]["verdicts"])
    finally:
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in RIF_TABLES))


def test_medco_least_ratio_frequency_step_from_the_release_file(icd10_ids, warehouse):
    """A release file selects MedCo's least-ratio frequency step (issue 27:
    it keeps the ICD-10 dummy ratio within 20 % of ICD-9's); the clusters it
    forms pass the verifier and the release loads."""
    conf = {k: v for k, v in TEST_POLICY["medco_codes_icd10"].items() if k != "n_clusters"}
    run = _dag("deid_medco_least_ratio").test(run_conf=conf)
    audit = _audit(warehouse, "medco_least_ratio", run.run_id)
    assert str(run.state).endswith("success"), audit["error"]
    assert audit["outcome"] == "loaded" and audit["params"]["frequency_step"] == "least_ratio"
    assert all(v["ok"] for v in audit["verdicts"]["verdicts"])


@pytest.mark.parametrize("release", ICD10_RELEASES)
def test_every_method_runs_on_icd10_claims_with_its_verifier(release, icd10_ids, warehouse):
    """The shipped files: UGACLIP and disassociation with a hierarchy policy
    over the ICD-10-CM tree, LDA generalizing in it, GCCens: each loads with
    every verdict OK and its file's thresholds met."""
    run = _dag(f"deid_{release}").test(run_conf=TEST_POLICY[release])
    audit = _audit(warehouse, release, run.run_id)
    assert str(run.state).endswith("success"), audit["error"]
    assert audit["outcome"] == "loaded" and audit["params"]["code_system"] == "icd10cm"
    verdicts = audit["verdicts"]["verdicts"]
    assert verdicts and all(v["ok"] for v in verdicts), verdicts
    assert any(v["property"].startswith("threshold ") for v in verdicts), verdicts
    assert audit["metrics"]["extract"]["code_system"] == "icd10cm"


def test_a_policy_over_the_other_code_system_is_refused(icd10_ids, warehouse):
    """ICD-9 levels on ICD-10-CM claims would group nothing: refused before any
    work unless the release names the GEM that carries them."""
    from deid.methods import check_params

    with pytest.raises(ValueError, match="icd9-level-2 groups icd9cm codes; the data's are "
                                         "icd10cm.*set gem:"):
        check_params("ugaclip", {"utility_policy": "icd9-level-2", "code_system": "icd10cm"})
    with pytest.raises(ValueError, match="icd10-level-2 groups icd10cm codes"):
        check_params("ugaclip", {"utility_policy": "icd10-level-2", "code_system": "icd9cm",
                                 "gem": FORWARD_GEM})  # nothing carries ICD-10 back


def test_an_icd9_level_policy_is_carried_into_icd10_claims_through_the_gem(icd10_ids,
                                                                           warehouse):
    """ugaclip_diagnoses_icd10 with ICD-9's sections (icd9-level-2) and the shipped
    GEM: every generalized item stays inside one carried section, the release
    passes its verifier and loads, and the audit records the GEM."""
    from anonymizers.level_policies import level_policy

    run = _dag("deid_ugaclip_carried").test(run_conf=TEST_POLICY["ugaclip_diagnoses_icd10"])
    audit = _audit(warehouse, "ugaclip_carried", run.run_id)
    assert str(run.state).endswith("success"), audit["error"]
    assert audit["outcome"] == "loaded" and audit["params"]["gem"].endswith(FORWARD_GEM)
    gem_bytes = (ROOT / FORWARD_GEM).read_bytes()
    assert audit["policy_versions"]["gem_sha256"] == hashlib.sha256(gem_bytes).hexdigest()
    assert all(v["ok"] for v in audit["verdicts"]["verdicts"])
    items: dict = {}
    for item, code in _query(warehouse, "SELECT item_id, code FROM release.ugaclip_carried_items"):
        items.setdefault(item, set()).add(code)
    groups = level_policy("icd9-level-2", {c for i in items.values() for c in i}, "icd10cm",
                          str(ROOT / FORWARD_GEM))
    section = {c: n for n, g in enumerate(groups) for c in g}
    merged = [i for i in items.values() if len(i) > 1]
    # one section each; codes no carried section holds form one implicit constraint of
    # their own (docs/methods/ugaclip.md) and are never merged with a section's codes
    assert merged and all(len({section.get(c) for c in i}) == 1 for i in merged)
    assert any(section.get(next(iter(i))) is not None for i in merged)
