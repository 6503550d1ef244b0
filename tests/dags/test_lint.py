"""ruff's Airflow rules (AIR) on the DAGs and plugins, as CI runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_airflow_rules_pass_on_dags_and_plugins():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "AIR",
                          "--preview", "--no-cache", "dags", "plugins"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
