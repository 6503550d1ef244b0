"""A seeded generator of DE-SynPUF-shaped claims, at any size.

It fills the source tables' columns that the pipeline uses (beneficiary
summary per year; inpatient, outpatient and carrier claims) with:
- heavy-tailed code frequencies: codes are drawn from a Zipf law (exponent
  ``zipf_s``) over a vocabulary of real billable codes of the code system
  ``code_system``: ICD-9-CM (default) or ICD-10-CM (``vocabulary_icd10``:
  chapters in the proportions of Medicare claims, see there);
- groups of co-occurring codes: ``n_groups`` "conditions" of 2-5 codes; each
  member has a few conditions and most claims carry codes of one of them, so
  the same codes repeat across a member's visits;
- claims per member from a negative binomial (mean ``claims_per_member``),
  about 3% inpatient, 12% outpatient, 85% carrier;
- ages 0 to 100 on 2008-01-01 and service dates over 2008-01-01..2010-12-31.

The defaults reach the Heritage Health Prize's scale with
``n_members=113_000`` (about 2.67 million claims).  Members are generated in
chunks with a generator spawned per chunk from the seed, so the output for a
given (seed, chunk_members) never depends on how it is consumed.

Codes are undotted, as CMS writes them, in the DE-SynPUF columns
``icd9_dgns_cd_n`` whatever the code system (the layout names its columns
after ICD-9; they hold code strings).  ICD-9-CM output is the same for a
seed as before ``code_system`` existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError

START = np.datetime64("2008-01-01")
DAYS = int((np.datetime64("2011-01-01") - START).astype(int))
CLAIM_TYPES = ("inpatient", "outpatient", "carrier")
TYPE_SHARE = (0.03, 0.12, 0.85)
MAX_DX = {"inpatient": 10, "outpatient": 10, "carrier": 8}
HCPCS = np.array(["99213", "99214", "99212", "99232", "36415", "85025", "80053",
                  "93000", "71020", "97110", "G0008", "J1100"], dtype=object)


@dataclass(frozen=True)
class SyntheticConfig:
    """Parameters of the generator.

    n_members : int -- number of beneficiaries (>= 1).
    seed : int -- seed of every random choice.
    claims_per_member : float, default 23.6 -- mean claims per member (HHP: 2.67M / 113k).
    n_codes : int, default 2000 -- size of the ICD-9-CM vocabulary drawn from.
    zipf_s : float, default 1.1 -- exponent of the code-frequency law.
    n_groups : int, default 300 -- number of co-occurring code groups.
    chunk_members : int, default 10000 -- members per generated chunk.
    code_system : str, default "icd9cm" -- ``icd9cm`` or ``icd10cm``
        (``anonymizers.codesystems``).
    """

    n_members: int
    seed: int
    claims_per_member: float = 23.6
    n_codes: int = 2000
    zipf_s: float = 1.1
    n_groups: int = 300
    chunk_members: int = 10_000
    code_system: str = "icd9cm"

    def __post_init__(self):
        from anonymizers.codesystems import check_system

        check_system(self.code_system)
        if self.n_members < 1:
            raise ParameterError("n_members", f"must be at least 1, got {self.n_members}")
        if self.claims_per_member <= 0:
            raise ParameterError("claims_per_member", "must be positive")
        if self.n_codes < 10:
            raise ParameterError("n_codes", "must be at least 10")
        if self.chunk_members < 1:
            raise ParameterError("chunk_members", "must be at least 1")


# Frequent Medicare diagnoses (hypertension, diabetes, hyperlipidemia, atrial
# fibrillation, heart failure, coronary atherosclerosis, ...) take the top
# Zipf ranks, so that the codes of the GCCens study (250, 272, 401, 724) and
# the utility policies' diseases occur as in real claims.
COMMON = ("4019", "25000", "2724", "42731", "4280", "41401", "V5869", "5990", "49121",
          "7245", "2449", "5849", "4011", "2720", "25002", "7242", "V5861", "27800")


def vocabulary(n_codes: int, rng: np.random.Generator) -> np.ndarray:
    """``n_codes`` billable ICD-9-CM codes (undotted, as CMS writes them), in
    the order that decides their Zipf rank: ``COMMON`` first, then random."""
    from anonymizers.hierarchy import icd9cm

    h = icd9cm()
    leaves = sorted(c for c in h.parent if not h.children(c) and c not in COMMON)
    rest = rng.choice(np.array(leaves, dtype=object), size=max(0, min(n_codes, len(leaves))
                                                                 - len(COMMON)), replace=False)
    return np.concatenate([np.array(COMMON, dtype=object), rest])[:n_codes]


# The ICD-10-CM forms of COMMON, in its order (its rank decides frequency):
# CMS's GEM target as ``codesystems.gem_forward`` picks it, except where that
# target is not billable in FY2026 or a sibling states the ICD-9 meaning:
# 2724 -> E7849 (GEM: E784, split in FY2024), 2720 -> E7800 (E780, split in
# FY2019), 7242 -> M5450 (M545, split in FY2022), V5869 -> Z79899 (GEM's
# first, Z79891, is opiate analgesics only), 7245 -> M549 (dorsalgia,
# unspecified; GEM's first is M5489).  4011 (benign hypertension) is I10
# again and so is left out.
COMMON_ICD10 = ("I10", "E119", "E7849", "I4891", "I509", "I2510", "Z79899", "N390", "J441",
                "M549", "E039", "N179", "E7800", "E1165", "M5450", "Z7901", "E669")
CHAPTER_SHARES = Path(__file__).resolve().parent / "data" / "icd10" / "chapter_shares.csv"


def chapter_shares() -> pd.Series:
    """ICD-10-CM chapter (range label, e.g. ``I00-I99``) -> share of diagnosis
    occurrences in DE-SynPUF claims mapped through CMS's GEM
    (data/icd10/chapter_shares.csv; SOURCES.md there says how)."""
    table = pd.read_csv(CHAPTER_SHARES, comment="#")
    return table.set_index("chapter")["occurrences"] / table["occurrences"].sum()


@lru_cache(maxsize=1)
def icd10_leaves() -> dict[str, tuple[str, ...]]:
    """Billable ICD-10-CM codes (the tree's leaves) per chapter, sorted."""
    from anonymizers.hierarchy import ROOT, icd10cm

    tree = icd10cm()
    out: dict[str, list[str]] = {}
    for code in sorted(c for c in tree.parent if not tree.children(c) and "-" not in c
                       and c != ROOT):
        out.setdefault(tree.path(code)[-2], []).append(code)
    return {chapter: tuple(codes) for chapter, codes in out.items()}


def vocabulary_icd10(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Billable ICD-10-CM codes, one per Zipf rank of ``weights``.

    Each rank, in decreasing weight, goes to the chapter whose Zipf mass so
    far is furthest below its share (``chapter_shares``; ties to the larger
    share), and takes that chapter's next code: its
    ``COMMON_ICD10`` codes first, in that order, then random unused billable
    codes.  So the chapters' shares of code occurrences follow the claims',
    each chapter keeps a heavy tail, and the common Medicare diagnoses lead
    their chapters.  (Fixing COMMON_ICD10 at the top ranks instead would give
    chapter I00-I99 a quarter of all occurrences against 17% in the claims.)
    """
    leaves, shares = icd10_leaves(), chapter_shares()
    if len(weights) > sum(len(leaves[ch]) for ch in shares.index):
        raise ParameterError("n_codes", f"must be at most the number of billable ICD-10-CM "
                             f"codes of the chapters drawn from, got {len(weights)}")
    chapters = list(shares.index)
    pools = []
    for ch in chapters:
        common = [c for c in COMMON_ICD10 if c in set(leaves[ch])]
        rest = sorted(set(leaves[ch]) - set(common))
        pools.append(common + list(rng.permutation(np.array(rest, dtype=object))))
    target = shares.to_numpy()
    have, used = np.zeros(len(chapters)), np.zeros(len(chapters), dtype=np.int64)
    room = np.array([len(p) for p in pools])
    order = np.lexsort((-target,))  # tie-break: larger share first
    out = []
    for w in weights:
        gap = np.where(used < room, target - have, -np.inf)
        i = order[np.argmax(gap[order])]
        out.append(pools[i][used[i]])
        used[i] += 1
        have[i] += w
    return np.array(out, dtype=object)


def generate(config: SyntheticConfig) -> Iterator[dict[str, pd.DataFrame]]:
    """Yield chunks of tables: ``beneficiary_summary``, ``inpatient_claims``,
    ``outpatient_claims``, ``carrier_claims``, with the source schema's
    (lower-case) column names."""
    root = np.random.SeedSequence(config.seed)
    base = np.random.default_rng(root.spawn(1)[0])
    if config.code_system == "icd10cm":
        weights = _zipf(config.n_codes, config.zipf_s)
        vocab = vocabulary_icd10(weights, base)
    else:
        vocab = vocabulary(config.n_codes, base)
        weights = _zipf(len(vocab), config.zipf_s)
    groups = _groups(config.n_groups, weights, base)
    n_chunks = -(-config.n_members // config.chunk_members)
    for c, seq in enumerate(root.spawn(n_chunks + 1)[1:]):
        rng = np.random.default_rng(seq)
        first = c * config.chunk_members
        n = min(config.chunk_members, config.n_members - first)
        yield _chunk(first, n, config, vocab, weights, groups, rng)


def _zipf(n: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


def _groups(n_groups: int, weights: np.ndarray, rng) -> list[np.ndarray]:
    sizes = rng.integers(2, 6, size=n_groups)
    return [rng.choice(len(weights), size=s, replace=False, p=weights) for s in sizes]


def _chunk(first, n, config, vocab, weights, groups, rng) -> dict[str, pd.DataFrame]:
    ids = np.array([f"{x:016X}" for x in rng.integers(0, 2**63, size=n)], dtype=object)
    bene = _beneficiaries(ids, rng)
    counts = rng.negative_binomial(1.5, 1.5 / (1.5 + config.claims_per_member), size=n)
    member = np.repeat(np.arange(n), counts)
    kind = rng.choice(3, size=len(member), p=TYPE_SHARE)
    conditions = rng.integers(0, len(groups), size=(n, 3))
    out = {"beneficiary_summary": bene}
    for t, name in enumerate(CLAIM_TYPES):
        sel = member[kind == t]
        out[f"{name}_claims"] = _claims(name, ids, sel, first, t, conditions, groups,
                                        vocab, weights, rng)
    return out


def _beneficiaries(ids: np.ndarray, rng) -> pd.DataFrame:
    age_days = rng.integers(0, 101 * 365, size=len(ids))
    birth = START - age_days.astype("timedelta64[D]")
    frames = []
    for year in (2008, 2009, 2010):
        frames.append(pd.DataFrame({
            "year": year, "desynpuf_id": ids,
            "bene_birth_dt": np.datetime_as_string(birth, unit="D"),
            "bene_death_dt": None,
            "bene_sex_ident_cd": rng.integers(1, 3, size=len(ids)) if year == 2008 else None,
            "bene_race_cd": rng.choice([1, 2, 3, 5], size=len(ids), p=[.8, .1, .05, .05]),
            "sp_state_code": rng.integers(1, 55, size=len(ids)).astype(str),
        }))
    frames[1]["bene_sex_ident_cd"] = frames[0]["bene_sex_ident_cd"]
    frames[2]["bene_sex_ident_cd"] = frames[0]["bene_sex_ident_cd"]
    return pd.concat(frames, ignore_index=True)


def _claims(name, ids, member, first, t, conditions, groups, vocab, weights, rng):
    m = len(member)
    start = START + rng.integers(0, DAYS, size=m).astype("timedelta64[D]")
    length = rng.integers(1, 8, size=m) if name == "inpatient" else np.zeros(m, dtype=int)
    end = np.minimum(start + length.astype("timedelta64[D]"), START + (DAYS - 1))
    dx = _diagnoses(m, MAX_DX[name], member, conditions, groups, weights, rng)
    frame = {"desynpuf_id": ids[member],
             "clm_id": _claim_ids(t, first + member),
             "clm_from_dt": np.datetime_as_string(start, unit="D"),
             "clm_thru_dt": np.datetime_as_string(end, unit="D")}
    if name == "inpatient":
        frame["clm_utlztn_day_cnt"] = length
    codes = np.where(dx >= 0, vocab[np.maximum(dx, 0)], None)
    for j in range(MAX_DX[name]):
        frame[f"icd9_dgns_cd_{j + 1}"] = codes[:, j]
    frame["hcpcs_cd_1"] = rng.choice(HCPCS, size=m)
    return pd.DataFrame(frame)


def _group_table(groups, width) -> tuple[np.ndarray, np.ndarray]:
    """Groups as a -1 padded (n_groups, width) matrix and their lengths (cut at width)."""
    table = np.full((len(groups), width), -1, dtype=np.int64)
    glen = np.array([min(len(g), width) for g in groups], dtype=np.int64)
    for i, g in enumerate(groups):
        table[i, :glen[i]] = g[:width]
    return table, glen


def _claim_ids(t: int, member: np.ndarray) -> np.ndarray:
    """``<type><member:07d><claim number within this type and chunk:06d>``."""
    digits = (t * 10**13 + member.astype(np.int64) * 10**6 + np.arange(len(member)))
    return pd.Series(digits).astype(str).str.zfill(14).to_numpy(dtype=object)


def _diagnoses(m, width, member, conditions, groups, weights, rng) -> np.ndarray:
    """(m, width) code indices, -1 padded: most claims start with the codes of
    one of the member's conditions, then add codes from the Zipf law."""
    out = np.full((m, width), -1, dtype=np.int64)
    n_extra = np.minimum(rng.poisson(1.2, size=m) + 1, width)
    extra = rng.choice(len(weights), size=(m, width), p=weights)
    use_group = rng.random(m) < 0.7
    which = conditions[member, rng.integers(0, conditions.shape[1], size=m)]
    cols = np.arange(width)
    out[:] = np.where(cols[None, :] < n_extra[:, None], extra, -1)
    # a group's codes first, then the extras shifted right (vectorised)
    table, glen = _group_table(groups, width)
    rows = np.flatnonzero(use_group)
    g, n_g = table[which[rows]], glen[which[rows]]
    shifted = np.take_along_axis(out[rows], np.maximum(cols[None, :] - n_g[:, None], 0), 1)
    out[rows] = np.where(cols[None, :] < n_g[:, None], g, shifted)
    return out
