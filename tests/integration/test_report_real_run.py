"""A release's report from a real run of the pipeline's steps (PPE, the
method, its independent verifier, the Great Expectations gates, the
thresholds, then ``steps.report``): the declared utility figures read keys
the methods really write, and a release that suppresses most of its codes
is reported as low utility even though its guarantee holds."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from deid import steps
from deid import utility_summary as us
from deid.methods import param_schemas

COMMON = ["4011", "25000", "2724"]
RARE = ["7242", "4280", "42731", "49390", "V5869", "2449", "2859", "5990", "4660", "78650",
        "71590", "3051", "2689", "5849", "4241"]


@pytest.fixture
def claims(tmp_path, monkeypatch) -> pd.DataFrame:
    """60 patients, 3 claims each: one common code and two rare ones per
    claim, each with an age and a date (for LDA)."""
    monkeypatch.setenv("DEID_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("DEID_REPORTS_DIR", str(tmp_path / "reports"))
    rng = np.random.default_rng(1)
    rows = [(f"P{p:04d}", f"C{p}_{c}", code) for p in range(60) for c in range(3)
            for code in [COMMON[(p + c) % 3], *rng.choice(RARE, size=2, replace=False)]]
    claims = pd.DataFrame(rows, columns=["patient_id", "claim_id", "code"])
    return claims.assign(age_at_service=rng.integers(30, 90, len(claims)),
                         service_date=pd.Timestamp("2009-01-01")
                         + pd.to_timedelta(rng.integers(0, 365, len(claims)), unit="D"))


def run_release(claims, method: str, overrides: dict, thresholds: dict) -> str:
    run = steps.Run(f"report_{method}", "manual__1")
    claims.to_parquet(run.path("claims.parquet"))
    params = {n: s["default"] for n, s in param_schemas(method).items()}
    params.update(overrides)
    steps.privacy_policy(run, params["k"], params["ppe_filter"])
    module, out = steps.METHODS[method], {}
    for step in module.STEPS:  # a mapped step runs once per batch of its source step
        source = getattr(module, "MAPPED", {}).get(step)
        out[step] = ([steps.method_step(run, method, step, params, b) for b in out[source]]
                     if source else steps.method_step(run, method, step, params))
    steps.verify_policy(run)
    steps.validate(run, method, params, thresholds)
    path = steps.report(run, method, params)["report_path"]
    return run, open(path).read()


def test_real_ugaclip_release_suppressing_most_codes_is_low_utility(claims):
    run, page = run_release(claims, "ugaclip", {"k": 5, "utility_policy": "icd9-level-2"},
                            {"max_suppressed_share": 0.99})
    metrics = steps.methods.metrics(run)
    share = metrics["suppressed_codes"] / metrics["n_codes"]
    assert share > 0.5  # the data is made of rare codes: most distinct codes go
    text = re.sub(r"<[^>]+>", "", page)
    assert "Privacy: k-protection of every privacy constraint holds" in text
    utility = text.split("Utility: ")[1].split("Thresholds:")[0]
    assert utility.rstrip(". \n").endswith("low utility")
    assert f"distinct codes suppressed: {us.fmt(share, 'share')}" in utility
    assert "ugaclip-k-protection holds" in text
    measured = {a.figure.name for a in us.assess("ugaclip", metrics) if a.value is not None}
    assert measured == {f.name for f in us.FIGURES["ugaclip"]}


def test_real_medco_release_reads_the_ratios_it_writes(claims):
    run, page = run_release(claims, "medco", {"k": 5, "min_anonymity_set": 3},
                            {"max_real_ratio": 30.0})
    metrics = steps.methods.metrics(run)
    figure = us.assess("medco", metrics)[0]
    assert figure.value == pytest.approx(metrics["real_ratio"] / metrics["theoretical_ratio"] - 1)
    assert "real ratio (Fig. 7) ≤ 30.0: holds" in page
    assert "flat code frequencies in every cluster holds" in page


@pytest.mark.parametrize(("method", "overrides", "thresholds"), [
    ("disassociation", {"k": 3, "utility_policy": "icd9-level-1"}, {"max_are_w2": 10.0}),
    # one refine window (null): every step reads the window the plan recorded
    ("disassociation", {"k": 3, "utility_policy": "icd9-level-1", "refine_window": None},
     {"max_are_w2": 10.0}),
    ("lda", {"k": 3}, {"max_ilm": 0.95})])
def test_declared_figures_read_the_keys_real_runs_write(claims, method, overrides, thresholds):
    run, page = run_release(claims, method, overrides, thresholds)
    assessed = us.assess(method, steps.methods.metrics(run))
    assert all(a.value is not None for a in assessed)
    assert f"{us.GUARANTEES[method]} holds" in page
