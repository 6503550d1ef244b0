"""On random small inputs (edge cases included: one patient, one code,
fewer records than k), ``anonymizers.run`` either refuses with the library's
error or returns a release whose verdict holds and which ``check`` passes
again: never a release that looks like success without one."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import anonymizers
from anonymizers.errors import AnonymizerError

CODES = ["250", "401", "493", "714", "272"]
records = st.dictionaries(st.integers(0, 12), st.sets(st.sampled_from(CODES), min_size=1),
                          min_size=1, max_size=12).map(
    lambda d: pd.DataFrame([(f"p{p}", c) for p, cs in d.items() for c in sorted(cs)],
                           columns=["patient_id", "code"]))


def _released_or_refused(name, inputs, config):
    try:
        release = anonymizers.run(name, inputs, config)
    except AnonymizerError as refused:  # incl. VerificationFailed: nothing returned
        assert not isinstance(refused, anonymizers.VerificationFailed), refused
        return None
    assert release.verdict.ok and anonymizers.check(name, inputs, release).ok
    assert release.metrics["seed"] == getattr(release.config, "seed", None)
    return release


@settings(max_examples=30, deadline=None)
@given(records, st.integers(1, 4))
def test_ppe_then_ugaclip(df, k):
    ppe = _released_or_refused("ppe", df, anonymizers.config("ppe", k=k))
    if ppe is not None:
        _released_or_refused("ugaclip", {"records": df, "privacy_policy": ppe,
                                         "utility_policy": [CODES]},
                             anonymizers.config("ugaclip", k=k, seed=3))


@settings(max_examples=30, deadline=None)
@given(records, st.integers(2, 4), st.integers(1, 3))
def test_disassociation(df, k, m):
    _released_or_refused("disassociation", df, anonymizers.config("disassociation", k=k, m=m,
                                                                   seed=1))


@settings(max_examples=20, deadline=None)
@given(records, st.integers(1, 3))
def test_medco_clusters_then_dummies(df, least):
    clusters = _released_or_refused("medco_clusters", df,
                                    anonymizers.config("medco_clusters", min_anonymity_set=least))
    if clusters is not None:
        _released_or_refused("medco", {"records": df, "clusters": clusters},
                             anonymizers.config("medco", seed=2))
