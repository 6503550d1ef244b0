"""The README is for users: its Python examples run, its release table names
every release file, and what it links to or tells the reader to run exists."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

from anonymizers.api import METHODS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# every method of the Python API (anonymizers.api) has a run in the "Python API" section
METHOD_CALLS = tuple(f'run("{name}"' for name in METHODS)


@pytest.fixture(scope="module")
def text() -> str:
    return README.read_text(encoding="utf-8")


def _pycon_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, body) of every ```pycon block."""
    return [(text.count("\n", 0, m.start(1)), m.group(1))
            for m in re.finditer(r"^```pycon\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)]


def test_the_python_examples_run(text):
    blocks = _pycon_blocks(text)
    assert blocks, "README has no ```pycon block of examples"
    globs: dict = {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()
    examples = 0
    for lineno, body in blocks:
        test = parser.get_doctest(body, globs, "README.md", str(README), lineno)
        examples += len(test.examples)
        runner.run(test, clear_globs=False)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} README examples failed"
    sources = "".join(body for _, body in blocks)
    missing = [call for call in METHOD_CALLS if call not in sources]
    assert not missing, f"README examples do not show {missing}"
    assert examples >= 3 * len(METHOD_CALLS) - 2


def test_every_release_file_is_in_the_table(text):
    files = sorted(p.name for p in (ROOT / "releases").glob("*.yaml"))
    assert files
    first_cells = re.findall(r"^\| ([^|]*`[\w.-]+\.yaml`[^|]*) \|", text, flags=re.MULTILINE)
    named = [n for cell in first_cells for n in re.findall(r"`([\w.-]+\.yaml)`", cell)]
    assert sorted(named) == files  # each file once, and no file that is not there


def test_the_two_commands_are_make_targets(text):
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test"):
        assert f"make {target}" in text
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE)


def test_links_and_modules_it_names_exist(text):
    for link in re.findall(r"\]\(([^)#:]+)\)", text):
        assert (ROOT / link).exists(), link
    for module in set(re.findall(r"python -m (deid\.\w+)", text)):
        assert hasattr(importlib.import_module(module), "main"), module


def test_no_internal_shorthand_and_short(text):
    assert not re.search(r"\bseed 00\d", text), "name the paper, not its seed file"
    assert len(text.splitlines()) <= 160
