"""Parameters of the HHP release method and their validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from anonymizers.claims.adversary import ROUNDINGS
from anonymizers.claims.groupings import CODE_SYSTEM as HIERARCHY_CODE_SYSTEM
from anonymizers.claims.groupings import NAMED as NAMED_HIERARCHIES
from anonymizers.claims.recoding import ALL_QIS
from anonymizers.claims.risk import RiskSettings
from anonymizers.claims.screening import NAMED_POLICIES, load_policy
from anonymizers.declare import param, parameters, pseudonym_key, validate
from anonymizers.errors import ParameterError


def _some(name, qis):
    if not qis:
        raise ParameterError(name, "must name at least one quasi-identifier")
    return qis


def _node(name, node):
    if not isinstance(node, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in node.items()):
        raise ParameterError(name, "must map quasi-identifier names to level names, "
                             "e.g. {'dsfc': 'months'}")
    return MappingProxyType(dict(node))


def parse_node(text: str) -> dict:
    """``--node dsfc=months,age=10y`` as ``{"dsfc": "months", "age": "10y"}``."""
    pairs = [p.split("=", 1) for p in text.split(",") if p.strip()]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ValueError("expected QI=LEVEL,... e.g. dsfc=months,age=10y")
    return {q.strip(): level.strip() for q, level in pairs}


def _source(named):
    def check(name, value):
        if str(value) not in named and not Path(value).is_file():
            raise ParameterError(name, f"no such file nor bundled policy name: {value}; "
                                 f"the names are {sorted(named)}")
        return value
    return check


@parameters
@dataclass(frozen=True)
class HHPConfig:
    """How the claims are screened, truncated, generalized and assessed."""

    seed: int | None = param(
        None, kind="int", minimum=0, nullable=True,
        doc="Seed of every random choice (the sampling experiment of each node, the member "
        "pseudonyms).  None draws one from the operating system; the seed used is recorded "
        "in the metrics either way.")
    k: int = param(5, kind="int", minimum=1,
                   doc="Equivalence-class threshold of section 5, step 4.b.iii: a sampled "
                   "member whose class is smaller than k is high risk.  The appendix does "
                   "not print its value; 5 is our default.")
    max_sup: float = param(0.05, kind="number", minimum=0, maximum=1,
                           doc="MaxSup of section 5, step 5: a node is a candidate when its "
                           "mean proportion of high-risk members is at most this.")
    p_max: int = param(5, kind="int", minimum=1,
                       doc="p_m of equation (1), the most values per quasi-identifier the "
                       "adversary knows (section 4).")
    p_rounding: str = param("round", kind="str", choices=ROUNDINGS,
                            doc="How the bracket of equation (1) makes p whole ('round': "
                            "nearest, halves up).")
    eta_sd: float = param(2.0, kind="number", minimum=0,
                          doc="eta is capped at the mean plus this many standard deviations.")
    truncation_percentile: float = param(
        95.0, kind="number", minimum=0, maximum=100, exclusive_minimum=True,
        doc="Members keep at most this (nearest-rank) percentile of claims per member "
        "(section 1).")
    sample_size: int = param(10_000, kind="int", minimum=1,
                             doc="Members drawn with replacement per iteration (section 5, "
                             "step 4.a).")
    max_iterations: int = param(1_000, kind="int", minimum=1,
                                doc="Most iterations per node (section 5, step 4).")
    min_iterations: int = param(2, kind="int", minimum=2,
                                doc="Iterations before the stopping rule may stop (at least "
                                "2, so that the confidence interval has a variance).")
    ci_halfwidth: float = param(0.005, kind="number", minimum=0,
                                doc="Stop once the 95% confidence interval of the mean "
                                "proportion is within +- this.  0 runs max_iterations.")
    max_evaluations: int = param(200, kind="int", minimum=1,
                                 doc="Most lattice nodes evaluated by the search (lattice).")
    qis: tuple[str, ...] = param(
        ALL_QIS, kind="str_list", choices=ALL_QIS, check=_some,
        doc="Quasi-identifiers to use.  One whose column is absent from the data is "
        "skipped (and reported).")
    node: Mapping[str, str] | None = param(
        None, kind="object", nullable=True, check=_node, parse=parse_node,
        metavar="QI=LEVEL,...", json={"type": "object",
                                      "additionalProperties": {"type": "string"}},
        doc="Evaluate only this node, {qi: level name} (unnamed QIs at their top level), "
        "instead of searching; the release fails if its risk is above max_sup.")
    rare_visible_codes: tuple[str, ...] = param(
        (), kind="str_list",
        doc="Diagnosis codes or prefixes, in the screening policy's code system (ICD-9-CM "
        "or ICD-10-CM), of rare and visible diseases whose members are removed (section 2), "
        "added to the policy's list.")
    policy_path: str | None = param(
        None, kind="object", nullable=True, cli=False, check=_source(NAMED_POLICIES),
        json={"type": "string"},
        doc="The screening policy, a path or a bundled policy name: hhp-2012-v1 (ICD-9-CM, "
        "the default) or hhp-2012-icd10-v1 (ICD-10-CM, docs/hhp-icd10.md).")
    hierarchies_path: str | None = param(
        None, kind="object", nullable=True, check=_source(NAMED_HIERARCHIES),
        json={"type": "string"},
        option="--hierarchies", metavar="YAML",
        doc="The generalization hierarchies, a YAML file or a bundled name ("
        + ", ".join(f"{n}: {s}" for n, s in HIERARCHY_CODE_SYSTEM.items())
        + "); None: those of the named policy (policy_source, hierarchies_source).")
    marketer_population: int | None = param(
        None, kind="int", minimum=1, nullable=True,
        doc="Population size for the marketer risk (section 6); None takes the release as "
        "the population (theta = classes / members).")
    marketer_qis: tuple[str, ...] = param(
        ("age", "sex"), kind="str_list", choices=("age", "sex", "claims_per_member"),
        doc="Member quasi-identifiers a marketer's list (e.g. voters) holds.")
    pseudonym_key: bytes | None = pseudonym_key()

    def __post_init__(self):
        validate(self)
        if self.min_iterations > self.max_iterations and self.max_iterations > 1:
            raise ParameterError("min_iterations", "must not exceed max_iterations")

    @property
    def policy_source(self) -> str:
        """The screening policy: a name of ``NAMED_POLICIES`` or a file path."""
        return str(self.policy_path) if self.policy_path is not None else "hhp-2012-v1"

    @property
    def hierarchies_source(self) -> str:
        """The hierarchies: ``hierarchies_path``, else those named like the policy,
        or like the bundled policy whose version a policy file carries (so the
        bundled ICD-10-CM policy given as a file gets the ICD-10-CM groups); a
        custodian's own policy keeps the ICD-9-CM ones, as before names existed."""
        if self.hierarchies_path is not None:
            return str(self.hierarchies_path)
        source = self.policy_source
        if source not in NAMED_HIERARCHIES and source not in NAMED_POLICIES:
            source = load_policy(source).version
        return source if source in NAMED_HIERARCHIES else "hhp-2012-v1"

    def risk_settings(self, seed: int) -> RiskSettings:
        return RiskSettings(k=self.k, max_sup=self.max_sup, p_max=self.p_max,
                            p_rounding=self.p_rounding, eta_sd=self.eta_sd,
                            sample_size=self.sample_size, max_iterations=self.max_iterations,
                            min_iterations=self.min_iterations,
                            ci_halfwidth=self.ci_halfwidth, seed=seed)
