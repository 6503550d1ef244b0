"""A release's utility beside the paper's, declared in one place per method.

``FIGURES[method]`` lists the method's headline utility figures: which
metric key(s) each reads (``deid.methods.<method>.metrics`` writes them to
``method_metrics.json``), its name in words, the paper's figure and where the
paper gives it.  ``LABELS`` names every other metric key in words.  The
report (``deid.report``) and the Releases view (``deid.releases_view``) read
both from here and nowhere else.

The utility verdict of a release, most severe first:

- ``below threshold``: a ``min_``/``max_`` threshold of the release file on
  a utility metric fails (``steps.validate`` already turns it into a verdict
  whose property starts with ``threshold`` and fails the run before load;
  thresholds on a risk figure count with the privacy verdict instead);
- ``low utility``: a figure is worse than its floor.  The floor rule: for a
  figure where higher is better, half the paper's figure; where lower is
  better, twice the paper's figure, or, for a loss that cannot exceed 1 and
  whose double would reach 1, half-way from the paper's figure to 1.  Where
  the paper publishes no number (UGACLIP's suppression is "small", SI Fig.
  S1), the floor is declared beside the figure: the release keeps at least
  half of what the figure counts (at most half suppressed, at least half kept);
- ``below the paper``: a figure is worse than the paper's but not than its floor;
- ``within the floor``: every measured figure is within its floor and none
  has a published number to meet;
- ``meets the paper``: every measured figure with a published number is at
  least as good as it (figures without one are within their floor);
- ``not measured``: none of the method's figures is in the metrics.

A figure whose key is missing (or not a finite number) is "not measured":
never a zero, never a pass.  Figures declared with a key no method writes
yet are listed in ``expected_keys()``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from deid import staging

HIGHER, LOWER, SHOWN = "higher", "lower", ""
NOT_MEASURED = "not measured"
SEVERITY = ("below threshold", "low utility", "below the paper", "within the floor",
            "meets the paper", NOT_MEASURED)

UGACLIP = "Loukides et al., PNAS 2010, SI"
DIS = "Loukides et al., J Biomed Inform 2014"
THESIS = "Tamersoy, MSc thesis 2011"
MEDCO = "Zoveralli, Dummy generation for MedCo"
HHP = "El Emam et al., JMIR 2012, Multimedia Appendix"


def ratio(a: float, b: float) -> float:
    return a / b


def excess(a: float, b: float) -> float:
    """How far ``a`` is above ``b``, as a share of ``b``."""
    return a / b - 1


def percent_sum(*levels: float) -> float:
    """LDA's level shares are in percent (``kept_at_or_below``): their sum as a share."""
    return sum(levels) / 100


@dataclass(frozen=True)
class Figure:
    """One utility figure and the paper's.  ``combine`` makes the figure of
    the keys' values (default: the one key's value); ``better`` is HIGHER,
    LOWER or SHOWN (no verdict); ``bounded``: a loss in [0, 1];
    ``unpublished_floor``: the floor where the paper gives no number."""

    name: str
    keys: tuple[str, ...]
    paper: float | None
    paper_text: str
    reference: str
    better: str = HIGHER
    unit: str = "share"
    combine: Callable[..., float] | None = None
    bounded: bool = False
    unpublished_floor: float | None = None

    @property
    def floor(self) -> float | None:
        if self.better == SHOWN:
            return None
        if self.paper is None:
            return self.unpublished_floor
        if self.better == HIGHER:
            return self.paper / 2
        doubled = 2 * self.paper
        return (self.paper + 1) / 2 if self.bounded and doubled >= 1 else doubled

    def value(self, metrics: dict) -> float | None:
        values = [lookup(metrics, k) for k in self.keys]
        if not all(_number(v) for v in values):
            return None
        try:
            out = self.combine(*values) if self.combine else values[0]
        except ZeroDivisionError:
            return None
        return float(out) if _number(out) else None

    def worse(self, value: float, than: float) -> bool:
        return value < than if self.better == HIGHER else value > than

    def status(self, value: float | None) -> str:
        if value is None:
            return NOT_MEASURED
        if self.better == SHOWN:
            return "for reference"
        if self.floor is not None and self.worse(value, self.floor):
            return "low utility"
        if self.paper is None:
            return "within the floor"
        return "below the paper" if self.worse(value, self.paper) else "meets the paper"

    def show(self, value: float | None) -> str:
        return fmt(value, self.unit)


def lookup(metrics: dict, key: str):
    """``metrics[key]``, or for a dotted key ``a.b`` not written flat, ``metrics[a][b]``."""
    if key in metrics or "." not in key:
        return metrics.get(key)
    outer, inner = key.split(".", 1)
    nested = metrics.get(outer)
    return nested.get(inner) if isinstance(nested, dict) else None


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt(value, unit: str = "number") -> str:
    if value is None:
        return NOT_MEASURED
    if unit == "share":
        return f"{100 * value:.3g}%"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


MRE_SHARE = Figure(
    "utility constraints with MRE in [-5%, 5%)", ("mre_share_in_-5_5",), 0.90,
    "90% (level 1 policy; 90% for sim 5 too, Fig. 19)", f"{DIS}, Fig. 18")
FIGURES: dict[str, tuple[Figure, ...]] = {
    "disassociation": (
        MRE_SHARE,
        Figure("single codes with MRE in [-5%, 5%)", ("mre_share_in_-5_5_single_codes",), 0.90,
               "90% of the level 1 constraints (no single-code figure is published; compared "
               "with the constraints')", f"{DIS}, Fig. 18"),
        Figure("utility constraints with MRE off by more than 10%", ("mre_share_beyond_10",),
               0.037, "3.7% in [-24%, -10%) (level 1 policy)", f"{DIS}, Fig. 18",
               better=LOWER, bounded=True),
        Figure("ARE of the W2 workload", ("are_w2",), 0.05,
               "no more than 0.05 for k in [5, 25] (the text does not name Fig. 17's "
               "workload: both are compared with it)", f"{DIS}, Fig. 17", better=LOWER,
               unit="number"),
        Figure("ARE of the W1 workload (1 to 4 codes)", ("are_w1",), 0.05,
               "no more than 0.05 for k in [5, 25]", f"{DIS}, Fig. 17 (W1: Fig. 15)",
               better=LOWER, unit="number"),
    ),
    "ugaclip": (
        Figure("code occurrences suppressed", ("suppressed_share",), None,
               "small, no share published", f"{UGACLIP}, Fig. S1A", better=LOWER,
               bounded=True, unpublished_floor=0.5),
        Figure("distinct codes suppressed", ("suppressed_codes", "n_codes"), None,
               "small, no share published (a domain of thousands of codes)",
               f"{UGACLIP}, Fig. S1B", better=LOWER, combine=ratio, bounded=True,
               unpublished_floor=0.5),
        Figure("utility constraints satisfied", ("utility_constraints_satisfied_share",), None,
               "no share published (Algorithm 2 generalizes within the utility policy)",
               f"{UGACLIP}, Algorithm 2", unpublished_floor=0.5),
        # IL itself underflows on real data (il_total None): its log10 is shown
        Figure("log10 of the information loss IL", ("il_log10_total",), None,
               "log10 0.0034 = -2.47 for one item of the worked example (no release figure)",
               f"{UGACLIP}, Definition 2", better=SHOWN, unit="number"),
    ),
    "lda": (
        Figure("ICD values at the 3-digit level (ICD-10-CM: category) or finer",
               ("icd_kept_3digit_or_finer",), 0.30,
               "more than 30% (D50 Pop, k=5, A-GS)", f"{THESIS}, IV.4.4, Fig. 13",
               combine=percent_sum),
        Figure("ages at the 16-year level or finer", ("age_kept_16year_or_finer",), 0.60,
               "more than 60% (D50 Pop, k=5, A-GS)", f"{THESIS}, IV.4.4, Fig. 13",
               combine=percent_sum),
        Figure("ICD loss ILM", ("ilm",), 0.5, "below 0.5 (D4 Smp)", f"{THESIS}, Fig. 11",
               better=LOWER, unit="number", bounded=True),
        Figure("age loss ALM", ("alm",), 0.5, "below 0.5 (D4 Smp)", f"{THESIS}, Fig. 11",
               better=LOWER, unit="number", bounded=True),
        Figure("AvgRE of (ICD, age) count queries", ("avg_re",), 1.0, "less than 1 for all k",
               f"{THESIS}, IV.4.3, Fig. 12", better=LOWER, unit="number"),
    ),
    "medco": (
        Figure("released code occurrences above the theoretical ratio",
               ("real_ratio", "theoretical_ratio"), 0.10,
               "within 10% (Fig. 7's runs: 8% above, 8.2 vs 7.6, to 74% above)",
               f"{MEDCO}, Fig. 7", better=LOWER, combine=excess),
        Figure("least any release of this data can be above it (code sets duplicated)",
               ("ratio_bound_profiles_duplicated", "theoretical_ratio"), None,
               "a bound computed on this data: not a paper figure, not a verdict",
               f"{MEDCO}, section 3.2", better=SHOWN, combine=excess),
        Figure("released patients per real patient", ("released_over_real_patients",), None,
               "not published", f"{MEDCO}, section 3", better=SHOWN, unit="number"),
    ),
    "gccens": (
        Figure("mean CUL (share of a record's code copies censored)", ("cul_mean",), 0.046,
               "0.046 at k=5, caps 3 (0.080 with caps 4, 0.119 with caps 5, Table 2)",
               f"{THESIS}, III.7.2, Table 1", better=LOWER, unit="number", bounded=True),
        Figure("records modified", ("records_modified",), 0.16, "16% at k=5, caps 3",
               f"{THESIS}, III.7.2", better=LOWER, bounded=True),
        Figure("code copies released (caps included)", ("instances_released",
                                                         "instances_original"), None,
               "not published (the thesis reports CUL after the caps)", f"{THESIS}, III.6",
               combine=ratio, unpublished_floor=0.5),
    ),
    "hhp": (
        Figure("members whose claims are truncated", ("members_truncated_share",), 0.05,
               "5% (claims per member truncated at the 95th percentile)",
               f"{HHP}, section 1", better=LOWER, bounded=True),
        Figure("claims kept after screening and truncation", ("claims_kept_share",), None,
               "not published", f"{HHP}, sections 1-2", unpublished_floor=0.5),
        Figure("information loss of the chosen node", ("information_loss",), None,
               "not published", f"{HHP}, section 5", better=SHOWN, unit="number"),
    ),
}

GUARANTEES = {
    "disassociation": "k^m-anonymity",
    "ugaclip": "k-protection of every privacy constraint",
    "gccens": "k-map",
    "lda": "k-anonymity of the trajectories",
    "medco": "flat code frequencies in every cluster",
    "hhp": "screening, truncation and re-identification risk",
}


def expected_keys() -> dict[str, list[str]]:
    """Per method, the keys its figures read (for the lead to check against
    what ``deid.methods.<method>`` writes)."""
    return {m: sorted({k for f in figs for k in f.keys}) for m, figs in FIGURES.items()}


@dataclass(frozen=True)
class Assessed:
    figure: Figure
    value: float | None
    status: str

    @property
    def phrase(self) -> str:
        f = self.figure
        floor = "" if f.floor is None else f"; low-utility floor {fmt(f.floor, f.unit)}"
        return f"{f.name}: {f.show(self.value)} (paper: {f.paper_text}{floor})"


def assess(method: str, metrics: dict) -> list[Assessed]:
    out = []
    for f in FIGURES.get(method, ()):
        value = f.value(metrics)
        out.append(Assessed(f, value, f.status(value)))
    return out


THRESHOLD = re.compile(r"^threshold (\S+) (<=|>=) (\S+)$")
RISK_WORDS = ("risk", "dis", "below_k", "uniquely", "constraints_satisfied", "unsatisfied")


@dataclass(frozen=True)
class Threshold:
    metric: str
    op: str
    limit: str
    ok: bool
    value: object

    @property
    def utility(self) -> bool:
        """A threshold on a risk figure belongs to the privacy verdict (the
        words of ``steps.RISK_KEYS``)."""
        return not any(w in self.metric for w in RISK_WORDS)

    @property
    def text(self) -> str:
        return (f"{label(self.metric)} {'≤' if self.op == '<=' else '≥'} {self.limit}: "
                f"{'holds' if self.ok else 'FAILS'} ({fmt(self.value)})")


def property_words(prop: str) -> str:
    """A verdict's property, a threshold's metric named in words."""
    m = THRESHOLD.match(prop)
    return f"threshold: {label(m[1])} {'≤' if m[2] == '<=' else '≥'} {m[3]}" if m else prop


def thresholds(verdicts: dict, metrics: dict) -> list[Threshold]:
    out = []
    for v in verdicts.get("verdicts", []):
        m = THRESHOLD.match(v.get("property", ""))
        if m:
            out.append(Threshold(m[1], m[2], m[3], bool(v["ok"]), metrics.get(m[1])))
    return out


def privacy_verdict(method: str, verdicts: dict, metrics: dict) -> tuple[bool, str]:
    """Every verifier verdict, every Great Expectations gate and the
    thresholds on risk figures: all hold, or what failed."""
    utility_props = {f"threshold {t.metric} {t.op} {t.limit}"
                     for t in thresholds(verdicts, metrics) if t.utility}
    bad = [v["property"] for v in verdicts.get("verdicts", [])
           if not v["ok"] and v["property"] not in utility_props]
    bad += [f"{g['table']}.{g['expectation']}" for g in verdicts.get("gates", []) if not g["ok"]]
    guarantee = GUARANTEES.get(method, "the method's guarantee")
    if bad:
        return False, f"{guarantee}: FAILED ({'; '.join(bad[:5])})"
    return True, f"{guarantee} holds (every guarantee and check holds)"


DEVIATIONS = "deviations_from_paper"  # metric key: a method's opt-in deviations, in words


def deviation_metric(used: dict, words: dict) -> dict:
    """``{DEVIATIONS: ...}`` naming each opt-in deviation a run uses (name ->
    value; false or 0 means unused) with what it changes (``words``), or {}
    when it uses none."""
    named = [f"{name} = {str(value).lower()} ({words[name]})"
             for name, value in used.items() if value]
    return {DEVIATIONS: "; ".join(named)} if named else {}


def deviations(metrics: dict) -> str | None:
    """The opt-in deviations from the paper's algorithm a release was made
    with, each named with its value (``metrics[DEVIATIONS]``, written by the
    method, e.g. ``deid.methods.lda``), or None: its utility figures are
    then not the paper's algorithm's, and the report says so beside them."""
    words = metrics.get(DEVIATIONS)
    return words if isinstance(words, str) and words else None


@dataclass(frozen=True)
class UtilityVerdict:
    level: str
    sentence: str
    figures: list[Assessed]
    thresholds: list[Threshold]


def utility_verdict(method: str, metrics: dict, verdicts: dict) -> UtilityVerdict:
    figures = assess(method, metrics)
    limits = [t for t in thresholds(verdicts, metrics) if t.utility]
    failed = [t for t in limits if not t.ok]
    by = {s: [a for a in figures if a.status == s] for s in SEVERITY}
    graded = [a for a in figures if a.status not in (NOT_MEASURED, "for reference")]
    if failed:
        level = "below threshold"
        words = "; ".join(t.text for t in failed)
        low = "; ".join(a.phrase for a in by["low utility"])
        sentence = f"{words}: below threshold" + (f"; {low}: low utility" if low else "")
    elif by["low utility"]:
        level = "low utility"
        sentence = "; ".join(a.phrase for a in by["low utility"]) + ": low utility"
    elif by["below the paper"]:
        level = "below the paper"
        sentence = ("utility below the paper (above the floor): "
                    + "; ".join(a.phrase for a in by["below the paper"]))
    elif graded:
        level = "meets the paper" if by["meets the paper"] else "within the floor"
        unmeasured = len(by[NOT_MEASURED])
        sentence = ((f"utility meets the paper on the {len(by['meets the paper'])} "
                     "figure(s) measured" if by["meets the paper"] else
                     f"utility within the floors on the {len(graded)} figure(s) measured "
                     "(the paper publishes no number to meet)")
                    + (f"; {unmeasured} not measured" if unmeasured else ""))
    else:
        level = NOT_MEASURED
        sentence = "utility not measured (none of the method's figures is in the metrics)"
    if deviations(metrics):
        sentence += (f"; figures of the algorithm with opt-in deviations from the paper: "
                     f"{deviations(metrics)}")
    return UtilityVerdict(level, sentence, figures, limits)


LABELS = {
    # shared
    "k": "k (privacy parameter)", "m": "m (codes an attacker knows)",
    "n_records": "records", "n_codes": "distinct codes", "n_patients": "patients",
    "n_clusters": "clusters", "seed": "seed", "policy_version": "policy version",
    # UGACLIP
    "n_items": "anonymized items", "n_generalized_items": "items generalizing several codes",
    "largest_item": "codes in the largest item", "il_total": "information loss IL (Def. 2)",
    "il_log10_total": "log10 of the information loss IL (Def. 2; IL itself underflows)",
    "suppressed_codes": "distinct codes suppressed",
    "suppressed_occurrences": "code occurrences suppressed",
    "suppressed_share": "share of code occurrences suppressed",
    "unplaced_weight": "weight of codes outside the ICD-9 tree",
    "utility_constraints_satisfied_share": "share of utility constraints satisfied",
    # disassociation
    "cluster_size_min": "smallest cluster", "cluster_size_mean": "mean cluster size",
    "cluster_size_max": "largest cluster", "merged_small_clusters": "small clusters merged",
    "n_record_chunks": "record chunks", "n_joint_clusters": "joint clusters",
    "n_shared_chunks": "shared chunks",
    "item_chunk_occurrence_share": "share of code occurrences in item chunks",
    "codes_with_exact_support": "codes released with their exact support",
    "suppressed_records": "records suppressed", "are_w2": "ARE of the W2 workload",
    "are_w1": "ARE of the W1 workload", "w2_code_set_sizes": "code-set sizes in W2",
    "mre_share_in_-5_5": "share of utility constraints with MRE in [-5%, 5%)",
    "mre_share_in_-5_5_single_codes": "share of single codes with MRE in [-5%, 5%)",
    "mre_share_beyond_10": "share of utility constraints with MRE off by more than 10%",
    staging.NOT_MEASURED: "figures not measured, and why",
    # GCCens
    "n_population": "population records", "records_modified": "share of records modified",
    "instances_original": "code copies in the sample",
    "instances_censored_by_caps": "code copies censored by the caps",
    "instances_censored_by_loop": "code copies censored to reach k-map",
    "instances_released": "code copies released", "iterations": "censoring iterations",
    "cap_only_iterations": "iterations lowering a cap only",
    DEVIATIONS: "opt-in deviations from the paper's algorithm",
    # LDA
    "alignment": "alignment", "w_icd": "weight of ICD loss", "w_age": "weight of age loss",
    "ilm": "ICD loss ILM", "alm": "age loss ALM", "avg_re": "AvgRE of (ICD, age) count queries",
    "n_queries": "queries in the AvgRE workload", "n_pairs": "(ICD, age) pairs",
    "min_cluster_size": "smallest cluster", "max_cluster_size": "largest cluster",
    "suppressed_pairs": "(ICD, age) pairs suppressed",
    "icd_kept_3digit_or_finer": "ICD values at the 3-digit level (ICD-10-CM: category) or finer (%)",
    "age_kept_16year_or_finer": "ages at the 16-year level or finer (%)",
    "icd_domain": "|A| of ICD in Definition 4 (data: the data's codes)",
    "unknown_codes": "codes outside the ICD-9 tree",
    "pairs_with_unknown_code": "pairs with a code outside the ICD-9 tree",
    "ages_outside_domain": "ages outside the age hierarchy", "n_alignments": "alignments computed",
    # MedCo
    "n_real_patients": "real patients", "n_dummies": "dummy patients",
    "n_released_patients": "released patients",
    "released_over_real_patients": "released patients per real patient",
    "dummies_per_real_patient": "dummy patients per real patient",
    "planned_ratio": "ratio of the dummy plan (before realising code sets)",
    "plan_optimal": "the dummy plan was solved to optimality",
    "route": "dummy planning route (exact or large-input)",
    "real_code_occurrences": "real code occurrences",
    "released_code_occurrences": "released code occurrences",
    "theoretical_ratio": "theoretical ratio (Fig. 7)", "real_ratio": "real ratio (Fig. 7)",
    "real_over_theoretical": "real ratio over the theoretical ratio (section 3.2)",
    "nothing_new_published": "nothing new published (every arrival held back)",
    "ratio_bound_profiles_duplicated": "least real ratio of any release (code sets duplicated)",
    "ratio_bound_profiles": "least real ratio of any release (new code sets)",
    "ratio_bound_any_profile": "least real ratio of any release (any code set)",
    "real_patients_without_dummy": "real patients no dummy copies",
    "water_filling_rounds": "water-filling rounds", "flat": "every cluster flat within 1",
    "collisions_detected": "repeated code sets found", "repaired_by_reshuffle":
    "repaired by reshuffling", "repaired_by_substitution": "repaired by substitution",
    "repaired_by_search": "repaired by search", "dropped_profile_full": "dummies dropped (full)",
    "dropped_unrepaired": "dummies dropped (unrepaired)", "slot_replacements": "slots replaced",
    "min_anonymity_set": "minimum anonymity set", "smallest_cluster": "smallest code cluster",
    # HHP
    "risk": "re-identification risk of the chosen node", "risk_ci_halfwidth":
    "half-width of the risk's confidence interval", "risk_iterations": "risk iterations",
    "information_loss": "information loss of the chosen node", "max_sup": "MaxSup",
    "p_max": "adversary power p_m", "sample_size": "risk sample size",
    "lattice_size": "lattice nodes", "nodes_evaluated": "lattice nodes evaluated",
    "search_complete": "lattice search complete", "chosen_node": "chosen generalization node",
    "members_removed_by_screening": "members removed by screening",
    "members_truncated_share": "share of members whose claims are truncated",
    "claims_kept_share": "share of claims kept", "seconds_search": "search seconds",
    "seconds_per_node": "seconds per lattice node", "lattice_parts": "lattice parts",
}
FAMILIES = (  # key patterns: the words of each family, declared once
    (re.compile(r"^icd_levels\.(.+)$"), "ICD values at the {0} level (%)"),
    (re.compile(r"^age_levels\.(.+)$"), "ages at the {0} level (%)"),
    (re.compile(r"^cul_total_(\w+)$"), "CUL against the original records, {0}"),
    (re.compile(r"^cul_(\w+)$"), "CUL (share of a record's code copies censored), {0}"),
    (re.compile(r"^min_dis_(\w+)$"), "smallest distinguishability, {0} records"),
    (re.compile(r"^uniquely_identifiable_(\w+)$"), "share uniquely identifiable, {0} records"),
    (re.compile(r"^below_k_(\w+)$"), "share with distinguishability below k, {0} records"),
)


def label(key: str) -> str:
    """The key in words; an unknown key is shown as itself."""
    if key in LABELS:
        return LABELS[key]
    for pattern, words in FAMILIES:
        m = pattern.match(key)
        if m:
            return words.format(*m.groups())
    return key


def levels(metrics: dict, family: str) -> dict[str, float]:
    """LDA's level histogram (percent per hierarchy level), flattened as
    ``<family>.<level>`` keys or nested under ``<family>``; {} when absent."""
    nested = metrics.get(family)
    if isinstance(nested, dict):
        return {str(k): v for k, v in nested.items() if _number(v)}
    prefix = family + "."
    return {k[len(prefix):]: v for k, v in metrics.items()
            if k.startswith(prefix) and _number(v)}
