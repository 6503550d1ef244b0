"""What a trigger may change of a release: the release file is the approved policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from deid.methods import FREE, STRONGER, param_schemas
from deid.overrides import OverrideRefused, resolve
from deid.releases import load_release
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
GOOD = """name: example
method: gccens
scope: "c.clm_from_dt >= '2009-01-01'"
params: {k: 5, cap: 3, seed: 1, gccens_codes: ["250"]}
destination: {table: example}
"""


def _release(tmp_path, extra: str = ""):
    path = tmp_path / "example.yaml"
    path.write_text(GOOD + extra)
    return load_release(path)


def _run(release, **conf):
    """Airflow's params for a run: the file's values, then the trigger's conf."""
    return resolve(release, {**release.params, "scope": release.scope, **conf})


def _refused(release, **conf) -> str:
    with pytest.raises(OverrideRefused) as err:
        _run(release, **conf)
    assert "example.yaml does not allow this run" in str(err.value)
    return str(err.value)


def test_the_files_values_are_no_override(tmp_path):
    release = _release(tmp_path)
    resolved = _run(release)
    assert resolved.overrides == {} and resolved.params == release.params
    assert resolved.scope == release.scope


def test_protection_may_only_be_raised(tmp_path):
    release = _release(tmp_path)
    assert "k: 2 is weaker than the release file's 5" in _refused(release, k=2)
    assert "cap: None is weaker" in _refused(release, cap=None)  # no cap: the weakest
    resolved = _run(release, k=7, cap=2)
    assert resolved.params["k"] == 7 and resolved.params["cap"] == 2
    assert resolved.overrides == {"k": {"file": 5, "run": 7}, "cap": {"file": 3, "run": 2}}


def test_the_method_and_unknown_parameters_are_refused(tmp_path):
    release = _release(tmp_path)
    assert "method: the release file fixes 'gccens'" in _refused(release, method="medco")
    assert "m: not a parameter of gccens" in _refused(release, m=3)
    _run(release, method="gccens")  # naming the file's own method changes nothing


def test_settings_without_a_direction_are_fixed_unless_the_file_allows(tmp_path):
    release = _release(tmp_path)
    assert "seed: the release file fixes it at 1" in _refused(release, seed=2)
    assert "gccens_codes" in _refused(release, gccens_codes=["401"])
    assert _run(_release(tmp_path, "overrides: {seed: any}\n"), seed=2).params["seed"] == 2
    assert _run(release, screen_batch_members=10).params["screen_batch_members"] == 10  # FREE


def test_the_file_may_fix_or_free_a_protective_setting(tmp_path):
    fixed = _release(tmp_path, "overrides: {k: fixed, scope: fixed}\n")
    assert "k: the release file fixes it" in _refused(fixed, k=9)
    assert "scope: the release file fixes it" in _refused(fixed, scope="TRUE")
    free = _release(tmp_path, "overrides: {k: any}\n")
    assert _run(free, k=2).params["k"] == 2
    assert "k: 1 is less than the minimum of 2" in _refused(free, k=1)  # still a valid k


def test_the_scope_is_narrowed_never_widened(tmp_path):
    release = _release(tmp_path)
    resolved = _run(release, scope="c.desynpuf_id LIKE 'A%'")
    assert resolved.scope == "(c.clm_from_dt >= '2009-01-01') AND (c.desynpuf_id LIKE 'A%')"
    assert resolved.overrides["scope"]["run"] == "c.desynpuf_id LIKE 'A%'"
    # a parenthesis cannot escape the AND: each part is checked and deparsed alone
    escape = _run(release, scope="TRUE) OR (TRUE").scope
    assert escape == "(c.clm_from_dt >= '2009-01-01') AND (TRUE OR TRUE)"
    sample = _run(release, gccens_sample="c.desynpuf_id LIKE 'B%'").params["gccens_sample"]
    assert sample == "(TRUE) AND (c.desynpuf_id LIKE 'B%')"
    assert "pg_sleep" in _refused(release, scope="pg_sleep(1) IS NULL")
    wide = _release(tmp_path, "overrides: {scope: any}\n")
    assert _run(wide, scope="TRUE").scope == "TRUE"


def test_ordered_settings(tmp_path):
    release = _release(tmp_path)
    path = tmp_path / "example.yaml"
    path.write_text(GOOD.replace("method: gccens", "method: hhp").replace(
        "cap: 3, ", "").replace(', gccens_codes: ["250"]', ", ppe_filter: all-visits"))
    hhp = load_release(path)
    assert "ppe_filter: 'single-visit' is weaker" in _refused(hhp, ppe_filter="single-visit")
    assert _run(hhp, hhp_screen_all_diagnoses=True).params["hhp_screen_all_diagnoses"] is True
    assert "max_sup: 0.5 is weaker" in _refused(hhp, max_sup=0.5)
    assert "k: True is not a number" in _refused(release, k=True)


def test_every_directed_or_free_setting_is_a_parameter():
    names = {n for m in ("medco", "ugaclip", "disassociation", "gccens", "lda", "hhp")
             for n in param_schemas(m)} | {"scope"}
    assert set(STRONGER) <= names and FREE <= names


@given(file_k=st.integers(2, 1000), run_k=st.integers(2, 1000))
def test_k_is_allowed_exactly_when_not_lower(tmp_path_factory, file_k, run_k):
    path = tmp_path_factory.mktemp("k") / "example.yaml"
    path.write_text(GOOD.replace("k: 5", f"k: {file_k}"))
    release = load_release(path)
    if run_k >= file_k:
        assert _run(release, k=run_k).params["k"] == run_k
    else:
        with pytest.raises(OverrideRefused, match=f"k: {run_k} is weaker"):
            _run(release, k=run_k)


def test_the_issue_trigger_is_refused_by_the_repository_file():
    """Issue 26: {"k": 2} on deid_gccens_repeated_codes loaded a k=2 release
    although the file says 5."""
    release = load_release(ROOT / "releases" / "gccens_repeated_codes.yaml")
    with pytest.raises(OverrideRefused, match="k: 2 is weaker than the release file's 5"):
        resolve(release, {**release.params, "scope": release.scope, "k": 2})
