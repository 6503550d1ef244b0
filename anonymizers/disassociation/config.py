"""Parameters of DISASSOCIATION (Loukides et al. 2014, Sections 4 and 7) and
of drawing a dataset from its release (Fig. 5), and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from anonymizers.declare import param, parameters, validate
from anonymizers.disassociation.reconstruct import (DEFAULT_ITEM_SUPPORT, DEFAULT_LINKING,
                                                    ITEM_SUPPORT, LINKING)
from anonymizers.errors import ParameterError

MAX_M = 5


@parameters
@dataclass(frozen=True)
class DisassociationConfig:
    """What DISASSOCIATION protects against and how it keeps utility."""

    k: int = param(kind="int", minimum=2,
                   doc="Privacy parameter of k^m-anonymity (Definition 1, Guarantee 1): an "
                   "attacker who knows up to m codes of a record must face at least k "
                   "candidate records (k = 1 protects nothing).")
    m: int = param(kind="int", minimum=1, maximum=MAX_M,
                   doc="Most codes an attacker knows (the paper evaluates up to 5, "
                   "Section 6.5).")
    max_cluster_size: int | None = param(
        None, kind="int", minimum=2, nullable=True,
        doc="maxClusterSize of HORPART (Fig. 8): a part with fewer records is not split "
        "further.  None means 2k, the value the paper fixes (Section 5, footnote 3).  At "
        "least k.")
    utility_policy: tuple[tuple[str, ...], ...] | None = param(
        None, kind="object", nullable=True, cli=False,
        json={"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        doc="The utility constraints U (Section 3.1): disjoint sets of codes whose "
        "association the release should keep (see anonymizers.policies).  Codes absent "
        "from the data are ignored.  None or empty: no constraints.")
    refine: bool = param(True, kind="bool",
                         doc="Run the refining step (Fig. 10): join clusters and move codes "
                         "that several item chunks share into shared chunks.")
    max_joint_clusters: int | None = param(
        None, kind="int", minimum=2, nullable=True,
        doc="Most clusters one joint cluster may join during refining.  None: no bound (a "
        "joint cluster grows while growing it moves more code occurrences out of item "
        "chunks).")
    refine_window: int | None = param(
        None, kind="int", minimum=1, nullable=True,
        doc="Refining joins clusters only within windows of this many consecutive clusters "
        "(HORPART order), so that the work can be split into batches of whole windows "
        "without changing the result (see batches).  None: one window, the whole dataset "
        "(the paper joins any clusters).  Smaller windows trade single-code accuracy for "
        "parallelism and for frequent pairs (benchmarks/disassociation.md).")
    seed: int | None = param(
        None, kind="int", minimum=0, nullable=True,
        doc="Recorded with the release; the release does not use it.  Section 3.2 shuffles "
        "every chunk at random; a seeded shuffle could be replayed by anyone who learns the "
        "(recorded) seed, so chunks list their subrecords in sorted order instead (see "
        "batches).")
    repeated_codes: bool = param(
        False, kind="bool",
        doc="Section 7.1: read the input as multisets; the i-th occurrence of a code in a "
        "record becomes the distinct code '<code>#<i>' (in the data and in the utility "
        "constraints).  When False, repeated (patient, code) rows collapse to one.")
    sensitive_codes: frozenset[str] = param(
        frozenset(), kind="str_list", check=lambda name, codes: frozenset(codes),
        doc="Section 7.2 (l-diversity): codes never used to split clusters and always "
        "placed in the item chunk (never refined into shared chunks).  With repeated_codes "
        "every occurrence of a listed code is sensitive.")

    def __post_init__(self):
        validate(self)
        if self.max_cluster_size is None:
            object.__setattr__(self, "max_cluster_size", 2 * self.k)
        if self.max_cluster_size < self.k:
            raise ParameterError("max_cluster_size", f"max_cluster_size must be at least "
                                 f"k = {self.k}; got {self.max_cluster_size!r}")
        object.__setattr__(self, "utility_policy", _checked_policy(self.utility_policy))


@parameters
@dataclass(frozen=True)
class ReconstructConfig:
    """How one dataset is drawn from a disassociated release (Fig. 5)."""

    seed: int = param(kind="int", minimum=0, doc="Seed of the draw.")
    item_support: str = param(
        DEFAULT_ITEM_SUPPORT, kind="str", choices=ITEM_SUPPORT,
        doc="How many records get an item-chunk code: one record (one, the consistent rule "
        "that answers counts best, the default), uniform in 1..min(|P|, k-1) (below_k), or uniform in "
        "1..|P| (cluster, Fig. 5).")
    linking: str = param(
        DEFAULT_LINKING, kind="str", choices=LINKING,
        doc="Which records get the subrecords and item codes of a cluster: those holding the "
        "codes the release shows them co-occurring with (association: better on counts of "
        "several codes, the default; sometimes worse on constraints matched by any of their codes), or "
        "records drawn at random (random).")

    def __post_init__(self):
        validate(self)


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
