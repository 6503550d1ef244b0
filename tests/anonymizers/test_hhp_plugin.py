"""The HHP release method of the DAGs (plugins/deid/methods/hhp.py): a release
file names its diagnosis hierarchies (``hhp_hierarchies``), and a scope that
screening empties fails the task instead of loading an empty release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from deid import staging
from deid.methods import check_params, hhp
from deid.releases import ReleaseConfigError, load_release

from anonymizers.errors import InputError
from tests.anonymizers.test_claims_release import FAST, synthetic
from tests.anonymizers.test_hhp_icd10 import TO_ICD10

ROOT = Path(__file__).resolve().parents[2]
CCSR = "hhp-2012-icd10-ccsr-v1"


def release_file(folder: Path, **params) -> Path:
    """releases/hhp_claims_icd10.yaml with ``params`` added."""
    raw = yaml.safe_load((ROOT / "releases" / "hhp_claims_icd10.yaml").read_text())
    raw.update(name="hhp_claims_icd10_ccsr")
    raw["params"].update(params)
    path = folder / "hhp_claims_icd10_ccsr.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _staged(monkeypatch, tmp_path, claims, **params):
    """A fake run whose extract writes ``claims``, and the plugin's HHP
    parameters on ICD-10-CM with the CCSR hierarchies (``params`` added)."""
    from deid import extract

    monkeypatch.setattr(extract, "extract_claims_table",
                        lambda path, scope, policy: claims.to_parquet(path, index=False))
    monkeypatch.setenv("AIRFLOW_VAR_DEID_TOKEN_KEY", "test-key-not-secret")
    return FakeRun(tmp_path), {"seed": 1, "max_sup": 0.05, "p_max": 5, "hhp_iterations": 10,
                               "hhp_screen_all_diagnoses": False, "scope": "TRUE",
                               "code_system": "icd10cm", "hhp_hierarchies": CCSR, **params}


def test_a_release_file_selects_the_ccsr_hierarchies(tmp_path):
    release = load_release(release_file(tmp_path, hhp_hierarchies=CCSR))
    assert release.params["hhp_hierarchies"] == CCSR
    config = hhp._config({**release.params, "code_system": release.codes.code_system})
    assert config.hierarchies_source == CCSR and config.policy_source == "hhp-2012-icd10-v1"
    default = load_release(ROOT / "releases" / "hhp_claims_icd10.yaml")
    assert default.params["hhp_hierarchies"] is None  # the code system's own groups


@pytest.mark.parametrize("value, problem", [
    ("hhp-2012-v1", "groups icd9cm codes"), ("/tmp/h.yaml", "not a bundled hierarchy set")])
def test_a_release_file_naming_other_hierarchies_is_refused(tmp_path, value, problem):
    with pytest.raises(ReleaseConfigError) as err:
        load_release(release_file(tmp_path, hhp_hierarchies=value))
    assert "hhp_hierarchies" in str(err.value) and problem in str(err.value)
    with pytest.raises(ValueError, match="groups icd10cm codes"):
        check_params("hhp", {"hhp_hierarchies": CCSR})  # ICD-9-CM claims by default


class FakeRun:
    """The staging folder of one run, as the method's steps use it."""

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, name: str) -> Path:
        return self.folder / name

    def write_json(self, name, obj) -> None:
        self.path(name).write_text(json.dumps(obj, default=str))

    def read_json(self, name):
        return json.loads(self.path(name).read_text())

    def small(self, metrics: dict) -> dict:
        return {k: v for k, v in metrics.items() if isinstance(v, (int, float, str, type(None)))}


def test_the_dag_task_fails_when_screening_removes_every_member(tmp_path, monkeypatch):
    """The prepare step on claims whose every member has an HIV claim raises
    the library's InputError, which the DAG's task wrapper turns into a
    failed task (no retry): no empty release is staged or loaded."""
    from airflow.sdk.exceptions import AirflowFailException
    from deid.airflow_glue import no_retry_on_bad_data

    # HIV in ICD-10-CM: screened out (section 2)
    run, params = _staged(monkeypatch, tmp_path, synthetic(20).assign(dx_code="B20"),
                          lattice_parts_per_task=1, k=5)
    with pytest.raises(InputError, match="keep no member or no claim"):
        hhp.prepare(run, params)
    with pytest.raises(AirflowFailException, match="keep no member"):
        no_retry_on_bad_data(hhp.prepare)(run, params)
    assert not run.path("hhp_staged.npz").exists()
    assert not run.path(staging.HHP_GROUPS).exists()


def test_the_dag_step_releases_icd10_claims_with_ccsr_groups(tmp_path, monkeypatch):
    """prepare, search, release and verify of the plugin on ICD-10-CM claims
    with the CCSR hierarchies (the risk experiment made small, as FAST)."""
    from dataclasses import replace


    config = hhp._config
    monkeypatch.setattr(hhp, "_config", lambda p: replace(config(p), **FAST))

    claims = synthetic(60).assign(dx_code=lambda d: d["dx_code"].map(TO_ICD10))
    run, params = _staged(monkeypatch, tmp_path, claims, lattice_parts_per_task=5, k=2)
    for batch in hhp.prepare(run, params):
        hhp.search(run, params, batch)
    metrics = hhp.release(run, params)
    assert metrics["hierarchies"] == CCSR and metrics["risk"] <= 0.05
    verdicts = hhp.verify(run, params)
    assert verdicts[0]["ok"], verdicts
