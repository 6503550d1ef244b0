"""Multiset records: patients x codes count matrices (Tamersoy 2011, III.2).

In the thesis a record's codes are "not necessarily distinct": a record is a
multiset.  Records are held as a CSR matrix of counts (int32) over a sorted
vocabulary of code strings, built once; strings come back only at the edges.
Input tables are long: one row per occurrence (``patient_id, code``), or one
row per (patient, code) with an optional positive integer ``count`` column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.errors import InputError
from anonymizers.io import check_no_nulls

PATIENT, CODE, COUNT = "patient_id", "code", "count"


@dataclass(frozen=True)
class Multisets:
    """``counts[i, j]`` copies of ``codes[j]`` in the record of ``patients[i]``.

    ``patients`` keeps the order of first appearance in the input; ``codes``
    is sorted; ``counts`` is CSR int32 with sorted indices and no stored zeros.
    """

    patients: np.ndarray
    codes: np.ndarray
    counts: sp.csr_matrix

    @property
    def n_records(self) -> int:
        return self.counts.shape[0]

    def sizes(self) -> np.ndarray:
        """Number of code instances (with repeats) in each record."""
        return np.asarray(self.counts.sum(axis=1)).ravel().astype(np.int64)


def encode_multisets(df: pd.DataFrame, source: str,
                     vocabulary: np.ndarray | None = None) -> Multisets:
    """Encode a long table as Multisets.

    With ``vocabulary`` (a sorted array of code strings), codes outside it are
    not kept as columns, but their patients still get a (possibly empty) row:
    an empty multiset is contained in every record.
    """
    _check_columns(df, source)
    p_idx, patients = pd.factorize(df[PATIENT], sort=False)
    weights = _occurrences(df, source)
    c_idx, vocab = pd.factorize(df[CODE].astype(str), sort=vocabulary is None)
    if vocabulary is None:
        vocabulary = np.asarray(vocab, dtype=object)
    else:  # map the table's own (small) vocabulary into the given one
        c_idx = pd.Index(vocabulary).get_indexer(vocab)[c_idx] if len(c_idx) else c_idx
    keep = c_idx >= 0
    shape = (len(patients), len(vocabulary))
    counts = sp.csr_matrix((weights[keep], (p_idx[keep], c_idx[keep])), shape=shape,
                           dtype=np.int64)
    counts.sum_duplicates()
    counts.eliminate_zeros()
    counts.sort_indices()
    if counts.nnz and counts.data.max() > np.iinfo(np.int32).max:
        raise InputError(source, "a code repeats more than 2**31 - 1 times in one record")
    counts = counts.astype(np.int32)
    return Multisets(np.asarray(patients, dtype=object),
                     np.asarray(vocabulary, dtype=object), counts)


def _check_columns(df: pd.DataFrame, source: str) -> None:
    missing = [c for c in (PATIENT, CODE) if c not in df.columns]
    if missing:
        raise InputError(source, f"missing column(s) {missing}; found {list(df.columns)}",
                         field=missing[0])
    check_no_nulls(df, source, [PATIENT, CODE])


def _occurrences(df: pd.DataFrame, source: str) -> np.ndarray:
    """Occurrences each row stands for: 1, or the optional ``count`` column."""
    if COUNT not in df.columns:
        return np.ones(len(df), dtype=np.int64)
    check_no_nulls(df, source, [COUNT])
    values = pd.to_numeric(df[COUNT], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(values) & (values >= 1) & (values == np.floor(values)))
    if bad.any():
        row = int(bad.argmax())
        raise InputError(source, "count must be a positive integer", row=row + 1, field=COUNT)
    return values.astype(np.int64)


def check_sample_in_population(sample: Multisets, population: Multisets) -> None:
    """Each sample record must lie within its patient's population record.

    The thesis assumes that every sample record "corresponds to a patient whose
    record is in the population" (III.2).  We check it by patient id: the
    patient must be in the population, and each code's count in the sample
    record must not exceed its count in the population record (containment;
    equality is the usual case, containment also admits a sample restricted to
    fewer codes).  ``population`` must be encoded over ``sample.codes``.
    """
    rows = pd.Index(population.patients).get_indexer(sample.patients)
    if (rows < 0).any():
        i = int(np.flatnonzero(rows < 0)[0])
        # the patient's position, never the id: an error line must not echo a patient value
        raise InputError("sample", f"the sample's patient no. {i + 1} (in patient-id order) is "
                         "not in the population; the sample must be drawn from the population "
                         "(Tamersoy 2011, III.2)", row=None, field=PATIENT)
    excess = (sample.counts - population.counts[rows]).tocoo()
    over = excess.data > 0
    if over.any():
        i, j = int(excess.row[over][0]), int(excess.col[over][0])
        raise InputError("sample", f"the sample's patient no. {i + 1} (in patient-id order) has "
                         f"code no. {j + 1} more times than the population record; the sample "
                         "must be drawn from the population (Tamersoy 2011, III.2)", field=CODE)
