"""The independent HHP verifier (anonymizers/verify/claims.py) on ICD-10-CM
releases (policy ``hhp-2012-icd10-v1``, issue 27): it reads ``extends`` and
``icd10_prefixes`` itself, accepts a release made with the bundled files,
and catches a recoded or too specific diagnosis and a malformed file.  The
policy is also taken by name (``HHPConfig.policy_path``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.claims.groupings import group_of, load_hierarchies
from anonymizers.claims.policy import DATA
from anonymizers.claims.screening import named_policy
from anonymizers.errors import InputError, ParameterError
from anonymizers.verify.claims import verify_hhp
from tests.anonymizers.test_claims_release import FAST, synthetic
from tests.anonymizers.test_hhp_icd10 import TO_ICD10

ICD10 = "hhp-2012-icd10-v1"
PCG = pd.read_csv(DATA / "icd10_pcg.csv", dtype=str, keep_default_na=False)
# dx at its primary condition groups, so that the check of the ICD-10 grouping has work to do
NODE = {"dx": "pcg", "dsfc": "years", "sex": "value"}


def icd10_claims() -> pd.DataFrame:
    d9 = synthetic()
    return d9.assign(dx_code=d9["dx_code"].map(TO_ICD10))


@pytest.fixture(scope="module")
def release():
    data = icd10_claims()
    return data, hhp_release(data, HHPConfig(seed=11, policy_path=ICD10, node=NODE,
                                             max_sup=1.0, **FAST))


def _problems(verdict) -> str:
    return " | ".join(verdict.violations)


# --- an ICD-10 release verifies ------------------------------------------------

def test_the_release_does_not_choose_its_own_yardstick(release):
    """Left out, the policy is ICD-9's: the release's metrics naming the
    ICD-10 policy do not switch the verifier to it."""
    data, res = release
    verdict = verify_hhp(res, data)
    assert not verdict.ok and "policy" in _problems(verdict).lower()


def test_an_icd10_release_verifies_by_name_and_by_path(release):
    data, res = release
    assert res.metrics["policy_version"] == ICD10
    assert set(res.claims["dx"]) - {"OTHER", "NONE"}, "dx must be released as groups"
    assert verify_hhp(res, data, ICD10, ICD10).ok, _problems(verify_hhp(res, data, ICD10, ICD10))
    assert verify_hhp(res, data, ICD10).ok  # the named policy brings its hierarchies
    assert verify_hhp(res, data, str(DATA / "screening_policy_icd10_v1.yaml"),
                      str(DATA / "hierarchies_icd10_v1.yaml")).ok


def test_the_named_policy_gives_the_release_the_paths_give(release):
    data, res = release
    by_path = hhp_release(data, HHPConfig(
        seed=11, policy_path=str(DATA / "screening_policy_icd10_v1.yaml"),
        hierarchies_path=str(DATA / "hierarchies_icd10_v1.yaml"), node=NODE, max_sup=1.0,
        **FAST))
    pd.testing.assert_frame_equal(by_path.claims, res.claims)
    pd.testing.assert_frame_equal(by_path.members, res.members)


def test_an_icd10_release_checked_against_the_icd9_files_fails(release):
    data, res = release
    verdict = verify_hhp(res, data, "hhp-2012-v1", "hhp-2012-v1")
    assert not verdict.ok and "policy 'hhp-2012-icd10-v1'" in _problems(verdict)
    # the ICD-9 groups: the ICD-10 codes fall in no ICD-9 range, so the released groups
    # are more than the member's claims give
    verdict = verify_hhp(res, data, ICD10, "hhp-2012-v1")
    assert not verdict.ok and "more often than" in _problems(verdict)


# --- tampered releases and files are caught ------------------------------------

def test_a_claim_recoded_to_another_group_is_caught(release):
    data, res = release
    claims = res.claims.copy()
    i = int(np.flatnonzero(claims["dx"] == "MISCHRT")[0])  # I10, hypertension
    claims.loc[i, "dx"] = "METAB3"  # a label of the level, the wrong one for I10
    tampered = type(res)(res.members, claims, res.metrics, res.screening_report, res.lattice,
                         res.key)
    verdict = verify_hhp(tampered, data, ICD10)
    assert not verdict.ok and "more often than the member's admissible claims allow" in \
        _problems(verdict)


@pytest.mark.parametrize("value", ["I10", "E119", "I2510", "E1"])
def test_a_code_or_prefix_released_instead_of_its_group_is_caught(release, value):
    data, res = release
    claims = res.claims.copy()
    claims.loc[0, "dx"] = value
    tampered = type(res)(res.members, claims, res.metrics, res.screening_report, res.lattice,
                         res.key)
    verdict = verify_hhp(tampered, data, ICD10)
    assert not verdict.ok and f"dx: values ['{value}'] are not labels of level 'pcg'" in \
        _problems(verdict)


def _data_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "hhp"
    shutil.copytree(DATA, folder, ignore=shutil.ignore_patterns("gem", "*.py"))
    return folder


def test_a_prefix_longer_than_an_icd10_code_in_the_file_is_caught(release, tmp_path):
    data, res = release
    folder = _data_copy(tmp_path)
    with open(folder / "icd10_pcg.csv", "a") as f:
        f.write("I10XXXXA,METAB3,4019,backward,1,0,METAB3:1\n")
    verdict = verify_hhp(res, data, ICD10, str(folder / "hierarchies_icd10_v1.yaml"))
    assert not verdict.ok and "longer than 7 characters or repeated, e.g. 'I10XXXXA'" in \
        _problems(verdict)


def test_an_extends_cycle_is_caught(release, tmp_path):
    data, res = release
    folder = _data_copy(tmp_path)
    base = folder / "hierarchies.yaml"
    base.write_text("extends: hierarchies_icd10_v1.yaml\n" + base.read_text())
    verdict = verify_hhp(res, data, ICD10, str(folder / "hierarchies_icd10_v1.yaml"))
    assert not verdict.ok and "in a cycle" in _problems(verdict)


def test_the_longest_prefix_wins_in_the_verifier_as_in_the_release(tmp_path):
    """A file with a shorter prefix added over a longer one (E11 -> SEPSIS under
    E119 -> METAB3): releases made with either file verify only against it."""
    folder = _data_copy(tmp_path)
    assert not PCG["prefix"].eq("E11").any() and PCG["prefix"].eq("E119").any()
    with open(folder / "icd10_pcg.csv", "a") as f:
        f.write("E11,SEPSIS,25000,backward,1,0,SEPSIS:1\n")
    nested = str(folder / "hierarchies_icd10_v1.yaml")
    data = icd10_claims()
    data.loc[data.index[::7], "dx_code"] = "E11Z"  # only E11 covers it
    cfg = {"seed": 3, "policy_path": ICD10, "node": NODE, "max_sup": 1.0, **FAST}
    res_nested = hhp_release(data, HHPConfig(hierarchies_path=nested, **cfg))
    res_bundled = hhp_release(data, HHPConfig(**cfg))
    assert "SEPSIS" in set(res_nested.claims["dx"])
    assert "SEPSIS" not in set(res_bundled.claims["dx"])
    assert set(res_nested.claims["dx"]) >= {"METAB3", "SEPSIS"}  # E119 kept its own group
    assert verify_hhp(res_nested, data, ICD10, nested).ok
    assert verify_hhp(res_bundled, data, ICD10).ok
    assert not verify_hhp(res_nested, data, ICD10).ok
    assert not verify_hhp(res_bundled, data, ICD10, nested).ok


# --- names, refused -----------------------------------------------------------

def test_an_unknown_policy_name_is_refused_naming_the_known_ones():
    with pytest.raises(ParameterError) as err:
        HHPConfig(policy_path="hhp-2012-icd11-v1")
    assert "policy_path" in str(err.value) and "hhp-2012-icd11-v1" in str(err.value)
    assert "['hhp-2012-icd10-v1', 'hhp-2012-v1']" in str(err.value)
    with pytest.raises(ParameterError, match="hierarchies_path"):
        HHPConfig(hierarchies_path="hhp-2099")


def test_a_named_policy_brings_its_hierarchies_unless_they_are_given():
    assert HHPConfig(policy_path=ICD10).hierarchies_source == ICD10
    assert HHPConfig().hierarchies_source == "hhp-2012-v1"
    assert HHPConfig(policy_path=ICD10, hierarchies_path="hhp-2012-v1").hierarchies_source == \
        "hhp-2012-v1"
    assert HHPConfig(policy_path=str(DATA / "screening_policy_v1.yaml")).hierarchies_source \
        == "hhp-2012-v1"


# --- the verifier against the release on random ICD-10 claims --------------------

LISTED = [p for r in named_policy(ICD10).member_rules if r.field == "dx" for p in r.prefixes]
SUFFIX = st.text(alphabet="0123456789ABXZ", min_size=0, max_size=4)


@st.composite
def icd10_code(draw) -> str:
    kind = draw(st.sampled_from(["group", "group", "group", "listed", "random", "empty"]))
    if kind == "empty":
        return ""
    if kind == "random":
        return draw(st.from_regex(r"[A-Z][0-9][0-9A-Z]{1,5}", fullmatch=True))
    base = draw(st.sampled_from(PCG["prefix"].tolist() if kind == "group" else LISTED))
    code = (base + draw(SUFFIX))[:7]
    if len(code) > 3 and draw(st.booleans()):
        code = f"{code[:3]}.{code[3:]}"
    return code.lower() if draw(st.booleans()) else code


@st.composite
def small_claims(draw) -> pd.DataFrame:
    rows = []
    for m in range(draw(st.integers(1, 8))):
        age, sex = draw(st.integers(0, 99)), draw(st.sampled_from(["1", "2"]))
        for c in range(draw(st.integers(1, 5))):
            rows.append({"member_id": f"S{m}", "claim_id": f"C{m}_{c}",
                         "service_date": np.datetime64("2016-01-01")
                         + draw(st.integers(0, 800)),
                         "age_at_service": age, "sex": sex, "dx_code": draw(icd10_code()),
                         "procedure_code": draw(st.sampled_from(["99213", "80053", "G0008"])),
                         "place_of_service": draw(st.sampled_from(["11", "21", "81"])),
                         "length_of_stay": draw(st.sampled_from([0, 1, 9]))})
    return pd.DataFrame(rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=small_claims(), seed=st.integers(0, 2**16),
       dsfc=st.sampled_from(["days", "months", "years", "suppressed"]),
       percentile=st.sampled_from([50.0, 95.0, 100.0]))
def test_releases_on_random_icd10_claims_verify(data, seed, dsfc, percentile):
    """hhp_release with the named ICD-10 policy, dx at its groups, against the
    verifier with its own reading of the files; a refusal must be a clear error."""
    cfg = HHPConfig(seed=seed, policy_path=ICD10, node={**NODE, "dsfc": dsfc}, max_sup=1.0,
                    truncation_percentile=percentile, sample_size=30, max_iterations=2)
    try:
        res = hhp_release(data, cfg)
    except (InputError, ParameterError) as exc:
        assert str(exc)
        event(f"refused: {type(exc).__name__}")
        return
    event("released")
    verdict = verify_hhp(res, data, ICD10)
    assert verdict.ok, _problems(verdict)


@pytest.fixture(scope="module")
def verifier_files():
    from anonymizers.verify.claims import _Hierarchies

    return _Hierarchies(DATA / "hierarchies_icd10_v1.yaml")


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(code=icd10_code())
def test_the_verifier_groups_a_code_as_the_release_does(verifier_files, code):
    """The two readings of icd10_pcg.csv (written apart) agree on any code."""
    from anonymizers.verify.claims import _codes

    clean = _codes(pd.Series([code]))[0]
    mine = verifier_files.generalize("dx", "pcg", np.array([clean], dtype=object))[0]
    assert mine == group_of(load_hierarchies(ICD10)["dx"].levels[0], clean)
