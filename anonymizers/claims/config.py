"""Parameters of the HHP release method and their validation."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from anonymizers.claims.adversary import ROUNDINGS
from anonymizers.claims.groupings import NAMED as NAMED_HIERARCHIES
from anonymizers.claims.recoding import ALL_QIS
from anonymizers.claims.risk import RiskSettings
from anonymizers.claims.screening import NAMED_POLICIES
from anonymizers.errors import ParameterError


@dataclass(frozen=True)
class HHPConfig:
    """How the claims are screened, truncated, generalized and assessed.

    Parameters
    ----------
    seed : int or None, default None
        Seed of every random choice (the sampling experiment of each node,
        the member pseudonyms).  ``None`` draws one from the operating system;
        the seed used is recorded in the metrics either way.
    k : int, default 5
        Equivalence-class threshold of section 5, step 4.b.iii: a sampled
        member whose class is smaller than ``k`` is high risk.  The appendix
        does not print its value; 5 is our default.
    max_sup : float, default 0.05
        MaxSup of section 5, step 5: a node is a candidate when its mean
        proportion of high-risk members is at most this.  In [0, 1].
    p_max : int, default 5
        p_m of equation (1), the most values per quasi-identifier the
        adversary knows (section 4).  At least 1.
    p_rounding : {'round', 'ceil', 'floor'}, default 'round'
        How the bracket of equation (1) makes p whole ('round': nearest,
        halves up).
    eta_sd : float, default 2.0
        eta is capped at the mean plus this many standard deviations.
    truncation_percentile : float, default 95.0
        Members keep at most this (nearest-rank) percentile of claims per
        member (section 1).  In (0, 100].
    sample_size : int, default 10000
        Members drawn with replacement per iteration (section 5, step 4.a).
    max_iterations : int, default 1000
        Most iterations per node (section 5, step 4).
    min_iterations : int, default 2
        Iterations before the stopping rule may stop (at least 2, so that
        the confidence interval has a variance).
    ci_halfwidth : float, default 0.005
        Stop once the 95% confidence interval of the mean proportion is
        within +- this.  0 runs ``max_iterations``.
    max_evaluations : int, default 200
        Most lattice nodes evaluated by the search (``lattice``).
    qis : tuple of str, default all
        Quasi-identifiers to use, among dx, procedure, place_of_service,
        specialty, length_of_stay, dsfc, age, sex, claims_per_member.  One
        whose column is absent from the data is skipped (and reported).
    node : mapping of str to str or None, default None
        Evaluate only this node, ``{qi: level name}`` (unnamed QIs at their
        top level), instead of searching; the release fails if its risk is
        above ``max_sup``.
    rare_visible_codes : tuple of str, default ()
        ICD-9 codes or prefixes of rare and visible diseases whose members
        are removed (section 2), added to the policy's list.
    policy_path, hierarchies_path : str or None, default None
        The screening policy and hierarchy files, each a path or a bundled
        policy name: ``hhp-2012-v1`` (ICD-9-CM, the default) or
        ``hhp-2012-icd10-v1`` (ICD-10-CM, docs/hhp-icd10.md).  When
        ``policy_path`` is a name and ``hierarchies_path`` is None, the
        hierarchies are that name's (``policy_source``/``hierarchies_source``).
    marketer_population : int or None, default None
        Population size for the marketer risk (section 6); None takes the
        release as the population (theta = classes / members).
    marketer_qis : tuple of str, default ('age', 'sex')
        Member quasi-identifiers a marketer's list (e.g. voters) holds.
    pseudonym_key : bytes or None, default None
        Secret key of the pseudonym permutation (``anonymizers.pseudonyms``):
        with it the permutation cannot be drawn again from the seed alone.
        Not shown in the config's repr.
    """

    seed: int | None = None
    k: int = 5
    max_sup: float = 0.05
    p_max: int = 5
    p_rounding: str = "round"
    eta_sd: float = 2.0
    truncation_percentile: float = 95.0
    sample_size: int = 10_000
    max_iterations: int = 1_000
    min_iterations: int = 2
    ci_halfwidth: float = 0.005
    max_evaluations: int = 200
    qis: tuple[str, ...] = ALL_QIS
    node: Mapping[str, str] | None = None
    rare_visible_codes: tuple[str, ...] = ()
    policy_path: str | None = None
    hierarchies_path: str | None = None
    marketer_population: int | None = None
    marketer_qis: tuple[str, ...] = ("age", "sex")
    pseudonym_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.seed is not None:
            _int("seed", self.seed, 0)
        _int("k", self.k, 1)
        _unit("max_sup", self.max_sup)
        _int("p_max", self.p_max, 1)
        if self.p_rounding not in ROUNDINGS:
            raise ParameterError("p_rounding", f"must be one of {ROUNDINGS}, got {self.p_rounding!r}")
        _number("eta_sd", self.eta_sd, 0.0)
        _number("truncation_percentile", self.truncation_percentile, 0.0)
        if not 0 < self.truncation_percentile <= 100:
            raise ParameterError("truncation_percentile", "must be in (0, 100]")
        _int("sample_size", self.sample_size, 1)
        _int("max_iterations", self.max_iterations, 1)
        _int("min_iterations", self.min_iterations, 2)
        if self.min_iterations > self.max_iterations and self.max_iterations > 1:
            raise ParameterError("min_iterations", "must not exceed max_iterations")
        _number("ci_halfwidth", self.ci_halfwidth, 0.0)
        _int("max_evaluations", self.max_evaluations, 1)
        object.__setattr__(self, "qis", _names("qis", self.qis, ALL_QIS, allow_empty=False))
        object.__setattr__(self, "marketer_qis",
                           _names("marketer_qis", self.marketer_qis, ("age", "sex",
                                                                      "claims_per_member")))
        object.__setattr__(self, "rare_visible_codes", _strings("rare_visible_codes",
                                                                self.rare_visible_codes))
        if self.node is not None:
            if not isinstance(self.node, Mapping) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in self.node.items()):
                raise ParameterError("node", "must map quasi-identifier names to level names, "
                                     "e.g. {'dsfc': 'months'}")
            object.__setattr__(self, "node", MappingProxyType(dict(self.node)))
        for name, named in (("policy_path", NAMED_POLICIES),
                            ("hierarchies_path", NAMED_HIERARCHIES)):
            value = getattr(self, name)
            if value is not None and str(value) not in named and not Path(value).is_file():
                raise ParameterError(name, f"no such file nor bundled policy name: {value}; "
                                     f"the names are {sorted(named)}")
        if self.marketer_population is not None:
            _int("marketer_population", self.marketer_population, 1)

    @property
    def policy_source(self) -> str:
        """The screening policy: a name of ``NAMED_POLICIES`` or a file path."""
        return str(self.policy_path) if self.policy_path is not None else "hhp-2012-v1"

    @property
    def hierarchies_source(self) -> str:
        """The hierarchies: ``hierarchies_path``, else those of the named policy
        (a file policy keeps the ICD-9 ones, as before names existed)."""
        if self.hierarchies_path is not None:
            return str(self.hierarchies_path)
        return self.policy_source if self.policy_source in NAMED_HIERARCHIES else "hhp-2012-v1"

    def risk_settings(self, seed: int) -> RiskSettings:
        return RiskSettings(k=self.k, max_sup=self.max_sup, p_max=self.p_max,
                            p_rounding=self.p_rounding, eta_sd=self.eta_sd,
                            sample_size=self.sample_size, max_iterations=self.max_iterations,
                            min_iterations=self.min_iterations,
                            ci_halfwidth=self.ci_halfwidth, seed=seed)


def _int(name, value, minimum) -> None:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ParameterError(name, f"must be an integer >= {minimum}, got {value!r}")


def _number(name, value, minimum) -> None:
    if (not isinstance(value, numbers.Real) or isinstance(value, bool) or math.isnan(value)
            or value < minimum):
        raise ParameterError(name, f"must be a number >= {minimum}, got {value!r}")


def _unit(name, value) -> None:
    _number(name, value, 0.0)
    if value > 1:
        raise ParameterError(name, f"must be a proportion in [0, 1], got {value!r}")


def _names(name, value, allowed, allow_empty=True) -> tuple[str, ...]:
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ParameterError(name, f"must be a tuple of names among {list(allowed)}")
    out = tuple(value)
    bad = [v for v in out if v not in allowed]
    if bad or (not out and not allow_empty):
        raise ParameterError(name, f"unknown names {bad}; choose among {list(allowed)}"
                             if bad else "must name at least one quasi-identifier")
    return out


def _strings(name, value) -> tuple[str, ...]:
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ParameterError(name, "must be a tuple of code strings, e.g. ('7571',)")
    out = tuple(value)
    if not all(isinstance(v, str) and v.strip() for v in out):
        raise ParameterError(name, "every code must be a non-empty string")
    return out
