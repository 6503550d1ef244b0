"""Where the project keeps its local state (all under ``var/``, never under dags/)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SQL = ROOT / "sql"


def var_dir() -> Path:
    """Project-local state: embedded warehouse, staging, reports (``DEID_VAR_DIR``)."""
    return Path(os.environ.get("DEID_VAR_DIR", ROOT / "var"))


def staging_root() -> Path:
    return Path(os.environ.get("DEID_STAGING_DIR", var_dir() / "staging"))


def reports_root() -> Path:
    return Path(os.environ.get("DEID_REPORTS_DIR", var_dir() / "reports"))


def sql_text(name: str) -> str:
    return (SQL / name).read_text()
