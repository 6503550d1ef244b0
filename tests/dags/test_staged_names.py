"""The staged files of a run are named in ``deid.staging`` only (issue 24)."""

from __future__ import annotations

import re
from pathlib import Path

from deid import staging

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
NAMER = PLUGINS / "deid" / "staging.py"
# A quoted file name ending .parquet or .json (f-strings included): "claims.parquet",
# f"dis_fragment.b{i}.json", "append_carried.{}.parquet".  A bare suffix (".json") is not one.
LITERAL = re.compile(r"""["'][^"'\s]+\.(?:parquet|json)["']""")
# Not staging: pgserver's own record of its client pids, in the embedded
# warehouse's data folder (deid.warehouse), never in a run's folder.
NOT_STAGED = {'".handle_pids.json"'}


def _literals(text: str) -> list[str]:
    return [m.group(0) for m in LITERAL.finditer(text) if m.group(0) not in NOT_STAGED]


def test_the_pattern_finds_every_form_of_a_staged_name():
    found = _literals('run.path("claims.parquet"); run.read_json(f"dis_fragment.b{i}.json"); '
                      "x = 'key.parquet'; CARRIED = \"append_carried.{}.parquet\"")
    assert len(found) == 4
    assert _literals('JSON = ".json"; name[:-len(".parquet")]; "report.html"') == []


def test_no_staged_file_name_outside_deid_staging():
    offenders = [f"{path.relative_to(ROOT)}:{n}: {lit}"
                 for path in sorted(PLUGINS.rglob("*.py")) if path != NAMER
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 for lit in _literals(line)]
    assert offenders == [], "name staged files in deid.staging:\n" + "\n".join(offenders)


def test_every_staged_name_is_distinct():
    names = [v for k, v in vars(staging).items() if k.isupper() and isinstance(v, str)]
    names += [staging.screen_claims(0), staging.screen_removed(0), staging.dis_plan(0),
              staging.dis_records(0), staging.dis_fragment(0), staging.dis_verdict(0),
              staging.hhp_parts(0), staging.append_carried("clusters"),
              staging.dis_block("clusters"), staging.dis_state("dis_records"),
              staging.medco_state("dummies")]
    assert len(names) == len(set(names)) > 40


def test_medco_state_files_are_found_by_part(tmp_path):
    for part in ("b", "a.x"):
        (tmp_path / staging.medco_state(part)).touch()
    (tmp_path / staging.RELEASED).touch()
    found = staging.medco_state_files(tmp_path)
    assert list(found) == ["a.x", "b"]
    assert found["b"] == tmp_path / "medco_state.b.parquet"
