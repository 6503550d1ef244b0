"""A seeded local search over the suppressed set after UGACLIP's post-passes (not a line of
Algorithm 2; Loukides et al., PNAS 2010, SI; feasibility as in SI Definition 1, see ``bound``).
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-search."""

from __future__ import annotations

from collections import deque

import numpy as np

from anonymizers.ugaclip.state import popcount

_BATCH_WORDS = 4_000_000  # words of bitsets held at once in a support batch


class GroupModel:
    """The suppressed set S of a run with every utility group generalized whole.

    ``H[g]`` holds the records holding a code of g \\ S; constraint p (non-vacuous
    only) sees its *slots*, the groups of its codes, a slot being open while p
    holds an unsuppressed code of it.  S is feasible iff every p with an open
    slot is held by k records of the AND of its open slots' holders (``bound``,
    docs/methods/ugaclip.md#ugaclip-bound)."""

    def __init__(self, run):
        s = run.state
        self.k, self.orig, self.group = run.k, s.orig, run.util_of
        self.members = run.util_members
        self.NONE = len(self.members)                   # sentinel group: every record
        self.S = s.suppressed[:s.n_codes].copy()
        self.weight = s.code_support
        ids = np.flatnonzero(~run.vacuous)
        self.codes = [run.padded[p, :run.lengths[p]] for p in ids]
        width = max([1] + [len(np.unique(self.group[q])) for q in self.codes])
        self.pg = np.full((len(ids), width), self.NONE, dtype=np.int64)
        self.open = np.zeros((len(ids), width), dtype=np.int32)
        pairs_c, pairs_i, pairs_j = [], [], []
        for i, q in enumerate(self.codes):
            gs, slot = np.unique(self.group[q], return_inverse=True)
            self.pg[i, :len(gs)] = gs
            np.add.at(self.open[i], slot, (~self.S[q]).astype(np.int32))
            pairs_c.append(q), pairs_i.append(np.full(len(q), i)), pairs_j.append(slot)
        c, i, j = (np.concatenate(x + [np.zeros(0, np.int64)]).astype(np.int64)
                   for x in (pairs_c, pairs_i, pairs_j))
        order = np.lexsort((i, c))
        self.c_ptr = np.searchsorted(c[order], np.arange(s.n_codes + 1))
        self.c_con, self.c_slot = i[order], j[order]
        gi = self.pg.ravel()
        ci = np.repeat(np.arange(len(ids)), width)
        keep = gi != self.NONE
        order = np.lexsort((ci[keep], gi[keep]))
        self.g_ptr = np.searchsorted(gi[keep][order], np.arange(self.NONE + 2))
        self.g_con = ci[keep][order]
        self.H = np.zeros((self.NONE + 1, self.orig.shape[1]), dtype=np.uint64)
        for g in range(self.NONE):
            self._reset(g)
        self.H[self.NONE] = self.orig[s.ONES]
        self.clock = 1                                  # flips so far, for the stamps
        self.gstamp = np.zeros(self.NONE + 1, dtype=np.int64)   # last flip in each group
        self.blocker = np.full(s.n_codes, -1, dtype=np.int64)
        self.bstamp = np.zeros(s.n_codes, dtype=np.int64)

    def snapshot(self) -> tuple:
        return self.clock, self.gstamp.copy(), self.blocker.copy(), self.bstamp.copy()

    def rewind(self, snap: tuple) -> None:
        """Back to ``snap``'s stamps once the flips since are undone (S and the
        holders are then exactly as they were, so its blockers hold again)."""
        self.clock, self.gstamp, self.blocker, self.bstamp = snap

    def _reset(self, g: int) -> None:
        m = self.members[g]
        m = m[~self.S[m]]
        self.H[g] = np.bitwise_or.reduce(self.orig[m], axis=0) if len(m) else 0

    def constraints_of(self, c: int) -> np.ndarray:
        return self.c_con[self.c_ptr[c]:self.c_ptr[c + 1]]

    def touching(self, g: int) -> np.ndarray:
        return self.g_con[self.g_ptr[g]:self.g_ptr[g + 1]]

    def flip(self, c: int, suppress: bool) -> None:
        """Suppress c, or give it back (its group's item grows)."""
        self.S[c] = suppress
        sl = slice(self.c_ptr[c], self.c_ptr[c + 1])
        self.open[self.c_con[sl], self.c_slot[sl]] += -1 if suppress else 1
        g = int(self.group[c])
        self.gstamp[g] = self.clock
        self.clock += 1
        if suppress:
            self._reset(g)
        else:
            self.H[g] |= self.orig[c]

    def failing(self, ids: np.ndarray) -> np.ndarray:
        """The constraints of ``ids`` with an open slot held by fewer than k records."""
        ids = np.unique(ids)
        if ids.size == 0:
            return ids
        gids = np.sort(np.where(self.open[ids] > 0, self.pg[ids], self.NONE), axis=1)
        n_open = (gids != self.NONE).sum(axis=1)
        bad = np.zeros(len(ids), dtype=bool)
        live = np.flatnonzero(n_open > 0)
        step = max(1, _BATCH_WORDS // self.H.shape[1])
        live = live[np.argsort(n_open[live], kind="stable")]
        for a in range(0, len(live), step):
            rows = live[a:a + step]
            acc = self.H[gids[rows, 0]].copy()
            for j in range(1, int(n_open[rows].max())):
                acc &= self.H[gids[rows, j]]
            bad[rows] = popcount(acc) < self.k
        return ids[bad]

    def restorable(self, cands: np.ndarray) -> np.ndarray:
        """Which suppressed codes of ``cands`` could come back alone (each
        judged against the current S, all at once); a code that cannot
        records a constraint that blocks it (``blocker``, stamped ``bstamp``).
        A recorded blocker is tried first: most codes stay blocked by it."""
        ok = np.zeros(len(cands), dtype=bool)
        if cands.size == 0:
            return ok
        known = np.flatnonzero(self.blocker[cands] >= 0)
        still = self.fails_with(cands[known], self.blocker[cands[known]])
        self.bstamp[cands[known[still]]] = self.clock
        rest = np.setdiff1d(np.arange(len(cands)), known[still], assume_unique=True)
        codes = cands[rest]
        counts = self.c_ptr[codes + 1] - self.c_ptr[codes]
        pc = np.repeat(codes, counts)
        pi = np.concatenate([self.constraints_of(int(c)) for c in codes] + [np.zeros(0, np.int64)])
        fail = self.fails_with(pc, pi)
        self.blocker[pc[fail][::-1]] = pi[fail][::-1]   # the first failing one per code
        self.bstamp[codes] = self.clock
        bad = np.bincount(np.repeat(np.arange(len(codes)), counts), weights=fail,
                          minlength=len(codes))
        ok[rest] = bad == 0
        return ok

    def fails_with(self, pc: np.ndarray, pi: np.ndarray) -> np.ndarray:
        """For each pair, whether constraint pi[n] fails with code pc[n] given back."""
        fail = np.zeros(len(pc), dtype=bool)
        if len(pc) == 0:
            return fail
        g = self.group[pc][:, None]
        gids = np.sort(np.where((self.open[pi] > 0) | (self.pg[pi] == g), self.pg[pi],
                                self.NONE), axis=1)
        n_open = (gids != self.NONE).sum(axis=1)
        order = np.argsort(n_open, kind="stable")
        step = max(1, _BATCH_WORDS // self.H.shape[1])
        for a in range(0, len(order), step):
            rows = order[a:a + step]
            c, gg = pc[rows], g[rows]
            acc = np.full((len(rows), self.H.shape[1]), ~np.uint64(0), dtype=np.uint64)
            for j in range(int(n_open[rows].max())):
                col = gids[rows, j]
                acc &= self.H[col] | np.where(col[:, None] == gg, self.orig[c], np.uint64(0))
            fail[rows] = popcount(acc) < self.k
        return fail

    def stale(self, gone: np.ndarray) -> np.ndarray:
        """The suppressed codes of ``gone`` whose blocker may no longer block:
        none recorded, or a group of it changed since (only the holders and
        open slots of its groups decide it)."""
        b = self.blocker[gone]
        stamps = self.gstamp[self.pg[np.maximum(b, 0)]].max(axis=1)
        return (b < 0) | (stamps >= self.bstamp[gone])

class Search:
    """Iterated greedy over S (docs/methods/ugaclip.md#ugaclip-search): each move
    gives back ``KICK`` random suppressed codes, drawn uniformly or, in
    ``WEIGHTED_SHARE`` of the moves, by their occurrences (or, one move in
    ``SUPPRESS_SHARE``,
    suppresses one random kept code of a constraint), repairs the constraints
    left below k (``repair``), gives back every code that can come back
    (``trim``), and is kept when (suppressed codes, suppressed occurrences)
    did not rise, else undone."""

    SUPPRESS_SHARE = 0.25
    KICK = 1  # codes given back per move (2 measured worse on MEPS all-visits, ugaclip.md)
    WEIGHTED_SHARE = 0.5

    def __init__(self, model: GroupModel, rng: np.random.Generator):
        self.m, self.rng = model, rng
        self.journal: list[tuple[int, bool]] = []
        self.constrained = np.flatnonzero(np.diff(model.c_ptr) > 0)

    def objective(self) -> tuple[int, int]:
        return int(self.m.S.sum()), int(self.m.weight[self.m.S].sum())

    def _flip(self, c: int, suppress: bool) -> None:
        self.journal.append((c, suppress))
        self.m.flip(c, suppress)

    def undo(self) -> None:
        while self.journal:
            c, suppress = self.journal.pop()
            self.m.flip(c, not suppress)

    def move(self) -> bool:
        """One move; True if kept."""
        m, before = self.m, self.objective()
        self.journal, snap = [], m.snapshot()
        if not self._kick():
            return False
        self.trim()
        if self.objective() <= before:
            return True
        self.undo()
        m.rewind(snap)
        return False

    def _kick(self) -> bool:
        """Give back or suppress random codes and repair; False if there is
        nothing to move."""
        m = self.m
        gone = np.flatnonzero(m.S)
        kept = self.constrained[~m.S[self.constrained]]
        if gone.size and (kept.size == 0 or self.rng.random() >= self.SUPPRESS_SHARE):
            w = None   # uniform, or (``WEIGHTED_SHARE`` of moves) by occurrences
            if self.rng.random() < self.WEIGHTED_SHARE:
                w = m.weight[gone] / m.weight[gone].sum()
            picks = self.rng.choice(gone, size=min(self.KICK, gone.size), replace=False, p=w)
            for c in picks.tolist():
                self._flip(c, False)
            self.repair(m.failing(np.concatenate([m.constraints_of(c) for c in picks])),
                        tabu=set(picks.tolist()))
        elif kept.size:
            c = int(self.rng.choice(kept))
            self._flip(c, True)
            self.repair(m.failing(m.touching(int(m.group[c]))), tabu=set())
        else:
            return False
        return True

    def repair(self, bad: np.ndarray, tabu: set) -> None:
        """Until no constraint fails: a failing p loses its codes in one open
        slot, the slot with fewest such codes outside ``tabu`` (ties: the one
        whose loss leaves p held by k records, then fewest occurrences, then
        at random); constraints touching that group are then re-checked."""
        m = self.m
        queue = deque(int(i) for i in bad)
        while queue:
            i = queue.popleft()
            if not m.failing(np.array([i])).size:
                continue
            drop = self._cheapest_slot(i, tabu)
            for c in drop:
                self._flip(int(c), True)
            queue.extend(int(x) for x in m.failing(m.touching(int(m.group[drop[0]]))))

    def _cheapest_slot(self, i: int, tabu: set) -> np.ndarray:
        m = self.m
        q = m.codes[i]
        q = q[~m.S[q]]
        slots = np.unique(m.group[q])
        best, best_key = None, None
        for g in slots.tolist():
            codes = q[m.group[q] == g]
            rest = [h for h in slots.tolist() if h != g]
            held = not rest or popcount(np.bitwise_and.reduce(m.H[rest], axis=0)) >= m.k
            key = (len(codes) + len(m.S) * any(int(c) in tabu for c in codes), not held,
                   int(m.weight[codes].sum()), self.rng.random())
            if best_key is None or key < best_key:
                best, best_key = codes, key
        return best

    def trim(self) -> None:
        """Give back suppressed codes that can come back, in random order,
        each checked exactly, until a pass gives nothing back."""
        m = self.m
        while True:
            gone = np.flatnonzero(m.S)
            gone = gone[m.stale(gone)]
            cands = gone[m.restorable(gone)]
            back = 0
            for c in self.rng.permutation(cands).tolist():
                self._flip(c, False)
                if m.failing(m.constraints_of(c)).size:
                    self.journal.pop()
                    m.flip(c, True)
                else:
                    back += 1
            if not back:
                return


def search(run, moves: int, seed: int) -> dict:
    """Run ``moves`` moves of the local search from ``run``'s state after its
    post-passes, then write the best S back into ``run.state`` (``apply``);
    return the figures recorded in the release's metrics."""
    model = GroupModel(run)
    rng = np.random.default_rng(seed)
    engine = Search(model, rng)
    start = engine.objective()
    engine.journal = []
    engine.trim()
    kept = improved = 0
    best = engine.objective()
    for _ in range(moves):
        if engine.move():
            kept += 1
            now = engine.objective()
            improved += now < best
            best = min(best, now)
    merges = apply(run, model.S)
    run.counts["search_moves"] = moves
    run.counts["search_kept"] = kept
    run.counts["search_improved"] = improved
    run.counts["search_merges"] = merges
    run.counts["search_seed"] = int(seed)
    return {"moves": moves, "seed": int(seed), "kept": kept, "improved": improved,
            "suppressed_before": start[0], "suppressed_after": best[0],
            "occurrences_before": start[1], "occurrences_after": best[1]}


def apply(run, S: np.ndarray) -> int:
    """Make ``run.state`` suppress exactly S, keeping its items where it can:
    returned codes start as items of their own; while a constraint is held by
    fewer than k records, the items of its open codes are merged within each
    group, and on a second failure each of its groups' items are merged whole
    (where S is feasible, every constraint then holds).  Returns the merges."""
    s = run.state
    for c in np.flatnonzero(s.suppressed[:s.n_codes] & ~S).tolist():
        s.restore(c, None)
    for c in np.flatnonzero(~s.suppressed[:s.n_codes] & S).tolist():
        s.suppress(c)
    merges, tried = 0, set()
    while True:
        ids = np.flatnonzero(~run.vacuous)
        support = s.supports(run.padded, run.lengths, ids)
        n_open = (~s.suppressed[run.padded[ids]]).sum(axis=1)
        failing = ids[(n_open > 0) & (support < run.k)]
        if failing.size == 0:
            return merges
        for p in failing.tolist():
            whole = p in tried
            tried.add(p)
            merges += _merge_groups(run, run._open_codes(p), whole)


def _merge_groups(run, codes: np.ndarray, whole: bool) -> int:
    s, merges = run.state, 0
    for g in np.unique(run.util_of[codes]).tolist():
        pool = run.util_members[g] if whole else codes[run.util_of[codes] == g]
        pool = pool[~s.suppressed[pool]]
        for c in pool[1:].tolist():
            if s.rep[c] != s.rep[pool[0]]:
                s.merge(int(pool[0]), c)
                merges += 1
    return merges
