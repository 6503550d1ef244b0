"""HHP on ICD-10-CM with AHRQ's CCSR as the diagnosis recoding groups
(hierarchies ``hhp-2012-icd10-ccsr-v1``, issue 27): El Emam et al. 2012
appendix section 7's recoding with the standard groups of ICD-10-CM, built by
anonymizers/data/hhp/build_icd10_ccsr.py from the bundled CCSR v2023.1."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from anonymizers import ccsr
from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.claims.groupings import CODE_SYSTEM, NAMED, load_hierarchies
from anonymizers.claims.policy import DATA
from anonymizers.codesystems import is_valid
from anonymizers.synthetic import SyntheticConfig
from anonymizers.synthetic_rif import rif_chunks
from anonymizers.verify.claims import verify_hhp
from tests.anonymizers.test_claims_release import FAST, synthetic
from tests.anonymizers.test_hhp_icd10 import TO_ICD10

CCSR = "hhp-2012-icd10-ccsr-v1"
POLICY = "hhp-2012-icd10-v1"


def dx_labels(codes) -> tuple[np.ndarray, np.ndarray]:
    """(CCSR category, body system) the hierarchy gives each code."""
    enc = load_hierarchies(CCSR)["dx"].encode(np.asarray(codes, dtype=object))
    return tuple(enc.labels[lv][enc.maps[lv][enc.code0]] for lv in (0, 1))


def script():
    spec = importlib.util.spec_from_file_location("build_icd10_ccsr",
                                                  DATA / "build_icd10_ccsr.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the hierarchy ------------------------------------------------------------

def test_the_ccsr_hierarchy_loads_by_name_and_keeps_the_other_qis():
    h, pcg = load_hierarchies(CCSR), load_hierarchies(POLICY)
    assert CCSR in NAMED and CODE_SYSTEM[CCSR] == "icd10cm"
    assert h["dx"].level_names == ("ccsr", "body_system", "suppressed")
    assert h.keys() == pcg.keys()
    for name in h.keys() - {"dx"}:
        assert h[name].levels == pcg[name].levels


def test_every_ccsr_code_gets_its_default_category_and_body_system():
    """All 74,549 codes of the CCSR file: the first-listed outpatient default
    (``ccsr.groups``, setting op), its three-letter body system, never a
    placeholder (XXX)."""
    codes = pd.unique(ccsr.mapping()["icd10cm"])
    category, body = dx_labels(codes)
    want = ccsr.groups(codes, "op")
    assert (category == want).all()
    assert (body == np.array([c[:3] for c in want], dtype=object)).all()
    assert not any(c.startswith("XXX") for c in category)


def test_codes_outside_the_file_take_a_shared_prefix_category_or_other():
    """A code newer than CCSR v2023.1 under a prefix whose listed codes all
    share one category takes it (A04.71, FY2024, under A047); one under a
    split prefix (E11.A, FY2025) falls back to OTHER, an empty code to NONE."""
    category, body = dx_labels(["A0471", "A047", "E11A", "", "I2101"])
    assert list(category) == [ccsr.groups(["A047"], "op")[0]] * 2 + ["OTHER", "NONE", "CIR009"]
    assert list(body) == ["DIG", "DIG", "OTHER", "NONE", "CIR"]


def test_the_script_rebuilds_the_bundled_files(tmp_path):
    module = script()
    module.main(["--out", str(tmp_path)])
    for name in (module.GROUPS, module.HIERARCHIES):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


# --- every code of ICD-10-CM claims has a group ----------------------------------

def rif_codes(frames: dict, external: bool = False) -> set[str]:
    """The diagnosis codes of CCW RIF claim frames: principal, admitting, other
    and line diagnoses, or (``external``) the external-cause columns."""
    out: set[str] = set()
    for frame in frames.values():
        for col in frame.columns:
            if "DGNS" in col and "VRSN" not in col and ("_E_CD" in col) == external:
                out |= set(frame[col].astype(str).str.strip())
    return out - {"", "nan"}


def check_groups(codes: set[str]) -> list[str]:
    """The codes without a CCSR group; asserts each is a code CCSR v2023.1
    does not list (newer than its fiscal year, or not a billable code)."""
    category, _ = dx_labels(sorted(codes))
    missing = [c for c, g in zip(sorted(codes), category) if g == "OTHER"]
    known = set(ccsr.mapping()["icd10cm"])
    assert not set(missing) & known, set(missing) & known
    return missing


def test_every_code_of_generated_rif_claims_that_ccsr_lists_has_its_group():
    """The generator draws from the FY2026 tabular list: its codes CCSR
    v2023.1 lists all have a group; measured on these 300 members, 10 of
    1,490 distinct codes are newer and in a split category (OTHER)."""
    codes = set()
    for chunk in rif_chunks(SyntheticConfig(n_members=300, seed=5, code_system="icd10cm")):
        codes |= rif_codes(chunk)
    assert len(codes) > 1000 and is_valid(sorted(codes), "icd10cm").all()
    missing = check_groups(codes)
    assert len(missing) == 10, missing


@pytest.mark.datasets
def test_every_billable_code_of_the_cms_rif_sample_has_a_group(datasets_dir):
    """CMS's Synthea RIF sample: every diagnosis code has a CCSR group but two
    values that lack their 7th character (M80.00X, S82.90X: not codes).  Its
    external-cause columns hold 3-character categories (W19, V18: not
    billable, never a primary diagnosis), which CCSR does not list."""
    frames = {p.name: pd.read_csv(p, sep="|", dtype=str, keep_default_na=False)
              for p in sorted((datasets_dir / "rif_synthea").glob("*.csv.gz"))
              if not p.name.startswith(("beneficiary", "export", "pde"))}
    codes = rif_codes(frames)
    missing = check_groups(codes)
    assert sorted(missing) == ["M8000X", "S8290X"] and len(codes) > 40
    assert not is_valid(missing, "icd10cm").any()
    external = rif_codes(frames, external=True)
    assert external and all(len(c) == 3 for c in check_groups(external))


# --- releases with it ----------------------------------------------------------

def test_a_release_with_ccsr_groups_passes_the_verifier():
    d10 = synthetic().assign(dx_code=lambda d: d["dx_code"].map(TO_ICD10))
    config = HHPConfig(seed=11, policy_path=POLICY, hierarchies_path=CCSR, **FAST)
    result = hhp_release(d10, config)
    assert result.metrics["hierarchies"] == CCSR
    assert result.metrics["chosen_node"]["dx"] in ("ccsr", "body_system", "suppressed")
    assert result.metrics["ungrouped"]["dx"]["values"] == 0
    assert verify_hhp(result, d10, POLICY, CCSR).ok
    levels = load_hierarchies(CCSR)["dx"]
    node = result.metrics["chosen_node"]["dx"]
    allowed = set(levels.encode(d10["dx_code"].to_numpy(dtype=object)).labels[
        levels.level_names.index(node)])
    assert set(result.claims["dx"]) <= allowed


def test_the_verifier_catches_a_pcg_label_in_a_ccsr_release():
    d10 = synthetic().assign(dx_code=lambda d: d["dx_code"].map(TO_ICD10))
    config = HHPConfig(seed=11, policy_path=POLICY, hierarchies_path=CCSR,
                       node={"dx": "ccsr"}, max_sup=1.0, **FAST)
    result = hhp_release(d10, config)
    result.claims.loc[0, "dx"] = "AMI"  # a primary condition group, not a CCSR category
    verdict = verify_hhp(result, d10, POLICY, CCSR)
    assert not verdict.ok and any("AMI" in v or "dx" in v for v in verdict.violations)
