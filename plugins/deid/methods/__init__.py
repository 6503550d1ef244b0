"""The release methods the DAGs can run, and the parameters of each.

Each method module defines:
  TITLE             the name shown in the trigger form's section
  PARAMS            {name: JSON schema with default, title, description}
  STEPS             names of the module's step functions, in order; each is
                    fn(run, params) -> small dict, and one DAG task
  MAPPED            optional {step: source step}: the step runs once per item
                    of the list of batches the source step returned, as
                    fn(run, params, batch) (a mapped task in the DAG)
  AFTER             optional {step: earlier step}: the step waits for that step
                    instead of the one before it; validate waits for every
                    step no other step waits for
  verify(run, params) -> list of verdict dicts (the independent verifiers)
  gates(run, params, claims) -> list of (table, frame, expectations)
  release_tables(run, params, token_key) -> {block: frame}  (sql/release_tables.sql blocks)
  restricted(run, params) -> dict for the restricted schema
  metrics(run) -> the figures for the audit row
  figures(run, params) -> [(caption, matplotlib figure)] for the report
  check(params)     optional: raise ValueError('<param>: <problem>') across parameters
"""

from __future__ import annotations

import jsonschema
from anonymizers.codesystems import CODE_SYSTEMS, ICD9CM

from deid import staging
from deid.methods import disassociation, form, gccens, hhp, lda, medco, ugaclip

METHODS = {"medco": medco, "ugaclip": ugaclip, "disassociation": disassociation,
           "gccens": gccens, "lda": lda, "hhp": hhp}

# Every method's own fields (k and seed among them, each with its method's
# declared bounds) are in its module's PARAMS (deid.methods.form); these are
# the settings all release DAGs share.
COMMON_PARAMS = {
    # the attacker knowledge of the PPE constraints (anonymizers.ppe) every method protects
    **form.params("ppe", {"ppe_filter": "filter"}),
    "screen_batch_members": {
        "type": "integer", "minimum": 1, "maximum": 10_000_000, "default": 20_000,
        "title": "Members per screening task", "description": "Releases with a screening "
        "policy screen the members in ranges of this size, one task each."},
    # set by the release file's top-level ``code_system`` field, never by a trigger
    # (deid.releases, deid.overrides); a method step reads params["code_system"]
    "code_system": {"enum": list(CODE_SYSTEMS), "default": ICD9CM,
                    "title": "Code system", "description": "The diagnosis code system of "
                    "the source claims (ICD-9-CM or ICD-10-CM); the extract checks every "
                    "code against it."},
    # set by the release file's top-level ``gem`` field (deid.releases), like code_system
    "gem": {"type": ["string", "null"], "default": None,
            "title": "GEM", "description": "CMS's ICD-9-CM -> ICD-10-CM GEM the release maps "
            "mixed claims or carries an ICD-9-CM level utility policy through; none: not used."},
}
#: common parameters only the release file sets: a file writes them as top-level
#: fields, and no ``overrides:`` rule lets a trigger change them
FILE_ONLY = frozenset({"code_system", "gem"})


# Which way each protective setting is stronger: a trigger may move it only
# that way unless the release file allows more (deid.overrides).  "larger",
# "smaller" (None, where allowed, is the weakest: no bound), an ordered tuple
# weakest .. strongest, or "narrower" for a SQL filter (ANDed with the file's).
STRONGER = {
    "k": "larger", "m": "larger", "min_anonymity_set": "larger",
    "p_max": "larger",                       # HHP: the adversary knows more values
    "cap": "smaller", "max_sup": "smaller",
    "ppe_filter": ("single-visit", "all-visits"),   # all-visits: the attacker knows more
    "hhp_screen_all_diagnoses": (False, True),      # True screens more members out
    "scope": "narrower", "gccens_sample": "narrower",
    "successive_defence": (False, True),            # on: releases stay safe together
}
# Settings the release does not depend on (tested): a trigger may set them freely.
FREE = frozenset({"screen_batch_members", "batch_size", "lattice_parts_per_task"})

# The figures each method measures that a release file may bound with a
# ``max_<metric>`` / ``min_<metric>`` threshold (tests/dags/test_release_run.py
# checks that every name here is in the method's metrics).
METRICS = {
    "medco": ("real_ratio", "theoretical_ratio", "real_over_theoretical",
              "released_over_real_patients",
              "dummies_per_real_patient",
              "real_patients_without_dummy", "n_dummies", "n_released_patients"),
    "ugaclip": ("suppressed_share", "utility_constraints_satisfied_share", "suppressed_codes",
                "suppressed_occurrences",
                "largest_item", "n_generalized_items"),
    "disassociation": ("are_w2", "mre_share_in_-5_5", "mre_share_beyond_10", "suppressed_records",
                       "item_chunk_occurrence_share", "cluster_size_min", "n_clusters",
                       "are_w1", "mre_share_in_-5_5_single_codes",
                       "mre_share_in_-2.5_2.5_single_codes", "mre_share_in_-2.5_2.5",
                       "held_back", "retained_left"),
    "gccens": ("cul_mean", "cul_median", "cul_std", "cul_total_mean", "cul_total_median",
               "records_modified", "below_k_released", "uniquely_identifiable_released",
               "min_dis_released", "instances_censored_by_caps", "instances_censored_by_loop"),
    "lda": ("ilm", "alm", "avg_re", "suppressed_pairs", "min_cluster_size", "n_clusters",
            "icd_kept_3digit_or_finer", "age_kept_16year_or_finer"),
    "hhp": ("risk", "risk_ci_halfwidth", "information_loss", "members_removed_by_screening",
            "members_truncated_share", "claims_kept_share"),
}
# The figures above measured as a share from 0 to 1, and those in percent (the
# thesis quotes LDA's levels so): a threshold outside its figure's range, or a
# share written as a percent figure's limit (0.3 for 30 %), would never bind.
SHARE_METRICS = frozenset({
    "suppressed_share", "mre_share_in_-5_5", "mre_share_beyond_10",
    "item_chunk_occurrence_share", "mre_share_in_-5_5_single_codes",
    "mre_share_in_-2.5_2.5_single_codes", "mre_share_in_-2.5_2.5", "records_modified",
    "cul_mean", "cul_median", "cul_total_mean", "cul_total_median", "ilm", "alm", "risk",
    "utility_constraints_satisfied_share", "members_truncated_share", "claims_kept_share"})
PERCENT_METRICS = frozenset({"icd_kept_3digit_or_finer", "age_kept_16year_or_finer"})
# ratios never below 1 (released over real, real over theoretical)
RATIO_METRICS = frozenset({"real_ratio", "theoretical_ratio", "real_over_theoretical",
                           "released_over_real_patients"})


def param_schemas(method: str) -> dict:
    return {**COMMON_PARAMS, **METHODS[method].PARAMS}


def check_params(method: str, params: dict) -> None:
    """Raise ValueError('<param>: <problem>') for an unknown or invalid parameter."""
    schemas = param_schemas(method)
    for name, value in params.items():
        if name not in schemas:
            raise ValueError(f"{name}: not a parameter of {method}; known: {sorted(schemas)}")
        schema = {k: v for k, v in schemas[name].items()
                  if k not in ("default", "title", "description")}
        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as exc:
            raise ValueError(f"{name}: {exc.message}") from None
    if hasattr(METHODS[method], "check"):
        METHODS[method].check({**{n: s["default"] for n, s in schemas.items()}, **params})


def restricted(method: str, run, params: dict, token_key: str) -> dict:
    """What the method keeps in the restricted schema (nothing by default)."""
    module = METHODS[method]
    return module.restricted(run, params, token_key) if hasattr(module, "restricted") else {}


def metrics(run) -> dict:
    """The chosen method's figures, as its steps wrote them to staging."""
    return run.read_json(staging.METHOD_METRICS)
