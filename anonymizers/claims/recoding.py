"""Global recoding (El Emam et al. 2012, appendix sections 7-11): every value
of a quasi-identifier is encoded once to its level-0 label (primary condition
group, CPT group, place of service group, specialty group, exact age, LOS,
DSFC, claims per member) and each lattice node maps those labels up the
hierarchies of ``groupings``: the same value always gets the same label.

Claim quasi-identifiers: dx, procedure, place_of_service, specialty,
length_of_stay, dsfc.  Member quasi-identifiers: age (at the first claim),
sex, claims_per_member (after truncation, so at most the threshold).  A
quasi-identifier whose input column is absent or empty is not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.claims.groupings import QIHierarchy
from anonymizers.claims.truncation import truncation_threshold

CLAIM_QIS = ("dx", "procedure", "place_of_service", "specialty", "length_of_stay", "dsfc")
MEMBER_QIS = ("age", "sex", "claims_per_member")
ALL_QIS = CLAIM_QIS + MEMBER_QIS
NEEDS_COLUMN = {"procedure": "procedure_code", "place_of_service": "place_of_service",
                "specialty": "specialty", "length_of_stay": "length_of_stay"}
DAY = np.timedelta64(1, "D")


@dataclass(frozen=True)
class QIData:
    """One quasi-identifier, encoded: ``code0`` per claim (claim scope) or per
    member (member scope); ``maps[l]`` lifts level-0 labels to level l."""

    name: str
    scope: str
    level_names: tuple[str, ...]
    code0: np.ndarray
    maps: tuple[np.ndarray, ...]
    labels: tuple[np.ndarray, ...]

    def at(self, level: int) -> np.ndarray:
        """Label index at ``level`` of every claim or member."""
        return self.maps[level][self.code0]

    def n_labels(self, level: int) -> int:
        return len(self.labels[level])


@dataclass(frozen=True)
class Prepared:
    """The screened claims, sorted by member then date then input row.

    ``member[c]``: member index of claim c; the claims of member i are
    ``starts[i]:starts[i + 1]``; ``rows[c]``: the claim's input row;
    ``threshold``: the truncation threshold; ``qis``: claim QIs first.
    """

    member: np.ndarray
    starts: np.ndarray
    n_claims: np.ndarray
    dsfc: np.ndarray
    rows: np.ndarray
    member_ids: np.ndarray
    qis: tuple[QIData, ...]
    threshold: int
    absent: dict
    fallback: dict

    @property
    def n_members(self) -> int:
        return len(self.n_claims)

    @property
    def claim_qis(self) -> tuple[QIData, ...]:
        return tuple(q for q in self.qis if q.scope == "claim")

    @property
    def member_qis(self) -> tuple[QIData, ...]:
        return tuple(q for q in self.qis if q.scope == "member")


def prepare(norm: pd.DataFrame, present: set[str], hierarchies: dict[str, QIHierarchy],
            qis: tuple[str, ...] = ALL_QIS, percentile: float = 95.0,
            keep: np.ndarray | None = None) -> Prepared:
    """Sort, derive DSFC/age/claim counts and encode the quasi-identifiers of
    the screened claims: the rows of ``norm`` (``inputs.normalize`` columns)
    where ``keep`` is true (all rows when it is None).  The kept rows are
    gathered column by column in their sorted order, never copied as a frame."""
    kept = np.arange(len(norm)) if keep is None else np.flatnonzero(keep)
    member, ids = _factorized(norm["member_id"], kept)
    order = np.lexsort((norm["row"].to_numpy()[kept], norm["date"].to_numpy()[kept], member))
    at = kept[order]  # positions in norm, sorted by member, date, input row
    m = member[order].astype(np.int64)
    n_members = len(ids)
    n_claims = np.bincount(m, minlength=n_members).astype(np.int64)
    starts = np.r_[0, np.cumsum(n_claims)].astype(np.int64)
    head = starts[:-1]
    date = norm["date"].to_numpy()[at]
    dsfc = ((date - date[head][m]) // DAY).astype(np.int64) if len(m) else np.zeros(0, np.int64)
    sex = _gathered(norm["sex"], at)  # one per member (checked by inputs.normalize)
    threshold = truncation_threshold(n_claims, percentile)
    values = {"dx": _gathered(norm["dx"], at),
              "procedure": _gathered(norm["procedure"], at),
              "place_of_service": _gathered(norm["place_of_service"], at),
              "specialty": _gathered(norm["specialty"], at),
              "length_of_stay": norm["los"].to_numpy()[at], "dsfc": dsfc,
              "age": norm["age"].to_numpy()[at][head], "sex": sex[head],
              "claims_per_member": np.minimum(n_claims, threshold)}
    used, absent, fallback = [], {}, {}
    for name in ALL_QIS:
        if name not in qis:
            absent[name] = "not selected (HHPConfig.qis)"
            continue
        if name in NEEDS_COLUMN and NEEDS_COLUMN[name] not in present:
            absent[name] = f"no {NEEDS_COLUMN[name]} values in the input"
            continue
        h = hierarchies[name]
        enc = h.encode(values[name])
        if enc.fallback:
            fallback[name] = enc.fallback
        used.append(QIData(name, h.scope, h.level_names, enc.code0, tuple(enc.maps),
                           tuple(enc.labels)))
    return Prepared(member=m, starts=starts, n_claims=n_claims, dsfc=dsfc,
                    rows=norm["row"].to_numpy()[at], member_ids=ids,
                    qis=tuple(used), threshold=threshold, absent=absent, fallback=fallback)


def _factorized(column: pd.Series, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of ``column``'s values at positions ``at`` (codes in
    order of first appearance there, and the distinct values as str objects),
    without a Python string per row."""
    codes, uniques = pd.factorize(column)
    local, which = pd.factorize(codes[at])
    return local, np.asarray(uniques, dtype=object)[which]


def _gathered(column: pd.Series, at: np.ndarray) -> np.ndarray:
    """``column``'s values at positions ``at`` as an object array whose equal
    values share one string (``to_numpy`` made one per row: 170 MB per code
    column at 2.7 million claims)."""
    codes, uniques = pd.factorize(column)
    return np.asarray(uniques, dtype=object)[codes[at]]
