"""UGACLIP (seed 000, Algorithm 2): generalize codes within a utility policy,
suppress where that cannot help, until every PPE privacy constraint is held
by at least k released records.

Utility policies by name: the paper's (``pnas2010``, ``pnas2010-k5``, ...),
with dots stripped to match the warehouse's undotted codes, or a
hierarchy-based one over the release's code system (``icd9-level-1/2/3``,
``icd10-level-1/2/3``; seed 001 Section 6.1).

Successive releases (issue 25): a release with published releases is
append-only (``deid.append_only``): a run anonymizes only the patients not
published yet, under PPE's policy of their own claims (their release is the
adversary's candidate set), and carries the earlier rows; beside it the
metrics give what an independent run over the whole cohort would have cost
(``*_without_defence``) and how much of the current cohort the publications
carry (``published_share``, ``stale_pairs``).
"""

from __future__ import annotations

import pandas as pd

from anonymizers.codesystems import FORWARD_GEM
from deid import append_only, history, staging, utility_summary, validation
from deid.methods import form
from deid.secret import pseudonym_key

TITLE = "UGACLIP (generalization and suppression)"
# UGACLIPConfig's optional searches after or before Algorithm 2, all off by default
SEARCH_FIELDS = ("search_moves", "plan_seconds", "plan_nodes", "plan_rounds", "plan_weights",
                 "realise_plan")
POLICIES = ["none", "pnas2010", "pnas2010-k2", "pnas2010-k5", "pnas2010-k10", "pnas2010-k25",
            "icd9-level-1", "icd9-level-2", "icd9-level-3",
            "icd10-level-1", "icd10-level-2", "icd10-level-3"]
PARAMS = {
    **form.params("ugaclip", ["k", "seed", *SEARCH_FIELDS]),
    "utility_policy": {"enum": POLICIES, "default": "icd9-level-2", "title": "Utility policy",
                       "description": "Which codes may be generalized (UGACLIP) or kept together "
                                      "(disassociation): the paper's diseases (Tables S1-S2) "
                                      "or ICD-9 hierarchy levels."},
    "successive_defence": {
        "type": "boolean", "default": True, "title": "Append-only successive releases",
        "description": "With published releases, publish only the patients not published "
                       "yet (fewer than k are held back) and keep the earlier rows; off: "
                       "anonymize the whole cohort again, which validate refuses when the "
                       "combination with the earlier releases breaks k-anonymity."},
}


def check(params: dict) -> None:
    """UGACLIP cannot run without a utility policy, nor with one over the
    other code system's codes, nor realise a plan it is given no budget to make."""
    if params.get("utility_policy") in (None, "none"):
        raise ValueError("utility_policy: UGACLIP needs a utility policy (not 'none')")
    if params.get("realise_plan") and not (params.get("plan_seconds") or params.get("plan_nodes")):
        raise ValueError("realise_plan: needs a plan to realise (plan_nodes > 0, the same "
                         "release on any host, or plan_seconds > 0)")
    policy_system(params["utility_policy"], params.get("code_system", "icd9cm"),
                  params.get("gem"))


def policy_system(name: str, code_system: str, gem: str | None = None) -> int | None:
    """The hierarchy level of policy ``name`` (None: a listed policy), after
    checking that its codes are ``code_system``'s, or that an ICD-9-CM level
    meets ICD-10-CM claims through the release's ``gem``
    (anonymizers/level_policies.py): the paper's lists (``pnas2010*``) hold
    ICD-9-CM codes."""
    from anonymizers.errors import ParameterError
    from anonymizers.policies import level_of, named_level

    named = named_level(name)
    if named is not None and named[0] == "icd9cm" and code_system == "icd10cm" and gem:
        return named[1]
    try:
        level = level_of(name, code_system)
    except ParameterError as exc:  # the form's own "<param>: <problem>"
        carry = (f", or set gem: to carry it into ICD-10-CM ({CARRY})"
                 if named[0] == "icd9cm" else "")
        raise ValueError(f"utility_policy: {exc.problem}{carry}") from None
    if level is None and code_system != "icd9cm":
        raise ValueError(f"utility_policy: {name} lists icd9cm codes; the release's claims are "
                         f"{code_system}: name a level policy of their system "
                         f"({code_system[:-2]}-level-1/2/3)")
    return level


#: where the refusal of an ICD-9-CM level on ICD-10-CM claims points the user
CARRY = f"the project ships CMS's GEM as {FORWARD_GEM}"

STEPS = ("generalize",)


def _records(run) -> pd.DataFrame:
    return (pd.read_parquet(run.path(staging.CLAIMS), columns=["patient_id", "code"])
            .drop_duplicates(ignore_index=True))


def utility_policy(name: str, codes, code_system: str = "icd9cm",
                   gem: str | None = None) -> object:
    """The utility policy ``name`` over ``codes`` of ``code_system`` (an
    ICD-9-CM level on ICD-10-CM claims carried through ``gem``)."""
    level = policy_system(name, code_system, gem)
    if level is not None:
        from anonymizers.level_policies import level_policy

        return level_policy(name, codes, code_system, gem, how=f"set gem: ({CARRY})")
    from anonymizers.ugaclip import load_utility_policy

    return load_utility_policy(name, strip_dots=True)


def _visits(run) -> pd.DataFrame:
    return (pd.read_parquet(run.path(staging.CLAIMS), columns=["patient_id", "claim_id", "code"])
            .rename(columns={"claim_id": "visit_id"}))


def _anonymize(records: pd.DataFrame, constraints, params):
    from anonymizers.ugaclip import UGACLIPConfig, ugaclip

    system = params.get("code_system", "icd9cm")
    return ugaclip(records, constraints,
                   utility_policy(params["utility_policy"], records["code"].unique(), system,
                                  params.get("gem")),
                   UGACLIPConfig(k=params["k"], seed=params["seed"], code_system=system,
                                 pseudonym_key=pseudonym_key(),
                                 **{n: params[n] for n in SEARCH_FIELDS if n in params}))
    # IL weights: the system's tree


def _suppressed_share(result, records: pd.DataFrame) -> float:
    return result.metrics.get("suppressed_occurrences", 0) / max(len(records), 1)




#: UGACLIPConfig's opt-in deviations from Algorithm 2 (docs/methods/ugaclip.md), in words
DEVIATION_WORDS = {
    "realise_plan": "the plan's codes suppressed before Algorithm 2, which then only generalizes",
    "search_moves": "moves of a local search over the suppressed codes after Algorithm 2"}


def _deviation_metrics(params) -> dict:
    """``deviations_from_paper`` when the run uses ``realise_plan`` or
    ``search_moves``; a plan that only guides line 17's pick is a reading
    of that line (docs/methods/ugaclip.md#ugaclip-plan), not a deviation."""
    used = {"realise_plan": bool(params.get("realise_plan", False)),
            "search_moves": int(params.get("search_moves", 0))}
    return utility_summary.deviation_metric(used, DEVIATION_WORDS)


def generalize(run, params) -> dict:
    """UGACLIP on the run's patients, or, with published releases, on the
    patients not published yet (``deid.append_only``)."""
    records = _records(run)
    policy = run.read_json(staging.POLICY)
    plan = append_only.begin(run, records, params)
    if plan is None:
        metrics = {**_publish(run, records, policy["constraints"], params),
                   **_deviation_metrics(params)}
        run.write_json(staging.METHOD_METRICS, metrics)
        return metrics
    new = _published_records(run)
    own = {**policy, "constraints": []}
    if new.empty:  # held back: nothing new; the carried rows are the release
        run.write_json(staging.UGACLIP, {"k": params["k"], "items": [], "suppressed": [],
                                         "records": [], "metrics": {}})
        metrics = {"n_records": 0, "suppressed_share": 0.0, "suppressed_occurrences": 0,
                   "suppressed_codes": 0, "largest_item": 0, "n_generalized_items": 0,
                   append_only.NOTHING_NEW: True}
    else:
        from anonymizers.ppe import PPEConfig, extract_policy

        visits = _visits(run)
        own = extract_policy(visits[visits["patient_id"].isin(new["patient_id"])],
                             PPEConfig(k=params["k"], filter=policy["filter"])).to_dict()
        metrics = _publish(run, new, own["constraints"], params)
    run.write_json(staging.NEW_POLICY, own)
    metrics = {**_with_successive(run, params, records, policy, metrics, plan),
               **_deviation_metrics(params)}
    run.write_json(staging.METHOD_METRICS, metrics)
    return metrics


def _publish(run, records: pd.DataFrame, constraints, params) -> dict:
    result = _anonymize(records, constraints, params)
    run.write_json(staging.UGACLIP, result.to_dict())
    metrics = run.small(result.metrics)
    metrics["suppressed_share"] = _suppressed_share(result, records)
    used = result.metrics.get("utility_constraints") or {}
    if used.get("n_present"):  # no constraint among the data's codes: nothing to share
        metrics["utility_constraints_satisfied_share"] = used["n_satisfied"] / used["n_present"]
    return {**metrics, **_plan_scalars(result.metrics.get("plan"))}


def _plan_scalars(plan: dict | None) -> dict:
    """The plan's budget and whether it was met on work alone, as the audit's
    scalar metrics (``run.small`` drops the nested ``plan``): a planned
    release is reproducible on another host only when ``plan_deterministic``."""
    if not plan or "budget" not in plan:
        return {}
    budget = plan["budget"]
    return {"plan_deterministic": bool(plan["deterministic"]), "plan_realised": plan["realised"],
            "plan_nodes": budget["nodes"], "plan_rounds": budget["rounds"],
            "plan_seconds": budget["seconds"], "plan_bound": plan["bound"]}


def _with_successive(run, params, records, policy, metrics, plan) -> dict:
    """The new publication's metrics, the plan's, and the utility of the
    release without the defence beside it (an independent run over the
    whole cohort)."""
    without = _anonymize(records, policy["constraints"], params)
    earlier = history.earlier_inputs(run.release, history.published(run.release, run.run_id))
    key = pseudonym_key()
    published = [e["truth"] for e in earlier if "truth" in e]
    published.append(_linked(_published_records(run), key))
    cover = coverage(_linked(records, key), published)
    return {**metrics, **append_only.metrics_of(plan), **cover,
            "suppressed_share_without_defence": _suppressed_share(without, records),
            "n_records_without_defence": int(without.metrics["n_records"])}


def coverage(current: pd.DataFrame, published: list) -> dict:
    from anonymizers.successive.kanon import coverage as pairs_carried

    return {k: v for k, v in pairs_carried(current, published).items()
            if k in ("published_share", "stale_pairs")}


def _linked(frame: pd.DataFrame, key: bytes) -> pd.DataFrame:
    return frame.assign(patient_id=history.link(frame["patient_id"].astype(str), key))


def _published_records(run) -> pd.DataFrame:
    """The records this run publishes: every patient's, or an append-only
    run's new patients'."""
    records = _records(run)
    return records[records["patient_id"].astype(str).isin(
        set(append_only.published_ids(run, records["patient_id"])))].reset_index(drop=True)


def _constraints(run) -> list:
    """The privacy policy the run's UGACLIP protected."""
    name = staging.NEW_POLICY if append_only.staged(run) is not None else staging.POLICY
    return run.read_json(name)["constraints"]


def _new_tables(run, first_item: int = 0) -> dict[str, pd.DataFrame]:
    """This run's rows: items numbered from ``first_item``, pseudonyms with
    the publication's prefix (``deid.append_only``)."""
    release, prefix = run.read_json(staging.UGACLIP), append_only.prefix(run)
    items = pd.DataFrame([(first_item + i, c) for i, item in enumerate(release["items"])
                          for c in item], columns=["item_id", "code"])
    index = {tuple(item): first_item + i for i, item in enumerate(release["items"])}
    held = pd.DataFrame([(prefix + r["patient_id"], index[tuple(item)])
                         for r in release["records"] for item in r["items"]],
                        columns=["patient_pseudonym", "item_id"])
    return {"ugaclip_items": items.astype({"item_id": "int64", "code": object}),
            "ugaclip_records": held.astype({"patient_pseudonym": object, "item_id": "int64"})}


def _own_tables(run) -> dict[str, pd.DataFrame]:
    """This run's rows, its items numbered after the carried ones."""
    carried = append_only.carried(run, "ugaclip_items")
    first = 0 if carried is None or carried.empty else int(carried["item_id"].max()) + 1
    return _new_tables(run, first)


def _tables(run) -> dict[str, pd.DataFrame]:
    """The release tables: an append-only run's carried rows, then its own."""
    return append_only.tables(run, _own_tables(run))


def state_parts(run) -> dict[str, pd.DataFrame]:
    """What the next runs need (``deid.append_only``), stored with the load."""
    return append_only.state_parts(run, _records(run)["patient_id"], _own_tables(run))


def verify(run, params) -> list[dict]:
    """UGACLIP's verifier on what this run publishes, under the policy it
    protected; for an append-only run also PPE's verifier on that policy
    and the carried rows' check."""
    from anonymizers.verify.ppe import verify_policy
    from anonymizers.verify.ugaclip import verify_release

    new, out = _published_records(run), append_only.verdict(run)
    if append_only.staged(run) is not None:
        if new.empty:
            return out
        own, visits = run.read_json(staging.NEW_POLICY), _visits(run)
        out.append(verify_policy(visits[visits["patient_id"].isin(new["patient_id"])],
                                 own["constraints"], own["k"], own["filter"]).as_dict())
    return [verify_release(new, run.read_json(staging.UGACLIP), _constraints(run),
                           params["k"]).as_dict(), *out]


def gates(run, params, source) -> list:
    import great_expectations as gx

    tables = _tables(run)
    held = tables["ugaclip_records"]
    E = gx.expectations
    return [
        ("items", tables["ugaclip_items"], [
            E.ExpectTableColumnsToMatchOrderedList(column_list=["item_id", "code"]),
            E.ExpectColumnValuesToBeInSet(column="code", value_set=_vocabulary(run, source)),
            E.ExpectColumnValuesToNotBeNull(column="item_id")]),
        ("records", held, [
            E.ExpectTableColumnsToMatchOrderedList(column_list=["patient_pseudonym", "item_id"]),
            E.ExpectColumnValuesToNotBeInSet(column="patient_pseudonym",
                                             value_set=list(source.patients)),
            E.ExpectColumnValuesToNotMatchRegex(column="patient_pseudonym",
                                                regex=validation.DATE_LIKE),
            E.ExpectColumnValuesToBeInSet(column="item_id",
                                          value_set=sorted(set(tables["ugaclip_items"]["item_id"])))]),
    ]


def _vocabulary(run, source) -> list:
    """The run's codes, and the carried items' (a patient who left may hold
    codes no current patient holds)."""
    carried = append_only.carried(run, "ugaclip_items")
    return list(source.codes) if carried is None else sorted(set(source.codes)
                                                               | set(carried["code"]))


def history_inputs(run, params, key: bytes) -> dict:
    """What the cross-release verifier (``deid.cross_release``) reads of this
    run: the release's items and suppressed codes, the records of the
    patients it publishes (linked; with their visits, numbered within each
    patient, under a single-visit policy: the adversary knows one claim's
    codes), and the policy they were protected under."""
    doc, policy = run.read_json(staging.UGACLIP), run.read_json(staging.POLICY)
    truth = _published_records(run)
    if policy["filter"] == "single-visit":
        visits = _visits(run)
        truth = visits[visits["patient_id"].isin(truth["patient_id"])].drop_duplicates()
        truth = truth.assign(visit_id=truth.groupby("patient_id")["visit_id"].transform(
            lambda v: pd.factorize(v)[0]))[["patient_id", "visit_id", "code"]]
    return {"release": {"items": doc["items"], "suppressed": doc["suppressed"]},
            "truth": _linked(truth.reset_index(drop=True), key),
            "policy": {"constraints": _constraints(run)}}


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    return _tables(run)


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    release = run.read_json(staging.UGACLIP)
    sizes = [len(i) for i in release["items"]]
    fig, ax = plt.subplots(figsize=(6, 3))
    if sizes:
        ax.hist(sizes, bins=range(1, max(sizes) + 2), align="left", rwidth=0.8, log=True)
    ax.set_xlabel("original codes an item stands for")
    ax.set_ylabel("items")
    ax.set_title(f"Generalized items; {len(release['suppressed'])} codes suppressed")
    return [("Sizes of the anonymized items (1 = released as is)", fig)]
