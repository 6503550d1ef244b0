"""Issue 25's must-show on MEPS 2005: two releases of 3,000 persons sharing
2,700 (300 left, 300 arrived, 10% of the persisting gained a code).  The
independent cross-release verifier finds breaches in independent runs and
none with each method's defence; the harness's attack finds them too.
LDA needs ages, which MEPS conditions do not carry: it is tested on
generated cohorts (test_successive_kanon.py)."""

from __future__ import annotations

import pytest

from anonymizers.censoring import GCCensConfig
from anonymizers.disassociation import DisassociationConfig
from anonymizers.io import read_table
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.successive import disassociation as dis
from anonymizers.successive import gccens as gcc
from anonymizers.successive import kanon
from anonymizers.successive.check import check
from anonymizers.successive.harness import overlapping_cohorts
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.verify.disassociation import verify_disassociation

pytestmark = pytest.mark.datasets
K, M, SEED = 5, 2, 25


@pytest.fixture(scope="module")
def meps(datasets_dir):
    df = read_table(datasets_dir / "informs_meps2005" / "conditions05.csv.gz",
                    ["DUPERSID", "ICD9CODX"])
    return df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})


@pytest.fixture(scope="module")
def pair(meps):
    cohorts = overlapping_cohorts(meps.drop_duplicates(), 3000, 2700, seed=SEED, gain=0.1)
    assert len(cohorts.persisting) == 2700
    return cohorts


def test_disassociation_k5_m2_breached_off_safe_on(pair):
    config = DisassociationConfig(k=K, m=M, seed=SEED)
    first = dis.release(pair.first, config)
    plain = dis.release(pair.second, config)
    off = check("disassociation", [first.tables()], plain.tables(), {"k": K, "m": M})
    assert not off.ok
    report = dis.attack([first.release, plain.release], [first.records, plain.records])
    assert report["breached"]
    stable = dis.release_stable(pair.second, config, first)
    on = check("disassociation", [first.tables()], stable.tables(), {"k": K, "m": M})
    assert on.ok, on.violations
    assert verify_disassociation(stable.records, stable.release, K, M).ok
    assert stable.held_back == 0


def run_ugaclip(records):
    policy = [list(c) for c in extract_policy(records, PPEConfig(K)).constraints]
    utility = hierarchy_policy(sorted(records["code"].unique()), 2)
    return ugaclip(records, policy, utility, UGACLIPConfig(K, seed=SEED)).to_dict(), policy


def test_ugaclip_k5_breached_off_safe_on(pair):
    (d1, p1), (d2, p2) = run_ugaclip(pair.first), run_ugaclip(pair.second)
    tables1 = {"release": d1, "truth": pair.first}
    assert not check("ugaclip", [tables1], {"release": d2, "truth": pair.second},
                     {"k": K, "constraints": p1 + p2}).ok
    assert kanon.attack_ugaclip([d1, d2], [pair.first, pair.second],
                                constraints=p1 + p2)["breached"]
    delta, held = kanon.new_patients(pair.second, set(pair.first["patient_id"]), K)
    assert held == 0
    dd, pd_ = run_ugaclip(delta)
    on = check("ugaclip", [tables1], {"release": dd, "truth": delta},
               {"k": K, "constraints": p1 + pd_})
    assert on.ok, on.violations


def test_gccens_k5_union_k_mapped_with_the_defence(meps):
    cohorts = overlapping_cohorts(meps, 3000, 2700, seed=SEED, gain=0.1)
    config = GCCensConfig(k=K, caps=None, seed=SEED)
    first = gcc.release(cohorts.first, meps, config)
    safe = gcc.release(cohorts.second, meps, config, first)
    verdict = check("gccens", [first.tables()], safe.tables(meps), {"k": K})
    assert verdict.ok, verdict.violations
    assert not gcc.attack([first.release, safe.release], [first.key, safe.key],
                          population=meps)["breached"]
