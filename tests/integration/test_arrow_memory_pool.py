"""Every process that imports ``deid`` allocates Arrow buffers with jemalloc,
unless the deployment named its pool (deid/__init__.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
PROBE = "import deid, pyarrow as pa; print(pa.default_memory_pool().backend_name)"


def _pool_after_import(**env) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    environ.update(PYTHONPATH=str(PLUGINS), **env)
    return subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_importing_deid_switches_arrow_to_jemalloc():
    # the pinned pyarrow's Linux wheels carry jemalloc; a build without it keeps its default
    assert _pool_after_import() == "jemalloc"


def test_a_pool_named_by_the_deployment_is_kept():
    assert _pool_after_import(ARROW_DEFAULT_MEMORY_POOL="system") == "system"
