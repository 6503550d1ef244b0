"""Parameters of LDA (Tamersoy 2011, Chapter IV) and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from anonymizers.codesystems import CODE_SYSTEMS
from anonymizers.declare import param, parameters, pseudonym_key, validate
from anonymizers.errors import ParameterError
from anonymizers.hierarchy import ROOT, Hierarchy
from anonymizers.longitudinal.hierarchies import age_hierarchy

ALIGNMENTS = ("a-gs", "baseline")
#: the fields that are not the thesis' algorithm (docs/methods/lda.md, opt-in deviations)
OPT_IN = ("member_weighted", "refine_rounds", "shared_code_bonus", "age_block", "lookahead")
ICD_DOMAINS = ("data", "hierarchy")


def _tree(doc: str):
    """A generalization tree: an object, set by code, not on a command line or a form."""
    return param(None, kind="object", nullable=True, cli=False, schema=False, compare=False,
                 doc=doc)


@parameters
@dataclass(frozen=True)
class LDAConfig:
    """Parameters of LDA."""

    k: int = param(kind="int", minimum=1,
                   doc="Privacy level: every released trajectory is shared by at least k "
                   "patients.  At most the number of patients.")
    w_icd: float = param(0.5, kind="number", minimum=0,
                         doc="Weight of ICD information loss in A-GS (Algorithm 3).")
    w_age: float = param(0.5, kind="number", minimum=0,
                         doc="Weight of Age information loss in A-GS; w_icd + w_age = 1.  "
                         "Baseline ignores both weights, as in the thesis.")
    alignment: str = param("a-gs", kind="str", choices=ALIGNMENTS,
                           doc="The alignment used both as clustering distance and to "
                           "anonymize a cluster.")
    seed: int | None = param(
        None, kind="int", minimum=0, nullable=True,
        doc="Seed of the numpy Generator behind every random choice (MDAV's ties, "
        "pseudonyms).  None draws fresh entropy: the release is then not reproducible.")
    # on the command line --code-system is an option of every command reading codes
    # (anonymizers.io.add_code_system_arguments)
    code_system: str = param(
        "icd9cm", kind="str", choices=CODE_SYSTEMS, cli=False,
        doc="Code system of the data (anonymizers.codesystems): with no icd_hierarchy, LDA "
        "generalizes codes through this system's tree and releases them with its display "
        "and level names (401.1 and 3-digit; S52.521A and category).")
    icd_hierarchy: Hierarchy | None = _tree(
        "Generalization tree for codes; None is the tree of code_system.")
    age_hierarchy: Hierarchy | None = _tree(
        "Generalization tree for ages (labels are the ages as strings); None is the full "
        "binary tree over 1..128 of Section IV.4.4.")
    icd_domain: str = param(
        "data", kind="str", choices=ICD_DOMAINS,
        doc="What |A| and the leaf counts of Definition 4 count for ICD: the dataset's "
        "distinct codes (Table 3's |ICD|) or every leaf of the ICD hierarchy (see "
        "anonymizers.longitudinal.framework).")
    member_weighted: bool = param(
        False, kind="bool",
        doc="Opt-in, not the thesis' Algorithm 3: when A-GS aligns a cluster's anonymized "
        "trajectory X with a candidate, X's losses count once per trajectory X stands for, so "
        "the cost is the loss of the whole cluster (benchmarks/lda.md).  A-GS only.")
    refine_rounds: int = param(
        0, kind="int", minimum=0,
        doc="Opt-in, not in the thesis: after MDAV, up to this many rounds of moving or "
        "swapping trajectories between clusters, each kept only if it lowers "
        "w_icd*ILM + w_age*ALM (Definition 8) of the two clusters (benchmarks/lda.md).")
    shared_code_bonus: float = param(
        0.0, kind="number", minimum=0, maximum=100,  # a pair's A-GS cost is at most 2
        doc="Opt-in, not in the thesis: while a cluster grows, each code a candidate shares "
        "(3-digit category, in order) with the cluster's values still at that level lowers "
        "its A-GS cost by this much, so clusters gather patients with the same codes "
        "(anonymizers/longitudinal/shared_codes.py; benchmarks/lda.md).  0 is IV.3.2.")
    age_block: int = param(
        0, kind="int", minimum=0,
        doc="Opt-in with shared_code_bonus, not in the thesis: while a cluster grows, a "
        "candidate whose ages would take the cluster's ages out of one node of the age tree "
        "covering at most this many ages (16: a 16-year interval; 20 acts as 16 on the "
        "binary tree) costs shared_code_bonus more, so clusters share codes and close ages "
        "(anonymizers/longitudinal/shared_codes.py; benchmarks/lda.md).  0 is off; at "
        "most the tree's ages less one.")
    lookahead: int = param(
        0, kind="int", minimum=0, maximum=1000,
        doc="Opt-in with age_block, not in the thesis: growth aligns the cluster with this "
        "many of its cheapest candidates and adds the one whose release keeps the most codes "
        "at 3-digit level or finer (and ages within the block), and each cluster starts from "
        "the longest trajectory left (anonymizers/longitudinal/shared_codes.py; "
        "benchmarks/lda.md).  0 is off.")
    pseudonym_key: bytes | None = pseudonym_key()

    def __post_init__(self):
        validate(self)
        if abs(self.w_icd + self.w_age - 1.0) > 1e-9:
            raise ParameterError("w_icd", f"w_icd + w_age must be 1, got "
                                          f"{self.w_icd} + {self.w_age}")
        self._check_age_block()
        if self.member_weighted and self.alignment != "a-gs":
            raise ParameterError("member_weighted", "member weighting is a reading of A-GS; "
                                 f"alignment={self.alignment!r} has no weights")

    def deviations(self) -> dict:
        """The ``OPT_IN`` fields this config turns on, with their values."""
        return {name: getattr(self, name) for name in OPT_IN if getattr(self, name)}

    def _check_age_block(self):
        if self.lookahead and not self.age_block:
            raise ParameterError("lookahead", "scores codes and ages within the age block: "
                                 "set age_block (and shared_code_bonus) as well")
        if not self.age_block:
            return
        if not self.shared_code_bonus:
            raise ParameterError("age_block", "prices ages in the shared-code bonus's "
                                 "growth: set shared_code_bonus above 0 as well")
        ages = (self.age_hierarchy or age_hierarchy()).n_leaves(ROOT)
        if self.age_block >= ages:
            raise ParameterError("age_block", f"covers every one of the age tree's {ages} "
                                 "ages, so it would never price a candidate; use fewer")
