"""One entry point per method: ``run(inputs, config) -> Release`` and
``verify(inputs, release) -> Verdict`` (``anonymizers.release``; at the top
level ``anonymizers.check``, as ``anonymizers.verify`` is the package of
verifiers), wrapping
the library functions unchanged; ``plan(inputs, config)`` for the
partitioned methods (disassociation, HHP) gives their steps as the DAG cuts
them (``plugins/deid/methods``).

    >>> import anonymizers, pandas as pd
    >>> df = pd.DataFrame({"patient_id": list("aabbc"), "code": list("12121")})
    >>> anonymizers.run("ppe", df, anonymizers.config("ppe", k=2)).tables["constraints"]
    Empty DataFrame
    Columns: [constraint, code]
    Index: []

``inputs``: a DataFrame (the ``records``, ``patient_id, code``; for ``lda``
with ``age``; for ``hhp`` the ``claims``) or a mapping of named inputs:
``ugaclip`` also takes ``privacy_policy`` (a ``PPEResult``, its Release, or
code lists) and ``utility_policy`` (a bundled name, a ``UtilityPolicy`` or
code lists); ``gccens`` the ``population``; ``medco`` the ``clusters`` (code
lists, or the Release of ``medco_clusters``).  A config whose seed is None
gets one drawn here, so that every release records the seed it used; a
config that draws pseudonyms without a ``pseudonym_key`` gets a fresh one
(``_keyed``) that the returned Release does not keep, so the recorded seed
does not map the release back to patients; ``plan`` gives the config its
steps must finish with (``StepPlan.config``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.methods import declared
from anonymizers.pseudonyms import FRESH, fresh_key
from anonymizers.release import Release, StepPlan, VerificationFailed
from anonymizers.verify.verdict import Verdict

__all__ = ["METHODS", "Method", "check", "config", "method", "plan", "run", "verify"]


@dataclass(frozen=True)
class Method:
    """A method's entry points; ``make(inputs, config) -> (tables, private,
    metrics, result)`` and ``check(inputs, release) -> Verdict`` adapt the
    library's function and verifier.  The verifiers read the release's
    tables (and private keys), except disassociation's, which reads the
    ``Disassociated`` object, and GCCens's final caps (``result``)."""

    name: str
    make: Callable
    check: Callable
    steps: Callable | None = None

    def run(self, inputs, config, verify: bool = True) -> Release:
        """The release of ``inputs``; verified unless ``verify=False``, and a
        failed verdict raises ``VerificationFailed`` (no release returned)."""
        inputs, config = _inputs(inputs), _seeded(config)
        config, pseudonyms = _keyed(config)
        tables, private, metrics, result = self.make(inputs, config)
        seed = getattr(config, "seed", None)
        if pseudonyms is not None:
            metrics = {**metrics, "pseudonyms": pseudonyms}
        if pseudonyms == FRESH:  # the key stays in this call: a Release may be pickled
            config = dataclasses.replace(config, pseudonym_key=None)
        release = Release(self.name, tables, {**metrics, "seed": seed}, None, config,
                          private, result)
        if not verify:
            return release
        verdict = self.verify(inputs, release)
        if not verdict.ok:
            raise VerificationFailed(self.name, verdict)
        return dataclasses.replace(release, verdict=verdict)

    def verify(self, inputs, release: Release) -> Verdict:
        """The independent verifier's verdict on ``release`` made from ``inputs``."""
        if release.method != self.name:
            raise ValueError(f"a {release.method} release given to {self.name}'s verifier")
        return self.check(_inputs(inputs), release)

    def plan(self, inputs, config, **sizes) -> StepPlan:
        if self.steps is None:
            raise ValueError(f"{self.name} runs in one step: it has no step plan")
        config, _ = _keyed(_seeded(config))
        return dataclasses.replace(self.steps(_inputs(inputs), config, **sizes), config=config)


def _inputs(inputs) -> dict:
    return {"records": inputs} if isinstance(inputs, pd.DataFrame) else dict(inputs)


def _seeded(config):
    """``config`` with a seed drawn from fresh entropy when it has a None seed."""
    if getattr(config, "seed", 0) is not None:
        return config
    return dataclasses.replace(config, seed=int(np.random.SeedSequence().generate_state(1)[0]))


def _keyed(config):
    """``config`` and how its pseudonyms are drawn (None: it draws none).
    Without a ``pseudonym_key`` the permutation would follow from the seed
    recorded in the metrics, and whoever holds the seed and the source could
    replay it and map the release back to patients (anonymizers.pseudonyms):
    such a config gets a fresh key (``run`` drops it from the Release's
    config; a ``StepPlan`` carries it to its last step), so nobody can."""
    if not hasattr(config, "pseudonym_key"):
        return config, None
    if config.pseudonym_key is not None:
        return config, "keyed (pseudonym_key)"
    return dataclasses.replace(config, pseudonym_key=fresh_key()), FRESH


def _codes_table(sets, name: str) -> pd.DataFrame:
    """``name, code``: one row per code of each set, sets numbered in order."""
    rows = [(i, str(c)) for i, s in enumerate(sets) for c in s]
    return pd.DataFrame(rows, columns=[name, "code"]).astype({name: "int64", "code": object})


def _code_lists(value) -> list:
    if isinstance(value, Release):
        return [list(g["code"]) for _, g in value.tables["clusters"].groupby("cluster")]
    return [list(c) for c in getattr(value, "constraints", getattr(value, "clusters", value))]


# ---- PPE (Loukides et al. 2010, Algorithm 1)

def _ppe(inputs, config):
    from anonymizers.ppe import extract_policy

    result = extract_policy(inputs["records"], config)
    return {"constraints": _codes_table(result.constraints, "constraint")}, {}, \
        result.metrics, result


def _ppe_check(inputs, release):
    from anonymizers.verify.ppe import verify_policy

    constraints = [list(g["code"]) for _, g in release.tables["constraints"].groupby("constraint")]
    return verify_policy(inputs["records"], constraints, release.config.k, release.config.filter)


# ---- UGACLIP (Loukides et al. 2010, Algorithm 2)

def _privacy_policy(inputs):
    policy = inputs["privacy_policy"]
    return policy.result if isinstance(policy, Release) else policy


def _ugaclip(inputs, config):
    from anonymizers.ugaclip import load_utility_policy, ugaclip

    utility = inputs["utility_policy"]
    if isinstance(utility, str):
        utility = load_utility_policy(utility)
    result = ugaclip(inputs["records"], _privacy_policy(inputs), utility, config)
    return {"items": _codes_table(result.items, "item"),
            "suppressed": pd.DataFrame({"code": pd.Series(result.suppressed, dtype=object)}),
            "patients": pd.DataFrame({"patient_id": result.patients}),
            "record_items": result.record_items}, {}, result.metrics, result


def _ugaclip_check(inputs, release):
    from anonymizers.verify.ugaclip import verify_release

    return verify_release(inputs["records"], _ugaclip_document(release),
                          _code_lists(_privacy_policy(inputs)), release.config.k)


def _ugaclip_document(release) -> dict:
    """The JSON form the verifier reads (``UGACLIPResult.to_dict``), from the tables."""
    t = release.tables
    items = [list(g["code"]) for _, g in t["items"].groupby("item", sort=True)]
    held: dict = {p: [] for p in t["patients"]["patient_id"]}
    for p, item in zip(t["record_items"]["patient_id"], t["record_items"]["item"]):
        held[p].append(items[item])
    return {"k": int(release.config.k), "items": items,
            "suppressed": t["suppressed"]["code"].tolist(),
            "records": [{"patient_id": p, "items": v} for p, v in held.items()],
            "metrics": release.metrics}


# ---- Disassociation (Loukides et al. 2014)

def _disassociation(inputs, config):
    from anonymizers.disassociation import disassociate

    result = disassociate(inputs["records"], config)
    return result.tables(), {}, result.metrics, result


def _disassociation_check(inputs, release):
    from anonymizers.verify.disassociation import verify_disassociation

    c = release.config
    return verify_disassociation(inputs["records"], release.result.release,
                                 sensitive_codes=sorted(c.sensitive_codes),
                                 repeated_codes=c.repeated_codes)


def _disassociation_plan(inputs, config, batch_size: int = 1024) -> StepPlan:
    """HORPART over all records, then batches of whole refine windows, as the
    DAG's ``plan`` task cuts them (``batches.Plan.batches``); each step is one
    ``run_batch`` (VERPART and refining), ``combine`` joins them.  The DAG
    may enlarge ``batch_size`` to bound its number of mapped tasks."""
    from anonymizers.disassociation.batches import plan as horpart_plan

    p = horpart_plan(inputs["records"], config)
    ranges = p.batches(batch_size, config.refine_window)
    return StepPlan("disassociation", tuple({"index": i, "first_cluster": lo, "stop_cluster": hi}
                                            for i, (lo, hi) in enumerate(ranges)), p)


# ---- GCCens (Tamersoy 2011, Ch. III)

def _gccens(inputs, config):
    from anonymizers.censoring import gccens

    result, key = gccens(inputs["records"], inputs["population"], config)
    return {"records": result.records, "patients": pd.DataFrame({"patient_id": result.patients})}, \
        {"key": key}, result.metrics, result


def _gccens_check(inputs, release):
    from anonymizers.verify.censoring import verify_gccens

    t = release.tables
    return verify_gccens(t["patients"]["patient_id"].to_numpy(), t["records"],
                         release.private["key"], inputs["records"], inputs["population"],
                         release.config.k, release.result.final_caps)


# ---- LDA (Tamersoy et al. 2012)

def _lda(inputs, config):
    from anonymizers.longitudinal import lda

    result = lda(inputs["records"], config)
    return {"records": result.records, "patients": pd.DataFrame({"patient_id": result.patients})}, \
        {"pseudonym_map": result.pseudonym_map}, result.metrics, result


def _lda_check(inputs, release):
    from anonymizers.verify.longitudinal import verify_lda

    return verify_lda(release.tables["records"], release.private["pseudonym_map"],
                      inputs["records"], release.config.k, code_system=release.config.code_system)


# ---- MedCo (Zoveralli): code clusters, then dummy patients

def _medco_clusters(inputs, config):
    from anonymizers.dummies import cluster_codes

    result = cluster_codes(inputs["records"], config)
    return {"clusters": _codes_table(result.clusters, "cluster")}, {}, result.metrics, result


def _medco_clusters_check(inputs, release):
    from anonymizers.verify.dummies import verify_clusters

    return verify_clusters(inputs["records"], _code_lists(release),
                           release.config.min_anonymity_set)


def _medco(inputs, config):
    from anonymizers.dummies import generate_dummies

    result = generate_dummies(inputs["records"], _code_lists(inputs["clusters"]), config)
    return {"records": result.released}, {"dummy_map": result.dummy_map}, result.metrics, result


def _medco_check(inputs, release):
    from anonymizers.verify.dummies import verify_dummies

    clusters = inputs["clusters"]
    least = clusters.config.min_anonymity_set if isinstance(clusters, Release) else None
    return verify_dummies(inputs["records"], release.tables["records"],
                          release.private["dummy_map"], _code_lists(clusters), least)


# ---- HHP (El Emam et al. 2012)

def _claims(inputs) -> pd.DataFrame:
    return inputs["claims"] if "claims" in inputs else inputs["records"]


def _hhp(inputs, config):
    from anonymizers.claims import hhp_release

    result = hhp_release(_claims(inputs), config)
    return {"members": result.members, "claims": result.claims}, {"key": result.key}, \
        result.metrics, result


def _hhp_check(inputs, release):
    from anonymizers.verify.claims import verify_release

    c, t = release.config, release.tables
    return verify_release(t["members"], t["claims"], release.metrics, release.private["key"],
                          _claims(inputs), c.policy_path, c.hierarchies_path)


def _hhp_plan(inputs, config, parts_per_task: int = 1) -> StepPlan:
    """Screen and encode (the DAG's ``prepare``), then groups of lattice parts
    (``partition.group``), one ``search_parts`` each; ``finish`` releases the
    best node over all of them."""
    from anonymizers.claims.partition import group
    from anonymizers.claims.release import part_count, stage

    staged = stage(_claims(inputs), config)
    groups = group(part_count(staged, config), parts_per_task)
    return StepPlan("hhp", tuple({"index": i, "parts": list(g)} for i, g in enumerate(groups)),
                    staged)


METHODS = {m.name: m for m in (
    Method("ppe", _ppe, _ppe_check),
    Method("ugaclip", _ugaclip, _ugaclip_check),
    Method("disassociation", _disassociation, _disassociation_check, _disassociation_plan),
    Method("gccens", _gccens, _gccens_check),
    Method("lda", _lda, _lda_check),
    Method("medco_clusters", _medco_clusters, _medco_clusters_check),
    Method("medco", _medco, _medco_check),
    Method("hhp", _hhp, _hhp_check, _hhp_plan),
)}


def method(name: str) -> Method:
    """The entry points of ``name`` (KeyError naming the methods)."""
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"no method {name!r}; the methods are {sorted(METHODS)}") from None


def config(name: str, **values):
    """The config of ``name`` from keyword values, validated by its declaration."""
    return declared(name)(**values)


def run(name: str, inputs: Mapping | pd.DataFrame, config, verify: bool = True) -> Release:
    """``method(name).run(inputs, config, verify)``."""
    return method(name).run(inputs, config, verify=verify)


def verify(name: str, inputs: Mapping | pd.DataFrame, release: Release) -> Verdict:
    """``method(name).verify(inputs, release)``."""
    return method(name).verify(inputs, release)


check = verify  # ``anonymizers.check``: ``anonymizers.verify`` names the verifiers' package


def plan(name: str, inputs: Mapping | pd.DataFrame, config, **sizes) -> StepPlan:
    """``method(name).plan(inputs, config, **sizes)``."""
    return method(name).plan(inputs, config, **sizes)
