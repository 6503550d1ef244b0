"""Comparison attacks on successive MedCo releases (issue 25; docs/threat-model-successive.md,
Section 3.5): can an adversary holding every release tell real patients from dummies?
Readings chosen and why: docs/methods/successive.md#successive-medco."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.stats import binom

from anonymizers.verify.verdict import Verdict

SEP = "\x1f"
TOLERANCE = 0.05  # issue 25: attack precision within 5 points of the base rate
TRUE = {"true", "1", "yes"}
SINGLE_RELEASE = ("repeated_in_release", "one_code_off_in_release")
SUCCESSIVE = ("seen_before", "seen_in_all_before", "seen_after", "one_code_added",
              "seen_before_or_repeated", "pseudonym_kept", "pseudonym_propagated")


def attack(releases: list[pd.DataFrame], truth: list[pd.DataFrame] | None,
           min_codes: int = 3, tolerance: float = TOLERANCE) -> dict:
    """Run every attack on ``releases`` (oldest first) and score it with
    ``truth`` (dummy maps ``pseudonym, is_dummy, ...`` in the same order)
    when given.

    Returns ``{"min_codes", "releases": [...], "attacks": {name: [one row per
    target release]}, "strongest", "strongest_single_release", "breached"}``.
    A comparison attack's row also scores, under ``beyond_single_release``,
    the records it guesses that no single-release attack already flags,
    against the base rate of the unflagged records: what keeping earlier
    releases adds.  ``breached``: some comparison attack's precision there
    exceeds that base rate by more than ``tolerance``, significantly
    (``_breached``); None without the truth, which scoring needs.
    """
    if len(releases) < 2:
        raise ValueError("a comparison attack needs at least two releases")
    if truth is not None and len(truth) != len(releases):
        raise ValueError("truth must hold one dummy map per release")
    sets = [code_sets(r) for r in releases]
    real = None if truth is None else [is_real(t, s.index) for t, s in zip(truth, sets)]
    attacks = _attacks(sets)
    flagged = [np.logical_or.reduce([_mask(attacks[n][0](t), sets[t]) for n in SINGLE_RELEASE])
               for t in range(len(sets))]
    out = {"min_codes": min_codes, "tolerance": tolerance,
           "releases": [_describe(s, min_codes, real, i) for i, s in enumerate(sets)],
           "attacks": {}}
    for name, (guess, targets) in attacks.items():
        known = None if name in SINGLE_RELEASE else flagged
        out["attacks"][name] = [_score(t, guess(t), sets[t], min_codes, real, known)
                                for t in targets]
    out["strongest"] = _strongest(out["attacks"], SUCCESSIVE)
    out["strongest_single_release"] = _strongest(out["attacks"], SINGLE_RELEASE)
    out["breached"], out["alpha_corrected"] = (_breached(out["attacks"], tolerance)
                                               if real is not None else (None, None))
    return out


def _breached(attacks: dict, tolerance: float, alpha: float = 0.05) -> tuple[bool, float]:
    """Whether some comparison attack's precision beyond the single-release
    attacks exceeds their base rate plus ``tolerance``: a one-sided binomial
    test of each row at level ``alpha``, Bonferroni-corrected over the rows
    (one lucky guess out of one is no breach; 1,181 out of 1,181 is).  Also
    returns the corrected level; each tested row gets its ``p_value``."""
    rows = [r["beyond_single_release"] for n in SUCCESSIVE for r in attacks[n]]
    rows = [r for r in rows if r["guessed_real"] > 0 and r["base_rate"] is not None]
    for r in rows:
        r["p_value"] = float(binom.sf(r["true_positives"] - 1, r["guessed_real"],
                                      min(1.0, r["base_rate"] + tolerance)))
    level = alpha / max(1, len(rows))
    return any(r["p_value"] < level for r in rows), level


def check(releases: list[pd.DataFrame], truth: list[pd.DataFrame], min_codes: int = 3,
          tolerance: float = TOLERANCE) -> Verdict:
    """Validate-time verdict on the newest of ``releases`` (oldest first, with
    their dummy maps): fails when ``attack`` finds a breach, naming each
    comparison attack and release that beats the base rate beyond the
    single-release attacks.  Written from the releases and maps alone; it
    imports nothing of ``anonymizers.dummies``."""
    report = attack(releases, truth, min_codes, tolerance)
    bad = [f"{name} on release {row['release']}: precision "
           f"{row['beyond_single_release']['precision']} against a base rate of "
           f"{row['beyond_single_release']['base_rate']} (p = "
           f"{row['beyond_single_release']['p_value']:.2g}) over "
           f"{row['beyond_single_release']['guessed_real']} guessed records"
           for name in SUCCESSIVE for row in report["attacks"][name]
           if _significant(row["beyond_single_release"], report)]
    prop = (f"MedCo across {len(releases)} releases: no comparison attack tells real from "
            f"dummy more than {tolerance * 100:g} points above the base rate (records of "
            f">= {min_codes} codes)")
    return Verdict.from_violations(prop, sum(r["eligible_records"] for r in report["releases"]),
                                   bad)


def _significant(row: dict, report: dict) -> bool:
    return row.get("p_value") is not None and row["p_value"] < report["alpha_corrected"]


def code_sets(release: pd.DataFrame) -> pd.Series:
    """Pseudonym -> its code set as one canonical string (sorted codes)."""
    df = release[["patient_id", "code"]].astype(str).drop_duplicates()
    df = df.sort_values(["patient_id", "code"], kind="stable")
    return df.groupby("patient_id", sort=True)["code"].agg(SEP.join)


def is_real(dummy_map: pd.DataFrame, pseudonyms: pd.Index) -> pd.Series:
    """Pseudonym -> True for a real patient, from a dummy map (bools or text)."""
    flags = dummy_map["is_dummy"].map(lambda v: str(v).strip().lower() in TRUE)
    truth = pd.Series(~flags.to_numpy(), index=dummy_map["pseudonym"].astype(str))
    missing = pseudonyms.difference(truth.index)
    if len(missing):
        raise ValueError(f"{len(missing)} released pseudonym(s) are not in the dummy map")
    return truth.reindex(pseudonyms)


def _attacks(sets: list[pd.Series]) -> dict[str, tuple[Callable, range]]:
    n = len(sets)
    before = [set().union(*(set(s) for s in sets[:t])) for t in range(n)]
    every = [set.intersection(*(set(s) for s in sets[:t])) if t else set() for t in range(n)]

    def seen_before(t):
        return sets[t].isin(before[t])

    def repeated(t):
        return sets[t].duplicated(keep=False)

    def seen_after(t):
        return sets[t].isin(set(sets[t + 1]))

    def one_added(t):
        return ~seen_before(t) & sets[t].map(lambda s: _less_one_in(s, before[t]))

    def one_off_here(t):
        here = set(sets[t])
        return sets[t].map(lambda s: _less_one_in(s, here))

    def pseudonym_kept(t):
        prev = sets[t - 1].reindex(sets[t].index)
        return (prev == sets[t]).fillna(False).astype(bool)

    def propagated(t):
        persisted = seen_after(t - 1)
        return persisted.reindex(sets[t].index).fillna(False).astype(bool)

    later, earlier = range(1, n), range(0, n - 1)
    return {"seen_before": (seen_before, later),
            "seen_in_all_before": (lambda t: sets[t].isin(every[t]), later),
            "seen_after": (seen_after, earlier),
            "one_code_added": (one_added, later),
            "repeated_in_release": (repeated, range(n)),
            "one_code_off_in_release": (one_off_here, range(n)),
            "seen_before_or_repeated": (lambda t: seen_before(t) | repeated(t), later),
            "pseudonym_kept": (pseudonym_kept, later),
            "pseudonym_propagated": (propagated, later)}


def _less_one_in(s: str, earlier: set) -> bool:
    codes = s.split(SEP)
    return len(codes) > 1 and any(SEP.join(codes[:i] + codes[i + 1:]) in earlier
                                  for i in range(len(codes)))


def _eligible(s: pd.Series, min_codes: int) -> np.ndarray:
    return (s.str.count(SEP) + 1 >= min_codes).to_numpy()


def _describe(s: pd.Series, min_codes: int, real, i: int) -> dict:
    ok = _eligible(s, min_codes)
    out = {"records": int(len(s)), "eligible_records": int(ok.sum())}
    if real is not None:
        out["real_records"] = int(real[i].sum())
        out["base_rate"] = _rate(real[i].to_numpy()[ok].sum(), ok.sum())
    return out


def _mask(guess: pd.Series, s: pd.Series) -> np.ndarray:
    return guess.reindex(s.index).fillna(False).to_numpy(dtype=bool)


def _score(t: int, guess: pd.Series, s: pd.Series, min_codes: int, real,
           flagged: list[np.ndarray] | None) -> dict:
    ok = _eligible(s, min_codes)
    g = _mask(guess, s) & ok
    out = {"release": t + 1, "eligible": int(ok.sum()), "guessed_real": int(g.sum())}
    if real is None:
        return out
    r = real[t].to_numpy(dtype=bool)
    out |= _figures(g, r, ok)
    if flagged is not None:
        rest = ok & ~flagged[t]
        out["beyond_single_release"] = {"eligible": int(rest.sum()),
                                        "guessed_real": int((g & rest).sum()),
                                        **_figures(g & rest, r, rest)}
    return out


def _figures(g: np.ndarray, r: np.ndarray, ok: np.ndarray) -> dict:
    """Precision, recall, base rate of the guesses ``g`` among records ``ok``."""
    tp = int((g & r & ok).sum())
    base = _rate((r & ok).sum(), ok.sum())
    precision = _rate(tp, g.sum())
    return {"true_positives": tp, "precision": precision, "recall": _rate(tp, (r & ok).sum()),
            "base_rate": base, "precision_lower_95": wilson_lower(tp, int(g.sum())),
            "advantage": None if precision is None or base is None
            else round(precision - base, 4)}


def _rate(a, b) -> float | None:
    return None if b == 0 else round(float(a) / float(b), 4)


def wilson_lower(successes: int, n: int, z: float = 1.96) -> float | None:
    """Lower end of the Wilson 95% interval of a proportion (None for n = 0)."""
    if n == 0:
        return None
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return round(float((centre - half) / (1 + z * z / n)), 4)


def _strongest(attacks: dict, names) -> dict | None:
    """Among ``names``, the attack and release whose precision's Wilson lower
    bound exceeds the base rate most (a handful of lucky guesses does not
    win); None without truth."""
    scored = [(r["precision_lower_95"] - r["base_rate"], name, r) for name in names
              for r in attacks[name] if r.get("precision_lower_95") is not None]
    if not scored:
        return None
    margin, name, row = max(scored, key=lambda x: x[0])
    return {"attack": name, "release": row["release"], "margin_lower_95": round(margin, 4)} | {
        k: row[k] for k in ("precision", "precision_lower_95", "recall", "base_rate",
                            "advantage", "guessed_real")}
