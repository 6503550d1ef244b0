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
            qis: tuple[str, ...] = ALL_QIS, percentile: float = 95.0) -> Prepared:
    """Sort, derive DSFC/age/claim counts and encode the quasi-identifiers of
    the screened claims ``norm`` (``inputs.normalize`` columns)."""
    member, ids = pd.factorize(norm["member_id"])
    order = np.lexsort((norm["row"].to_numpy(), norm["date"].to_numpy(), member))
    m = member[order].astype(np.int64)
    n_members = len(ids)
    n_claims = np.bincount(m, minlength=n_members).astype(np.int64)
    starts = np.r_[0, np.cumsum(n_claims)].astype(np.int64)
    head = starts[:-1]
    date = norm["date"].to_numpy()[order]
    dsfc = ((date - date[head][m]) // DAY).astype(np.int64) if len(m) else np.zeros(0, np.int64)
    sex = norm["sex"].to_numpy()[order]  # one per member (checked by inputs.normalize)
    threshold = truncation_threshold(n_claims, percentile)
    values = {"dx": norm["dx"].to_numpy()[order],
              "procedure": norm["procedure"].to_numpy()[order],
              "place_of_service": norm["place_of_service"].to_numpy()[order],
              "specialty": norm["specialty"].to_numpy()[order],
              "length_of_stay": norm["los"].to_numpy()[order], "dsfc": dsfc,
              "age": norm["age"].to_numpy()[order][head], "sex": sex[head],
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
                    rows=norm["row"].to_numpy()[order], member_ids=np.asarray(ids, dtype=object),
                    qis=tuple(used), threshold=threshold, absent=absent, fallback=fallback)
