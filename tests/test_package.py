"""The project installs as a package: `pip install -e .` into a fresh virtualenv
gives `import anonymizers` and `import deid` from any directory, without
PYTHONPATH, and the console script `anonymizers` is `python -m anonymizers`.

The fresh virtualenv has no pip and no packages of its own; one line in a .pth
file lets it see this interpreter's site-packages (the pinned dependencies, pip
and the setuptools `make venv` pins), so the install needs no network.  That
line does not make the project importable by itself (a .pth line adds a folder
to sys.path but runs no .pth file in it, and the project's editable install in
this environment is such a .pth file): the test checks that before installing.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import anonymizers, deid; print(anonymizers.__file__); print(deid.__file__)"


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A virtualenv in a temporary folder that sees the dependencies but not the project."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([str(python), "-c", where], capture_output=True, text=True,
                             check=True).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "zz_dependencies.pth").write_text(deps + "\n")
    return venv


def _can_build_offline() -> bool:
    """setuptools builds the editable wheel itself from 70.1 on; before, it needs `wheel`."""
    installed = {d.metadata["Name"].lower(): d.version for d in importlib.metadata.distributions()}
    if "wheel" in installed:
        return True
    major, minor = (int(part) for part in installed.get("setuptools", "0.0").split(".")[:2])
    return (major, minor) >= (70, 1)


def _env() -> dict:
    """The environment without PYTHONPATH (conftest sets it for subprocesses)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout, check=False)


def _commands(help_text: str) -> set[str]:
    """The subcommands of an argparse --help: the names in its first {a,b,...}."""
    found = re.search(r"\{([a-z0-9_,-]+)\}", help_text)
    assert found, help_text
    return set(found.group(1).split(","))


def test_pip_install_e_gives_the_packages_and_the_console_script(fresh_venv, tmp_path):
    python = fresh_venv / "bin" / "python"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = _run([python, "-c", PROBE], cwd=elsewhere)
    assert before.returncode != 0 and "No module named 'anonymizers'" in before.stderr, (
        "the fresh virtualenv imports the project before it is installed: "
        f"{before.stdout}{before.stderr}")

    assert _can_build_offline(), (
        f"{sys.executable}'s setuptools cannot build a wheel: make venv installs the "
        "pinned setuptools that can (this environment predates it)")
    started = time.monotonic()
    install = _run([python, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "-e", ROOT], cwd=elsewhere)
    assert install.returncode == 0, (
        f"pip install -e . failed (make venv pins the setuptools it needs):\n{install.stderr}")
    assert time.monotonic() - started < 60

    after = _run([python, "-c", PROBE], cwd=elsewhere)
    assert after.returncode == 0, after.stderr
    anonymizers_file, deid_file = map(Path, after.stdout.split())
    assert anonymizers_file == ROOT / "anonymizers" / "__init__.py"
    assert deid_file == ROOT / "plugins" / "deid" / "__init__.py"

    script = _run([fresh_venv / "bin" / "anonymizers", "--help"], cwd=elsewhere)
    module = _run([sys.executable, "-m", "anonymizers", "--help"], cwd=ROOT)
    assert script.returncode == 0 and module.returncode == 0, script.stderr + module.stderr
    commands = _commands(script.stdout)
    assert commands == _commands(module.stdout)
    assert {"ppe", "ugaclip", "disassociate", "gccens", "lda"} <= commands
