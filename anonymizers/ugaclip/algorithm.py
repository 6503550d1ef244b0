"""UGACLIP: utility-guided anonymization of clinical profiles (Loukides, Gkoulalas-Divanis &
Malin, PNAS 2010, SI Algorithm 2), then a restore pass and exchanges that give codes back.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-algorithm."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import Hierarchy, for_system
from anonymizers.io import check_no_nulls
from anonymizers.records import Records, encode
from anonymizers.ugaclip.exchange import exchange_pass
from anonymizers.ugaclip.regroup import group_restore_pass
from anonymizers.ugaclip.plan import suppression_plan
from anonymizers.ugaclip.config import UGACLIPConfig, UGACLIPResult
from anonymizers.ugaclip.loss import SemanticWeights, log_scores
from anonymizers.ugaclip.policy import UtilityPolicy
from anonymizers.ugaclip.release import build_result
from anonymizers.ugaclip.search import search
from anonymizers.ugaclip.state import ItemState, popcount


def ugaclip(df: pd.DataFrame, privacy_policy, utility_policy, config: UGACLIPConfig,
            hierarchy: Hierarchy | None = None, source: str = "input",
            plan=None) -> UGACLIPResult:
    """Anonymize ``df`` (columns ``patient_id, code``) with Algorithm 2.

    ``privacy_policy`` is a list of code lists (or a ``PPEResult``);
    ``utility_policy`` a ``UtilityPolicy`` or a list of disjoint code lists;
    ``hierarchy`` gives the semantic weight (default: the tree of
    ``config.code_system``).  Line 17 may be guided by a suppression plan
    (docs/methods/ugaclip.md#ugaclip-plan): ``plan`` (codes) as given, or
    computed within ``config.plan_seconds`` and/or the deterministic budget
    ``config.plan_nodes`` x ``config.plan_rounds`` (both 0: no plan,
    Algorithm 2's own pick) to suppress fewest ``config.plan_weights``.  ``config.realise_plan``
    (opt-in, a deviation from Algorithm 2) suppresses the plan before line 1
    instead of only guiding line 17 (docs/methods/ugaclip.md#ugaclip-realise).
    """
    return run_method(Run, df, privacy_policy, utility_policy, config, hierarchy, source,
                      plan=plan)


def run_method(kind, df, privacy_policy, utility_policy, config: UGACLIPConfig,
               hierarchy: Hierarchy | None, source: str, plan=None) -> UGACLIPResult:
    """Encode, run ``kind`` (``Run`` or a baseline of ``baselines``), build the
    release.  A release that would keep no code at all is refused: it would
    look like a success and carry nothing."""
    planned = config.plan_seconds > 0 or config.plan_nodes > 0
    if config.realise_plan and plan is None and not planned:
        raise ParameterError("realise_plan", "needs a plan: give plan, plan_seconds > 0 "
                             "or plan_nodes > 0")
    records = _encode(df, source)
    constraints = [list(c) for c in getattr(privacy_policy, "constraints", privacy_policy)]
    if not isinstance(utility_policy, UtilityPolicy):
        utility_policy = UtilityPolicy.from_lists([list(u) for u in utility_policy])
    weights = SemanticWeights(records.codes, hierarchy or for_system(config.code_system),
                              config.unplaced_weight)
    run = kind(records, constraints, utility_policy, config.k, weights)
    run.search_moves, run.search_seed = config.search_moves, config.seed
    if planned and plan is None:
        run.plan_info = suppression_plan(records, constraints, utility_policy.constraints,
                                         config.k, config.plan_seconds,
                                         weigh_occurrences=config.plan_weights == "occurrences",
                                         nodes=config.plan_nodes, rounds=config.plan_rounds)
        plan = records.codes[run.plan_info["codes"]]
    if plan is not None:
        index = {c: i for i, c in enumerate(records.codes)}
        run.plan[[index[c] for c in plan if c in index]] = True
    run.realise = config.realise_plan
    run.execute()
    if records.n_codes and run.state.suppressed[:records.n_codes].all():
        raise InputError(source, f"with k={config.k} every one of the {records.n_codes} codes "
                         "would be suppressed, so the release would hold nothing; lower k, "
                         "use a coarser utility policy, or release more records")
    return build_result(records, run, utility_policy, config, weights)


def _encode(df: pd.DataFrame, source: str) -> Records:
    missing = [c for c in ("patient_id", "code") if c not in df.columns]
    if missing:
        raise InputError(source, f"missing column(s) {missing}", field=missing[0])
    check_no_nulls(df, source, ["patient_id", "code"])
    return encode(df.astype({"patient_id": str, "code": str}))


class Run:
    """One execution of Algorithm 2 over encoded records."""

    def __init__(self, records: Records, constraints: list, utility: UtilityPolicy, k: int,
                 weights: SemanticWeights):
        self.k, self.weights = k, weights
        self.state = state = ItemState(records.matrix)
        index = {c: i for i, c in enumerate(records.codes)}
        present = [[index[c] for c in set(p) if c in index] for p in constraints]
        absent = np.array([len(q) < len(set(p)) for q, p in zip(present, constraints)], dtype=bool)
        self.lengths = np.array([len(q) for q in present], dtype=np.int64)
        width = max(1, int(self.lengths.max(initial=0)))
        self.padded = np.full((len(present), width), state.ONES, dtype=np.int64)
        for row, q in enumerate(present):
            self.padded[row, :len(q)] = sorted(q)
        self.by_code = _constraints_by_code(present, state.n_codes)
        self.util_of = np.full(state.n_codes, -1, dtype=np.int64)
        self.util_members = []
        for u_id, u in enumerate(utility.constraints):
            idx = np.array(sorted(index[c] for c in u if c in index), dtype=np.int64)
            self.util_of[idx] = u_id
            self.util_members.append(idx)
        uncovered = np.flatnonzero(self.util_of < 0)
        self.util_of[uncovered] = len(self.util_members)
        self.util_members.append(uncovered)
        self.lca = weights.rows.copy()          # LCA row of each item, by representative
        self.placed = weights.placed.copy()
        all_ids = np.arange(len(present))
        self.support = state.supports(self.padded, self.lengths, all_ids)
        self.vacuous = absent | (self.lengths == 0) | (self.support == 0)
        self.satisfied = self.vacuous | (self.support >= k)
        self.dirty = np.zeros(len(present), dtype=bool)
        self.counts = {"outer_iterations": 0, "generalizations": 0,
                       "code_suppressions": 0, "constraint_suppressions": 0, "restored": 0,
                       "reselections": 0, "exchanges": 0, "exchange_returned": 0,
                       "group_restored": 0, "swaps": 0}  # search_*: added by the search
        self.selected = np.zeros(len(present), dtype=bool)
        self.plan = np.zeros(state.n_codes + 1, dtype=bool)  # line 17's guidance, if any
        self.plan_info = None
        self.realise = False   # suppress the plan before line 1 (``realise_plan``)
        self.search_moves, self.search_seed = 0, 0   # set by run_method from the config
        self.search_info = None
        self.trace: list[tuple] = []  # (step, constraint or code indices), for tests and audits

    def execute(self) -> None:
        """Algorithm 2, then the restore pass, then exchanges
        (docs/methods/ugaclip.md#ugaclip-algorithm), then, with
        ``search_moves``, the local search (docs/methods/ugaclip.md#ugaclip-search).
        With ``realise``, the plan is suppressed first (``_suppress_plan``)."""
        if self.realise:
            self._suppress_plan()
        self.algorithm2()
        self._restore_pass()
        self.post_passes()
        if self.search_moves and self.state.suppressed[:self.state.n_codes].any():
            self.search_info = search(self, self.search_moves, self.search_seed)

    def _suppress_plan(self) -> None:
        """docs/methods/ugaclip.md#ugaclip-realise: suppress every code of the
        plan before line 1.  With a feasible plan Algorithm 2 then only
        generalizes; with any other it suppresses what it must, as always."""
        codes = np.flatnonzero(self.plan[:self.state.n_codes])
        for c in codes.tolist():
            self.trace.append(("suppress-plan", c))
            self.state.suppress(c)
        self.counts["plan_suppressions"] = len(codes)
        self._changed(codes, merged=False)

    def post_passes(self) -> None:
        """Group restores (``regroup``) and exchanges (``exchange``), each
        followed by the restore pass, until a round leaves as many codes
        suppressed as before it (docs/methods/ugaclip.md#ugaclip-regroup)."""
        s = self.state
        while True:
            before = int(s.suppressed[:s.n_codes].sum())
            if group_restore_pass(self):
                self._restore_pass()
            exchange_pass(self)
            if int(s.suppressed[:s.n_codes].sum()) >= before:
                return

    def algorithm2(self) -> None:
        """Lines 1-20: until every constraint holds, take up the one with
        most support in D~ (``_satisfy``)."""
        while True:
            self._refresh()
            unsatisfied = ~self.satisfied
            if not unsatisfied.any():
                break
            p = int(np.argmax(np.where(unsatisfied, self.support, -1)))
            self.counts["outer_iterations"] += 1
            self.counts["reselections"] += bool(self.selected[p])  # a cascade undid p
            self.selected[p] = True
            self.trace.append(("select", p))
            self._satisfy(p)

    def constraints_of(self, codes) -> np.ndarray:
        """Ids of the constraints holding code ``codes`` (an int) or any of
        ``codes`` (an array), sorted; CSR slices, not scipy indexing, which
        costs more than the support counts on the hot paths."""
        ptr, idx = self.by_code.indptr, self.by_code.indices
        if np.ndim(codes) == 0:
            return idx[ptr[codes]:ptr[codes + 1]]
        codes = np.asarray(codes, dtype=np.int64)
        return np.unique(np.concatenate([idx[ptr[c]:ptr[c + 1]] for c in codes.tolist()]
                                        + [np.zeros(0, idx.dtype)]))

    def _restore_pass(self) -> None:
        """Give back suppressed codes that no constraint needs suppressed
        (docs/methods/ugaclip.md#ugaclip-algorithm, *Restore*), those in fewest constraints first,
        pass after pass until one gives nothing back."""
        before = -1
        while self.counts["restored"] > before:
            before = self.counts["restored"]
            self._restore_once()

    def _restore_once(self) -> None:
        s = self.state
        gone = np.flatnonzero(s.suppressed[:s.n_codes])
        n_constraints = np.diff(self.by_code.indptr)[gone]
        for c in gone[np.lexsort((gone, n_constraints))]:
            placed = self.try_restore(int(c))
            if placed is not None:
                self.commit_restore(int(c), *placed)

    def try_restore(self, c: int):
        """Put suppressed code c back into an item of its utility constraint
        (the items in order of their first code, then an item of its own)
        where every constraint holding c is then held by k records; return
        (into, the new item's codes, the constraints' supports), or None with
        c suppressed again.  Only the state changes: ``commit_restore``
        records a kept return."""
        s = self.state
        ids = self.constraints_of(c)
        for into in self.restore_targets(c) + [None]:
            item = s.restore(c, into)
            support = s.supports(self.padded, self.lengths, ids)
            if (self.vacuous[ids] | (support >= self.k)).all():
                return into, item, support
            s.suppress(c)
        return None

    def restore_targets(self, c: int) -> list[int]:
        """One code of each open item of c's utility constraint, by first code."""
        s = self.state
        members = self.util_members[self.util_of[c]]
        open_members = members[~s.suppressed[members]]
        return [int(m) for m in open_members[np.unique(s.rep[open_members],
                                                       return_index=True)[1]]]

    def commit_restore(self, c: int, into, item, support) -> None:
        ids = self.constraints_of(c)
        self.support[ids] = support
        self.trace.append(("restore", c, into))
        self._changed(item, merged=True)
        self.counts["restored"] += 1

    def _satisfy(self, p: int) -> None:
        while not self._holds(p):
            i = self._least_frequent_actionable(p)
            if i is None:
                break
            partner = self._best_partner(i)
            if partner is not None:
                self.trace.append(("generalize", i, partner))
                self._changed(self.state.merge(i, partner), merged=True)
                self.counts["generalizations"] += 1
            else:
                self.trace.append(("suppress", i))
                self._changed(self.state.suppress(i), merged=False)
                self.counts["code_suppressions"] += 1
        while not self._holds(p):
            for c in self._items_to_drop(p):
                self.trace.append(("suppress-constraint", int(c)))
                self._changed(self.state.suppress(c), merged=False)
                self.counts["constraint_suppressions"] += 1

    def _items_to_drop(self, p: int) -> np.ndarray:
        """Line 17 ("suppress p"), one item of p at a time: with a plan, an
        item with fewest of p's open codes outside the plan first; then p's
        open codes in the item whose codes lie, on average, in the most unprotected
        constraints (flags as of this selection of p), so that one
        suppression serves as many constraints as it can, the count Xu et
        al.'s suppression uses; ties: the item whose removal leaves the most
        records holding the rest of p, then the rarer item, then vocabulary
        order.  The caller repeats until p holds, so at worst every item of
        p goes (the literal reading), never more.  Suppressing only some of
        p's codes in an item would leave the item in p and help nothing, so
        an item's p-codes go together."""
        s = self.state
        codes = self._open_codes(p)
        reps, inverse = np.unique(s.rep[codes], return_inverse=True)
        if len(reps) == 1:
            return codes
        rows = self.padded[~self.satisfied]
        hits = np.bincount(rows[~s.suppressed[rows]], minlength=s.n_codes + 1)
        n_codes = np.bincount(inverse, minlength=len(reps))
        shared = np.bincount(inverse, weights=hits[codes], minlength=len(reps)) / n_codes
        bits = s.bits[reps]
        prefix = np.bitwise_and.accumulate(bits, axis=0)
        suffix = np.bitwise_and.accumulate(bits[::-1], axis=0)[::-1]
        ones = np.full((1, bits.shape[1]), ~np.uint64(0), dtype=np.uint64)
        rest = np.vstack([ones, prefix[:-1]]) & np.vstack([suffix[1:], ones])
        outside = np.zeros(len(reps))
        if self.plan.any():
            outside = np.bincount(inverse, weights=~self.plan[codes], minlength=len(reps))
        best = np.lexsort((reps, s.item_support[reps], -popcount(rest), -shared, outside))[0]
        return codes[inverse == best]

    def _open_codes(self, p: int) -> np.ndarray:
        codes = self.padded[p, :self.lengths[p]]
        return codes[~self.state.suppressed[codes]]

    def _holds(self, p: int) -> bool:
        codes = self._open_codes(p)
        return len(codes) == 0 or self.state.support(codes) >= self.k

    def _least_frequent_actionable(self, p: int) -> int | None:
        s = self.state
        codes = self._open_codes(p)
        order = np.lexsort((codes, s.code_support[codes], s.item_support[s.rep[codes]]))
        for c in codes[order]:
            if self._candidates(c).size or s.item_support[s.rep[c]] < self.k:
                return int(c)
        return None

    def _candidates(self, c: int) -> np.ndarray:
        """Representatives of the other items that c may be generalized with."""
        s = self.state
        members = self.util_members[self.util_of[c]]
        members = members[~s.suppressed[members] & (s.rep[members] != s.rep[c])]
        return np.unique(s.rep[members])

    def _best_partner(self, i: int) -> int | None:
        reps = self._candidates(i)
        if reps.size == 0:
            return None
        s = self.state
        ri = int(s.rep[i])
        sups = np.bitwise_count(s.bits[ri] | s.bits[reps]).sum(axis=1)
        w = self.weights.merged(self.lca[ri], self.placed[ri], self.lca[reps], self.placed[reps])
        scores = log_scores(s.size[ri] + s.size[reps], w, sups)
        return int(reps[int(np.argmin(scores))])

    def _changed(self, codes: list[int], merged: bool) -> None:
        """Record an item change: refresh its LCA, mark constraints to recheck.

        A merge only raises supports, so satisfied constraints stay satisfied
        and only unsatisfied ones are marked; a suppression marks all."""
        s = self.state
        for r in {int(s.rep[c]) for c in codes if not s.suppressed[c]}:
            self.lca[r], self.placed[r] = self.weights.lca_row(s.members[r])
        ids = self.constraints_of(codes)
        if merged:
            ids = ids[~self.satisfied[ids]]
        self.dirty[ids] = True

    def _refresh(self) -> None:
        ids = np.flatnonzero(self.dirty)
        if ids.size == 0:
            return
        self.dirty[ids] = False
        self.support[ids] = self.state.supports(self.padded, self.lengths, ids)
        n_open = (~self.state.suppressed[self.padded[ids]]).sum(axis=1)
        self.satisfied[ids] = self.vacuous[ids] | (n_open == 0) | (self.support[ids] >= self.k)

    def constraint_status(self) -> dict:
        """Counts of how each constraint ended up satisfied."""
        supp = self.state.suppressed[self.padded] & (self.padded != self.state.ONES)
        n_supp = supp.sum(axis=1)
        full = ~self.vacuous & (n_supp == self.lengths)
        partial = ~self.vacuous & (n_supp > 0) & ~full
        return {"n_constraints": len(self.lengths), "vacuous": int(self.vacuous.sum()),
                "fully_suppressed": int(full.sum()), "partly_suppressed": int(partial.sum()),
                "held_by_k_records": int((~self.vacuous & ~full).sum())}


def _constraints_by_code(present: list, n_codes: int) -> sp.csr_matrix:
    """codes x constraints incidence: row c lists the constraints holding c."""
    rows = np.concatenate([np.asarray(q, dtype=np.int64) for q in present] + [np.zeros(0, np.int64)])
    cols = np.repeat(np.arange(len(present)), [len(q) for q in present])
    m = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)),
                      shape=(n_codes, len(present)))
    m.sort_indices()
    return m
