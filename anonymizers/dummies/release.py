"""The released table and the private dummy map, under fresh pseudonyms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.dummies.batch import Batch
from anonymizers.pseudonyms import fresh
from anonymizers.records import Records


def assemble(records: Records, dummies: Batch,
             rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``released`` (patient_id, code) and ``dummy_map`` (pseudonym, is_dummy,
    source_patient_id), both in pseudonym order; pseudonyms are a random
    permutation, so a row's position says nothing about what it is."""
    n_real, n_tot = records.n_records, records.n_records + dummies.n
    dmat = sp.csr_matrix((np.ones(len(dummies.codes), dtype=np.int8), dummies.codes,
                          dummies.indptr), shape=(dummies.n, records.n_codes))
    every = sp.vstack([records.matrix, dmat], format="csr")
    names = fresh(n_tot, rng, prefix="P")
    order = np.argsort(names, kind="stable")
    rows = every[order].tocsr()
    rows.sort_indices()
    sizes = np.diff(rows.indptr)
    released = pd.DataFrame({"patient_id": np.repeat(names[order], sizes),
                             "code": records.codes[rows.indices]})
    source = np.concatenate([records.patients, records.patients[dummies.src]])
    dummy_map = pd.DataFrame({"pseudonym": names[order], "is_dummy": order >= n_real,
                              "source_patient_id": source[order]})
    return released, dummy_map
