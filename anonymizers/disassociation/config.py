"""Parameters of DISASSOCIATION (Loukides et al. 2014, Sections 4 and 7) and
their validation."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from anonymizers.errors import ParameterError

MAX_M = 5


@dataclass(frozen=True)
class DisassociationConfig:
    """What DISASSOCIATION protects against and how it keeps utility.

    Parameters
    ----------
    k : int
        Privacy parameter of k^m-anonymity (Definition 1, Guarantee 1): an
        attacker who knows up to ``m`` codes of a record must face at least
        ``k`` candidate records.  At least 2.
    m : int
        Most codes an attacker knows.  1 to 5 (the paper evaluates up to 5,
        Section 6.5).
    max_cluster_size : int or None, default None
        ``maxClusterSize`` of HORPART (Fig. 8): a part with fewer records is
        not split further.  ``None`` means ``2 * k``, the value the paper fixes
        (Section 5, footnote 3).  At least ``k``.
    utility_policy : sequence of sequences of str, or None, default None
        The utility constraints ``U`` (Section 3.1): disjoint sets of codes
        whose association the release should keep (see
        ``anonymizers.policies``).  Codes absent from the data are ignored.
        ``None`` or empty: no constraints.
    refine : bool, default True
        Run the refining step (Fig. 10): join clusters and move codes that
        several item chunks share into shared chunks.
    max_joint_clusters : int or None, default None
        Most clusters one joint cluster may join during refining.  ``None``:
        no bound (a joint cluster grows while growing it moves more code
        occurrences out of item chunks).  At least 2.
    refine_window : int or None, default None
        Refining joins clusters only within windows of this many consecutive
        clusters (HORPART order), so that the work can be split into batches
        of whole windows without changing the result (see ``batches``).
        ``None``: one window, the whole dataset (the paper joins any
        clusters).  Smaller windows trade single-code accuracy for
        parallelism and for frequent pairs (benchmarks/disassociation.md).
    seed : int or None, default None
        Accepted for callers that pass one; the release does not use it.
        Section 3.2 shuffles every chunk at random; a seeded shuffle could be
        replayed by anyone who learns the (recorded) seed, so chunks list their
        subrecords in sorted order instead (see ``batches``).
    repeated_codes : bool, default False
        Section 7.1: read the input as multisets; the i-th occurrence of a
        code in a record becomes the distinct code ``"<code>#<i>"`` (in the
        data and in the utility constraints).  When False, repeated
        (patient, code) rows collapse to one.
    sensitive_codes : collection of str, default ()
        Section 7.2 (l-diversity): codes never used to split clusters and
        always placed in the item chunk (never refined into shared chunks).
        With ``repeated_codes`` every occurrence of a listed code is sensitive.
    """

    k: int
    m: int
    max_cluster_size: int | None = None
    utility_policy: tuple[tuple[str, ...], ...] | None = None
    refine: bool = True
    max_joint_clusters: int | None = None
    refine_window: int | None = None
    seed: int | None = None
    repeated_codes: bool = False
    sensitive_codes: frozenset[str] = frozenset()

    def __post_init__(self):
        _check_int("k", self.k, 2, "k must be at least 2 (k = 1 protects nothing)")
        _check_int("m", self.m, 1, f"m must be between 1 and {MAX_M}", high=MAX_M)
        if self.max_cluster_size is None:
            object.__setattr__(self, "max_cluster_size", 2 * int(self.k))
        _check_int("max_cluster_size", self.max_cluster_size, int(self.k),
                   f"max_cluster_size must be at least k = {self.k}")
        if self.max_joint_clusters is not None:
            _check_int("max_joint_clusters", self.max_joint_clusters, 2,
                       "max_joint_clusters must be None or at least 2")
        if self.refine_window is not None:
            _check_int("refine_window", self.refine_window, 1,
                       "refine_window must be None or at least 1")
        if self.seed is not None:
            _check_int("seed", self.seed, 0, "seed must be a non-negative integer or None")
        for name in ("refine", "repeated_codes"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(name, f"must be True or False, got {getattr(self, name)!r}")
        for name in ("k", "m", "max_cluster_size"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "utility_policy", _checked_policy(self.utility_policy))
        object.__setattr__(self, "sensitive_codes", _checked_codes(self.sensitive_codes))


def _check_int(name, value, low, message, high=None):
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or value < low or (high is not None and value > high):
        raise ParameterError(name, f"{message}; got {value!r}")


def _checked_codes(codes) -> frozenset[str]:
    if isinstance(codes, str):
        raise ParameterError("sensitive_codes", "must be a collection of code strings, "
                             f"not one string ({codes!r})")
    try:
        items = list(codes)
    except TypeError:
        raise ParameterError("sensitive_codes", "must be a collection of code strings; "
                             f"got {type(codes).__name__}") from None
    for c in items:
        if not isinstance(c, str) or not c:
            raise ParameterError("sensitive_codes", f"codes are non-empty strings; got {c!r}")
    return frozenset(items)


def _checked_policy(policy) -> tuple[tuple[str, ...], ...] | None:
    if policy is None:
        return None
    if isinstance(policy, str) or not hasattr(policy, "__iter__"):
        raise ParameterError("utility_policy", "must be a list of lists of code strings, "
                             "e.g. [['401', '402'], ['250']]")
    seen: dict[str, int] = {}
    out = []
    for i, constraint in enumerate(policy):
        if isinstance(constraint, str) or not hasattr(constraint, "__iter__"):
            raise ParameterError("utility_policy", f"constraint {i} must be a list of code "
                                 f"strings, got {constraint!r}")
        codes = []
        for c in constraint:
            if not isinstance(c, str) or not c:
                raise ParameterError("utility_policy", f"constraint {i} holds {c!r}; "
                                     "codes are non-empty strings")
            if c in seen and seen[c] != i:
                raise ParameterError("utility_policy", f"code {c!r} is in constraints "
                                     f"{seen[c]} and {i}; constraints must be disjoint "
                                     "(Section 3.1)")
            if c not in seen:
                seen[c] = i
                codes.append(c)
        if codes:
            out.append(tuple(sorted(codes)))
    return tuple(out)
