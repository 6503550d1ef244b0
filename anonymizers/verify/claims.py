"""Verifier of HHP claims releases (El Emam et al., JMIR 2012, Multimedia
Appendix), written from the paper and the data files, sharing no code with
``anonymizers.claims``: it reads the policy and hierarchy files itself and
re-derives screening, truncation and generalization from the input claims.

Checks:

1. shape: distinct member pseudonyms; every claim's member is released;
   only quasi-identifier columns, and exactly those of the chosen node;
2. no date and no source id: no datetime column, no value that is a date
   (YYYY-MM-DD, YYYYMMDD), no value equal to an input member or claim id;
3. the key links each pseudonym to one input member, one to one;
4. screening: no released member has a claim with a listed diagnosis (also
   among other_dx_codes), procedure or place of service, or a claim rule of
   member scope; every released claim matches an admissible claim (not a
   newborn or non-medical-procedure claim of claim scope);
5. truncation: the threshold is the nearest-rank percentile of admissible
   claims per member, the metrics say that threshold, and no member has more
   released claims;
6. labels: every quasi-identifier value is a label of the chosen level;
7. each member's released claims (all quasi-identifiers together) are a
   sub-multiset of their admissible claims generalized to the chosen node
   (DSFC counted from the first admissible claim), and the member row holds
   the generalized age at the first admissible claim, sex and number of
   released claims.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from anonymizers.verify.verdict import Verdict

PROPERTY = "HHP release (El Emam et al. 2012): screening, truncation, no dates or ids, labels"
DATA = Path(__file__).resolve().parents[1] / "data" / "hhp"
CLAIM_COLUMNS = ("dx", "procedure", "place_of_service", "specialty", "length_of_stay", "dsfc")
MEMBER_COLUMNS = ("age", "sex", "claims_per_member")
DATE_LIKE = re.compile(r"^(\d{4}-\d{2}-\d{2}.*|(19|20|21)\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01]))$")
SEX = {"1": "M", "M": "M", "MALE": "M", "2": "F", "F": "F", "FEMALE": "F"}


def verify_hhp(result, claims_df: pd.DataFrame, policy_path=None, hierarchies_path=None) -> Verdict:
    """Check an ``HHPResult`` (members, claims, metrics, key) against its input."""
    return verify_release(result.members, result.claims, result.metrics, result.key, claims_df,
                          policy_path, hierarchies_path)


def verify_release(members: pd.DataFrame, claims: pd.DataFrame, metrics: dict,
                   key: pd.DataFrame, claims_df: pd.DataFrame, policy_path=None,
                   hierarchies_path=None) -> Verdict:
    problems: list[str] = []
    levels = dict(metrics.get("chosen_node", {}))
    problems += _shape(members, claims, levels)
    problems += _no_dates_or_ids(members, claims, claims_df)
    link, more = _key(members, key, claims_df)
    problems += more
    inp = _Input(claims_df)
    policy = _read_yaml(policy_path or DATA / "screening_policy_v1.yaml")
    if policy.get("version") != metrics.get("policy_version"):
        problems.append(f"metrics say policy {metrics.get('policy_version')!r}, the policy file "
                        f"is {policy.get('version')!r}")
    extra = list(metrics.get("policy_extra_rare_visible", []))
    removed, admissible = inp.screen(policy, extra)
    problems += [f"released member {p} (source {s}) should have been removed by screening"
                 for p, s in link.items() if s in removed]
    problems += _truncation(claims, metrics, inp, admissible)
    hier = _Hierarchies(hierarchies_path or DATA / "hierarchies.yaml")
    problems += _labels(members, claims, levels, hier)
    if not problems:
        problems += _consistency(members, claims, levels, hier, inp, admissible, link)
    checked = len(members) + len(claims)
    return Verdict.from_violations(PROPERTY, checked, problems)


def _read_yaml(path) -> dict:
    return yaml.safe_load(Path(path).read_text()) or {}


def _shape(members, claims, levels) -> list[str]:
    out = []
    if "member_id" not in members.columns or "member_id" not in claims.columns:
        return ["the members and claims tables need a member_id column"]
    if members["member_id"].duplicated().any():
        out.append("a member pseudonym appears twice in the members table")
    orphan = set(claims["member_id"]) - set(members["member_id"])
    if orphan:
        out.append(f"claims of members not in the members table: {sorted(orphan)[:3]}")
    m_cols = [c for c in members.columns if c != "member_id"]
    c_cols = [c for c in claims.columns if c != "member_id"]
    bad = [c for c in m_cols if c not in MEMBER_COLUMNS] + [c for c in c_cols
                                                            if c not in CLAIM_COLUMNS]
    if bad:
        out.append(f"columns that are not quasi-identifiers: {bad}")
    if set(m_cols) | set(c_cols) != set(levels):
        out.append(f"released columns {sorted(set(m_cols) | set(c_cols))} differ from the "
                   f"chosen node's quasi-identifiers {sorted(levels)}")
    return out


def _no_dates_or_ids(members, claims, claims_df) -> list[str]:
    out = []
    source = set(claims_df["member_id"].astype(str).str.strip()) | set(
        claims_df["claim_id"].astype(str).str.strip())
    for name, table in (("members", members), ("claims", claims)):
        for col in table.columns:
            s = table[col]
            if pd.api.types.is_datetime64_any_dtype(s.dtype):
                out.append(f"{name}.{col} is a date column")
                continue
            values = set(s.astype(str).unique())
            dates = [v for v in values if DATE_LIKE.match(v)]
            if dates:
                out.append(f"{name}.{col} holds date-like values, e.g. {dates[0]!r}")
            ids = values & source
            if ids:
                out.append(f"{name}.{col} holds source ids, e.g. {min(ids)!r}")
    return out


def _key(members, key, claims_df) -> tuple[dict, list[str]]:
    out = []
    if not {"member_id", "source_member_id"} <= set(key.columns):
        return {}, ["the key needs member_id and source_member_id columns"]
    link = dict(zip(key["member_id"].astype(str), key["source_member_id"].astype(str)))
    released = set(members["member_id"].astype(str))
    if len(link) != len(key) or set(link) != released:
        out.append("the key does not map each released pseudonym exactly once")
    if len(set(link.values())) != len(link):
        out.append("two pseudonyms map to the same source member")
    known = set(claims_df["member_id"].astype(str).str.strip())
    unknown = [s for s in link.values() if s not in known]
    if unknown:
        out.append(f"key names source members not in the input: {unknown[:3]}")
    return {p: s for p, s in link.items() if p in released}, out


class _Input:
    """The input claims, parsed the plain way."""

    def __init__(self, df: pd.DataFrame):
        self.n = len(df)
        self.member = df["member_id"].astype(str).str.strip().to_numpy()
        self.date = _parse_dates(df["service_date"])
        self.birth = (_parse_dates(df["birth_date"]) if "birth_date" in df.columns
                      else np.full(self.n, np.datetime64("NaT"), "M8[D]"))
        self.dx = _codes(df["dx_code"])
        self.other = (_codes(df["other_dx_codes"]) if "other_dx_codes" in df.columns
                      else np.full(self.n, "", dtype=object))
        self.procedure = (_codes(df["procedure_code"]) if "procedure_code" in df.columns
                          else np.full(self.n, "", dtype=object))
        self.pos = (_per_unique(_codes(df["place_of_service"]),
                                lambda c: c.zfill(2) if len(c) == 1 and c.isdigit() else c)
                    if "place_of_service" in df.columns else np.full(self.n, "", dtype=object))
        self.specialty = (_codes(df["specialty"]) if "specialty" in df.columns
                          else np.full(self.n, "", dtype=object))
        los = (pd.to_numeric(df["length_of_stay"], errors="coerce")
               if "length_of_stay" in df.columns else pd.Series(np.zeros(self.n)))
        self.los = los.fillna(0).astype(np.int64).to_numpy()
        self.age = pd.to_numeric(df["age_at_service"]).astype(np.int64).to_numpy()
        self.sex = _per_unique(df["sex"], lambda v: SEX.get(str(v).strip().upper(), "?"), "?")

    def screen(self, policy: dict, extra_rare: list[str]) -> tuple[set, np.ndarray]:
        """(removed source members, admissible-claim mask)."""
        bad_claim = np.zeros(self.n, dtype=bool)
        for rule in policy.get("member_rules", []):
            prefixes = _expand(rule.get("prefixes") or [])
            if rule["name"] == "rare_visible_disease":
                prefixes += _expand(extra_rare)
            exact = {str(c).strip() for c in rule.get("codes") or []}
            exact |= {c.zfill(2) for c in exact if len(c) == 1 and c.isdigit()}
            fields = {"dx": [self.dx, self.other], "procedure": [self.procedure],
                      "place_of_service": [self.pos]}[rule["field"]]
            for values in fields:
                bad_claim |= _matches(values, tuple(prefixes), exact)
        claim_only = np.zeros(self.n, dtype=bool)
        for rule in policy.get("claim_rules", []):
            hit = self._claim_rule(rule)
            if rule.get("scope", "claim") == "member":
                bad_claim |= hit
            else:
                claim_only |= hit
        removed = set(self.member[bad_claim])
        admissible = ~pd.Series(self.member).isin(removed).to_numpy() & ~claim_only
        return removed, admissible

    def _claim_rule(self, rule: dict) -> np.ndarray:
        if rule["name"] == "newborn":
            days = rule.get("within_days_of_birth")
            if days is None:
                return np.zeros(self.n, dtype=bool)
            age_days = (self.date - self.birth).astype("m8[D]").astype(np.float64)
            age_days[np.isnat(self.birth)] = np.nan
            with np.errstate(invalid="ignore"):
                return (age_days >= 0) & (age_days <= days)
        lengths = set(rule.get("digit_lengths") or [])
        letter = bool(rule.get("letter_prefix"))
        return _per_unique(self.procedure, lambda p: bool(p) and (
            (letter and p[0].isalpha()) or (p.isdigit() and len(p) in lengths)), False).astype(bool)


def _per_unique(values, fn, missing="") -> np.ndarray:
    """``fn`` applied once per distinct value; ``missing`` for missing values."""
    idx, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    mapped = [fn(u) for u in uniques] + [missing]
    out = np.empty(len(mapped), dtype=object)
    out[:] = mapped
    return out[idx]


def _codes(s: pd.Series) -> np.ndarray:
    return _per_unique(s, lambda v: str(v).strip().replace(".", "").upper())


def _parse_dates(s: pd.Series) -> np.ndarray:
    """Each distinct value parsed once (claims hold a few thousand dates)."""
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return s.to_numpy().astype("M8[D]")
    return _per_unique(s, _parse_date, missing=np.datetime64("NaT")).astype("M8[D]")


def _parse_date(v) -> np.datetime64:
    text = str(v).strip()
    if not text:
        return np.datetime64("NaT")
    if re.fullmatch(r"\d{8}", text):
        return np.datetime64(f"{text[:4]}-{text[4:6]}-{text[6:]}")
    return np.datetime64(pd.Timestamp(text).date())


def _expand(items) -> list[str]:
    out = []
    for item in items:
        text = str(item).strip()
        if "-" in text.strip("-"):
            a, b = (x.replace(".", "").upper() for x in text.split("-", 1))
            letters = "".join(ch for ch in a if ch.isalpha())
            lo, hi = int(a[len(letters):]), int(b[len(letters):])
            out += [f"{letters}{i:0{len(a) - len(letters)}d}" for i in range(lo, hi + 1)]
        elif text:
            out.append(text.replace(".", "").upper())
    return out


def _matches(values: np.ndarray, prefixes: tuple, exact: set) -> np.ndarray:
    if not prefixes and not exact:
        return np.zeros(len(values), dtype=bool)

    def hit(v) -> bool:
        parts = [p for p in re.split(r"[;,\s]+", v) if p]
        return any((bool(prefixes) and p.startswith(prefixes)) or p in exact for p in parts)

    return _per_unique(values, hit, False).astype(bool)


def _truncation(claims, metrics, inp: _Input, admissible) -> list[str]:
    counts = pd.Series(inp.member[admissible]).value_counts().to_numpy()
    percentile = float(metrics.get("truncation", {}).get("percentile", 95.0))
    ordered = np.sort(counts)
    t = int(ordered[max(1, math.ceil(percentile / 100 * len(ordered) - 1e-9)) - 1]) \
        if len(ordered) else 0
    out = []
    if metrics.get("truncation", {}).get("threshold") != t:
        out.append(f"truncation threshold should be {t} (nearest-rank {percentile}th percentile "
                   f"of admissible claims per member), metrics say "
                   f"{metrics.get('truncation', {}).get('threshold')}")
    per = claims["member_id"].value_counts()
    over = per[per > t]
    if len(over):
        out.append(f"{len(over)} members have more than {t} claims, e.g. {over.index[0]} has "
                   f"{over.iloc[0]}")
    return out


class _Hierarchies:
    """The hierarchy file and grouping files, read on their own."""

    def __init__(self, path):
        self.path = Path(path)
        self.qis = _read_yaml(self.path)["qis"]
        self._tables: dict = {}

    def level(self, qi: str, name: str) -> dict | None:
        for lv in self.qis.get(qi, {}).get("levels", []):
            if lv["name"] == name:
                return lv
        return None

    def labels(self, qi: str, name: str):
        """Allowed labels, or None for an exact (integer) level."""
        lv = self.level(qi, name)
        if lv.get("suppressed"):
            return {"*"}
        if lv.get("exact"):
            return None
        if "bins" in lv:
            return {str(b[2]) for b in lv["bins"]}
        if "values" in lv:
            return {str(v) for v in lv["values"]}
        groups = {r[-1] for r in self._rows(lv["file"], lv.get("column", "group"))}
        return groups | {lv["fallback"], lv["missing"]}

    def generalize(self, qi: str, name: str, values: np.ndarray) -> np.ndarray:
        lv = self.level(qi, name)
        if lv.get("suppressed"):
            return np.full(len(values), "*", dtype=object)
        if lv.get("exact") or "values" in lv:
            return _per_unique(values, str)
        if "bins" in lv:
            return _per_unique(values, lambda v: _bin(lv["bins"], int(v)))
        return _per_unique(values, lambda v: self._group(lv, v))

    def _group(self, lv: dict, code: str) -> str:
        if code == "":
            return lv["missing"]
        rows = self._rows(lv["file"], lv.get("column", "group"))
        if lv["kind"] == "code_table":
            key = code.zfill(2) if len(code) == 1 and code.isdigit() else code
            hits = [g for k, g in rows if k == key]
            return hits[0] if hits else lv["fallback"]
        if lv["kind"] == "numeric_ranges":
            if len(code) == 5 and code.isdigit():
                for first, last, g in rows:
                    if int(first) <= int(code) <= int(last):
                        return g
            return lv["fallback"]
        return _icd9_group(rows, code, lv["fallback"])

    def _rows(self, file: str, column: str) -> list[tuple]:
        """The file's rules as plain tuples: (key, group) for code tables,
        (first, last, group) for ranges."""
        if (file, column) not in self._tables:
            t = pd.read_csv(self.path.parent / file, dtype=str, keep_default_na=False)
            if "first" in t.columns:
                rows = list(zip(t["first"].tolist(), t["last"].tolist(), t[column].tolist()))
            else:
                keys = [str(k).strip().upper() for k in t.iloc[:, 0].tolist()]
                keys = [k.zfill(2) if len(k) == 1 and k.isdigit() else k for k in keys]
                rows = list(zip(keys, t[column].tolist()))
            self._tables[(file, column)] = rows
        return self._tables[(file, column)]


def _icd9_group(rows: list[tuple], code: str, fallback: str) -> str:
    """Longest prefix first, then the narrowest range (the file's header rule)."""
    best = None
    for first, last, g in rows:
        n = len(first)
        head = code[:n]
        if len(head) < n or head[:1].isalpha() != first[:1].isalpha():
            continue
        if first[:1].isalpha() and head[:1] != first[:1]:
            continue
        if not first <= head <= last:
            continue
        digits = len(first) - (1 if first[:1].isalpha() else 0)
        width = (int(last[-digits:]) - int(first[-digits:]) + 1) if digits else 1
        rank = (-n, width)
        if best is None or rank < best[0]:
            best = (rank, g)
    return fallback if best is None else best[1]


def _bin(bins, v: int) -> str:
    for lo, hi, label in bins:
        if v >= lo and (hi is None or v < hi):
            return str(label)
    return f"<no bin for {v}>"


def _labels(members, claims, levels, hier: _Hierarchies) -> list[str]:
    out = []
    for table in (members, claims):
        for col in table.columns:
            if col == "member_id" or col not in levels:
                continue
            if hier.level(col, levels[col]) is None:
                out.append(f"{col}: the chosen level {levels[col]!r} is not in the hierarchy")
                continue
            allowed = hier.labels(col, levels[col])
            values = set(table[col].astype(str).unique())
            bad = (sorted(v for v in values if not v.isdigit()) if allowed is None
                   else sorted(values - allowed))
            if bad:
                out.append(f"{col}: values {bad[:5]} are not labels of level {levels[col]!r}")
    return out


def _consistency(members, claims, levels, hier, inp: _Input, admissible, link) -> list[str]:
    out = []
    idx = np.flatnonzero(admissible)
    adm = pd.DataFrame({"source": inp.member[idx], "date": inp.date[idx], "row": idx})
    adm = adm.sort_values(["source", "date", "row"], kind="stable")
    first = adm.groupby("source", sort=False).first()
    adm["dsfc"] = ((adm["date"].to_numpy() - first.loc[adm["source"], "date"].to_numpy())
                   .astype("m8[D]").astype(np.int64))
    raw = {"dx": inp.dx, "procedure": inp.procedure, "place_of_service": inp.pos,
           "specialty": inp.specialty, "length_of_stay": inp.los}
    cols = [c for c in CLAIM_COLUMNS if c in claims.columns]
    for c in cols:
        values = adm["dsfc"].to_numpy() if c == "dsfc" else raw[c][adm["row"].to_numpy()]
        adm[c] = hier.generalize(c, levels[c], values)
    back = {p: s for p, s in link.items()}
    rel = claims.assign(source=claims["member_id"].astype(str).map(back))
    have = adm.groupby(["source", *cols], sort=False).size().rename("have")
    got = rel.groupby(["source", *cols], sort=False).size().rename("got")
    joined = pd.concat([got, have], axis=1, join="outer").fillna(0)
    extra = joined[joined["got"] > joined["have"]]
    if len(extra):
        out.append(f"{len(extra)} (member, claim values) released more often than the member's "
                   f"admissible claims allow, e.g. {extra.index[0]}")
    released_sources = set(link.values())
    missing = set(first.index) - released_sources
    if missing:
        out.append(f"{len(missing)} members with admissible claims are not released")
    out += _member_rows(members, claims, levels, hier, inp, first, back)
    return out


def _member_rows(members, claims, levels, hier, inp: _Input, first, back) -> list[str]:
    m = members.assign(source=members["member_id"].astype(str).map(back))
    counts = claims["member_id"].value_counts()
    expect = {"age": lambda s: inp.age[first.loc[s, "row"].to_numpy()],
              "sex": lambda s: inp.sex[first.loc[s, "row"].to_numpy()],
              "claims_per_member": lambda s: counts.reindex(m["member_id"]).fillna(0)
              .astype(np.int64).to_numpy()}
    out = []
    for col in [c for c in MEMBER_COLUMNS if c in members.columns]:
        want = hier.generalize(col, levels[col], expect[col](m["source"]))
        bad = m[col].astype(str).to_numpy() != want
        if bad.any():
            i = int(np.argmax(bad))
            out.append(f"member {m['member_id'].iloc[i]}: {col} is {m[col].iloc[i]!r}, the "
                       f"chosen level gives {want[i]!r}")
    return out
