"""Run-scoped staging storage.  It holds identifiable data: owner-only
permissions, outside the DAGs folder, deleted when the run ends."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from deid.paths import staging_root

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
    return path


def cleanup(release: str, run_id: str) -> bool:
    """Delete the run's staging folder; True if there was one."""
    path = run_dir(release, run_id, create=False)
    if path.exists():
        shutil.rmtree(path)
        return True
    return False
