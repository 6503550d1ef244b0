"""Parameters and result of UGACLIP."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonymizers.codesystems import CODE_SYSTEMS
from anonymizers.declare import param, parameters, pseudonym_key, validate


@parameters
@dataclass(frozen=True)
class UGACLIPConfig:
    """Parameters of UGACLIP (Loukides et al., PNAS 2010, SI Algorithm 2)."""

    k: int = param(kind="int", minimum=1,
                   doc="Anonymization threshold: every privacy constraint must end up held "
                   "by at least k records of the output, or fully suppressed.")
    seed: int = param(0, kind="int", minimum=0,
                      doc="Seed of the numpy Generator that draws the output's fresh patient "
                      "pseudonyms and the COUNT-query workload of the RE metric, and the local search "
                      "(search_moves); Algorithm 2 itself makes no random choice (ties break "
                      "by input order).")
    search_moves: int = param(0, kind="int", minimum=0,
                              doc="Moves of the seeded local search over the suppressed codes "
                              "after Algorithm 2 and its post-passes (anonymizers.ugaclip.search; "
                              "seeded by ``seed``); 0 skips it.")
    plan_seconds: float = param(0.0, kind="number", minimum=0,
                                doc="Seconds of the bound's cutting-plane MILP that computes a "
                                "suppression plan (anonymizers.ugaclip.plan) guiding line 17; 0 "
                                "(and plan_nodes 0): no plan, Algorithm 2's own pick.  Alone it "
                                "stops the MILP on wall-clock time, so the release depends on "
                                "the host's speed; with plan_nodes > 0 it is only a safety cap "
                                "on the plan's whole time (metrics['plan']['deterministic'] is "
                                "false when it bound).  The plan's size and bound are in "
                                "metrics['plan'] (docs/methods/ugaclip.md#ugaclip-plan).")
    plan_nodes: int = param(0, kind="int", minimum=0,
                            doc="A deterministic budget for the plan: HiGHS branch-and-bound "
                            "nodes per round of the plan's cutting-plane MILP (at most "
                            "plan_rounds rounds), so that the plan, and the release, depend "
                            "only on the input and the settings, not on the host; > 0 computes "
                            "a plan even with plan_seconds 0 (then no wall-clock limit at "
                            "all: on DE-SynPUF's 424 patients a one-node round takes 10-35 s, "
                            "so cap plan_rounds, or set plan_seconds as a safety cap and check "
                            "metrics['plan']['deterministic']).  0: the plan, if any, is "
                            "limited by plan_seconds alone.")
    plan_rounds: int = param(200, kind="int", minimum=1,
                             doc="Rounds of the plan's cutting-plane MILP at most (each adds "
                             "the cuts its incumbent violates and solves again); with "
                             "plan_nodes, the other half of the deterministic budget.")
    plan_weights: str = param("codes", kind="str", choices=("codes", "occurrences"),
                              doc="What the plan suppresses fewest of: distinct codes (Fig. S1B) "
                              "or their occurrences in the records (Fig. S1A).")
    realise_plan: bool = param(False, kind="bool",
                               doc="Suppress the plan before Algorithm 2 instead of only guiding "
                               "line 17 (opt-in deviation, docs/methods/ugaclip.md#ugaclip-realise): "
                               "the release then suppresses no more codes or occurrences than "
                               "the plan.  Needs plan_seconds > 0 or plan_nodes > 0.")
    re_query_sizes: tuple = param((1, 2), kind="int_list", minimum=1,
                                  doc="Sizes q of the COUNT queries (q codes each) whose "
                                  "relative error is reported.")
    re_queries: int = param(200, kind="int", minimum=0,
                            doc="Queries drawn per size; 0 skips the RE metric.")
    unplaced_weight: float = param(1.0, kind="number", minimum=0, maximum=1,
                                   exclusive_minimum=True,
                                   doc="Semantic weight w of an item holding a code the "
                                   "hierarchy cannot place (see anonymizers.ugaclip.loss).")
    # on the command line --code-system is an option of every command reading codes
    # (anonymizers.io.add_code_system_arguments)
    code_system: str = param(
        "icd9cm", kind="str", choices=CODE_SYSTEMS, cli=False,
        doc="Code system of the data (anonymizers.codesystems): with no hierarchy given, "
        "the semantic weights of information loss are shares of this system's tree, in "
        "which the codes are placed (anonymizers.ugaclip.codes.place).")
    pseudonym_key: bytes | None = pseudonym_key()

    def __post_init__(self):
        validate(self)


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
