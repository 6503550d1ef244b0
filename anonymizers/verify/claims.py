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

Files: ``policy_path`` and ``hierarchies_path`` take a path or a bundled
policy name of ``BUNDLED`` (``hhp-2012-v1``: ICD-9-CM, ``hhp-2012-icd10-v1``:
ICD-10-CM; ``hhp-2012-icd10-ccsr-v1``: its lists, CCSR's diagnosis groups).  Left out, they are ICD-9's bundled files: the policy to check
against is the caller's to name, never read from the release's own metrics
(a release claiming another policy must not choose its own yardstick); check
8 below then compares the metrics' version with the policy file's.  A hierarchy file may say ``extends:
<file>`` (same folder): its quasi-identifiers replace those of that file one
by one.  Diagnosis level kinds: ``icd9_ranges`` (longest prefix, then the
narrowest range) and ``icd10_prefixes`` (rows ``prefix, group``; the longest
prefix of the undotted upper-case code, of at most 7 characters, wins; a
longer or repeated prefix in the file is itself a violation).

8. the policy version of the metrics is the policy file's; the hierarchy
   files are well formed (no ``extends`` cycle, ICD-10 prefixes of 1-7
   characters, each once).
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
ICD10_LONGEST = 7  # ICD-10-CM codes have at most 7 characters
BUNDLED = {"hhp-2012-v1": ("screening_policy_v1.yaml", "hierarchies.yaml"),
           "hhp-2012-icd10-v1": ("screening_policy_icd10_v1.yaml",
                                 "hierarchies_icd10_v1.yaml"),
           # the same lists with AHRQ's CCSR groups for the diagnosis (a hierarchy name)
           "hhp-2012-icd10-ccsr-v1": ("screening_policy_icd10_v1.yaml",
                                      "hierarchies_icd10_ccsr_v1.yaml")}
SEX = {"1": "M", "M": "M", "MALE": "M", "2": "F", "F": "F", "FEMALE": "F"}


def verify_hhp(result, claims_df: pd.DataFrame, policy_path=None, hierarchies_path=None) -> Verdict:
    """Check an ``HHPResult`` (members, claims, metrics, key) against its input."""
    return verify_release(result.members, result.claims, result.metrics, result.key, claims_df,
                          policy_path, hierarchies_path)


def verify_release(members: pd.DataFrame, claims: pd.DataFrame, metrics: dict,
                   key: pd.DataFrame, claims_df: pd.DataFrame, policy_path=None,
                   hierarchies_path=None) -> Verdict:
    """The whole release against the whole input: ``verify_release_batches``
    with one batch."""
    return verify_release_batches(members, FrameClaims(claims), metrics, key,
                                  lambda: [claims_df], policy_path, hierarchies_path)


class FrameClaims:
    """Released claims held in one DataFrame, read the way the batched
    verifier reads them: in chunks, or the rows of some pseudonyms."""

    def __init__(self, claims: pd.DataFrame):
        self.claims = claims

    def chunks(self):
        return [self.claims]

    def of(self, pseudonyms) -> pd.DataFrame:
        return self.claims[self.claims["member_id"].astype(str).isin(set(pseudonyms))]


def verify_release_batches(members: pd.DataFrame, claims, metrics: dict, key: pd.DataFrame,
                           batches, policy_path=None, hierarchies_path=None) -> Verdict:
    """The checks of the module docstring with the input claims in batches
    of whole members, so that memory holds one batch, the members table, the
    key and small indexes (distinct released values, claims per member).

    ``claims`` gives the released claims as ``chunks()`` (all of them, in
    any cut) and ``of(pseudonyms)`` (their rows); ``batches()`` returns an
    iterable of input-claims DataFrames, each holding all the claims of its
    members.  Screening, truncation counts and consistency are per member,
    so each batch is checked on its own; the threshold, the id sets and
    the labels are checked once.  The violations do not depend on the cut
    (examples are the smallest offender); a member found in two batches is
    itself a violation.
    """
    levels = dict(metrics.get("chosen_node", {}))
    seen = _ReleasedClaims(claims)
    shape = _shape(members, seen, levels)
    released = _distinct_values(members, seen)
    link, named, key_problems = _key(members, key)
    policy_file, hier_file = _files(policy_path, hierarchies_path, metrics)
    policy = _read_yaml(policy_file)
    hier = _Hierarchies(hier_file)
    labels = _labels(released, levels, hier)
    scan = _BatchScan(members, seen, levels, hier, link, policy,
                      list(metrics.get("policy_extra_rare_visible", [])),
                      consistency=not (shape or labels))
    for df in batches():
        scan.add(df, released)
    problems = shape + _dates(released) + scan.id_problems(released)
    problems += key_problems + scan.unknown_sources(named)
    if policy.get("version") != metrics.get("policy_version"):
        problems.append(f"metrics say policy {metrics.get('policy_version')!r}, the policy file "
                        f"is {policy.get('version')!r}")
    problems += scan.split_problems() + scan.screening
    problems += _truncation(seen.per_member, metrics, scan.admissible_counts)
    problems += labels + hier.problems
    if not problems:
        problems += scan.consistency()
    return Verdict.from_violations(PROPERTY, len(members) + seen.n, problems)


class _ReleasedClaims:
    """One pass over the released claims: their columns, row count, distinct
    values per column and claims per member pseudonym."""

    def __init__(self, claims):
        self.of, self.n, self.columns = claims.of, 0, None
        values: dict[str, set] = {}
        per: list[pd.Series] = []
        dated: set[str] = set()
        for chunk in claims.chunks():
            self.columns = list(chunk.columns) if self.columns is None else self.columns
            self.n += len(chunk)
            for col in chunk.columns:
                if pd.api.types.is_datetime64_any_dtype(chunk[col].dtype):
                    dated.add(col)
                values.setdefault(col, set()).update(chunk[col].astype(str).unique().tolist())
            if "member_id" in chunk.columns:
                per.append(chunk["member_id"].astype(str).value_counts())
        self.columns = self.columns or []
        self.values, self.dated = values, dated
        self.per_member = (pd.concat(per).groupby(level=0).sum() if per
                           else pd.Series(dtype=np.int64))


def _files(policy_path, hierarchies_path, metrics: dict) -> tuple[Path, Path]:
    """(policy file, hierarchy file): a bundled name gives its file; left out,
    ICD-9's bundled files (a named policy brings its own hierarchies)."""
    default = "hhp-2012-v1"
    if policy_path is not None and str(policy_path) in BUNDLED:
        default = str(policy_path)
    out = []
    for given, i in ((policy_path, 0), (hierarchies_path, 1)):
        name = str(given) if given is not None and str(given) in BUNDLED else None
        out.append(DATA / BUNDLED[name or default][i] if given is None or name
                   else Path(given))
    return out[0], out[1]


def _read_yaml(path) -> dict:
    return yaml.safe_load(Path(path).read_text()) or {}


def _shape(members, seen: _ReleasedClaims, levels) -> list[str]:
    out = []
    if "member_id" not in members.columns or "member_id" not in seen.columns:
        return ["the members and claims tables need a member_id column"]
    if members["member_id"].duplicated().any():
        out.append("a member pseudonym appears twice in the members table")
    orphan = set(seen.per_member.index) - set(members["member_id"].astype(str))
    if orphan:
        out.append(f"claims of members not in the members table: {sorted(orphan)[:3]}")
    m_cols = [c for c in members.columns if c != "member_id"]
    c_cols = [c for c in seen.columns if c != "member_id"]
    bad = [c for c in m_cols if c not in MEMBER_COLUMNS] + [c for c in c_cols
                                                            if c not in CLAIM_COLUMNS]
    if bad:
        out.append(f"columns that are not quasi-identifiers: {bad}")
    if set(m_cols) | set(c_cols) != set(levels):
        out.append(f"released columns {sorted(set(m_cols) | set(c_cols))} differ from the "
                   f"chosen node's quasi-identifiers {sorted(levels)}")
    return out


def _distinct_values(members, seen: _ReleasedClaims) -> dict:
    """table -> column -> (its distinct values as strings, is it a datetime column)."""
    return {"members": {c: (set(members[c].astype(str).unique().tolist()),
                            pd.api.types.is_datetime64_any_dtype(members[c].dtype))
                        for c in members.columns},
            "claims": {c: (seen.values.get(c, set()), c in seen.dated) for c in seen.columns}}


def _dates(released: dict) -> list[str]:
    out = []
    for name, columns in released.items():
        for col, (values, dated) in columns.items():
            if dated:
                out.append(f"{name}.{col} is a date column")
                continue
            dates = sorted(v for v in values if DATE_LIKE.match(v))
            if dates:
                out.append(f"{name}.{col} holds date-like values, e.g. {dates[0]!r}")
    return out


def _key(members, key) -> tuple[dict, list[str], list[str]]:
    """(released pseudonym -> source member, every source member the key
    names, the key's problems)."""
    out = []
    if not {"member_id", "source_member_id"} <= set(key.columns):
        return {}, [], ["the key needs member_id and source_member_id columns"]
    link = dict(zip(key["member_id"].astype(str), key["source_member_id"].astype(str)))
    released = set(members["member_id"].astype(str))
    if len(link) != len(key) or set(link) != released:
        out.append("the key does not map each released pseudonym exactly once")
    if len(set(link.values())) != len(link):
        out.append("two pseudonyms map to the same source member")
    return {p: s for p, s in link.items() if p in released}, list(link.values()), out


class _BatchScan:
    """What the pass over the input batches finds (see ``verify_release_batches``)."""

    def __init__(self, members, seen, levels, hier, link, policy, extra_rare, consistency):
        self.members, self.seen, self.levels, self.hier = members, seen, levels, hier
        self.link, self.policy, self.extra_rare = link, policy, extra_rare
        self.check_consistency = consistency
        self.member_ids = members["member_id"].astype(str)  # once, not per batch
        self.known: set[str] = set()
        self.twice: set[str] = set()
        self.hits: dict[tuple, str] = {}
        self.removed_released: list[tuple] = []
        self.admissible_counts: list[np.ndarray] = []
        self.extra_n, self.extra_eg, self.missing = 0, None, 0
        self.member_bad: dict[str, tuple] = {}

    def add(self, df: pd.DataFrame, released: dict) -> None:
        inp = _Input(df)
        ids = set(pd.unique(inp.member).tolist())
        self.twice |= ids & self.known
        self.known |= ids
        source = ids | set(df["claim_id"].astype(str).str.strip())
        for name, columns in released.items():
            for col, (values, dated) in columns.items():
                hit = values & source if not dated else None
                if hit:  # the example is the smallest id over all batches
                    self.hits[(name, col)] = min(min(hit), self.hits.get((name, col), min(hit)))
        removed, admissible = inp.screen(self.policy, self.extra_rare)
        batch = {p: s for p, s in self.link.items() if s in ids}
        self.removed_released += [(p, s) for p, s in batch.items() if s in removed]
        self.admissible_counts.append(pd.Series(inp.member[admissible]).value_counts().to_numpy())
        if self.check_consistency:
            self._consistency(inp, admissible, batch)

    def _consistency(self, inp, admissible, batch: dict) -> None:
        members = self.members[self.member_ids.isin(batch)]
        n, eg, missing, bad = _consistency(members, self.seen.of(list(batch)), self.levels,
                                           self.hier, inp, admissible, batch,
                                           self.seen.per_member)
        self.extra_n += n
        if eg is not None:
            self.extra_eg = eg if self.extra_eg is None else min(self.extra_eg, eg, key=str)
        self.missing += missing
        for col, (who, message) in bad.items():
            if col not in self.member_bad or who < self.member_bad[col][0]:
                self.member_bad[col] = (who, message)

    @property
    def screening(self) -> list[str]:
        return [f"released member {p} (source {s}) should have been removed by screening"
                for p, s in sorted(self.removed_released)]

    def id_problems(self, released: dict) -> list[str]:
        return [f"{name}.{col} holds source ids, e.g. {self.hits[(name, col)]!r}"
                for name, columns in released.items() for col in columns
                if (name, col) in self.hits]

    def split_problems(self) -> list[str]:
        if not self.twice:
            return []
        return [(f"{len(self.twice)} input members are in two batches: the batches must hold "
                 "whole members (ids are compared with surrounding spaces removed)")]

    def unknown_sources(self, sources: list[str]) -> list[str]:
        unknown = sorted({s for s in sources if s not in self.known})
        return [f"key names source members not in the input: {unknown[:3]}"] if unknown else []

    def consistency(self) -> list[str]:
        out = []
        if self.extra_n:
            out.append(f"{self.extra_n} (member, claim values) released more often than the "
                       f"member's admissible claims allow, e.g. {self.extra_eg}")
        if self.missing:
            out.append(f"{self.missing} members with admissible claims are not released")
        return out + [self.member_bad[c][1] for c in ("member_id", *MEMBER_COLUMNS)
                      if c in self.member_bad]


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


def _truncation(per_member: pd.Series, metrics, admissible_counts: list) -> list[str]:
    """``per_member``: released claims per pseudonym; ``admissible_counts``:
    each batch's admissible claims per input member."""
    counts = np.concatenate(admissible_counts) if admissible_counts else np.zeros(0, np.int64)
    percentile = float(metrics.get("truncation", {}).get("percentile", 95.0))
    ordered = np.sort(counts)
    t = int(ordered[max(1, math.ceil(percentile / 100 * len(ordered) - 1e-9)) - 1]) \
        if len(ordered) else 0
    out = []
    if metrics.get("truncation", {}).get("threshold") != t:
        out.append(f"truncation threshold should be {t} (nearest-rank {percentile}th percentile "
                   f"of admissible claims per member), metrics say "
                   f"{metrics.get('truncation', {}).get('threshold')}")
    over = per_member[per_member > t]
    if len(over):
        who, n = min(over.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(f"{len(over)} members have more than {t} claims, e.g. {who} has {n}")
    return out


class _Hierarchies:
    """The hierarchy file (and the files it ``extends``) and grouping files,
    read on their own.  ``problems``: what is wrong with the files."""

    def __init__(self, path):
        self.path = Path(path)
        self.problems: list[str] = []
        self.qis = self._qis(self.path, ())
        self._tables: dict = {}

    def _qis(self, path: Path, chain: tuple) -> dict:
        """The file's ``qis`` over those of the file it extends; each level
        records the folder its grouping file is read from."""
        doc = _read_yaml(path)
        qis = {}
        if doc.get("extends"):
            base = path.parent / str(doc["extends"])
            if base.resolve() in chain + (path.resolve(),):
                self.problems.append(f"{path.name} extends {doc['extends']} in a cycle")
            else:
                qis.update(self._qis(base, chain + (path.resolve(),)))
        for name, spec in (doc.get("qis") or {}).items():
            levels = [{**lv, "folder": path.parent} for lv in spec.get("levels", [])]
            qis[name] = {**spec, "levels": levels}
        return qis

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
        rows = self._rows(lv)
        groups = set(rows.values()) if isinstance(rows, dict) else {r[-1] for r in rows}
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
        rows = self._rows(lv)
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
        if lv["kind"] == "icd10_prefixes":
            return _icd10_group(rows, code, lv["fallback"])
        return _icd9_group(rows, code, lv["fallback"])

    def _rows(self, lv: dict):
        """The level's file as plain rules: (key, group) for code tables,
        (first, last, group) for ranges, {prefix: group} for ICD-10 prefixes."""
        file, column = Path(lv["folder"]) / lv["file"], lv.get("column", "group")
        if (file, column) not in self._tables:
            t = pd.read_csv(file, dtype=str, keep_default_na=False)
            if lv.get("kind") == "icd10_prefixes":
                rows = self._prefixes(file.name, t["prefix"].tolist(), t[column].tolist())
            elif "first" in t.columns:
                rows = list(zip(t["first"].tolist(), t["last"].tolist(), t[column].tolist()))
            else:
                keys = [str(k).strip().upper() for k in t.iloc[:, 0].tolist()]
                keys = [k.zfill(2) if len(k) == 1 and k.isdigit() else k for k in keys]
                rows = list(zip(keys, t[column].tolist()))
            self._tables[(file, column)] = rows
        return self._tables[(file, column)]

    def _prefixes(self, name: str, prefixes: list, groups: list) -> dict:
        out: dict[str, str] = {}
        bad = []
        for prefix, group in zip(prefixes, groups):
            p = str(prefix).strip().replace(".", "").upper()
            if not 1 <= len(p) <= ICD10_LONGEST or p in out:
                bad.append(prefix)
                continue
            out[p] = group
        if bad:
            self.problems.append(f"{name}: {len(bad)} prefixes are empty, longer than "
                                 f"{ICD10_LONGEST} characters or repeated, e.g. {bad[0]!r}")
        return out


def _icd10_group(rows: dict, code: str, fallback: str) -> str:
    """The group of the longest prefix of ``code`` (at most 7 characters)."""
    for n in range(min(len(code), ICD10_LONGEST), 0, -1):
        if code[:n] in rows:
            return rows[code[:n]]
    return fallback


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


def _labels(released: dict, levels, hier: _Hierarchies) -> list[str]:
    out = []
    for columns in released.values():
        for col, (values, _) in columns.items():
            if col == "member_id" or col not in levels:
                continue
            if hier.level(col, levels[col]) is None:
                out.append(f"{col}: the chosen level {levels[col]!r} is not in the hierarchy")
                continue
            allowed = hier.labels(col, levels[col])
            bad = (sorted(v for v in values if not v.isdigit()) if allowed is None
                   else sorted(values - allowed))
            if bad:
                out.append(f"{col}: values {bad[:5]} are not labels of level {levels[col]!r}")
    return out


def _consistency(members, claims, levels, hier, inp: _Input, admissible, link,
                 per_member: pd.Series) -> tuple:
    """Check 7 for the members of one batch (``link``: their pseudonym ->
    source member; ``claims``: their released claims).  Returns (how many
    (member, claim values) are released too often, the smallest of them,
    how many members with admissible claims are not released, the member
    rows' problems)."""
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
    rel = claims.assign(source=claims["member_id"].astype(str).map(link))
    have = adm.groupby(["source", *cols], sort=False).size().rename("have")
    got = rel.groupby(["source", *cols], sort=False).size().rename("got")
    joined = pd.concat([got, have], axis=1, join="outer").fillna(0)
    extra = joined[joined["got"] > joined["have"]]
    example = min(extra.index, key=str) if len(extra) else None
    missing = len(set(first.index) - set(link.values()))
    return len(extra), example, missing, _member_rows(members, levels, hier, inp, first, link,
                                                      per_member)


def _member_rows(members, levels, hier, inp: _Input, first, link, per_member) -> dict:
    """column -> (smallest pseudonym whose row is wrong there, the problem)."""
    m = members.assign(member_id=members["member_id"].astype(str))
    m = m.assign(source=m["member_id"].map(link))
    known = m["source"].isin(first.index).to_numpy()
    out = {}
    if not known.all():  # released, yet no admissible claim (screening reports why)
        who = m["member_id"][~known].min()
        out["member_id"] = (who, f"member {who} is released with no admissible claim")
    m = m[known]
    row = first.loc[m["source"], "row"].to_numpy()
    expect = {"age": lambda: inp.age[row], "sex": lambda: inp.sex[row],
              "claims_per_member": lambda: per_member.reindex(m["member_id"]).fillna(0)
              .astype(np.int64).to_numpy()}
    for col in [c for c in MEMBER_COLUMNS if c in m.columns]:
        want = hier.generalize(col, levels[col], expect[col]())
        bad = m[col].astype(str).to_numpy() != want
        if bad.any():
            i = min(np.flatnonzero(bad), key=lambda j: m["member_id"].iloc[j])
            who = m["member_id"].iloc[i]
            out[col] = (who, (f"member {who}: {col} is {m[col].iloc[i]!r}, the chosen level "
                             f"gives {want[i]!r}"))
    return out
