"""Release files: each is checked on its own; a bad one is refused with its
file and field named, and loses only its own DAG."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from deid import releases as releases_mod
from deid.releases import (
    ReleaseConfigError,
    load_all,
    load_all_with_errors,
    load_for_dag,
    load_release,
)

ROOT = Path(__file__).resolve().parents[2]
GOOD = """name: example
method: disassociation
schedule: "@daily"
params: {k: 5, m: 2, seed: 1, utility_policy: icd9-level-1}
destination: {table: example}
"""
GOOD_ICD10 = GOOD.replace("icd9-level-1", "icd10-level-1")  # a policy of the claims' system


def _write(folder: Path, text: str, name: str = "example.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_every_release_file_in_the_repository_parses():
    releases = load_all()
    assert {r.method for r in releases} >= {"medco", "ugaclip", "disassociation", "gccens"}


@pytest.mark.parametrize("change, field", [
    (("method: disassociation", "method: k-anonymity-magic"), "method"),
    (("k: 5", "k: 1"), "params.k"),
    (("m: 2", "m: 9"), "params.m"),
    (('"@daily"', '"61 * * * *"'), "schedule"),
    (("method: disassociation", "method: ugaclip"), "params.m"),
    (("utility_policy: icd9-level-1", "utility_policy: nonsense"), "params.utility_policy"),
    (("table: example", "table: Robert'); DROP TABLE x"), "destination.table"),
    (("name: example", "name: other"), "name"),  # the name is the file's
    (("method: disassociation", "method: disassociation\nversion: one"), "version"),
    (("method: disassociation", "method: disassociation\nthresholds: {max_aer: 10}"),
     "thresholds.max_aer"),
    (("method: disassociation", "method: disassociation\nthresholds: {max_are_w2: ten}"),
     "thresholds.max_are_w2"),
    (("method: disassociation", "method: disassociation\nthresholds: {max_ilm: 0.9}"),
     "thresholds.max_ilm"),  # a metric of another method
    (("method: disassociation", "method: disassociation\nthresholds: {min_mre_share_in_-5_5: 90}"),
     "thresholds.min_mre_share_in_-5_5"),  # a share written as a percent
    (("method: disassociation", "method: disassociation\nthresholds: {max_are_w2: -1}"),
     "thresholds.max_are_w2"),
    (("method: disassociation", "method: disassociation\noverrides: {kk: any}"),
     "overrides.kk"),
    (("method: disassociation", "method: disassociation\noverrides: {k: weaker}"),
     "overrides.k"),
    (("method: disassociation", "method: disassociation\noverrides: {seed: stronger}"),
     "overrides.seed"),  # a seed has no stronger direction
])
def test_config_errors_name_the_file_and_field(tmp_path, change, field):
    path = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ReleaseConfigError) as err:
        load_release(path)
    assert err.value.field == field and "example.yaml" in str(err.value)


@pytest.mark.parametrize("scope, problem", [
    ("TRUE) UNION SELECT 1 FROM pg_authid WHERE (TRUE", "changes the query"),
    ("pg_sleep(600) IS NULL", "function pg_sleep()"),
    ("TRUE; DROP TABLE source.carrier_claims", "one SQL expression"),
])
def test_an_unsafe_scope_fails_parsing(tmp_path, scope, problem):
    path = _write(tmp_path, GOOD + f"scope: {scope!r}\n")
    with pytest.raises(ReleaseConfigError) as err:
        load_release(path)
    assert err.value.field == "scope" and problem in str(err.value)


def test_ugaclip_without_a_utility_policy_is_refused(tmp_path):
    text = GOOD.replace("method: disassociation", "method: ugaclip").replace(
        "m: 2, ", "").replace("icd9-level-1", "none")
    with pytest.raises(ReleaseConfigError, match="needs a utility policy"):
        load_release(_write(tmp_path, text))


# LDA's kept shares are percent figures (as the thesis quotes them): a floor
# of 0.3 would read as 0.3 % and never bind; MedCo's ratios are never below 1
@pytest.mark.parametrize("method, threshold, limit, problem", [
    ("lda", "min_icd_kept_3digit_or_finer", 0.3, "in percent"),
    ("lda", "min_icd_kept_3digit_or_finer", 101, "in percent"),
    ("lda", "min_icd_kept_3digit_or_finer", 0, None),
    ("lda", "min_icd_kept_3digit_or_finer", 30, None),
    ("lda", "min_icd_kept_3digit_or_finer", 100, None),
    ("medco", "max_real_over_theoretical", 0.5, "ratio of at least 1"),
    ("medco", "max_real_over_theoretical", 1.0, None),
    ("medco", "max_real_over_theoretical", 1.1, None)])
def test_a_threshold_is_on_its_figures_scale(tmp_path, method, threshold, limit, problem):
    text = (GOOD.replace("method: disassociation", f"method: {method}")
            .replace("m: 2, ", "").replace(", utility_policy: icd9-level-1", "")
            + f"thresholds: {{{threshold}: {limit}}}\n")
    if problem is None:
        assert load_release(_write(tmp_path, text)).thresholds == {threshold: limit}
    else:
        with pytest.raises(ReleaseConfigError, match=problem) as err:
            load_release(_write(tmp_path, text))
        assert err.value.field == f"thresholds.{threshold}"


def test_every_scaled_figure_is_a_figure_a_threshold_may_bound():
    from deid.methods import METRICS, PERCENT_METRICS, RATIO_METRICS, SHARE_METRICS

    known = {m for names in METRICS.values() for m in names}
    assert SHARE_METRICS | PERCENT_METRICS | RATIO_METRICS <= known
    assert not (SHARE_METRICS & PERCENT_METRICS or SHARE_METRICS & RATIO_METRICS
                or PERCENT_METRICS & RATIO_METRICS)


def test_thresholds_over_the_methods_metrics_load():
    release = load_release(ROOT / "releases" / "disassociation_diagnoses.yaml")
    assert release.thresholds == {"max_are_w2": 10.0, "min_mre_share_in_-5_5": 0.45}


@pytest.mark.parametrize("release, threshold", [
    ("disassociation_diagnoses", "min_mre_share_in_-5_5"),
    ("disassociation_diagnoses_icd10", "min_mre_share_in_-5_5"),
    ("lda_trajectories", "min_icd_kept_3digit_or_finer"),
    ("lda_trajectories_icd10", "min_icd_kept_3digit_or_finer")])
def test_a_floor_threshold_is_the_reports_low_utility_floor(release, threshold):
    """These shipped thresholds stop a release the report would call low
    utility (deid.utility_summary: half the paper's figure), no looser."""
    from deid import utility_summary as us

    config = load_release(ROOT / "releases" / f"{release}.yaml")
    metric = threshold.removeprefix("min_")
    figure = next(f for f in us.FIGURES[config.method] if f.keys[0] == metric)
    scale = 100 if metric in releases_mod.PERCENT_METRICS else 1
    assert config.thresholds[threshold] == pytest.approx(figure.floor * scale)


def test_two_files_with_one_destination_are_both_refused(tmp_path):
    _write(tmp_path, GOOD)
    _write(tmp_path, GOOD.replace("name: example", "name: copy"), "copy.yaml")
    _write(tmp_path, GOOD.replace("name: example", "name: apart").replace(
        "table: example", "table: apart"), "apart.yaml")
    releases, errors = load_all_with_errors(tmp_path)
    assert [r.name for r in releases] == ["apart"]
    assert [(p.name, f) for p, f, _ in errors] == [("copy.yaml", "destination.table"),
                                                    ("example.yaml", "destination.table")]
    assert "example.yaml" in errors[0][2] and "copy.yaml" in errors[1][2]
    with pytest.raises(ReleaseConfigError, match="release.example is also the destination"):
        load_all(tmp_path)


def test_a_bad_file_beside_good_ones_is_refused_alone(tmp_path):
    _write(tmp_path, GOOD)
    _write(tmp_path, GOOD.replace("name: example", "name: broken").replace("k: 5", "k: 1")
           .replace("table: example", "table: broken"), "broken.yaml")
    releases, errors = load_all_with_errors(tmp_path)
    assert [r.name for r in releases] == ["example"]
    (path, field, problem), = errors
    assert (path.name, field) == ("broken.yaml", "params.k") and "minimum" in problem


def test_a_dag_reads_only_its_own_release_file(tmp_path, monkeypatch):
    _write(tmp_path, GOOD)
    _write(tmp_path, "k: 1\n", "broken.yaml")
    read = []
    load = releases_mod.load_release
    monkeypatch.setattr(releases_mod, "load_release", lambda p: read.append(p.name) or load(p))
    assert [r.name for r in load_for_dag("deid_example", tmp_path)] == ["example"]
    assert read == ["example.yaml"]
    assert load_for_dag("deid_missing", tmp_path) == [] and load_for_dag("other", tmp_path) == []
    with pytest.raises(ReleaseConfigError, match="broken.yaml"):
        load_for_dag("deid_broken", tmp_path)


@pytest.mark.airflow
def test_a_bad_release_file_loses_only_its_own_dag(tmp_path, monkeypatch, capsys, caplog):
    from airflow.dag_processing.dagbag import DagBag

    releases, dags = tmp_path / "releases", tmp_path / "dags"
    releases.mkdir()
    dags.mkdir()
    shutil.copy(ROOT / "dags" / "releases.py", dags / "releases.py")
    _write(releases, GOOD)
    _write(releases, GOOD.replace("name: example", "name: broken").replace("k: 5", "k: 1")
           .replace("table: example", "table: broken"), "broken.yaml")
    monkeypatch.setenv("DEID_RELEASES_DIR", str(releases))
    bag = DagBag(dag_folder=str(dags))
    assert bag.import_errors == {} and sorted(bag.dags) == ["deid_example"]
    # the DAG processor's log names the file and the field (through structlog
    # to stdout, or to the logging records once Airflow's logging is set up)
    lines = [r.getMessage() for r in caplog.records] or capsys.readouterr().out.splitlines()
    logged = [line for line in lines if "has no DAG" in line]
    assert len(logged) == 1 and "broken.yaml" in logged[0] and "params.k" in logged[0], logged
    assert os.environ["DEID_RELEASES_DIR"] == str(releases)


def test_the_maintenance_dag_id_is_not_a_release_name(tmp_path):
    path = tmp_path / "maintenance.yaml"
    path.write_text(GOOD.replace("name: example", "name: maintenance"))
    with pytest.raises(ReleaseConfigError, match="reserved") as err:
        load_release(path)
    assert err.value.field == "name"


# --- the screening policy by name (issue 27: ICD-10-CM lists) ----------------

def test_a_release_naming_the_icd10_screening_policy_parses(tmp_path):
    release = load_release(_write(tmp_path, GOOD_ICD10 + "code_system: icd10cm\n"
                                  "screening_policy: hhp-2012-icd10-v1\n"))
    assert release.screening_policy == "hhp-2012-icd10-v1"
    assert load_release(_write(tmp_path, GOOD + "screening_policy: none\n")).screening_policy \
        is None


@pytest.mark.parametrize("name", ["hhp-2012-icd10", "hhp-2099-v1", "HHP-2012-V1"])
def test_an_unknown_screening_policy_is_refused_naming_the_known_ones(tmp_path, name):
    with pytest.raises(ReleaseConfigError) as err:
        load_release(_write(tmp_path, GOOD + f"screening_policy: {name}\n"))
    assert err.value.field == "screening_policy"
    assert f"unknown policy {name!r}" in err.value.problem
    assert "hhp-2012-icd10-v1" in err.value.problem and "hhp-2012-v1" in err.value.problem


def test_every_named_screening_policy_is_bundled_and_the_screening_step_loads_it():
    from deid import screening

    from anonymizers.claims.screening import NAMED_POLICIES
    from anonymizers.errors import InputError

    names = [p for p in releases_mod.SCREENING_POLICIES if p not in (None, "none")]
    assert sorted(names) == sorted(NAMED_POLICIES)
    for name in names:
        assert screening.load_policy(name).version == name
    with pytest.raises(InputError, match="unknown screening policy 'hhp-2099-v1'"):
        screening.load_policy("hhp-2099-v1")


def test_the_screening_step_screens_a_range_with_the_named_icd10_policy(tmp_path):
    """``deid.screening.batch`` given the name a release file holds: B20 (HIV,
    ICD-10-CM) removes its member under hhp-2012-icd10-v1, 042 (its ICD-9-CM
    code) does not; under hhp-2012-v1 the other way round."""
    import pandas as pd
    import pyarrow.parquet as pq
    from deid import screening

    class Run:
        def path(self, name):
            return tmp_path / name

    per_claim = pd.DataFrame({"member_id": ["A", "B", "C"], "claim_id": ["1", "2", "3"],
                              "service_date": pd.to_datetime(["2016-01-05"] * 3),
                              "age_at_service": 50, "sex": "1",
                              "dx_code": ["B20", "042", "I10"], "procedure_code": "99213",
                              "place_of_service": "11"})
    per_claim.to_parquet(tmp_path / "screen_claims.b0.parquet")
    removed = {}
    for name in ("hhp-2012-icd10-v1", "hhp-2012-v1"):
        out = screening.batch(Run(), name, 0)
        assert out == {"index": 0, "claims": 3, "members_removed": 1}
        removed[name] = pq.read_table(tmp_path / "screen_removed.b0.parquet")[
            "member_id"].to_pylist()
    assert removed == {"hhp-2012-icd10-v1": ["A"], "hhp-2012-v1": ["B"]}


def test_the_dag_screening_step_takes_the_policy_the_release_file_names():
    """``steps.screen_plan``/``screen_batch`` go through ``_screening_policy``:
    it returns the named ICD-10 policy (it used to accept ICD-9's only) and
    fails the run for an unknown name."""
    from deid import steps

    for name in ("hhp-2012-v1", "hhp-2012-icd10-v1"):
        assert steps._screening_policy(name).version == name
    with pytest.raises(steps.ValidationFailed, match="unknown screening policy"):
        steps._screening_policy("hhp-2099-v1")


# --- the code system of the claims (issue 27) ---------------------------------

def test_a_release_without_code_system_is_icd9_refusing_mixed_and_unknown_codes(tmp_path):
    release = load_release(_write(tmp_path, GOOD))
    assert release.codes == releases_mod.CodePolicy("icd9cm", "refuse", False, None)
    assert release.params["code_system"] == "icd9cm"


def test_the_code_system_fields_reach_the_params_and_the_code_policy(tmp_path):
    gem = tmp_path / "gem.csv"
    gem.write_text("icd9cm,icd10cm,no_map,combination,scenario,choice_list,approximate\n")
    release = load_release(_write(tmp_path, GOOD_ICD10 + f"code_system: icd10cm\nmixed: "
                                  f"map-to-icd10\ngem: {gem}\ndrop_unknown: true\n"))
    assert release.codes == releases_mod.CodePolicy("icd10cm", "map-to-icd10", True, str(gem))
    assert release.params["code_system"] == "icd10cm"


@pytest.mark.parametrize("extra, field, words", [
    ("code_system: icd11\n", "code_system", "must be one of"),
    ("mixed: map\n", "mixed", "must be one of"),
    ("drop_unknown: yes please\n", "drop_unknown", "true or false"),
    ("code_system: icd10cm\nmixed: map-to-icd10\n", "gem", "needs the path"),
    ("mixed: map-to-icd10\ngem: x.csv\n", "mixed", "needs code_system: icd10cm"),
    ("code_system: icd10cm\nmixed: map-to-icd10\ngem: no/such/gem.csv\n", "gem", "no such"),
    ("gem: x.csv\n", "gem", "only with mixed: map-to-icd10"),
    ("code_system: icd10cm\nscreening_policy: hhp-2012-v1\n", "screening_policy", "icd9cm"),
    ("screening_policy: hhp-2012-icd10-v1\n", "screening_policy", "icd10cm"),
    ("overrides: {code_system: any}\n", "overrides.code_system", "release file alone"),
])
def test_a_bad_code_system_field_is_refused_naming_it(tmp_path, extra, field, words):
    with pytest.raises(ReleaseConfigError) as err:
        load_release(_write(tmp_path, GOOD + extra))
    assert err.value.field == field and words in err.value.problem


def test_the_code_system_is_a_top_level_field_not_a_method_parameter(tmp_path):
    with pytest.raises(ReleaseConfigError) as err:
        load_release(_write(tmp_path, GOOD.replace("seed: 1,", "seed: 1, code_system: "
                                                   "icd10cm,")))
    assert err.value.field == "params.code_system" and "top-level" in err.value.problem


def test_a_trigger_may_not_change_the_code_system(tmp_path):
    from deid.overrides import OverrideRefused, resolve, rule

    release = load_release(_write(tmp_path, GOOD_ICD10 + "code_system: icd10cm\n"))
    assert rule(release, "code_system") == "fixed"
    assert resolve(release, {"code_system": "icd10cm"}).params["code_system"] == "icd10cm"
    with pytest.raises(OverrideRefused, match="code_system: the release file fixes it"):
        resolve(release, {"code_system": "icd9cm"})


def test_the_icd10_release_files_name_their_system_and_the_icd10_policy():
    hhp = load_release(ROOT / "releases" / "hhp_claims_icd10.yaml")
    medco = load_release(ROOT / "releases" / "medco_codes_icd10.yaml")
    assert hhp.codes.code_system == medco.codes.code_system == "icd10cm"
    assert medco.screening_policy == "hhp-2012-icd10-v1"
    for name in ("hhp_claims", "medco_codes"):  # the ICD-9 files say nothing of it
        assert "code_system" not in (ROOT / "releases" / f"{name}.yaml").read_text()


def _mapping_release(tmp_path):
    """An ICD-10-CM release file mapping ICD-9-CM rows through a (header-only) GEM."""
    gem = tmp_path / "gem.csv"
    gem.write_text("icd9cm,icd10cm,no_map,combination,scenario,choice_list,approximate\n")
    release = load_release(_write(tmp_path, GOOD_ICD10 + f"code_system: icd10cm\nmixed: "
                                  f"map-to-icd10\ngem: {gem}\n"))
    return release, gem


def test_the_run_keeps_the_release_files_code_policy_for_its_extract(tmp_path):
    """``prepare`` stages the file's code policy; the extract and screening
    steps read it back (``steps.code_policy``), ICD-9-CM's defaults without."""
    from deid import steps

    release, _ = _mapping_release(tmp_path)
    run = steps.Run("example", "manual__code_policy_test")
    try:
        assert steps.code_policy(run) == releases_mod.CodePolicy()
        steps._resolve_run(run, release, {}, "tester", release.codes.versions())
        assert steps.code_policy(run) == release.codes
        assert steps.run_params(run)["params"]["code_system"] == "icd10cm"
    finally:
        steps.cleanup(run)


def test_a_gem_replaced_during_the_run_loads_nothing(tmp_path):
    """``prepare`` records the GEM's sha256; load takes it from there after
    checking the file is still that one, and refuses a run whose GEM changed
    under the same path, or vanished (bad input, one line, no retry)."""
    import hashlib

    from deid import steps

    from anonymizers.errors import InputError

    release, gem = _mapping_release(tmp_path)
    run = steps.Run("example", "manual__gem_version_test")
    try:
        started = release.codes.versions()
        assert started == {"gem_sha256": hashlib.sha256(gem.read_bytes()).hexdigest()}
        steps._resolve_run(run, release, {}, "tester", started)
        assert steps.code_versions(run, release.codes) == started
        gem.write_text(gem.read_text() + "4011,I10,0,0,0,0,1\n")
        with pytest.raises(steps.ValidationFailed, match="changed during the run"):
            steps.code_versions(run, release.codes)
        gem.unlink()
        with pytest.raises(InputError, match="the GEM cannot be read"):
            steps.code_versions(run, release.codes)
    finally:
        steps.cleanup(run)


def test_a_level_policy_of_the_other_code_system_is_refused(tmp_path):
    """ICD-9 categories over ICD-10-CM claims would group nothing: without the GEM
    that carries them (gem:) the file is refused, naming the field."""
    with pytest.raises(ReleaseConfigError, match="field 'gem': utility_policy: icd9-level-1 "
                                                 "needs the path"):
        load_release(_write(tmp_path, GOOD + "code_system: icd10cm\n"))


#: each ICD-10-CM file of a method without screening -> the ICD-9-CM
#: parameters it translates, as the file ships them (the files' comments say why)
ICD10_TRANSLATED = {
    "ugaclip_diagnoses": {"utility_policy": "icd10-level-2"},
    "disassociation_diagnoses": {"utility_policy": "icd10-level-1"},
    "lda_trajectories": {"lda_codes": ["E11", "E78", "I10", "I25", "I48", "I50"]},
    "gccens_repeated_codes": {"gccens_codes": ["E11", "E78", "I10", "M54"]}}


@pytest.mark.parametrize("name", sorted(ICD10_TRANSLATED))
def test_an_icd10_file_keeps_its_icd9_files_protection_and_schedule(name):
    """Only the code system and the codes change: k, every other parameter,
    the thresholds (none loosened), scope and schedule are the ICD-9 file's."""
    icd9 = load_release(ROOT / "releases" / f"{name}.yaml")
    icd10 = load_release(ROOT / "releases" / f"{name}_icd10.yaml")
    assert icd10.codes == releases_mod.CodePolicy(code_system="icd10cm")  # refuse, no drop
    translated = ICD10_TRANSLATED[name]
    assert {p: icd10.params[p] for p in translated} == translated
    rest = set(icd9.params) - set(translated) - {"code_system"}
    assert {p: icd10.params[p] for p in rest} == {p: icd9.params[p] for p in rest}
    assert icd10.thresholds == icd9.thresholds and icd10.thresholds
    assert (icd10.schedule, icd10.scope, icd10.screening_policy) == (
        icd9.schedule, icd9.scope, icd9.screening_policy)
    assert icd10.overrides == icd9.overrides and icd10.destination == f"{name}_icd10"


def test_an_icd9_level_policy_on_icd10_claims_needs_and_records_the_gem(tmp_path):
    """ICD-9's levels reach ICD-10-CM claims carried through CMS's GEM
    (anonymizers/level_policies.py): the file names it, the run's params carry
    it, the extract still refuses mixed codes (without it: the test above)."""
    from deid.paths import ROOT

    from anonymizers.codesystems import FORWARD_GEM

    release = load_release(_write(tmp_path, GOOD + f"code_system: icd10cm\ngem: {FORWARD_GEM}\n"))
    assert release.params["gem"] == str(ROOT / FORWARD_GEM) == release.codes.gem
    assert release.codes.mixed == "refuse"
    with pytest.raises(ReleaseConfigError) as err:  # ICD-10 levels are not carried back
        load_release(_write(tmp_path, GOOD_ICD10 + f"gem: {FORWARD_GEM}\n"))
    assert err.value.field == "gem" and "read only with" in err.value.problem


def test_the_default_utility_policy_counts_as_carried(tmp_path):
    """UGACLIP's default policy is an ICD-9 level (icd9-level-2): a file that relies
    on it over ICD-10-CM claims may name gem:, and must, to be carried."""
    from anonymizers.codesystems import FORWARD_GEM

    text = GOOD.replace("method: disassociation", "method: ugaclip").replace(
        "params: {k: 5, m: 2, seed: 1, utility_policy: icd9-level-1}", "params: {k: 5, seed: 1}")
    release = load_release(_write(tmp_path, text + f"code_system: icd10cm\ngem: {FORWARD_GEM}\n"))
    assert release.params["utility_policy"] == "icd9-level-2" and release.codes.gem
    with pytest.raises(ReleaseConfigError) as err:
        load_release(_write(tmp_path, text + "code_system: icd10cm\n"))
    assert err.value.field == "gem" and "icd9-level-2" in err.value.problem


def test_a_missing_figure_fails_its_threshold_unless_nothing_new_was_published():
    """A threshold on a figure the run did not write fails the run (fail-safe),
    except in a successive run that held back every arrival and carries the
    published rows (``deid.append_only.NOTHING_NEW``): no new rows to judge,
    so the verdict holds, checked 0 times, and says why."""
    from deid.append_only import NOTHING_NEW
    from deid.steps import _threshold_verdicts

    floor = {"min_icd_kept_3digit_or_finer": 15, "max_ilm": 0.95}
    held_back = {"n_records": 0, "ilm": 0.0, NOTHING_NEW: True}
    missing, ilm = _threshold_verdicts(held_back, floor)
    assert missing["ok"] and missing["checked"] == 0 and "nothing new" in missing["note"]
    assert ilm["ok"] and ilm["checked"] == 1  # a figure it wrote is still checked
    for metrics in ({"n_records": 0, "ilm": 0.0}, {"ilm": 0.0, NOTHING_NEW: False},
                    {"ilm": 0.0, NOTHING_NEW: "yes"}):
        verdict, _ = _threshold_verdicts(metrics, floor)
        assert not verdict["ok"] and verdict["violations"] == [
            ("icd_kept_3digit_or_finer was not measured by this run: "
             "the method wrote no such figure")]
    low, _ = _threshold_verdicts({"icd_kept_3digit_or_finer": 3.8, NOTHING_NEW: True}, floor)
    assert not low["ok"]  # a figure that is there is judged, whatever the flag says


def test_a_figure_the_run_could_not_measure_fails_its_threshold_saying_why():
    """Disassociation with ``utility_policy: none`` has no constraints, so no
    MRE share: the floor fails the run and the verdict gives the method's
    reason, not ``= None``."""
    from deid import staging
    from deid.methods.disassociation import MRE_SHARES
    from deid.steps import _threshold_verdicts

    reason = {name: "the run has no utility policy" for name in MRE_SHARES}
    (verdict,) = _threshold_verdicts({"are_w2": 0.3, staging.NOT_MEASURED: reason},
                                     {"min_mre_share_in_-5_5": 0.45})
    assert not verdict["ok"] and verdict["violations"] == [
        "mre_share_in_-5_5 was not measured by this run: the run has no utility policy"]
    (zero,) = _threshold_verdicts({"mre_share_in_-5_5": 0.0, staging.NOT_MEASURED: reason},
                                  {"min_mre_share_in_-5_5": 0.45})
    assert zero["violations"] == ["mre_share_in_-5_5 = 0.0"]  # a measured figure is quoted
    (silent,) = _threshold_verdicts({"are_w1": None}, {"max_are_w1": 0.1})
    assert silent["violations"] == [
        ("are_w1 was not measured by this run: the method wrote it as not measured, "
         "without a reason")]


def test_disassociation_says_why_each_figure_it_leaves_unmeasured_is():
    from deid import staging
    from deid.methods.disassociation import MRE_SHARES, _why_not_measured

    measured = {"are_w1": 0.1, "mre_share_in_-5_5_single_codes": 0.9,
                "mre_share_in_-2.5_2.5_single_codes": 0.8,
                **dict.fromkeys(MRE_SHARES, 0.5)}
    assert _why_not_measured(measured, policy={"x": 1}) == {}
    none = _why_not_measured({**measured, **dict.fromkeys(MRE_SHARES, None), "are_w1": None},
                             policy={"x": 1})
    assert set(none) == {"are_w1", *MRE_SHARES}
    assert "no record holds a code" in none["mre_share_in_-5_5"]
    no_policy = _why_not_measured({k: v for k, v in measured.items() if k not in MRE_SHARES},
                                  policy=None)
    assert set(no_policy) == set(MRE_SHARES) and "utility_policy: none" in no_policy[
        "mre_share_in_-5_5"]
    assert staging.NOT_MEASURED == "not_measured"
