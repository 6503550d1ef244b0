"""Method inputs derived from the synthetic claims generator.

``anonymizers.synthetic.generate`` yields DE-SynPUF-shaped chunks of tables
(beneficiary summary; inpatient, outpatient and carrier claims with
``icd9_dgns_cd_1..n``).  The functions here stream those chunks and keep only
what a method needs, so memory is bounded by the output, not by the claims:

- ``code_counts``: per member, how many claims carry a code of each chosen
  3-digit ICD-9 category -- the repeated-code records of GCCens (Tamersoy
  2011, III.2-III.3);
- ``trajectories``: per member, the distinct (ICD, Age) pairs of the
  member's claims, restricted to the most frequent codes -- the longitudinal
  records of LDA (Tamersoy 2011, IV.2.2 and Table 3), optionally subsampled
  to a target number of pairs per member.

- ``write_rif``: the generated claims in CMS's CCW RIF layout as
  ``deid.rif_loader`` reads it, in the generator's own years and claim types
  (``anonymizers.synthetic_rif`` does the writing).

Codes are the generator's undotted codes of ``config.code_system``.  The
3-digit ICD-9-CM category of a code is its first three characters, four for
E codes (``E950``); the ICD-10-CM category is its first three characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError
from anonymizers.synthetic import CLAIM_TYPES, SyntheticConfig, generate

CATEGORY = re.compile(r"\d{3}|V\d{2}|E\d{3}")
CATEGORY_ICD10 = re.compile(r"[A-Z]\d[0-9A-Z]")


def category(code: str, code_system: str = "icd9cm") -> str:
    """The 3-digit ICD-9-CM category of an (undotted or dotted) code, or its
    3-character ICD-10-CM category (``E119`` -> ``E11``) for ``icd10cm``."""
    code = code.strip().replace(".", "").upper()
    return code[:4] if code.startswith("E") and code_system == "icd9cm" else code[:3]


def code_counts(config: SyntheticConfig, categories: Iterable[str]) -> pd.DataFrame:
    """Repeated category codes per member: ``patient_id, code, count``.

    ``count`` is the number of the member's claims (inpatient, outpatient and
    carrier) carrying at least one code of the category ``code``: a claim
    counts once however many of its diagnosis columns fall in the category.
    Only members holding at least one of ``categories`` appear (like the
    thesis' population P, III.3); rows are sorted by member order of
    generation, then category.
    """
    cats = _checked_categories(categories, config.code_system)
    parts = []
    for chunk in generate(config):
        ids, member, codes, _ = _claim_codes(chunk)
        col = _map_codes(codes, lambda c: cats.get(category(c, config.code_system), -1))
        claim, which = np.nonzero(col >= 0)
        key = np.unique(claim * len(cats) + col[claim, which])  # one per claim and category
        claim, cat = np.divmod(key, len(cats))
        cell = member[claim] * len(cats) + cat
        n = np.bincount(cell, minlength=len(ids) * len(cats)).reshape(len(ids), len(cats))
        rows, cols = np.nonzero(n)
        parts.append(pd.DataFrame({"patient_id": ids[rows],
                                   "code": np.array(list(cats), dtype=object)[cols],
                                   "count": n[rows, cols].astype(np.int64)}))
    return pd.concat(parts, ignore_index=True)


def top_codes(config: SyntheticConfig, n_codes: int) -> list[str]:
    """The ``n_codes`` codes held by the most members (ties: code order), as
    the thesis restricts D_50^Pop to the 50 most frequent codes (IV.5.1)."""
    if n_codes < 1:
        raise ParameterError("n_codes", f"must be at least 1, got {n_codes}")
    counts: dict[str, int] = {}
    for chunk in generate(config):
        _, member, codes, _ = _claim_codes(chunk)
        owner = np.broadcast_to(member[:, None], codes.shape)
        held = codes != ""
        pairs = pd.DataFrame({"m": owner[held], "c": codes[held]}).drop_duplicates()
        for code, n in pairs["c"].value_counts().items():
            counts[code] = counts.get(code, 0) + int(n)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [code for code, _ in ranked[:n_codes]]


def trajectories(config: SyntheticConfig, n_codes: int = 50, pairs_per_member: float | None = None,
                 n_patients: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Longitudinal records: ``patient_id, code, age, service_date``.

    One row per distinct (code, age) pair of a member, restricted to the
    ``n_codes`` codes held by the most members of the whole generated
    population (``top_codes``; skipped when the generator's vocabulary has
    no more than ``n_codes`` codes), as D_50^Pop keeps the 50 most frequent
    codes (Tamersoy 2011, IV.5.1).  ``age`` is the member's age in whole years
    at the claim's ``clm_from_dt``, from ``bene_birth_dt``; ``service_date``
    is the first claim date of the pair.  Members without a pair are absent.

    Parameters
    ----------
    config : SyntheticConfig -- the generated population.
    n_codes : int, default 50 -- size of the code vocabulary kept (>= 1).
    pairs_per_member : float or None, default None -- when given (> 0),
        each member keeps a seeded random subset of 1 + Binomial(C - 1, p) of
        its C distinct codes, with all their pairs; one p for all members,
        set so that the expected mean number of pairs per member is
        ``pairs_per_member``.  Nothing is dropped when the mean is already at
        most that.  (Dropping whole codes, not single pairs, keeps the
        generator's repetition of a code across ages.)
    n_patients : int or None, default None -- keep only the first
        ``n_patients`` members (in generation order) that have a pair;
        generation stops once they are found.  Fewer are returned when the
        population has fewer.
    seed : int, default 0 -- seed of the subsampling.
    """
    if pairs_per_member is not None and not pairs_per_member > 0:
        raise ParameterError("pairs_per_member", f"must be positive, got {pairs_per_member}")
    if n_patients is not None and n_patients < 1:
        raise ParameterError("n_patients", f"must be at least 1, got {n_patients}")
    keep = set(top_codes(config, n_codes)) if config.n_codes > n_codes else None
    parts, found = [], 0
    for chunk in generate(config):
        parts.append(_pairs(chunk, keep))
        found += parts[-1]["patient_id"].nunique()
        if n_patients is not None and found >= n_patients:
            break
    pairs = pd.concat(parts, ignore_index=True)
    if n_patients is not None:
        first = pd.unique(pairs["patient_id"])[:n_patients]
        pairs = pairs[pairs["patient_id"].isin(first)]
    if pairs_per_member is not None:
        pairs = _subsample(pairs, pairs_per_member, np.random.default_rng(seed))
    return pairs.reset_index(drop=True)


def _pairs(chunk: dict[str, pd.DataFrame], keep: set[str] | None) -> pd.DataFrame:
    ids, member, codes, dates = _claim_codes(chunk)
    held = codes != ""
    if keep is not None:
        held &= _map_codes(codes, lambda c: int(c in keep)) == 1
    claim, _ = np.nonzero(held)
    born = _birth_dates(chunk["beneficiary_summary"], ids)
    seen = dates[claim]
    df = pd.DataFrame({"m": member[claim], "code": codes[held],
                       "age": _age(born[member[claim]], seen), "service_date": seen})
    df = (df.sort_values(["m", "age", "service_date", "code"], kind="stable")
            .drop_duplicates(["m", "code", "age"]))
    return pd.DataFrame({"patient_id": ids[df["m"].to_numpy()], "code": df["code"].to_numpy(),
                         "age": df["age"].to_numpy(),
                         "service_date": np.datetime_as_string(df["service_date"].to_numpy(),
                                                               unit="D")})


def _subsample(pairs: pd.DataFrame, target: float, rng: np.random.Generator) -> pd.DataFrame:
    """Keep, per member, a random subset of 1 + Binomial(C - 1, p) of its C
    distinct codes with all their pairs; p (one for all members) makes the
    expected mean number of kept pairs ``target``."""
    if pairs.empty:
        return pairs
    pid = pd.factorize(pairs["patient_id"])[0]
    cid = pd.DataFrame({"m": pid, "c": pairs["code"].to_numpy()}).groupby(
        ["m", "c"], sort=True).ngroup().to_numpy()  # sorted by member, so grouped
    owner = np.zeros(cid.max() + 1, dtype=np.int64)
    owner[cid] = pid
    n_codes, n_pairs = np.bincount(owner), np.bincount(pid)
    if n_pairs.mean() <= target or (n_codes == 1).all():
        return pairs
    base = (n_pairs / n_codes).sum()  # expected pairs of one code per member
    gain = (n_pairs * (n_codes - 1) / n_codes).sum()
    p = float(np.clip((target * len(n_pairs) - base) / gain, 0.0, 1.0))
    kept = 1 + rng.binomial(n_codes - 1, p)
    starts = np.concatenate([[0], np.cumsum(n_codes)[:-1]])
    order = np.lexsort((rng.random(len(owner)), owner))
    rank = np.empty(len(owner), dtype=np.int64)
    rank[order] = np.arange(len(owner)) - np.repeat(starts, n_codes)
    return pairs[(rank < kept[owner])[cid]]


def _claim_codes(chunk: dict[str, pd.DataFrame]):
    """All claims of a chunk: member ids (``ids``), the member index of each
    claim, its diagnosis codes (claims x 10, ``""`` padded) and its
    ``clm_from_dt`` as datetime64[D]."""
    ids = pd.unique(chunk["beneficiary_summary"]["desynpuf_id"].to_numpy())
    ids = np.asarray(ids, dtype=object)
    index = pd.Index(ids)
    members, codes, dates = [], [], []
    for kind in CLAIM_TYPES:
        c = chunk[f"{kind}_claims"]
        cols = sorted((x for x in c.columns if x.startswith("icd9_dgns_cd_")),
                      key=lambda x: int(x.rsplit("_", 1)[1]))
        dx = np.full((len(c), 10), "", dtype=object)
        dx[:, :len(cols)] = c[cols].fillna("").astype(str).to_numpy(dtype=object)
        codes.append(dx)
        members.append(index.get_indexer(c["desynpuf_id"]))
        dates.append(c["clm_from_dt"].to_numpy().astype("datetime64[D]"))
    return ids, np.concatenate(members), np.concatenate(codes), np.concatenate(dates)


def _map_codes(codes: np.ndarray, f) -> np.ndarray:
    """``f`` applied once per distinct code string of ``codes`` ("" -> -1)."""
    idx, uniques = pd.factorize(codes.ravel())
    table = np.array([-1 if u == "" else f(u) for u in uniques], dtype=np.int64)
    return table[idx].reshape(codes.shape)


def _birth_dates(bene: pd.DataFrame, ids: np.ndarray) -> np.ndarray:
    born = bene.drop_duplicates("desynpuf_id").set_index("desynpuf_id")["bene_birth_dt"]
    return born.reindex(ids).to_numpy().astype("datetime64[D]")


def _age(born: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Whole years from ``born`` to ``seen`` (a birthday counts on its day)."""
    def parts(x):
        year = x.astype("datetime64[Y]").astype(np.int64)
        month = x.astype("datetime64[M]").astype(np.int64) % 12
        day = (x - x.astype("datetime64[M]").astype("datetime64[D]")).astype(np.int64)
        return year, month * 100 + day

    (y0, md0), (y1, md1) = parts(born), parts(seen)
    return y1 - y0 - (md1 < md0)


def _checked_categories(categories: Iterable[str], code_system: str = "icd9cm"
                        ) -> dict[str, int]:
    if code_system == "icd10cm":
        return _checked_icd10_categories(categories)
    if isinstance(categories, str):
        raise ParameterError("categories", "must be a list of category strings such as "
                             "['250', '401'], not one string")
    cats = [str(c).strip() for c in categories]
    if not cats:
        raise ParameterError("categories", "must name at least one 3-digit ICD-9 category")
    bad = [c for c in cats if not CATEGORY.fullmatch(c)]
    if bad:
        raise ParameterError("categories", f"not 3-digit ICD-9-CM categories (undotted, "
                             f"e.g. '250', 'V15', 'E950'): {bad[:5]}")
    return {c: i for i, c in enumerate(sorted(set(cats)))}


def _checked_icd10_categories(categories: Iterable[str]) -> dict[str, int]:
    cats = [str(c).strip().upper() for c in
            ([categories] if isinstance(categories, str) else categories)]
    bad = [c for c in cats if not CATEGORY_ICD10.fullmatch(c)]
    if not cats or bad:
        raise ParameterError("categories", f"must be 3-character ICD-10-CM categories "
                             f"(e.g. ['E11', 'I10']); not: {bad[:5]}")
    return {c: i for i, c in enumerate(sorted(set(cats)))}


def write_rif(config: SyntheticConfig, directory) -> dict[str, int]:
    """The generated claims as CCW RIF files with the generator's own period
    (2008-2010) and claim types (carrier, inpatient, outpatient): records per
    file.  ``anonymizers.synthetic_rif.write_rif`` writes today's layout in
    full (ICD-10 years, SNF/HHA/hospice/DME)."""
    from anonymizers.synthetic_rif import SOURCE_YEAR
    from anonymizers.synthetic_rif import write_rif as write

    return write(config, directory, first_year=SOURCE_YEAR, split=False)
