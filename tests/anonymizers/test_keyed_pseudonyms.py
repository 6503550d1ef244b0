"""Keyed pseudonym permutations (``anonymizers.pseudonyms.keyed``): with the
deployment's secret key, every method deals the same released records to
other pseudonyms than the seed alone would, the same ones for the same key
and seed, and passes its verifier."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from anonymizers.censoring import GCCensConfig, gccens
from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.dummies import ClusterConfig, DummyConfig, cluster_codes, generate_dummies
from anonymizers.errors import ParameterError
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.pseudonyms import fresh, generator, keyed
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.verify.censoring import verify_gccens
from anonymizers.verify.dummies import verify_dummies
from anonymizers.verify.longitudinal import verify_lda
from anonymizers.verify.ugaclip import verify_release
from test_claims_release import FAST, synthetic
from test_ugaclip import TREE, U_AB

KEYS = (None, b"key-one", b"key-one", b"key-two")


def test_keyed_generator_depends_on_key_seed_and_stream():
    def draw(*args, **kw):
        return keyed(*args, **kw).permutation(50).tolist()

    assert draw(b"k", 7) == draw(b"k", 7)
    assert len({tuple(draw(b"k", 7)), tuple(draw(b"K", 7)), tuple(draw(b"k", 8)),
                tuple(draw(b"k", 7, stream="other")),
                tuple(np.random.default_rng(7).permutation(50))}) == 5


def test_generator_keys_only_with_a_key_and_a_seed():
    plain = np.random.default_rng(3)
    assert generator(None, 3, plain) is plain
    assert generator(b"k", None, plain) is plain
    assert generator(b"k", 3, plain) is not plain


@pytest.mark.parametrize("key", [b"", "text", None])
def test_keyed_refuses_a_missing_key(key):
    with pytest.raises(ParameterError, match="pseudonym_key"):
        keyed(key, 1)


@pytest.mark.parametrize("config", [UGACLIPConfig(2, seed=1, pseudonym_key=b"secret"),
                                    DummyConfig(seed=1, pseudonym_key=b"secret"),
                                    HHPConfig(seed=1, pseudonym_key=b"secret"),
                                    LDAConfig(k=2, seed=1, pseudonym_key=b"secret"),
                                    GCCensConfig(k=2, seed=1, pseudonym_key=b"secret")])
def test_configs_do_not_show_the_key(config):
    assert "secret" not in repr(config)


def dealt(runs: list[dict]) -> None:
    """``runs``: per key of KEYS, {pseudonym: what was released under it}."""
    base, one, one_again, two = runs
    assert one == one_again
    contents = [sorted(map(repr, r.values())) for r in runs]
    assert contents[0] == contents[1] == contents[3]  # the same records, relabelled
    assert one != base and two != base and one != two


def test_ugaclip():
    records = [["a1", "b1"], ["a2", "b1"], ["a3"], ["b2"], ["a1"], ["a2", "b2"], ["a3", "b1"],
               ["a1", "a2"], ["b1", "b2"], ["a3", "b2"]]
    df = pd.DataFrame([(f"S{i}", c) for i, r in enumerate(records) for c in r],
                      columns=["patient_id", "code"])
    runs = []
    for key in KEYS:
        result = ugaclip(df, [["a1", "b1"]], U_AB, UGACLIPConfig(2, seed=7, pseudonym_key=key),
                         hierarchy=TREE)
        assert verify_release(df, result.to_dict(), [["a1", "b1"]], 2).ok
        runs.append({r["patient_id"]: r["items"] for r in result.to_dict()["records"]})
    dealt(runs)


def test_dummies():
    rng = np.random.default_rng(5)
    codes = [f"c{i}" for i in range(8)]
    df = pd.DataFrame([(f"S{p}", c) for p in range(30)
                       for c in rng.choice(codes, rng.integers(1, 4), replace=False)],
                      columns=["patient_id", "code"])
    clusters = cluster_codes(df, ClusterConfig(2, 2)).clusters
    runs = []
    for key in KEYS:
        result = generate_dummies(df, clusters, DummyConfig(seed=3, pseudonym_key=key))
        assert verify_dummies(df, result.released, result.dummy_map, clusters).ok
        m = result.dummy_map.set_index("pseudonym")
        runs.append({p: (bool(m.at[p, "is_dummy"]), m.at[p, "source_patient_id"],
                         tuple(sorted(g["code"])))
                     for p, g in result.released.groupby("patient_id")})
    dealt(runs)


def test_hhp():
    data = synthetic()
    runs = []
    for key in KEYS:
        result = hhp_release(data, HHPConfig(seed=11, pseudonym_key=key, **FAST))
        source = result.key.set_index("member_id")["source_member_id"]
        runs.append({m: source[m] for m in result.members["member_id"]})
    dealt(runs)


def test_lda():
    rng = np.random.default_rng(2)
    pairs = pd.DataFrame([(f"S{p}", f"40{rng.integers(0, 3)}.{rng.integers(0, 9)}",
                           int(rng.integers(30, 40)))
                          for p in range(12) for _ in range(int(rng.integers(1, 4)))],
                         columns=["patient_id", "code", "age"])
    runs = []
    for key in KEYS:
        result = lda(pairs, LDAConfig(k=3, seed=4, pseudonym_key=key))
        assert verify_lda(result.records, result.pseudonym_map, pairs, 3).ok
        runs.append(dict(zip(result.pseudonym_map["pseudonym"],
                             result.pseudonym_map["patient_id"])))
    dealt(runs)


def test_gccens():
    rng = np.random.default_rng(4)
    codes = ["250", "272", "401", "724"]
    population = pd.DataFrame([(f"S{p}", c) for p in range(40)
                               for c in rng.choice(codes, rng.integers(1, 4))],
                              columns=["patient_id", "code"])
    sample = population[population["patient_id"].isin([f"S{p}" for p in range(0, 40, 3)])]
    runs = []
    for key in KEYS:
        result, mapping = gccens(sample, population, GCCensConfig(k=2, seed=9,
                                                                   pseudonym_key=key))
        assert verify_gccens(result.patients, result.records, mapping, sample, population,
                             2, result.final_caps).ok
        runs.append(dict(zip(mapping["patient_id"], mapping["original_id"])))
    dealt(runs)


def test_fresh_names_are_a_permutation_under_a_key():
    names = fresh(12, keyed(b"k", 1), prefix="P")
    assert sorted(names) == [f"P{i:02d}" for i in range(12)]
    assert Counter(len(n) for n in names) == Counter({3: 12})
