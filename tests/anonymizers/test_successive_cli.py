"""``python -m anonymizers attack-successive``: the JSON report on stdout,
exit 1 when the attack breaks the guarantee, 0 when it does not, 2 for an
unusable command line."""

from __future__ import annotations

import json

import pytest

from anonymizers.__main__ import main
from anonymizers.disassociation import DisassociationConfig
from anonymizers.io import write_json
from anonymizers.successive import disassociation as dis
from anonymizers.successive.harness import overlapping_cohorts, random_pool


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("releases")
    cohorts = overlapping_cohorts(random_pool(500, 40, seed=11), 180, 150, seed=3, gain=0.3)
    config = DisassociationConfig(k=3, m=2, seed=1)
    first = dis.release(cohorts.first, config)
    out = {}
    for name, pub in (("r1", first), ("r2", dis.release(cohorts.second, config)),
                      ("r2s", dis.release_stable(cohorts.second, config, first))):
        write_json(pub.release, d / f"{name}.json")
        pub.records.to_csv(d / f"{name}.csv", index=False)
        out[name] = (str(d / f"{name}.json"), str(d / f"{name}.csv"))
    return out


def run(capsys, files, second):
    code = main(["attack-successive", "--method", "disassociation",
                 "--releases", files["r1"][0], files[second][0],
                 "--truth", files["r1"][1], files[second][1], "-k", "3", "-m", "2"])
    return code, json.loads(capsys.readouterr().out)


def test_breach_exits_1_with_the_report(capsys, files):
    code, report = run(capsys, files, "r2")
    assert code == 1 and report["breached"] and report["targets_breached"] > 0


def test_defended_release_exits_0(capsys, files):
    code, report = run(capsys, files, "r2s")
    assert code == 0 and not report["breached"]


def test_one_release_or_mismatched_truth_is_a_usage_error(capsys, files):
    assert main(["attack-successive", "--method", "disassociation",
                 "--releases", files["r1"][0]]) == 2
    assert main(["attack-successive", "--method", "disassociation",
                 "--releases", files["r1"][0], files["r2"][0], "--truth", files["r1"][1]]) == 2
    assert "error:" in capsys.readouterr().err


def test_unknown_method_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["attack-successive", "--method", "nope", "--releases", "a", "b"])
    assert exc.value.code == 2
