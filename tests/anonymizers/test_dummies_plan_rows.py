"""Issue 23: the plan's sufficient Gale-Ryser rows (docs/methods/medco.md#dummies-plan).

On the demo warehouse's MedCo input (1,231 screened patients, A=20, 5
clusters), collision drops left a 20-code cluster a few occurrences short
of its top.  The old sufficient rows bounded every deficit by ``T - f``
with ``T <= (occ + add + n - 1) / n``; for ``t`` near ``n`` the row
``R_t - t add / n >= ...`` then asked for ~126 three-code dummies (a whole
level, 380 occurrences) to fill 8, and every later round did the same
(real ratio 2.43 against a plan of 2.05).  The rows now bound the deficits
that ``waterfill.deficits`` actually pours; Ryser's construction realises
every plan they admit (the property below).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.dummies.plan import ClusterState, plan_profiles
from anonymizers.dummies.waterfill import deficits, ryser

TOP = 1178


def _plan(offsets, k, cap):
    freq = TOP + np.asarray(offsets, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64).reshape(-1, 1)
    plan = plan_profiles(k, np.zeros(len(k), dtype=np.int64), np.asarray(cap),
                         [ClusterState(freq)])
    return freq, k, plan


def test_a_few_occurrences_short_does_not_raise_the_level():
    # the demo's 20-code cluster after a round of drops: 8 occurrences short of
    # top - 1; its profiles hold 3, 2 and (a patient with most codes) 19 of its codes
    offsets = [-3, -3, -2, -2, -2, -2] + [-1] * 6 + [0] * 8
    freq, k, plan = _plan(offsets, [3, 2, 19], [497, 16, 1])
    assert plan is not None
    assert plan.level[0] == TOP  # before: TOP + 19, with 110 three-code dummies
    added = int(k[:, 0] @ plan.x)
    assert added <= int((TOP - freq).sum())  # at most what brings every code to the top
    sizes = np.repeat(k[:, 0], plan.x)
    add = deficits(freq, int(plan.level[0]), added, np.random.default_rng(0))
    ryser(add, sizes, np.random.default_rng(0))  # realisable (raises otherwise)


@st.composite
def _clusters(draw):
    n = draw(st.integers(2, 12))
    offsets = draw(st.lists(st.integers(-6, 0), min_size=n, max_size=n))
    if max(offsets) < 0:
        offsets[0] = 0
    ks = draw(st.lists(st.integers(1, n), min_size=1, max_size=3, unique=True))
    caps = draw(st.lists(st.integers(0, 40), min_size=len(ks), max_size=len(ks)))
    return offsets, ks, caps


@settings(max_examples=300, deadline=None)
@given(_clusters(), st.integers(0, 2 ** 16))
def test_every_sufficient_plan_is_realised_by_ryser(case, seed):
    offsets, ks, caps = case
    freq, k, plan = _plan(offsets, ks, caps)
    if plan is None:
        return
    added = int(k[:, 0] @ plan.x)
    sizes = np.repeat(k[:, 0], plan.x)
    rng = np.random.default_rng(seed)
    add = deficits(freq, int(plan.level[0]), added, rng)
    codes = ryser(add, sizes, rng)
    assert np.array_equal(np.bincount(codes, minlength=len(freq)), add)
    end = freq + add
    assert end.max() - end.min() <= 1
