"""GCCens (Tamersoy 2011, Chapter III): Example 1, Figure 1, distinguishability,
preprocessing, CUL, parameters and input validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats

from anonymizers.censoring import (
    GCCensConfig,
    PopulationIndex,
    Step,
    distribution,
    gccens,
    preprocess,
    release_document,
)
from anonymizers.censoring.multisets import encode_multisets
from anonymizers.errors import InputError, ParameterError
from anonymizers.verify.censoring import verify_gccens

# Figure 1b (population) and 1a (sample).  s1 comes from p6 (Alan, III.2),
# s2 is Tom's record (III.1), s3 = {250, 250, 272} is Bella's.
POPULATION = {"Dan": ["250"], "Bella": ["250", "250", "272"],
              "John": ["250", "250", "272", "272"], "Ada": ["401"] * 4,
              "Tom": ["272", "272", "724"], "Alan": ["250"], "Eric": ["272", "724"]}
SAMPLE = {"Alan": ["250"], "Tom": ["272", "272", "724"], "Bella": ["250", "250", "272"]}
CAPS = {"250": 2, "272": 2, "401": 0, "724": 1}


def long(records: dict) -> pd.DataFrame:
    rows = [(p, c) for p, codes in records.items() for c in codes]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def by_original(result, key) -> dict:
    """Released multisets and CUL keyed by source patient."""
    orig = dict(zip(key["patient_id"], key["original_id"]))
    out = {orig[p]: {} for p in result.patients}
    for p, c, n in result.records.itertuples(index=False):
        out[orig[p]][c] = n
    cul = {orig[p]: x for p, x in zip(result.patients, result.cul)}
    return out, cul


def run(sample=SAMPLE, population=POPULATION, **config):
    s, p = long(sample), long(population)
    result, key = gccens(s, p, GCCensConfig(**config))
    verdict = verify_gccens(result.patients, result.records, key, s, p, config["k"],
                            result.final_caps)
    assert verdict.ok, verdict.violations
    return result, key


def test_example_1_and_figure_1():
    result, key = run(k=2, caps=CAPS, seed=7)
    records, cul = by_original(result, key)
    assert records == {"Alan": {"250": 1}, "Tom": {"272": 1, "724": 1},
                       "Bella": {"250": 1, "272": 1}}                       # Figure 1c
    assert cul == pytest.approx({"Alan": 0.0, "Tom": 1 / 3, "Bella": 1 / 3})  # Figure 1d
    assert result.steps == (Step("250", 1, 1), Step("272", 1, 1))          # C = {1, 2, 0, 1}, ...
    assert result.final_caps == {"250": 1, "272": 1, "401": 0, "724": 1}
    assert result.metrics["iterations"] == 2
    assert result.metrics["instances_censored_by_loop"] == 2
    assert result.metrics["min_dis_released"] == 2


def test_distinguishability_of_figure_1():
    S = encode_multisets(long(SAMPLE), "sample")
    P = encode_multisets(long(POPULATION), "population", vocabulary=S.codes)
    index = PopulationIndex(P.counts)
    col = {c: j for j, c in enumerate(S.codes)}
    assert index.dis([col["272"], col["724"]], [1, 1]) == 2       # III.4: p5 and p7
    assert index.dis([col["250"], col["272"]], [2, 1]) == 2       # Bella, John
    assert index.dis([col["272"], col["724"]], [2, 1]) == 1       # Tom is unique
    assert index.dis([col["250"]], [1]) == 4
    assert index.dis([], []) == 7                                 # the empty record
    # Example 1 says dis(D3) = 1, but John's {250, 250, 272, 272} contains
    # {250, 250, 272} under III.4's definition: 2 (see anonymizers.censoring.index)
    assert list(index.dis_rows(S.counts)) == [4, 1, 2]


@pytest.mark.parametrize("dense_fraction", [0.0, 1 / 32, 2.0])
def test_index_matches_brute_force(dense_fraction):
    rng = np.random.default_rng(3)
    pop = rng.poisson(rng.uniform(0.01, 3, size=6), size=(2000, 6)).astype(np.int32)
    index = PopulationIndex(sp.csr_matrix(pop), dense_fraction=dense_fraction)
    for query in rng.poisson(1.0, size=(200, 6)):
        cols = np.flatnonzero(query)
        expected = int((pop >= query).all(axis=1).sum())
        assert index.dis(cols, query[cols]) == expected


def test_preprocess_cuts_each_code_to_its_cap():
    counts = sp.csr_matrix(np.array([[5, 1, 0], [2, 0, 3]], dtype=np.int32))
    out = preprocess(counts, np.array([3, 0, 2]))
    assert out.toarray().tolist() == [[3, 0, 0], [2, 0, 2]]
    assert out.nnz == 3


def test_cul_ignores_the_cap_censoring_and_cul_total_counts_it():
    population = {"a": ["250"] * 5, "b": ["250"] * 5, "c": ["250"] * 2}
    result, _ = run(sample={"a": ["250"] * 5}, population=population, k=2, caps=3)
    assert result.cul.tolist() == [0.0]
    assert result.cul_total.tolist() == [pytest.approx(2 / 5)]
    assert result.metrics["instances_censored_by_caps"] == 2
    assert result.steps == ()


def test_caps_from_sample_maxima_then_censoring():
    population = {"a": ["250"] * 5, "b": ["250"] * 2, "c": ["250"] * 2, "d": ["401"]}
    result, key = run(sample={"a": ["250"] * 5, "b": ["250"] * 2}, population=population,
                      k=3, caps=None)
    records, cul = by_original(result, key)
    assert records == {"a": {"250": 2}, "b": {"250": 2}}
    assert cul == pytest.approx({"a": 3 / 5, "b": 0.0})
    assert [s.records_censored for s in result.steps] == [1, 1, 1]
    assert result.final_caps == {"250": 2}


def test_cap_only_iterations_lower_caps_above_every_count():
    population = {"a": ["250", "250", "272"], "b": ["250", "250"], "c": ["272"]}
    result, _ = run(sample={"a": ["250", "250", "272"]}, population=population, k=2,
                      caps={"250": 4, "272": 3, "999": 2})
    assert result.metrics["cap_only_iterations"] == (4 - 2) + (3 - 1) + 2
    # ties (one record each) go to the first code in sorted order: 250, twice
    assert result.steps == (Step("250", 1, 1), Step("250", 1, 0))
    assert result.final_caps == {"250": 0, "272": 1, "999": 0}


def test_caps_unchanged_when_k_map_already_holds():
    result, _ = run(k=1, caps={"250": 9, "272": 9, "401": 9, "724": 9, "x": 4})
    assert result.final_caps == {"250": 9, "272": 9, "401": 9, "724": 9, "x": 4}
    assert result.metrics["iterations"] == result.metrics["cap_only_iterations"] == 0


def test_a_record_can_be_released_empty():
    result, key = run(sample={"Ada": ["401"] * 4}, k=7, caps=CAPS)
    assert by_original(result, key)[0] == {"Ada": {}}
    doc = release_document(result)
    assert doc["records"] == [{"patient_id": result.patients[0], "codes": {}}]
    assert result.cul.tolist() == [0.0] and result.cul_total.tolist() == [1.0]


def test_release_hides_source_ids_and_seed_reproduces_it():
    (a, ka), (b, kb) = run(k=2, caps=CAPS, seed=11), run(k=2, caps=CAPS, seed=11)
    assert a.patients.tolist() == b.patients.tolist() and ka.equals(kb)
    assert a.records.equals(b.records)
    released = set(a.records["patient_id"]) | set(a.patients)
    assert not released & set(SAMPLE)
    assert list(a.records.columns) == ["patient_id", "code", "count"]
    assert sorted(ka["original_id"]) == sorted(SAMPLE)
    assert list(a.patients) == sorted(a.patients)
    orders = {tuple(run(k=2, caps=CAPS, seed=s)[1]["original_id"]) for s in range(12)}
    assert len(orders) > 1


def test_count_column_equals_repeated_rows():
    s, p = long(SAMPLE), long(POPULATION)
    counted = p.groupby(["patient_id", "code"], as_index=False).size()
    counted = counted.rename(columns={"size": "count"})
    a, _ = gccens(s, p, GCCensConfig(k=2, caps=CAPS, seed=1))
    b, _ = gccens(s, counted, GCCensConfig(k=2, caps=CAPS, seed=1))
    assert a.records.equals(b.records) and a.metrics == b.metrics


@pytest.mark.parametrize("bad", ["0", "-2", "1.5", "x"])
def test_bad_count_is_reported_with_its_row(bad):
    p = long(POPULATION).assign(count="1")
    p.loc[3, "count"] = bad
    with pytest.raises(InputError, match="row 4.*count"):
        gccens(long(SAMPLE), p, GCCensConfig(k=2, caps=CAPS))


def test_missing_column_and_empty_value_are_reported():
    with pytest.raises(InputError, match="code"):
        gccens(long(SAMPLE).rename(columns={"code": "icd"}), long(POPULATION),
               GCCensConfig(k=2))
    s = long(SAMPLE)
    s.loc[2, "code"] = None
    with pytest.raises(InputError, match="row 3"):
        gccens(s, long(POPULATION), GCCensConfig(k=2))


@pytest.mark.parametrize("kwargs, field", [
    ({"k": 0}, "k"), ({"k": True}, "k"), ({"k": 2.0}, "k"), ({"k": "2"}, "k"),
    ({"k": 2, "caps": -1}, "caps"), ({"k": 2, "caps": True}, "caps"),
    ({"k": 2, "caps": "3"}, "caps"), ({"k": 2, "caps": {"250": -1}}, "caps"),
    ({"k": 2, "caps": {"250": 1.0}}, "caps"), ({"k": 2, "caps": {250: 1}}, "caps"),
    ({"k": 2, "seed": -1}, "seed"), ({"k": 2, "seed": 1.5}, "seed"),
])
def test_config_rejects_bad_parameters(kwargs, field):
    with pytest.raises(ParameterError) as err:
        GCCensConfig(**kwargs)
    assert err.value.field == field


def test_config_freezes_the_caps_mapping():
    caps = {"250": 2}
    config = GCCensConfig(k=2, caps=caps)
    caps["250"] = 9
    assert config.caps["250"] == 2
    with pytest.raises(TypeError):
        config.caps["250"] = 5


def test_caps_must_cover_every_sample_code():
    with pytest.raises(ParameterError, match="no cap for 1 code.*724"):
        gccens(long(SAMPLE), long(POPULATION), GCCensConfig(k=2, caps={"250": 2, "272": 2}))


def test_k_larger_than_the_population_is_refused():
    with pytest.raises(ParameterError, match="exceeds the population size 7"):
        gccens(long(SAMPLE), long(POPULATION), GCCensConfig(k=8, caps=CAPS))


def test_sample_must_come_from_the_population():
    # the error names the patient's position, never the id or the code
    for sample, message in [({**SAMPLE, "Zoe": ["250"]}, "is not in the population"),
                            ({"Alan": ["250", "250"]}, "patient no. 1 .* has code no. 1 more"),
                            ({"Dan": ["272"]}, "patient no. 1 .* has code no. 1 more")]:
        with pytest.raises(InputError, match=message) as caught:
            gccens(long(sample), long(POPULATION), GCCensConfig(k=2))
        assert not any(name in str(caught.value) for name in ("Zoe", "Alan", "Dan", "'250'", "'272'"))


def test_a_sample_record_may_be_part_of_its_population_record():
    result, key = run(sample={"John": ["272", "272"]}, k=2, caps=2)
    assert by_original(result, key)[0] == {"John": {"272": 2}}


def test_distribution_statistics():
    v = np.array([0, 0, 0, 0.5, 1 / 3, 0, 0.25])
    d = distribution(v)
    assert d["mean"] == pytest.approx(v.mean())
    assert d["std"] == pytest.approx(np.std(v, ddof=1))
    assert d["median"] == 0.0
    assert d["skewness"] == pytest.approx(stats.skew(v, bias=False))
    assert d["skewness"] > 0
    assert distribution([]) == {"mean": None, "std": None, "median": None, "skewness": None}
    assert distribution([0.2])["std"] is None
    assert distribution([0.0, 0.0, 0.0])["skewness"] is None
