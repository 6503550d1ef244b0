"""PPE: privacy-policy extraction (Loukides, Gkoulalas-Divanis & Malin, PNAS 2010, SI,
Algorithm 1): maximal filtered records held by fewer than k patients become the constraints.
Readings chosen and why: docs/methods/ppe.md#ppe."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.declare import param, parameters, validate
from anonymizers.errors import InputError
from anonymizers.io import check_no_nulls
from anonymizers.records import BatchEncoder, Numbering, binary_csr

FILTERS = ("single-visit", "all-visits")
_LOOKUP_BUDGET = 4_000_000  # membership look-ups per vectorised chunk


@parameters
@dataclass(frozen=True)
class PPEConfig:
    """Parameters of PPE (Algorithm 1)."""

    k: int = param(doc="Anonymization threshold: a filtered record supported by at least k "
                   "patients is already protected and gets no constraint.",
                   kind="int", minimum=1)
    filter: str = param("all-visits", kind="str", choices=FILTERS,
                        doc="Filtering condition F: single-visit (f1) makes one record per "
                        "patient and visit (the input needs a visit_id column; a visit is a "
                        "claim or a service date), all-visits (f2) one record per patient.")

    def __post_init__(self):
        validate(self)


@dataclass(frozen=True)
class PPEResult:
    """A privacy policy.

    ``constraints`` are tuples of sorted codes, in Algorithm 1's order
    (largest first, ties in lexicographic order); ``metrics`` counts what each
    rule discarded and the constraint sizes.
    """

    k: int
    filter: str
    constraints: list[tuple[str, ...]]
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """``{"k": K, "filter": "...", "constraints": [["code", ...], ...]}``."""
        return {"k": int(self.k), "filter": self.filter,
                "constraints": [list(c) for c in self.constraints]}


def extract_policy(df: pd.DataFrame, config: PPEConfig, source: str = "input") -> PPEResult:
    """Run PPE (Algorithm 1) on a long table of diagnosis codes.

    ``df`` has columns ``patient_id`` and ``code`` and, for the single-visit
    filter, ``visit_id``; one row per (patient, [visit,] code); duplicates
    collapse.  ``source`` names the table in error messages.
    """
    return extract_policy_batches([df], config, source)


def extract_policy_batches(batches, config: PPEConfig, source: str = "input") -> PPEResult:
    """``extract_policy`` on the concatenation of ``batches`` (DataFrames as its
    ``df``, read once, one at a time, split anywhere), holding only their
    sparse encoding and the numbering of patients, visits and codes: the
    policy is the same."""
    codes, patients, filtered = _encode_batches(batches, config.filter, source)
    distinct, copies = _distinct_rows(filtered)
    larger = _containment_counts(distinct, distinct, copies, strict=True)[0]
    maximal = np.flatnonzero(larger == 0)
    if config.filter == "all-visits":
        sup = copies[maximal]  # no other patient record contains a maximal one
    else:
        p_distinct, p_copies = _distinct_rows(patients)
        sup = _containment_counts(distinct[maximal], p_distinct, p_copies)[1]
    kept = maximal[sup < config.k]
    constraints = _sorted_constraints(distinct[kept], codes)
    n_filtered = filtered.shape[0]
    metrics = {
        "n_patients": int(patients.shape[0]),
        "n_codes": len(codes),
        "n_filtered_records": int(n_filtered),
        "n_distinct_filtered_records": int(distinct.shape[0]),
        "discarded_as_subsets": int(n_filtered - len(maximal)),
        "discarded_as_protected": int(len(maximal) - len(kept)),
        "n_constraints": len(constraints),
        "constraint_sizes": _histogram(len(c) for c in constraints),
        "max_constraint_size": max((len(c) for c in constraints), default=0),
        "support_counts": "patients",
    }
    return PPEResult(config.k, config.filter, constraints, metrics)


def policy_from_dict(obj: object, source: str = "privacy policy") -> PPEResult:
    """Read back the dict form of a policy, checking its shape."""
    if not isinstance(obj, dict) or "constraints" not in obj or "k" not in obj:
        raise InputError(source, 'expected an object with keys "k", "filter", "constraints"')
    k = obj["k"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(source, f"k must be a positive integer, got {k!r}", field="k")
    cons = obj["constraints"]
    if not isinstance(cons, list):
        raise InputError(source, "constraints must be a list of lists of codes",
                         field="constraints")
    out = []
    for n, c in enumerate(cons, start=1):
        if not isinstance(c, list) or not c or not all(isinstance(x, str) and x for x in c):
            raise InputError(source, f"constraint {n} must be a non-empty list of code "
                             f"strings, got {c!r}", field="constraints")
        out.append(tuple(sorted(set(c))))
    filt = obj.get("filter", "unknown")
    return PPEResult(k, str(filt), out, {})


def _encode_batches(batches, filt: str, source: str):
    """Vocabulary (sorted), patient records and filtered records as binary CSR,
    built one batch at a time (``BatchEncoder``): patients and visits are
    numbered in order of first sight, as ``pd.factorize`` numbers the whole
    table."""
    encoder, visits, v_rows = BatchEncoder(), Numbering(), []
    offset = 0
    for df in batches:
        _check_columns(df, filt, source, offset)
        encoder.add(df["patient_id"].astype(str), df["code"])
        if filt == "single-visit":
            v_rows.append(visits.numbers(_visit_keys(df)))
        offset += len(df)
    records, col = encoder.finish()
    if filt == "all-visits":
        return records.codes, records.matrix, records.matrix
    rows = np.concatenate(v_rows) if v_rows else np.zeros(0, dtype=np.int64)
    return records.codes, records.matrix, binary_csr(rows, col, (len(visits), len(records.codes)))


def _visit_keys(df: pd.DataFrame) -> pd.Series:
    """One string per (patient, visit), unambiguous whatever the ids hold:
    the patient id's length, ':', the patient id, the visit id."""
    patient = df["patient_id"].astype(str)
    return patient.str.len().astype(str) + ":" + patient + df["visit_id"].astype(str)


def _check_columns(df: pd.DataFrame, filt: str, source: str, offset: int) -> None:
    required = ["patient_id", "code"] + (["visit_id"] if filt == "single-visit" else [])
    missing = [c for c in required if c not in df.columns]
    if missing:
        hint = " (the single-visit filter needs visit_id)" if "visit_id" in missing else ""
        raise InputError(source, f"missing column(s) {missing}{hint}", field=missing[0])
    check_no_nulls(df, source, required, first_row=offset + 1)


def _distinct_rows(m: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """Distinct rows of ``m`` (first-occurrence order) and how often each occurs."""
    keys = [m.indices[m.indptr[i]:m.indptr[i + 1]].tobytes() for i in range(m.shape[0])]
    idx, uniq = pd.factorize(pd.Series(keys, dtype=object), sort=False)
    _, first = np.unique(idx, return_index=True)
    return m[first], np.bincount(idx, minlength=len(uniq)).astype(np.int64)


def _containment_counts(queries: sp.csr_matrix, targets: sp.csr_matrix, weights: np.ndarray,
                        strict: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """For each query row q: how many target rows contain q (with ``strict``,
    only targets with more codes than q), and the sum of their ``weights``.

    Candidates for q are the targets holding q's rarest code (its posting
    list); each candidate is checked for q's other codes with a vectorised
    search in the sorted (row, code) keys of ``targets``.  Work is chunked to
    about ``_LOOKUP_BUDGET`` look-ups.  Query rows must be non-empty.
    """
    nq, n_codes = queries.shape
    count = np.zeros(nq, dtype=np.int64)
    total = np.zeros(nq, dtype=np.int64)
    if nq == 0 or targets.shape[0] == 0:
        return count, total
    postings = targets.tocsc()
    postings.sort_indices()
    col_sup = np.diff(postings.indptr)
    q_len = np.diff(queries.indptr)
    rare, rare2 = _rarest_codes(queries, col_sup)
    n_cand = col_sup[rare]
    t_len = np.diff(targets.indptr)
    t_coo = targets.tocoo()
    keys = np.sort(t_coo.row.astype(np.int64) * n_codes + t_coo.col)
    cost = np.cumsum(n_cand * q_len)
    start = 0
    while start < nq:
        stop = max(int(np.searchsorted(cost, cost[start] - n_cand[start] * q_len[start]
                                       + _LOOKUP_BUDGET, side="right")), start + 1)
        qs = np.arange(start, stop)
        c, t = _check_candidates(qs, queries, postings, (rare, rare2), n_cand, keys, n_codes,
                                 weights, t_len + (0 if strict else 1))
        count[qs], total[qs] = c, t
        start = stop
    return count, total


def _rarest_codes(queries: sp.csr_matrix, col_sup: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query row, the code with the smallest support among the targets,
    and the next one (the same code for a one-code row)."""
    rows = np.repeat(np.arange(queries.shape[0]), np.diff(queries.indptr))
    order = np.lexsort((col_sup[queries.indices], rows))
    first = queries.indptr[:-1]
    second = np.minimum(first + 1, queries.indptr[1:] - 1)
    return queries.indices[order[first]], queries.indices[order[second]]


def _check_candidates(qs, queries, postings, rares, n_cand, keys, n_codes, weights, room):
    """Count the candidates of queries ``qs`` that hold all their codes;
    candidates t with ``room[t] <= len(q)`` are skipped (too short).  The
    second-rarest code is looked up first: it drops most candidates at one
    look-up each, before the look-ups of every code."""
    rare, rare2 = rares
    counts = n_cand[qs]
    cand_q = np.repeat(qs, counts)
    cand_t = postings.indices[_ranges(postings.indptr[rare[qs]], counts)]
    fits = room[cand_t] > np.diff(queries.indptr)[cand_q]
    cand_q, cand_t = cand_q[fits], cand_t[fits]
    has2 = _holds(keys, cand_t.astype(np.int64) * n_codes + rare2[cand_q])
    cand_q, cand_t = cand_q[has2], cand_t[has2]
    q_len = np.diff(queries.indptr)[cand_q]
    pair = np.repeat(np.arange(len(cand_q)), q_len)
    code = queries.indices[_ranges(queries.indptr[cand_q], q_len)]
    found = np.bincount(pair, weights=_holds(keys, cand_t[pair].astype(np.int64) * n_codes
                                             + code), minlength=len(cand_q))
    hit = found == q_len
    local = np.searchsorted(qs, cand_q[hit])
    c = np.bincount(local, minlength=len(qs)).astype(np.int64)
    t = np.bincount(local, weights=weights[cand_t[hit]], minlength=len(qs)).astype(np.int64)
    return c, t


def _holds(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Which ``wanted`` (row * n_codes + code) keys are in the sorted ``keys``."""
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return keys[pos] == wanted


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for each (s, n), vectorised."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths) + np.arange(total)


def _sorted_constraints(rows: sp.csr_matrix, codes: np.ndarray) -> list[tuple[str, ...]]:
    sets = [tuple(sorted(codes[rows.indices[rows.indptr[i]:rows.indptr[i + 1]]].tolist()))
            for i in range(rows.shape[0])]
    return sorted(sets, key=lambda c: (-len(c), c))


def _histogram(sizes) -> dict[str, int]:
    return {str(s): n for s, n in sorted(Counter(sizes).items())}
