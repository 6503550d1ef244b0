"""The command line's pseudonyms cannot be replayed from the seed.

Every command that writes pseudonymous ids (lda, ugaclip, gccens, hhp,
dummies) draws its pseudonym permutation under a key: the secret of
``--pseudonym-key-file``, or a fresh random key that nobody keeps.  The seed,
printed in the metrics, draws the rest of the release.

``test_replaying_the_seed_does_not_give_the_pseudonyms`` is the leak: it
uses no new option, replays what the command line did before the key
(the library with ``pseudonym_key=None``: the seed's own generator) and
requires that the replay does not map the released pseudonyms back to their
source ids.  It fails on a command line that draws pseudonyms from the seed.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.censoring import GCCensConfig, gccens
from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.cli.hhp import read_claims
from anonymizers.dummies import DummyConfig, generate_dummies
from anonymizers.io import read_json, read_table
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.ppe import policy_from_dict
from anonymizers.ugaclip import UGACLIPConfig, load_utility_policy, ugaclip
from tests.anonymizers.test_cli_hhp import FAST, FAST_ARGS, synpuf_tables
from tests.anonymizers.test_cli_library import files  # noqa: F401 (a fixture)

SEED = 7
KEYED = "keyed (--pseudonym-key-file)"
FRESH = "fresh key, not replayable"
KEY = b"clikey-test-secret-\x00\xff\x10-0123456789abcdef"


@pytest.fixture(scope="module")
def data(files):  # noqa: F811 (the imported fixture)
    """test_cli_library's files, with a privacy policy, clusters and HHP's tables."""
    d = files
    assert main(["ppe", "--k", "3", "--input", str(d / "records.csv"),
                 "--output", str(d / "policy.json")]) == 0
    assert main(["cluster-codes", "--min-anonymity-set", "4", "--n-clusters", "2",
                 "--input", str(d / "records.csv"), "--output", str(d / "clusters.json")]) == 0
    members, claims = synpuf_tables(n_members=120)
    members.to_csv(d / "members.csv", index=False)
    claims.to_csv(d / "hhp_claims.csv", index=False)
    return d


def table(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def by_label(records: list, content: str) -> dict:
    """{pseudonym: content} of a JSON release's records."""
    return {r["patient_id"]: json.dumps(r[content], sort_keys=True) for r in records}


def rows_by(frame: pd.DataFrame, label: str) -> dict:
    """{pseudonym: its rows without the pseudonym}, rows sorted."""
    rest = [c for c in frame.columns if c != label]
    return {p: json.dumps(sorted(g[rest].to_numpy().tolist()))
            for p, g in frame.groupby(label, sort=False)}


def pairs_of(frame: pd.DataFrame) -> dict:
    """{first column: second column} of a two-column map."""
    return dict(zip(frame.iloc[:, 0], frame.iloc[:, 1]))


@dataclass(frozen=True)
class Command:
    """How to run a command, read what it released and replay its old path.

    ``released(out)``: ({pseudonym: content}, {pseudonym: source id} or None);
    ``replay(d)``: the same from the library without a key, as the command
    line drew them before ``--pseudonym-key-file``."""

    argv: Callable[[Path, Path], list]
    released: Callable[[Path], tuple]
    replay: Callable[[Path], tuple]
    metrics: Callable[[Path, str], dict]


def _ugaclip_replay(d):
    policy = policy_from_dict(read_json(d / "policy.json"))
    result = ugaclip(read_table(d / "records.csv", ["patient_id", "code"]), policy.constraints,
                     load_utility_policy(str(d / "utility.json")),
                     UGACLIPConfig(k=3, seed=SEED)).to_dict()
    return by_label(result["records"], "items"), None


def _lda_replay(d):
    result = lda(read_table(d / "pairs.csv", ["patient_id", "code", "age"]),
                 LDAConfig(k=3, seed=SEED))
    return None, pairs_of(result.pseudonym_map)


def _gccens_replay(d):
    _, key = gccens(read_table(d / "sample.csv", ["patient_id", "code"]),
                    read_table(d / "records.csv", ["patient_id", "code"]),
                    GCCensConfig(k=2, caps=2, seed=SEED))
    return None, pairs_of(key)


def _dummies_replay(d):
    result = generate_dummies(read_table(d / "records.csv", ["patient_id", "code"]),
                              read_json(d / "clusters.json")["clusters"], DummyConfig(seed=SEED))
    return rows_by(result.released.astype(str), "patient_id"), _dummy_sources(result.dummy_map)


def _dummy_sources(dummy_map: pd.DataFrame) -> dict:
    return {p: f"{d}/{s}" for p, d, s in zip(dummy_map["pseudonym"], dummy_map["is_dummy"].astype(str),
                                             dummy_map["source_patient_id"])}


def _hhp_replay(d):
    result = hhp_release(read_claims(d / "members.csv", d / "hhp_claims.csv"),
                         HHPConfig(seed=SEED, **FAST))
    return None, pairs_of(result.key.astype(str))


def _stdout_json(out, stdout):
    return json.loads(stdout)["metrics"]


COMMANDS = {
    "ugaclip": Command(
        lambda d, out: ["ugaclip", "--k", "3", "--privacy-policy", d / "policy.json",
                        "--utility-policy", d / "utility.json", "--input", d / "records.csv",
                        "--output", out / "release.json"],
        lambda out: (by_label(read_json(out / "release.json")["records"], "items"), None),
        _ugaclip_replay,
        lambda out, stdout: read_json(out / "release.json")["metrics"]),
    "lda": Command(
        lambda d, out: ["lda", "--k", "3", "--input", d / "pairs.csv",
                        "--output", out / "release.json", "--map", out / "map.csv"],
        lambda out: (by_label(read_json(out / "release.json")["records"], "trajectory"),
                     pairs_of(table(out / "map.csv"))),
        _lda_replay,
        lambda out, stdout: read_json(out / "release.json")["metrics"]),
    "gccens": Command(
        lambda d, out: ["gccens", "--k", "2", "--cap", "2", "--population", d / "records.csv",
                        "--input", d / "sample.csv", "--output", out / "release.json",
                        "--key", out / "key.csv"],
        lambda out: (by_label(read_json(out / "release.json")["records"], "codes"),
                     pairs_of(table(out / "key.csv"))),
        _gccens_replay,
        lambda out, stdout: read_json(out / "release.json")["metrics"]),
    "dummies": Command(
        lambda d, out: ["dummies", "--clusters", d / "clusters.json", "--input",
                        d / "records.csv", "--output", out / "released.csv",
                        "--dummy-map", out / "map.csv"],
        lambda out: (rows_by(table(out / "released.csv"), "patient_id"),
                     _dummy_sources(table(out / "map.csv"))),
        _dummies_replay,
        _stdout_json),
    "hhp": Command(
        lambda d, out: ["hhp", "--members", d / "members.csv", "--claims", d / "hhp_claims.csv",
                        "--output", out / "release", "--key", out / "key.csv", *FAST_ARGS],
        lambda out: ({**rows_by(table(out / "release" / "claims.csv"), "member_id"),
                      **{f"member {m}": v for m, v in
                         rows_by(table(out / "release" / "members.csv"), "member_id").items()}},
                     pairs_of(table(out / "key.csv"))),
        _hhp_replay,
        lambda out, stdout: read_json(out / "release" / "metrics.json")),
}


def run(command: str, d: Path, out: Path, *extra) -> tuple[int, str, str]:
    """Run ``command`` with --seed SEED, writing into ``out`` (created)."""
    out.mkdir()
    argv = [str(a) for a in [*COMMANDS[command].argv(d, out), "--seed", SEED, *extra]]
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        rc = main(argv)
    return rc, stdout.getvalue(), stderr.getvalue()


def released(command: str, d: Path, out: Path, *extra) -> tuple[dict, dict | None, dict]:
    """(labelled contents, source map, metrics) of one successful run."""
    rc, stdout, stderr = run(command, d, out, *extra)
    assert rc == 0, stderr
    labelled, sources = COMMANDS[command].released(out)
    return labelled, sources, COMMANDS[command].metrics(out, stdout)


def agreeing(a: dict, b: dict) -> int:
    return sum(a.get(p) == v for p, v in b.items())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_replaying_the_seed_does_not_give_the_pseudonyms(command, data, tmp_path):
    labelled, sources, _ = released(command, data, tmp_path / "out")
    replayed_labelled, replayed_sources = COMMANDS[command].replay(data)
    if sources is not None:
        assert replayed_sources.keys() == sources.keys()  # the same pseudonyms, other order
        assert replayed_sources != sources
        assert agreeing(replayed_sources, sources) < len(sources) // 2
    if replayed_labelled is not None:
        assert replayed_labelled.keys() == labelled.keys()
        assert replayed_labelled != labelled


def contents(labelled: dict, sources: dict | None) -> list:
    """The release up to pseudonym labels: each record's content, with its
    source id when the command wrote the private map."""
    if sources is None:
        return sorted(labelled.values())
    return sorted((str(sources.get(p.removeprefix("member "))), v)
                  for p, v in labelled.items())


def key_file(folder: Path, content: bytes = KEY, mode: int = 0o600,
             name: str = "pseudonym.key") -> Path:
    path = folder / name
    path.write_bytes(content)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_without_a_key_file_only_the_labels_change(command, data, tmp_path):
    first = released(command, data, tmp_path / "a")
    second = released(command, data, tmp_path / "b")
    assert first[2]["pseudonyms"] == second[2]["pseudonyms"] == FRESH
    assert first[2]["seed"] == SEED
    assert contents(*first[:2]) == contents(*second[:2])
    assert first[0] != second[0]  # other pseudonyms for the same records


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_same_key_file_gives_the_same_pseudonyms(command, data, tmp_path):
    path = key_file(tmp_path)
    first = released(command, data, tmp_path / "a", "--pseudonym-key-file", path)
    again = released(command, data, tmp_path / "b", "--pseudonym-key-file", path)
    other = released(command, data, tmp_path / "c", "--pseudonym-key-file",
                     key_file(tmp_path, KEY[::-1], name="other.key"))
    assert first[2]["pseudonyms"] == KEYED
    assert first[:2] == again[:2]
    # another key: other pseudonyms; the method's own draws do not depend on the key
    assert first[0] != other[0] and contents(*first[:2]) == contents(*other[:2])


def encodings(key: bytes) -> list[bytes]:
    return [key, key.hex().encode(), key.hex().upper().encode(), base64.b64encode(key),
            repr(key).encode()[2:-1]]


def assert_nowhere(key: bytes, folder: Path, *texts: str) -> None:
    written = [p for p in folder.rglob("*") if p.is_file() and p.name != "pseudonym.key"]
    assert written
    for form in encodings(key):
        for text in texts:
            assert form not in text.encode("utf-8", "surrogateescape")
        for p in written:
            assert form not in p.read_bytes(), p


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_key_is_never_written(command, data, tmp_path):
    path = key_file(tmp_path, mode=0o644)  # the warning must not show it either
    rc, stdout, stderr = run(command, data, tmp_path / "out", "--pseudonym-key-file", path)
    assert rc == 0, stderr
    assert "warning: --pseudonym-key-file" in stderr
    assert_nowhere(KEY, tmp_path, stdout, stderr)


def test_the_fresh_key_is_never_written(data, tmp_path, monkeypatch):
    fresh = bytes(range(200, 232))
    monkeypatch.setattr("anonymizers.cli.options.fresh_key", lambda: fresh)
    for command in COMMANDS:
        rc, stdout, stderr = run(command, data, tmp_path / command)
        assert rc == 0, stderr
        assert_nowhere(fresh, tmp_path / command, stdout, stderr)


def one_error_line(stderr: str, *fragments) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_key_file_exits_2_and_writes_nothing(command, data, tmp_path):
    missing = tmp_path / "no.key"
    rc, stdout, stderr = run(command, data, tmp_path / "out", "--pseudonym-key-file", missing)
    assert rc == 2
    one_error_line(stderr, "--pseudonym-key-file", str(missing))
    assert stdout == "" and not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("content", [b"", b"\n", b"\r\n"])
def test_an_empty_key_file_is_refused(content, data, tmp_path):
    path = key_file(tmp_path, content)
    rc, stdout, stderr = run("lda", data, tmp_path / "out", "--pseudonym-key-file", path)
    assert rc == 2
    one_error_line(stderr, "--pseudonym-key-file", str(path), "empty")
    assert stdout == "" and not any((tmp_path / "out").iterdir())


def test_an_unreadable_key_file_is_refused(data, tmp_path):
    rc, _, stderr = run("gccens", data, tmp_path / "out", "--pseudonym-key-file", tmp_path)
    assert rc == 2
    one_error_line(stderr, "--pseudonym-key-file", str(tmp_path), "cannot be read")
    assert not any((tmp_path / "out").iterdir())


def test_one_trailing_newline_is_not_part_of_the_key(data, tmp_path):
    runs = {}
    for name, content in {"bare": KEY, "lf": KEY + b"\n", "crlf": KEY + b"\r\n",
                          "two": KEY + b"\n\n"}.items():
        (tmp_path / name).mkdir()
        path = key_file(tmp_path / name, content)
        runs[name] = released("lda", data, tmp_path / name / "out",
                              "--pseudonym-key-file", path)[:2]
    assert runs["bare"] == runs["lf"] == runs["crlf"]
    assert runs["two"] != runs["bare"]  # only one newline is taken off


def test_a_private_key_file_gives_no_warning_and_a_short_one_does(data, tmp_path):
    rc, _, stderr = run("lda", data, tmp_path / "a", "--pseudonym-key-file", key_file(tmp_path))
    assert rc == 0 and "warning" not in stderr
    (tmp_path / "s").mkdir()
    short = key_file(tmp_path / "s", b"secret\n")
    rc, _, stderr = run("lda", data, tmp_path / "b", "--pseudonym-key-file", short)
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert rc == 0 and len(warnings) == 1 and "fewer than 16 bytes" in warnings[0]
    assert "secret" not in stderr


def test_a_dummies_lineage_is_reproducible_with_its_key(data, tmp_path):
    """With --state the lineage's own random choices are keyed too
    (anonymizers.dummies.persist.run_seed): the key file draws them again."""
    path = key_file(tmp_path)
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        rc, _, stderr = run("dummies", data, out, "--pseudonym-key-file", path,
                            "--state", out / "state")
        assert rc == 0, stderr
        outputs.append([(out / f).read_bytes() for f in
                        ("released.csv", "map.csv", "state/state.json", "state/dummies.csv")])
    assert outputs[0] == outputs[1]
    rc, stdout, _ = run("dummies", data, tmp_path / "c", "--state", tmp_path / "c" / "state")
    assert rc == 0 and "cannot be drawn again" in json.loads(stdout)["metrics"]["lineage_draws"]
    assert "lineage_draws" not in json.loads(run("dummies", data, tmp_path / "d")[1])["metrics"]


def help_text(command: str) -> str:
    stdout = io.StringIO()
    with redirect_stdout(stdout), pytest.raises(SystemExit):
        main([command, "--help"])
    return stdout.getvalue()


def test_only_the_commands_that_draw_pseudonyms_take_a_key_file():
    """ppe, cluster-codes and disassociate write no record ids; reconstruct's
    ids name records it draws from a release, not source patients;
    attack-successive writes no release."""
    takes = {c for c in ("ppe", "cluster-codes", "dummies", "ugaclip", "disassociate",
                         "reconstruct", "gccens", "lda", "hhp", "attack-successive")
             if "--pseudonym-key-file" in help_text(c)}
    assert takes == set(COMMANDS)
