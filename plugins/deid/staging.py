"""Run-scoped staging storage.  It holds identifiable data: owner-only
permissions, outside the DAGs folder, deleted when the run ends."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from deid.paths import staging_root

RUN_FILE = "run.json"  # which run a folder is (its name is a hash): for deid.sweep
HEARTBEAT = "heartbeat"  # touched while one of the run's tasks runs (deid.sweep)
MAX_MAPPED = 1024  # Airflow's default max_map_length: most tasks one mapped step may expand to


def batch_size(requested: int, n_items: int) -> int:
    """``requested``, enlarged when ``n_items`` would need more than MAX_MAPPED batches."""
    return max(requested, -(-n_items // MAX_MAPPED), 1)


def safe_name(run_id: str) -> str:
    """A folder name for a run id: readable prefix plus a hash (run ids hold ':' and '+')."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)[:60]
    return f"{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:10]}"


def run_dir(release: str, run_id: str, create: bool = True) -> Path:
    root = staging_root()
    path = root / safe_name(release) / safe_name(run_id)
    if create:
        old = os.umask(0o077)
        try:
            path.mkdir(parents=True, exist_ok=True)
        finally:
            os.umask(old)
        for p in (root, root / safe_name(release), path):
            os.chmod(p, 0o700)
        if not (path / RUN_FILE).exists():
            (path / RUN_FILE).write_text(json.dumps({"release": release, "run_id": run_id}))
    return path


def beat(release: str, run_id: str) -> None:
    """Mark the run alive now, if it has staging (never creates it)."""
    path = run_dir(release, run_id, create=False)
    if path.is_dir():
        try:
            (path / HEARTBEAT).touch()
        except FileNotFoundError:  # cleanup removed the folder meanwhile
            pass


def last_beat(release: str, run_id: str) -> float | None:
    """When a task of the run last marked it alive (or its staging was made), epoch s."""
    path = run_dir(release, run_id, create=False)
    for p in (path / HEARTBEAT, path / RUN_FILE, path):
        try:
            return p.stat().st_mtime
        except FileNotFoundError:
            continue
    return None


def staged_runs(release: str | None = None) -> list[tuple[str, str]]:
    """(release, run_id) of every run folder in staging that says which run it is."""
    root = staging_root()
    pattern = f"{safe_name(release)}/*/{RUN_FILE}" if release else f"*/*/{RUN_FILE}"
    runs = []
    for marker in sorted(root.glob(pattern)) if root.is_dir() else ():
        try:
            run = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        runs.append((run["release"], run["run_id"]))
    return runs


def cleanup(release: str, run_id: str) -> bool:
    """Delete the run's staging folder; True if there was one."""
    path = run_dir(release, run_id, create=False)
    if path.exists():
        shutil.rmtree(path)
        return True
    return False
