"""Parameters and result of UGACLIP."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError


@dataclass(frozen=True)
class UGACLIPConfig:
    """Parameters of UGACLIP (Loukides et al., PNAS 2010, SI Algorithm 2).

    Parameters
    ----------
    k : int
        Anonymization threshold, >= 1: every privacy constraint must end up
        held by at least ``k`` records of the output, or fully suppressed.
    seed : int, default 0
        Seed of the ``numpy.random.Generator`` that draws the output's fresh
        patient pseudonyms and the COUNT-query workload of the RE metric.
        UGACLIP itself makes no random choice (ties break by input order).
    re_query_sizes : tuple of int, default (1, 2)
        Sizes q of the COUNT queries (q codes each) whose relative error is
        reported.
    re_queries : int, default 200
        Queries drawn per size; 0 skips the RE metric.
    unplaced_weight : float, default 1.0
        Semantic weight w, in (0, 1], of an item holding a code the hierarchy
        cannot place (see ``anonymizers.ugaclip.loss``).
    pseudonym_key : bytes or None, default None
        Secret key of the pseudonym permutation (``anonymizers.pseudonyms``):
        with it the permutation cannot be drawn again from the seed alone.
        Not shown in the config's repr.
    """

    k: int
    seed: int = 0
    re_query_sizes: tuple = (1, 2)
    re_queries: int = 200
    unplaced_weight: float = 1.0
    pseudonym_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        _check_int("k", self.k, 1)
        _check_int("seed", self.seed, 0)
        _check_int("re_queries", self.re_queries, 0)
        sizes = tuple(self.re_query_sizes)
        if not sizes:
            raise ParameterError("re_query_sizes", "give at least one query size")
        for q in sizes:
            _check_int("re_query_sizes", q, 1)
        object.__setattr__(self, "re_query_sizes", sizes)
        w = self.unplaced_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w <= 1:
            raise ParameterError("unplaced_weight", f"must be a number in (0, 1], got {w!r}")


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(name, f"must be an integer, got {value!r}")
    if value < minimum:
        raise ParameterError(name, f"must be at least {minimum}, got {value}")


@dataclass(frozen=True)
class UGACLIPResult:
    """The anonymized release.

    Attributes
    ----------
    k : int
    items : list of tuple of str
        The anonymized items (Definition 1), each the sorted codes it stands
        for; an item's id is its position in this list.
    suppressed : list of str
        Suppressed codes (mapped to the empty set), sorted.
    mapping : DataFrame
        ``code, item``: the item id of every code of the input, -1 if suppressed.
    patients : ndarray of str
        Fresh pseudonyms of all released records, sorted (records whose codes
        were all suppressed are released empty).
    record_items : DataFrame
        ``patient_id, item``: one row per item a record holds.
    metrics : dict
    """

    k: int
    items: list
    suppressed: list
    mapping: pd.DataFrame
    patients: np.ndarray
    record_items: pd.DataFrame
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON form: ``{"k", "items", "suppressed", "records", "metrics"}``."""
        held: dict[str, list] = {p: [] for p in self.patients}
        for pid, item in zip(self.record_items["patient_id"], self.record_items["item"]):
            held[pid].append(list(self.items[item]))
        return {"k": int(self.k), "items": [list(i) for i in self.items],
                "suppressed": list(self.suppressed),
                "records": [{"patient_id": p, "items": held[p]} for p in self.patients],
                "metrics": self.metrics}
