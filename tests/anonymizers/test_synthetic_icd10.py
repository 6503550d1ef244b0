"""The synthetic generator with ICD-10-CM codes (issue 27), and its ICD-9-CM
output unchanged by the code_system option."""

from __future__ import annotations

import hashlib
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from anonymizers.codesystems import is_valid
from anonymizers.errors import ParameterError
from anonymizers.synthetic import (SyntheticConfig, _zipf, chapter_shares, generate,
                                   icd10_leaves, vocabulary_icd10)


def fingerprint(config: SyntheticConfig) -> str:
    """sha256 of every generated table's CSV text, chunk by chunk."""
    h = hashlib.sha256()
    for chunk in generate(config):
        for name in sorted(chunk):
            h.update(name.encode())
            h.update(chunk[name].to_csv(index=False).encode())
            h.update(",".join(chunk[name].columns).encode())
    return h.hexdigest()


def claim_codes(config: SyntheticConfig) -> list[list[str]]:
    """The diagnosis codes of every generated claim."""
    out = []
    for chunk in generate(config):
        for name, frame in chunk.items():
            if name.endswith("_claims"):
                cols = [c for c in frame.columns if c.startswith("icd9_dgns_cd_")]
                out += [[c for c in row if pd.notna(c)] for row in
                        frame[cols].to_numpy(dtype=object).tolist()]
    return out


@pytest.fixture(scope="module")
def claims10() -> list[list[str]]:
    return claim_codes(SyntheticConfig(n_members=1000, seed=11, code_system="icd10cm"))


@pytest.fixture(scope="module")
def occurrences(claims10) -> pd.Series:
    return pd.Series([c for row in claims10 for c in row], dtype=object)


def chapter_of() -> dict[str, str]:
    return {c: ch for ch, codes in icd10_leaves().items() for c in codes}


def test_icd9_output_unchanged():
    # computed at cca846d, before code_system existed
    assert fingerprint(SyntheticConfig(n_members=300, seed=7, chunk_members=128)) == \
        "39b825b5e2656ddfb6bc51c1c97b836e708d0ce2e83cb72b264aab7a96e49c5e"
    assert fingerprint(SyntheticConfig(n_members=50, seed=2008, n_codes=100, n_groups=20)) == \
        "b5433764412e28534c376cf33c1cf423c33a5ab577b8060ec9d42dad4a840323"


def test_icd10_codes_valid_billable_undotted(occurrences):
    codes = occurrences.unique()
    assert is_valid(codes, "icd10cm").all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import simple_icd_10_cm as cm
    assert all(cm.is_leaf(c) for c in codes)  # the package's own billability
    assert not any("." in c or c != c.strip().upper() for c in codes)
    assert not is_valid(codes, "icd9cm").all()


def test_vocabulary_mass_matches_chapter_table():
    weights = _zipf(2000, 1.1)
    vocab = vocabulary_icd10(weights, np.random.default_rng(3))
    assert len(set(vocab)) == len(vocab)
    mass = pd.Series(weights).groupby(pd.Series(vocab).map(chapter_of()).to_numpy()).sum()
    diff = (mass.reindex(chapter_shares().index, fill_value=0) - chapter_shares()).abs()
    # greedy: a chapter misses its share by at most about one rank's weight
    assert diff.max() < 0.005, diff.sort_values().tail()


def test_claim_chapters_within_tolerance_of_table(occurrences):
    got = occurrences.map(chapter_of()).value_counts(normalize=True)
    diff = got.reindex(chapter_shares().index, fill_value=0) - chapter_shares()
    # groups draw codes without replacement, which flattens the top ranks:
    # measured max |diff| 0.022 (I00-I99, which holds I10 at rank 1)
    assert diff.abs().max() < 0.03, diff.round(4).to_dict()
    assert diff.abs().sum() / 2 < 0.05  # total variation distance
    assert set(got.index) <= set(chapter_shares().index)


def test_heavy_tail(occurrences):
    counts = occurrences.value_counts()
    top = counts.iloc[:len(counts) // 10].sum() / counts.sum()
    assert top > 0.6, top
    assert counts.index[0] == "I10"


def test_cooccurring_groups(claims10):
    def strong_pairs(rows):
        n = len(rows)
        single = pd.Series([c for r in rows for c in set(r)]).value_counts()
        pairs = pd.Series([p for r in rows for p in combinations(sorted(set(r)), 2)])
        both = pairs.value_counts()
        both = both[both >= 10]
        lift = [k * n / (single[a] * single[b]) for (a, b), k in both.items()]
        return int(np.sum(np.array(lift) >= 5))

    rng = np.random.default_rng(0)
    flat = np.array([c for r in claims10 for c in r], dtype=object)
    rng.shuffle(flat)  # same claim sizes, codes independent of each other
    ends = np.cumsum([len(r) for r in claims10])
    shuffled = [list(x) for x in np.split(flat, ends[:-1])]
    real, base = strong_pairs(claims10), strong_pairs(shuffled)
    assert real >= 50 and real >= 10 * max(base, 1), (real, base)


def test_seeded_reproducibility():
    cfg = SyntheticConfig(n_members=120, seed=5, code_system="icd10cm", chunk_members=50)
    assert fingerprint(cfg) == fingerprint(cfg)
    assert fingerprint(cfg) != fingerprint(SyntheticConfig(
        n_members=120, seed=6, code_system="icd10cm", chunk_members=50))


def test_unknown_code_system_refused():
    with pytest.raises(ParameterError):
        SyntheticConfig(n_members=10, seed=1, code_system="icd11")


@pytest.mark.parametrize("system", ["icd10cm", "icd9cm"])
def test_rif_files_read_by_rif_loader(tmp_path, system):
    from deid.rif_loader import read_files

    from anonymizers.synthetic_views import write_rif

    cfg = SyntheticConfig(n_members=60, seed=9, code_system=system, chunk_members=25)
    rows = write_rif(cfg, tmp_path)
    frames = read_files(sorted(tmp_path.glob("*.csv")))
    chunks = list(generate(cfg))
    n_claims = sum(len(c[f"{k}_claims"]) for c in chunks
                   for k in ("inpatient", "outpatient", "carrier"))
    assert len(frames["rif_claims"]) == n_claims == sum(
        rows[k] for k in ("inpatient", "outpatient", "carrier"))
    assert len(frames["rif_beneficiary"]) == 3 * 60
    assert sorted(frames["rif_beneficiary"]["year"].unique()) == [2008, 2009, 2010]
    dx = frames["rif_diagnoses"]
    assert set(dx["code_system"]) == {system}
    # every generated code, and only those, reaches the loader's diagnoses
    generated = {(clm, code) for c in chunks for k in ("inpatient", "outpatient", "carrier")
                 for clm, codes in zip(c[f"{k}_claims"]["clm_id"], c[f"{k}_claims"].filter(
                     like="icd9_dgns_cd_").to_numpy(dtype=object).tolist())
                 for code in codes if pd.notna(code)}
    assert set(zip(dx["clm_id"], dx["code"])) == generated
    first = frames["rif_claims"].set_index("clm_id")["clm_from_dt"]
    inp = chunks[0]["inpatient_claims"].set_index("clm_id")["clm_from_dt"]
    assert (first.reindex(inp.index) == inp).all()


def test_code_counts_on_icd10_categories():
    from anonymizers.synthetic_views import category, code_counts

    assert category("E119", "icd10cm") == "E11" and category("E950") == "E950"
    cfg = SyntheticConfig(n_members=150, seed=4, code_system="icd10cm", chunk_members=60)
    counts = code_counts(cfg, ["I10", "E11"])
    assert set(counts["code"]) == {"I10", "E11"} and (counts["count"] >= 1).all()
    # one count per claim and category, against a direct count
    direct = 0
    for chunk in generate(cfg):
        for k in ("inpatient", "outpatient", "carrier"):
            dx = chunk[f"{k}_claims"].filter(like="icd9_dgns_cd_").fillna("")
            direct += int(dx.apply(lambda col: col.str[:3] == "I10").any(axis=1).sum())
    assert counts.loc[counts["code"] == "I10", "count"].sum() == direct
    with pytest.raises(ParameterError):
        code_counts(cfg, ["250"])


@pytest.mark.warehouse
def test_demo_loads_the_code_system_asked_for(empty_source, monkeypatch):
    from tools import demo, demo_data

    monkeypatch.setattr(demo, "DEMO_MEMBERS", 40)
    counts = demo.ensure_demo_data("icd10cm")
    assert counts["beneficiary_summary"] == 3 * 40
    assert demo_data.source_code_system() == "icd10cm"
    assert demo.ensure_demo_data("icd10cm") == counts  # kept, not loaded again
    assert demo.ensure_demo_data("icd9cm")["beneficiary_summary"] == 3 * 40  # replaced
    assert demo_data.source_code_system() == "icd9cm"
