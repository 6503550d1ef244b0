"""Against a real ``airflow standalone``: a run triggered through the REST API v2,
then the Releases view in headless Chromium, with a screenshot kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse, pytest.mark.ui]

ROOT = Path(__file__).resolve().parents[2]
DAG = "deid_medco_codes"
CONF = {"k": 3, "min_anonymity_set": 5, "seed": 77}
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def rest_run(airflow_server, warehouse):
    from tools.demo_data import load_synthetic

    load_synthetic(n_members=300, seed=5, replace=True)  # whatever earlier tests left
    token = airflow_server.token()
    airflow_server.wait_for_dag(DAG, token)
    run_id = airflow_server.trigger(DAG, CONF, token)
    return run_id, airflow_server.wait_for_run(DAG, run_id, timeout=600)["state"]


def test_rest_triggered_run_loads_and_audits(rest_run, warehouse):
    run_id, state = rest_run
    assert state == "success"
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT outcome, seed, output_rows, params->>'k' FROM audit.release_runs "
                    "WHERE release_name = 'medco_codes' AND run_id = %s", (run_id,))
        outcome, seed, rows, k = cur.fetchone()
        cur.execute("SELECT count(*) FROM release.medco_codes")
        loaded = cur.fetchone()[0]
    assert (outcome, seed, k) == ("loaded", 77, "3")
    assert rows == loaded > 0


def test_task_logs_carry_no_source_ids_or_secrets(rest_run, airflow_server, warehouse):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT DISTINCT desynpuf_id FROM source.beneficiary_summary")
        ids = [r[0] for r in cur.fetchall()]
    logs = sorted((airflow_server.home / "logs").rglob("*.log"))
    task_logs = [p for p in logs if "dag_id=deid_medco_codes" in str(p)]
    assert len(task_logs) >= 8, "expected the run's task logs"
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    leaked = [i for i in ids if i in text]
    assert not leaked, f"{len(leaked)} source patient ids in task logs"
    assert os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY", "ui-test-key") not in text


def test_releases_view_in_a_browser(rest_run, airflow_server):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (`make test` does, as root)")
    from playwright.sync_api import sync_playwright

    run_id, _ = rest_run
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{airflow_server.url}/auth/login")
        page.fill("input[name='username']", airflow_server.user)
        page.fill("input[name='password']", airflow_server.password)
        page.click("button[type='submit']")
        page.wait_for_url(lambda url: "/auth/login" not in url, timeout=30000)
        page.goto(f"{airflow_server.url}/deid/releases")
        body = page.inner_text("body")
        assert "medco_codes" in body and run_id in body and "loaded" in body
        assert "all verdicts hold" in body
        page.screenshot(path=str(artifacts / "releases-view.png"), full_page=True)
        page.click(f"tr:has-text('{run_id}') >> text=report")
        page.wait_for_load_state()
        assert "every guarantee and check holds" in page.inner_text("body")
        assert page.locator("img").count() >= 2
        page.screenshot(path=str(artifacts / "release-report.png"), full_page=True)
        page.goto(f"{airflow_server.url}/plugin/releases")
        page.wait_for_timeout(3000)
        page.screenshot(path=str(artifacts / "airflow-nav-releases.png"))
        browser.close()
