"""LDA (seed 002, Chapter IV): k-anonymity for (ICD, age) trajectories by
MDAV clustering and A-GS (or Baseline) alignment with generalization and
suppression.

Each extracted row is one (code, age at service) pair of a claim, and a
patient's trajectory holds each (code, age) pair once (the reading of
Table 3 in docs/methods/lda.md#longitudinal-trajectories: a code billed on several
claims at one age is one pair); with ``lda_codes`` only those 3-digit
categories' codes are kept, which bounds the
trajectories the way the thesis' 50-code datasets do (LDA's clustering costs
about n^2/k alignments).  The service date is not passed on: the thesis'
trajectory is a multiset of (ICD, Age) pairs ordered by age (IV.2.2), so the
pairs of one age are ordered by code, which lets the same codes of two
patients at one age line up in A-GS; ordered by claim date they cross, and on
DE-SynPUF A-GS kept a fraction of the codes at 3-digit or finer
(benchmarks/lda.md).  The verifier gets the same pairs, so it checks that
order.

Successive releases (issue 25): a release with published releases is
append-only (``deid.append_only``): a run aligns only the patients not
published yet and carries the earlier trajectories; beside it the metrics
give what an independent run over the whole cohort would have kept
(``*_without_defence``) and how much of the current pairs the publications
carry (``published_share``, ``stale_pairs``).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from anonymizers.codesystems import CATEGORY_PATTERN
from deid import append_only, history, staging, utility_summary, validation
from deid.methods import form
from deid.secret import pseudonym_key

TITLE = "LDA (longitudinal ICD-age trajectories)"
PARAMS = {
    # the form's one weight: w_Age = 1 - w_ICD (Definition 4's pair summing to 1)
    **form.params("lda", ["k", "w_icd", "alignment", "icd_domain", "member_weighted",
                          "refine_rounds", "shared_code_bonus", "age_block", "lookahead",
                          "seed"],
                  limits={"w_icd": {"maximum": 1}}),
    "lda_codes": {"type": "array", "items": {"type": "string",
                                             "pattern": CATEGORY_PATTERN},
                  "default": [], "title": "Codes in the trajectories (3-digit categories)",
                  "description": "Keep only these ICD-9 categories' codes; empty: all codes."},
    "successive_defence": {
        "type": "boolean", "default": True, "title": "Append-only successive releases",
        "description": "With published releases, publish only the patients not published "
                       "yet (fewer than k are held back) and keep the earlier trajectories; "
                       "off: anonymize the whole cohort again, which validate refuses when "
                       "the combination with the earlier releases breaks k-anonymity."},
}
STEPS = ("anonymize",)
HISTOGRAMS = ("icd_levels", "age_levels", "ilm_by_level", "alm_by_level")


def check(params) -> None:
    """The opt-in deviations must make sense together (``LDAConfig``'s own
    checks, e.g. ``age_block`` needs ``shared_code_bonus``), before any run."""
    from anonymizers.errors import ParameterError
    from anonymizers.longitudinal import LDAConfig

    try:
        LDAConfig(k=params["k"], shared_code_bonus=params.get("shared_code_bonus", 0.0),
                  age_block=params.get("age_block", 0), lookahead=params.get("lookahead", 0))
    except ParameterError as exc:
        raise ValueError(f"{exc.field}: {exc.problem}") from None


def _pairs(run, params) -> pd.DataFrame:
    claims = pd.read_parquet(run.path(staging.CLAIMS), columns=[
        "patient_id", "code", "age_at_service"])
    categories = params.get("lda_codes") or []
    if categories:
        from anonymizers.codesystems import category

        prefix = category(claims["code"], params.get("code_system", "icd9cm"))
        claims = claims[prefix.isin(categories)]
    pairs = claims.rename(columns={"age_at_service": "age"})
    return pairs.drop_duplicates(["patient_id", "code", "age"]).reset_index(drop=True)


def _lda(pairs: pd.DataFrame, params):
    from anonymizers.longitudinal import LDAConfig, lda
    from anonymizers.longitudinal.config import OPT_IN

    return lda(pairs, LDAConfig(
        k=params["k"], w_icd=params["w_icd"], w_age=1 - params["w_icd"],
        alignment=params["alignment"], seed=params["seed"],
        icd_domain=params.get("icd_domain", "data"),
        **{name: params[name] for name in OPT_IN if name in params},
        pseudonym_key=pseudonym_key(),
        code_system=params.get("code_system", "icd9cm")))


#: LDAConfig's opt-in deviations from the thesis' algorithm (docs/methods/lda.md), in words
DEVIATION_WORDS = {
    "member_weighted": "A-GS counts the cluster's loss once per member, Algorithm 3 once",
    "refine_rounds": "rounds of moves and swaps between clusters after MDAV, not in the thesis' IV.3.2",
    "shared_code_bonus": "cluster growth credits each code a candidate shares with the "
                         "cluster at 3-digit level, IV.3.2 ranks by A-GS cost alone",
    "age_block": "cluster growth charges the shared-code bonus for a candidate whose ages "
                 "leave the cluster's age block, IV.3.2 ranks by A-GS cost alone",
    "lookahead": "cluster growth aligns the cheapest candidates and adds the one keeping the "
                 "most codes and ages, from the longest trajectory left; IV.3.2 adds the "
                 "cheapest, from MDAV's farthest"}


def deviations(params) -> dict:
    """The deviations from the thesis' algorithm a run uses (``LDAConfig``'s
    ``OPT_IN`` fields away from their defaults): each name -> its value."""
    from anonymizers.longitudinal.config import OPT_IN, LDAConfig

    defaults = {f.name: f.default for f in dataclasses.fields(LDAConfig) if f.name in OPT_IN}
    used = {name: type(default)(params.get(name, default)) for name, default in defaults.items()}
    return {name: value for name, value in used.items() if value}


def _deviation_metrics(params) -> dict:
    """``deviations_from_paper`` (``deid.utility_summary.DEVIATIONS``) when
    the run uses any: each named with its value and what it changes."""
    return utility_summary.deviation_metric(deviations(params), DEVIATION_WORDS)


#: the utility figures reported beside the release without the defence
COMPARED = ("ilm", "suppressed_pairs", "icd_kept_3digit_or_finer", "age_kept_16year_or_finer")


def anonymize(run, params) -> dict:
    """LDA on the run's trajectories, or, with published releases, on the
    patients not published yet (``deid.append_only``)."""
    pairs = _pairs(run, params)
    plan = append_only.begin(run, pairs, params)
    new = pairs if plan is None else plan.rows
    result = None
    if new.empty:  # held back: nothing new; the carried trajectories are the release
        pd.DataFrame({c: pd.Series(dtype=t) for c, t in RELEASED.items()}).to_parquet(
            run.path(staging.RELEASED), index=False)
        pd.DataFrame({"pseudonym": pd.Series(dtype=object), "patient_id": pd.Series(
            dtype=object)}).to_parquet(run.path(staging.KEY), index=False)
        run.write_json(staging.HISTOGRAMS, {})
        metrics = {"n_pairs": 0, "n_records": 0, "ilm": 0.0, "alm": 0.0,  # nothing lost
                   "suppressed_pairs": 0, append_only.NOTHING_NEW: plan is not None}
    else:
        result = _lda(new, params)
        result.records.to_parquet(run.path(staging.RELEASED), index=False)
        result.pseudonym_map.to_parquet(run.path(staging.KEY), index=False)
        run.write_json(staging.HISTOGRAMS, {k: result.metrics[k] for k in HISTOGRAMS})
        metrics = run.small(result.metrics)
    if plan is not None:
        whole = result if result is not None and new.equals(pairs) else None
        metrics = {**metrics, **append_only.metrics_of(plan),
                   **_beside_without_defence(run, params, pairs, whole)}
    metrics = {**metrics, **_deviation_metrics(params)}
    run.write_json(staging.METHOD_METRICS, metrics)
    return metrics


RELEASED = {"patient_id": object, "position": "int64", "code": object, "age": object}


def _beside_without_defence(run, params, pairs: pd.DataFrame, whole=None) -> dict:
    """An independent run over the whole cohort's utility, and how much of
    the current (patient, code) pairs the publications carry.

    The independent run uses the run's own parameters, opt-in deviations
    included: the figures beside the release's must differ by the defence
    alone, and the deviations move them (on the release's 393 DE-SynPUF
    trajectories ICD values kept at 3-digit or finer 27.6 % at the thesis
    setting, 37.0 % with the release file's, in about 14 s against 2 s;
    benchmarks/results/lda_release_file.json).  So it is LDA over the whole
    cohort again, skipped only where its result is already known: ``whole``,
    the run's own result when every patient of the cohort is new (the same
    pairs and parameters, the same release)."""
    from anonymizers.successive.kanon import coverage

    without = (whole if whole is not None else _lda(pairs, params)).metrics
    key = pseudonym_key()
    earlier = history.earlier_inputs(run.release, history.published(run.release, run.run_id))
    published = [e["truth"] for e in earlier if "truth" in e] + [_linked_pairs(run, params, key)]
    cover = coverage(_linked(pairs, key), published)
    return {"published_share": cover["published_share"], "stale_pairs": cover["stale_pairs"],
            **{f"{m}_without_defence": without[m] for m in COMPARED if m in without}}


def _linked(frame: pd.DataFrame, key: bytes) -> pd.DataFrame:
    return frame.assign(patient_id=history.link(frame["patient_id"].astype(str), key))


def _published_pairs(run, params) -> pd.DataFrame:
    """The pairs this run publishes: every patient's, or an append-only
    run's new patients'."""
    pairs = _pairs(run, params)
    ids = set(append_only.published_ids(run, pairs["patient_id"]))
    return pairs[pairs["patient_id"].astype(str).isin(ids)].reset_index(drop=True)


def _linked_pairs(run, params, key: bytes) -> pd.DataFrame:
    return _linked(_published_pairs(run, params)[["patient_id", "code", "age"]], key)


def verify(run, params) -> list[dict]:
    """LDA's verifier on what this run publishes (an append-only run's new
    patients), and the carried rows' check."""
    from anonymizers.verify.longitudinal import verify_lda

    out = append_only.verdict(run)
    new = _published_pairs(run, params)
    if append_only.staged(run) is not None and new.empty:
        return out
    return [verify_lda(pd.read_parquet(run.path(staging.RELEASED)),
                       pd.read_parquet(run.path(staging.KEY)), new, params["k"],
                       code_system=params.get("code_system", "icd9cm")).as_dict(), *out]


def history_inputs(run, params, key: bytes) -> dict:
    """What the cross-release verifier (``deid.cross_release``) reads of this
    run: its trajectories, which pseudonym is which patient and the pairs
    they were made from (patients by keyed link)."""
    released = pd.read_parquet(run.path(staging.RELEASED)).sort_values(
        ["patient_id", "position"], kind="stable")
    records = [{"patient_id": p, "trajectory": [[str(c), str(a)] for c, a in
                                                zip(g["code"], g["age"])]}
               for p, g in released.groupby("patient_id", sort=False)]
    return {"release": {"records": records},
            "map": _linked(pd.read_parquet(run.path(staging.KEY)), key),
            "truth": _linked_pairs(run, params, key)}


def _new_rows(run) -> pd.DataFrame:
    released = pd.read_parquet(run.path(staging.RELEASED))
    released = released.assign(patient_id=append_only.prefix(run) + released["patient_id"])
    return released.rename(columns={"patient_id": "patient_pseudonym"}).astype(
        {"patient_pseudonym": object, "position": "int64", "code": object, "age": object})


def state_parts(run) -> dict[str, pd.DataFrame]:
    """What the next runs need (``deid.append_only``), stored with the load."""
    published = pd.read_parquet(run.path(staging.KEY))["patient_id"]  # whom it released
    return append_only.state_parts(run, published, {"lda_trajectories": _new_rows(run)})


def gates(run, params, source) -> list:
    import great_expectations as gx

    released = pd.read_parquet(run.path(staging.RELEASED))
    E = gx.expectations
    return [("released", released, [
        E.ExpectTableColumnsToMatchOrderedList(column_list=["patient_id", "position", "code",
                                                            "age"]),
        E.ExpectColumnValuesToNotBeNull(column="code"),
        E.ExpectColumnValuesToNotBeInSet(column="patient_id",
                                         value_set=list(source.patients)),
        E.ExpectColumnValuesToNotMatchRegex(column="patient_id", regex=validation.DATE_LIKE),
        E.ExpectColumnValuesToMatchRegex(column="age", regex=r"^(\*|\d{1,3}(-\d{1,3})?)$")])]


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    """The trajectories: an append-only run's carried rows, then its own."""
    return append_only.tables(run, {"lda_trajectories": _new_rows(run)})


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    out = []
    for name, hist in run.read_json(staging.HISTOGRAMS).items():
        fig, ax = plt.subplots(figsize=(7, 3))
        labels = list(hist.keys()) if isinstance(hist, dict) else list(range(len(hist)))
        values = list(hist.values()) if isinstance(hist, dict) else list(hist)
        ax.bar(range(len(values)), values)
        ax.set_xticks(range(len(values)), labels, rotation=30, ha="right")
        ax.set_title(name.replace("_", " "))
        what = ("Share of values per generalization level" if name.endswith("levels")
                else "ILM/ALM by the level values were released at")
        out.append((f"{what}: {name} (Figs. 13-14)", fig))
    return out
