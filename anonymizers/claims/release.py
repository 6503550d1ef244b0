"""The HHP release: screen, encode, search the lattice, and publish the chosen
node's truncated, generalized data with fresh member pseudonyms and DSFC
instead of dates (El Emam et al. 2012, appendix sections 1-10).

Three steps, which a DAG runs as separate tasks: ``stage`` (screen and
encode), ``search_parts`` (the lattice search, one or more parts of the
lattice at a time: ``partition``), ``finish`` (the best node over every
part, its truncation, generalization and record).  ``hhp_release`` runs them
in one process; the release is the same either way.  Input that screening
empties is refused (``InputError``) by ``stage``, never released empty.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from anonymizers.claims.adversary import eta_cap
from anonymizers.claims.config import HHPConfig
from anonymizers.claims.groupings import load_hierarchies
from anonymizers.claims.inputs import normalize
from anonymizers.claims.lattice import Lattice, build_lattice
from anonymizers.claims.marketer import marketer_risk, scaled_population
from anonymizers.claims.partition import PartResult, best_of, n_parts, search_part
from anonymizers.claims.policy import load_policy
from anonymizers.claims.recoding import Prepared, prepare
from anonymizers.claims.risk import NodeRisk, NodeState, RiskModel
from anonymizers.claims.screening import NAMED_POLICIES, named_policy, screen_normalized
from anonymizers.errors import InputError, ParameterError
from anonymizers.pseudonyms import fresh, generator

PSEUDONYM_STREAM = (2**32 - 1,)  # spawn key of the pseudonym generator (nodes use their levels)


@dataclass(frozen=True)
class EvaluatedNode:
    """One node the search measured: levels by QI name, risk, IL, cost."""

    levels: dict
    node: tuple[int, ...]
    risk: float
    ci_halfwidth: float | None
    iterations: int
    candidate: bool
    information_loss: float
    truncated_claims: int
    seconds: float


@dataclass(frozen=True)
class HHPResult:
    """The release and its record.

    members : DataFrame -- ``member_id`` (fresh pseudonym) and one column per
        member quasi-identifier used (labels of the chosen level).
    claims : DataFrame -- ``member_id`` and one column per claim
        quasi-identifier used (``dsfc`` replaces dates); no claim ids.
    metrics : dict -- policy version, counts, chosen node, risks, search.
    screening_report : dict -- per-rule counts and Tables 1-4 (no ids).
    lattice : list of EvaluatedNode -- every node the search evaluated.
    key : DataFrame -- ``member_id`` -> ``source_member_id``.  NEVER RELEASE
        IT: it is for the verifier and the custodian's audit only.
    """

    members: pd.DataFrame
    claims: pd.DataFrame
    metrics: dict
    screening_report: dict
    lattice: list
    key: pd.DataFrame = field(repr=False)


@dataclass(frozen=True)
class Staged:
    """A release's input after screening and encoding, with its seed: what
    every part of the lattice search and the final step share."""

    seed: int
    policy: dict
    report: dict
    prep: Prepared


def hhp_release(claims_df: pd.DataFrame, config: HHPConfig | None = None) -> HHPResult:
    """Run the whole method on a claims table (format: ``anonymizers.claims``);
    ``config`` defaults to ``HHPConfig()``.  The same as ``stage``, then
    ``search_parts`` over every part, then ``finish``: the steps a DAG runs
    as separate tasks."""
    t0 = time.perf_counter()
    config = config if config is not None else HHPConfig()
    staged = stage(claims_df, config)
    t_search = time.perf_counter()
    results = search_parts(staged, config, list(range(part_count(staged, config))))
    return finish(staged, config, results, time.perf_counter() - t_search,
                  started=t0)


def stage(claims_df, config: HHPConfig) -> Staged:
    """Screen and encode ``claims_df``; draw the seed when ``config`` has none.

    ``claims_df``: the claims DataFrame, or a function of no argument that
    reads it; then the frame is dropped once normalized, so that the raw and
    the encoded claims are not held together (at 2.67 million claims the raw
    frame is 470 MB)."""
    seed = config.seed if config.seed is not None else int(
        np.random.SeedSequence().generate_state(1)[0])
    policy, report, prep = _prepared(claims_df, config)
    return Staged(seed, {"version": policy.version,
                         "extra_rare_visible": list(policy.extra_rare_visible)}, report, prep)


def part_count(staged: Staged, config: HHPConfig) -> int:
    """Parts of the lattice search (``partition``); one when ``config.node``
    names the node."""
    return 1 if config.node is not None else n_parts(build_lattice(staged.prep))


def search_parts(staged: Staged, config: HHPConfig, parts: list[int]) -> list[PartResult]:
    """The lattice search of ``parts`` (section 5), or the fixed ``config.node``."""
    model = RiskModel(staged.prep, config.risk_settings(staged.seed))
    lattice = build_lattice(staged.prep)
    if config.node is not None:
        r = model.evaluate(lattice.node_from_names(dict(config.node)))
        if not r.candidate:
            raise ParameterError("node", f"the node {lattice.describe(r.node)} has risk "
                                 f"{r.risk:.4f} > max_sup {config.max_sup}: not releasable")
        return [PartResult(0, r, (r,), True)]
    return [search_part(lattice, p, model.evaluate, config.max_evaluations) for p in parts]


def finish(staged: Staged, config: HHPConfig, results: list[PartResult], t_search: float,
           started: float | None = None) -> HHPResult:
    """The chosen node's release and its record, from every part's search."""
    t0 = time.perf_counter() if started is None else started
    prep, seed = staged.prep, staged.seed
    model = RiskModel(prep, config.risk_settings(seed))
    lattice = build_lattice(prep)
    results = sorted(results, key=lambda r: r.part)
    parts = 1 if config.node is not None else n_parts(lattice)
    if [r.part for r in results] != list(range(parts)):
        raise ParameterError("parts", f"the search results cover parts "
                             f"{[r.part for r in results]}, not each of the {parts} parts once")
    evaluated = [n for r in results for n in r.evaluated]
    chosen = best_of(lattice, results)
    if chosen is None:
        top = max(evaluated, key=lambda r: lattice.index(r.node))
        members = staged.report.get("input", {}).get("members")
        left = ("" if members is None else f"; screening left {prep.n_members} of {members} "
                f"members")
        raise ParameterError("max_sup", f"no node meets it: even the most general node has "
                             f"risk {top.risk:.4f} > {config.max_sup} (k={config.k}{left}); "
                             "raise max_sup, lower k or p_max, or release more members")
    st = model.state(chosen.node)
    members, claims, key = release_tables(prep, st, generator(
        config.pseudonym_key, seed,
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=PSEUDONYM_STREAM))))
    nodes = [_evaluated(lattice, r) for r in evaluated]
    complete = all(r.complete for r in results)
    metrics = _metrics(config, seed, staged.policy, staged.report, prep, model, lattice,
                       chosen, st, nodes, complete, t_search)
    metrics["lattice_parts"] = len(results)
    metrics["released"] = {"members": len(members), "claims": len(claims)}
    metrics["marketer_risk"] = _marketer(members, config)
    metrics["seconds"] = round(time.perf_counter() - t0, 3)
    return HHPResult(members, claims, metrics, staged.report, nodes, key)


def release_tables(prep: Prepared, st: NodeState, rng: np.random.Generator):
    """(members, claims, key) of a node's truncated, generalized data."""
    names = fresh(prep.n_members, rng, prefix="M")
    members = pd.DataFrame({"member_id": names})
    for q, lab, level in zip(prep.member_qis, st.member_labels,
                             st.node[len(prep.claim_qis):]):
        members[q.name] = q.labels[level][lab]
    keep = ~st.removed
    claims = pd.DataFrame({"member_id": names[prep.member[keep]]})
    for q, lab, level in zip(prep.claim_qis, st.claim_labels, st.node):
        claims[q.name] = q.labels[level][lab[keep]]
    order = np.lexsort((prep.dsfc[keep], claims["member_id"].to_numpy()))
    claims = claims.iloc[order].reset_index(drop=True)
    members = members.sort_values("member_id", ignore_index=True)
    key = pd.DataFrame({"member_id": names, "source_member_id": prep.member_ids})
    return members, claims, key.sort_values("member_id", ignore_index=True)


def assess_node(claims_df: pd.DataFrame, levels: dict, config: HHPConfig) -> NodeRisk:
    """Screen and encode ``claims_df`` and measure the risk of one node,
    ``{qi: level name}`` (unnamed QIs at their top level), with ``config``'s
    seed: the risk model of section 5 used alone."""
    if config.seed is None:
        raise ParameterError("seed", "assessing one node needs a seed (the node's random "
                             "stream is derived from it)")
    _, _, prep = _prepared(claims_df, config, compare=False)
    node = build_lattice(prep).node_from_names(dict(levels))
    return RiskModel(prep, config.risk_settings(config.seed)).evaluate(node)


def release_risk(claims_df: pd.DataFrame, result: HHPResult, config: HHPConfig) -> NodeRisk:
    """Measure again, from the input, the risk of the node ``result`` released
    (with the release's seed, ``result.metrics['seed']``)."""
    return assess_node(claims_df, result.metrics["chosen_node"],
                       replace(config, seed=result.metrics["seed"]))


def _prepared(claims_df, config: HHPConfig, compare: bool = True):
    """(policy, screening report, prepared data) of ``claims_df`` (a DataFrame
    or a function returning one: see ``stage``)."""
    source = config.policy_source
    policy = (named_policy(source) if source in NAMED_POLICIES else load_policy(source))
    policy = policy.with_rare_visible(config.rare_visible_codes)
    norm, present = normalize(claims_df() if callable(claims_df) else claims_df)
    kept, _, report = screen_normalized(norm, present, policy, compare)
    _refuse_empty(report)
    prep = prepare(norm, present, load_hierarchies(config.hierarchies_source),
                   config.qis, config.truncation_percentile, keep=kept)
    return policy, report, prep


def _refuse_empty(report: dict) -> None:
    """A release keeping no member is refused, not returned empty: screening
    (section 2) that removes everyone leaves nothing the method can protect
    or publish, and an empty table must not pass for a release.  The message
    gives counts only."""
    if report["kept"]["members"] == 0 or report["kept"]["claims"] == 0:
        raise InputError("claims", "the release would keep no member or no claim (screening "
                         f"removed {report['members_removed']} of "
                         f"{report['input']['members']} members); nothing released")


def _evaluated(lattice: Lattice, r: NodeRisk) -> EvaluatedNode:
    return EvaluatedNode(lattice.describe(r.node), r.node, r.risk, r.ci_halfwidth,
                         r.iterations, r.candidate, float(lattice.loss[lattice.index(r.node)]),
                         r.truncated_claims, round(r.seconds, 4))


def _metrics(config, seed, policy, report, prep, model, lattice, chosen, st, nodes, complete,
             t_search) -> dict:
    nc = len(prep.claim_qis)
    p_dist = {}
    for h, q in enumerate(prep.claim_qis):
        values, counts = np.unique(model.power(h, chosen.node[h]), return_counts=True)
        p_dist[q.name] = {int(v): int(c) for v, c in zip(values, counts)}
    return {
        "method": "hhp", "paper": "El Emam et al., JMIR 2012, Multimedia Appendix",
        "policy_version": policy["version"], "hierarchies": config.hierarchies_source,
        "policy_extra_rare_visible": policy["extra_rare_visible"], "seed": seed,
        "input": report["input"], "screened": report["kept"],
        "members_removed_by_screening": report["members_removed"],
        "screening_not_applied": report["not_applied"],
        "qis_used": [q.name for q in prep.qis], "qis_absent": dict(prep.absent),
        "ungrouped": prep.fallback,
        "truncation": {"percentile": config.truncation_percentile, "threshold": prep.threshold,
                       "members_truncated": int((prep.n_claims > prep.threshold).sum()),
                       "claims_truncated": int(st.removed.sum())},
        # section 1's figures as shares: members truncated among those screening
        # kept (about 5 % at the 95th percentile), claims left of the input
        "members_truncated_share": float((prep.n_claims > prep.threshold).mean()),
        "claims_kept_share": (report["kept"]["claims"] - int(st.removed.sum()))
        / report["input"]["claims"],
        "eta_cap": eta_cap(prep.n_claims, config.eta_sd),
        "p": p_dist,
        "chosen_node": lattice.describe(chosen.node),
        "chosen_levels": dict(zip(lattice.names, map(int, chosen.node))),
        "risk": chosen.risk, "risk_ci_halfwidth": chosen.ci_halfwidth,
        "risk_iterations": chosen.iterations, "k": config.k, "max_sup": config.max_sup,
        "p_max": config.p_max, "sample_size": config.sample_size,
        "information_loss": float(lattice.loss[lattice.index(chosen.node)]),
        "lattice_size": len(lattice.nodes), "nodes_evaluated": len(nodes),
        "search_complete": complete, "claim_qis": nc,
        "seconds_search": round(t_search, 3),
        "seconds_per_node": round(t_search / max(len(nodes), 1), 4),
    }


def _marketer(members: pd.DataFrame, config: HHPConfig) -> dict:
    cols = [c for c in config.marketer_qis if c in members.columns]
    if not len(members):
        return {"theta": 0.0, "qis": cols, "population": 0}
    f = members.groupby(cols, sort=False).size().to_numpy() if cols else np.array([len(members)])
    if config.marketer_population is None:
        return {"theta": marketer_risk(f), "qis": cols, "population": int(f.sum())}
    F = scaled_population(f, config.marketer_population)
    return {"theta": marketer_risk(F, int(f.sum())), "qis": cols, "population": int(F.sum())}
