"""Build the ICD-10-CM form of the HHP lists (policy ``hhp-2012-icd10-v1``)
from the ICD-9-CM ones through CMS's General Equivalence Mappings (GEMs).

El Emam et al. 2012, appendix section 2 (screening lists) and section 7
(primary condition groups) are written in ICD-9-CM.  This script rebuilds,
in this folder:

- ``screening_policy_icd10_v1.yaml``: the v1 policy with every diagnosis
  rule's prefixes translated; procedure, place-of-service and claim rules are
  copied unchanged (they are not ICD-9 codes).
- ``screening_icd10_trace.csv``: one row per (rule, ICD-10 code, ICD-9 code,
  GEM direction): the ICD-9 policy entry it came from and the GEM flags.
- ``icd10_pcg.csv``: ICD-10 prefix -> primary condition group, with the
  ICD-9 codes that decided it, the GEM used and the conflicts.
- ``hierarchies_icd10_v1.yaml``: ``hierarchies.yaml`` with the dx level
  read from ``icd10_pcg.csv``.

Rules (docs/hhp-icd10.md has the tables and what could not carry over):

Screening (protective).  An ICD-10 code is listed when the forward GEM maps a
listed ICD-9 code to it, or the backward GEM maps it to a listed ICD-9 code,
whatever the flags (approximate, combination): a list that removes high-risk
members takes every target.  'NoDx' rows carry nothing.  The GEMs map the
7th-character encounter extensions of chapters 19-20 (S, T, V-Y: A initial,
D subsequent, S sequela) to different ICD-9 codes (T74.11XA -> 995.81 but
T74.11XD -> V58.89, T74.11XS -> 909.9), so a listed 7-character S-Y code
also lists its extension siblings (same first 6 characters), traced as GEM
'extension' to the listed code's ICD-9 source: a later encounter for an
assault reveals the assault.

Groups (one per code).  An ICD-10 code's candidate ICD-9 codes are its
backward GEM targets (the GEM written for ICD-10 sources); a code the backward
GEM does not map takes the ICD-9 codes the forward GEM maps to it.  Each
candidate's group is read from ``icd9_pcg.csv`` by the ICD-9 rules of
``groupings``; the code takes the group of most candidates, a tie going to the
group of the first candidate in GEM order (scenario 1, choice list 1).
Candidates in no group (OTHER, e.g. the E-code half of an injury's
combination entry, T36.0X2A -> 960.0 + E950.4) do not vote unless no
candidate has a group: OTHER is the absence of a group, not a condition.

Codes whose group is the fallback (OTHER) are left out: they fall back to it
when read, and are counted as fallback values as in ICD-9.

Compaction.  The ICD-10-CM universe is every code either GEM names.  A code
list (a rule's codes, or the codes of one group) is written as the shortest
prefixes of at least 3 characters (the ICD-10 category) under which every
universe code is in the list, so a code added to such a category after the
GEM (e.g. F10.11, new in FY2018) is matched as well.

Usage (from the repository root):
    python anonymizers/data/hhp/translate_icd10.py \
        --gem ../shared/datasets/icd9/icd9toicd10cmgem.csv.gz \
        [--backward-gem anonymizers/data/hhp/gem/icd10cmtoicd9gem.csv.gz] [--out DIR]
Without --backward-gem only the forward GEM is used (and the output says so).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # run as a script from a checkout

from anonymizers.claims.codes import expand_prefixes  # noqa: E402
from anonymizers.claims.groupings import group_of, load_hierarchies  # noqa: E402

VERSION = "hhp-2012-icd10-v1"
MIN_PREFIX = 3
NO_MAP = "NoDx"
EXTENSION_CHAPTERS = set("STVWXY")  # 7th character = encounter (chapters 19-20)
FLAG_COLS = ["flags", "approximate", "no_map", "combination", "scenario", "choice_list"]


def read_gem(path, source: str, target: str) -> pd.DataFrame:
    """A GEM as ``source, target, flags...`` (undotted upper-case str)."""
    gem = pd.read_csv(path, dtype=str, keep_default_na=False)
    gem = gem.rename(columns={source: "source", target: "target"})
    for col in ("source", "target"):
        gem[col] = gem[col].str.strip().str.replace(".", "", regex=False).str.upper()
    return gem[["source", "target", *FLAG_COLS]]


def universe(forward: pd.DataFrame, backward: pd.DataFrame | None) -> set[str]:
    codes = set(forward["target"])
    if backward is not None:
        codes |= set(backward["source"])
    codes.discard(NO_MAP.upper())
    return codes


def prefix_counts(codes) -> Counter:
    """prefix (>= MIN_PREFIX chars) -> how many of ``codes`` start with it."""
    return Counter(c[:n] for c in codes for n in range(MIN_PREFIX, len(c) + 1))


def compact(listed: set[str], under: Counter) -> dict[str, str]:
    """code -> the shortest prefix (>= MIN_PREFIX chars) under which every
    universe code (``under = prefix_counts(universe)``) is in ``listed``,
    a subset of the universe."""
    hit = prefix_counts(listed)
    out = {}
    for c in listed:
        out[c] = next((c[:n] for n in range(MIN_PREFIX, len(c) + 1)
                       if under[c[:n]] == hit[c[:n]]), c)
    return out


def translate_screening(policy: dict, forward, backward, codes) -> tuple[dict, pd.DataFrame]:
    """The ICD-10 policy document and its trace table."""
    trace = []
    doc = {k: v for k, v in policy.items() if k not in ("member_rules",)}
    doc["version"] = VERSION
    doc["source"] = (f"{policy['source']}; diagnosis lists translated from "
                     f"{policy['version']} by translate_icd10.py through CMS's GEMs")
    doc["trace"] = "screening_icd10_trace.csv"
    doc["member_rules"] = []
    for rule in policy["member_rules"]:
        rule = dict(rule)
        if rule["field"] == "dx" and rule.get("prefixes"):
            rows = _with_extensions(_rule_trace(rule, forward, backward), codes)
            prefix_of = compact(set(rows["icd10"]), prefix_counts(codes))
            rows["icd10_prefix"] = rows["icd10"].map(prefix_of)
            trace.append(rows)
            rule["icd9_prefixes"] = list(rule["prefixes"])
            rule["prefixes"] = sorted(set(prefix_of.values()))
        doc["member_rules"].append(rule)
    cols = ["rule", "icd10_prefix", "icd10", "icd9", "icd9_entry", "gem", *FLAG_COLS]
    return doc, pd.concat(trace)[cols].sort_values(cols[:5]).reset_index(drop=True)


def _rule_trace(rule: dict, forward, backward) -> pd.DataFrame:
    parts = []
    for entry in rule["prefixes"]:
        for p in expand_prefixes([entry], rule["name"]):
            for gem, df, icd9, icd10 in (("forward", forward, "source", "target"),
                                         ("backward", backward, "target", "source")):
                if df is None:
                    continue
                sel = df[df[icd9].str.startswith(p) & (df[icd10] != NO_MAP.upper())]
                parts.append(pd.DataFrame({"rule": rule["name"], "icd10": sel[icd10],
                                           "icd9": sel[icd9], "icd9_entry": str(entry),
                                           "gem": gem, **{c: sel[c] for c in FLAG_COLS}}))
    return pd.concat(parts, ignore_index=True).drop_duplicates()


def _with_extensions(rows: pd.DataFrame, codes: set[str]) -> pd.DataFrame:
    """``rows`` plus the encounter-extension siblings of its 7-character
    S-Y codes, each traced to the sibling's source row (gem 'extension')."""
    stems: dict[str, list[str]] = {}
    for c in codes:
        if len(c) == 7 and c[0] in EXTENSION_CHAPTERS:
            stems.setdefault(c[:6], []).append(c)
    listed = set(rows["icd10"])
    extra = []
    for _, row in rows[rows["icd10"].map(lambda c: len(c) == 7
                                         and c[0] in EXTENSION_CHAPTERS)].iterrows():
        for sib in stems.get(row["icd10"][:6], []):
            if sib not in listed:
                extra.append({**row.to_dict(), "icd10": sib, "gem": "extension"})
    if not extra:
        return rows
    more = pd.DataFrame(extra).drop_duplicates(subset=["icd10", "icd9", "icd9_entry"])
    return pd.concat([rows, more], ignore_index=True)


def translate_groups(forward, backward, codes, level: dict) -> pd.DataFrame:
    """``prefix, group, icd9_sources, gem, codes, conflicts, candidates``."""
    cand = _candidates(forward, backward)
    rows = []
    for code, (gem, icd9s) in cand.items():
        groups = [group_of(level, c) for c in icd9s]
        count = Counter(groups)
        voters = [g for g in groups if g != level["fallback"]] or groups
        votes = Counter(voters)
        top = max(votes.values())
        winner = next(g for g in voters if votes[g] == top)  # tie: first in GEM order
        rows.append((code, winner, icd9s, gem, len(count) > 1,
                     " ".join(f"{g}:{n}" for g, n in sorted(count.items()))))
    per_code = pd.DataFrame(rows, columns=["icd10", "group", "icd9", "gem", "conflict",
                                           "candidates"])
    under = prefix_counts(codes)
    parts = []
    listed = per_code[per_code["group"] != level["fallback"]]  # OTHER: the fallback's
    for group, sub in listed.groupby("group", sort=True):
        prefix_of = compact(set(sub["icd10"]), under)
        parts.append(sub.assign(prefix=sub["icd10"].map(prefix_of)))
    coded = pd.concat(parts)
    out = coded.groupby("prefix", sort=True).agg(
        group=("group", "first"),
        icd9_sources=("icd9", lambda s: " ".join(sorted({c for l in s for c in l}))),
        gem=("gem", lambda s: "+".join(sorted(set(s)))),
        codes=("icd10", "size"),
        conflicts=("conflict", "sum"),
        candidates=("candidates", lambda s: "; ".join(sorted(set(s)))))
    return out.reset_index()


def _candidates(forward, backward) -> dict[str, tuple[str, list[str]]]:
    """ICD-10 code -> (GEM used, its ICD-9 candidates in GEM order)."""
    out: dict[str, tuple[str, list[str]]] = {}
    if backward is not None:
        b = backward[backward["target"] != NO_MAP.upper()]
        for code, icd9 in b.groupby("source", sort=False)["target"]:
            out[code] = ("backward", list(dict.fromkeys(icd9)))
    f = forward[forward["target"] != NO_MAP.upper()]
    for code, icd9 in f.groupby("target", sort=False)["source"]:
        out.setdefault(code, ("forward", list(dict.fromkeys(icd9))))
    return out


def hierarchies_doc() -> dict:
    return {"version": "hhp-hierarchies-icd10-v1", "extends": "hierarchies.yaml",
            "qis": {"dx": {"scope": "claim",
                           "description": "primary ICD-10-CM diagnosis -> primary condition "
                                          "group (section 7, translated through the GEMs)",
                           "levels": [{"name": "pcg", "file": "icd10_pcg.csv",
                                       "kind": "icd10_prefixes", "fallback": "OTHER",
                                       "missing": "NONE"},
                                      {"name": "suppressed", "suppressed": True}]}}}


HEADER = """# Screening policy hhp-2012-icd10-v1: the section 2 lists of hhp-2012-v1 in
# ICD-10-CM.  GENERATED by translate_icd10.py (do not edit by hand; rerun it).
# Diagnosis prefixes: every ICD-10 code the forward GEM maps a listed ICD-9
# code to, or the backward GEM maps to a listed ICD-9 code (protective: all
# targets, approximate and combination included), compacted to the shortest
# prefix (>= 3 characters) whose every GEM-known code is listed.
# `icd9_prefixes` keeps the ICD-9 entries; screening_icd10_trace.csv gives,
# per ICD-10 code, the ICD-9 code and entry it came from and the GEM flags.
"""


def screening_tables(policy: dict, trace: pd.DataFrame, forward) -> str:
    """Markdown: per ICD-9 entry its ICD-10 prefixes and GEM flags, then the
    ICD-9 codes the GEM maps ambiguously (approximate, combination, no map)."""
    fwd = forward.assign(icd9=forward["source"])
    lines = ["| rule | ICD-9 entry | ICD-9 codes | ICD-10 codes (fwd/bwd/ext) | ICD-10 prefixes |",
             "|---|---|---|---|---|"]
    amb = ["| rule | ICD-9 code | forward GEM | ICD-10 targets |", "|---|---|---|---|"]
    for rule in policy["member_rules"]:
        if rule["field"] != "dx" or not rule.get("prefixes"):
            continue
        for entry in rule["prefixes"]:
            ps = expand_prefixes([entry], rule["name"])
            rows = trace[(trace["rule"] == rule["name"]) & (trace["icd9_entry"] == str(entry))]
            sub = fwd[fwd["icd9"].str.startswith(ps)]
            n = {g: rows.loc[rows["gem"] == g, "icd10"].nunique()
                 for g in ("forward", "backward", "extension")}
            pref = sorted(set(rows["icd10_prefix"]))
            shown = ", ".join(pref[:12]) + (f", ... ({len(pref)})" if len(pref) > 12 else "")
            missing = [p for p in ps if not sub["icd9"].str.startswith(p).any()]
            lines.append(f"| {rule['name']} | {entry} | {sub['icd9'].nunique()}"
                         f"{' (none for ' + ', '.join(missing) + ')' if missing else ''} | "
                         f"{rows['icd10'].nunique()} ({n['forward']}/{n['backward']}/"
                         f"{n['extension']}) | {shown or '-'} |")
            for code, g in sub.groupby("icd9", sort=True):
                kinds = [k for k in ("approximate", "combination", "no_map") if (g[k] == "1").any()]
                if kinds:
                    amb.append(f"| {rule['name']} | {code} | {', '.join(kinds)} | "
                               f"{' '.join(sorted(set(g['target'])))} |")
    return "\n".join(lines) + "\n\n" + "\n".join(amb) + "\n"


def group_table(pcg: pd.DataFrame) -> str:
    """Markdown: per primary condition group, its ICD-10 codes and conflicts."""
    agg = pcg.groupby("group").agg(prefixes=("prefix", "size"), codes=("codes", "sum"),
                                   conflicts=("conflicts", "sum"),
                                   forward_only=("gem", lambda s: int((s == "forward").sum())))
    lines = ["| group | ICD-10 prefixes | ICD-10 codes | codes with a conflict | "
             "prefixes from the forward GEM only |", "|---|---|---|---|---|"]
    lines += [f"| {g} | {r.prefixes} | {r.codes} | {r.conflicts} | {r.forward_only} |"
              for g, r in agg.iterrows()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gem", required=True, help="ICD-9 -> ICD-10-CM GEM (csv, csv.gz)")
    ap.add_argument("--backward-gem", help="ICD-10-CM -> ICD-9 GEM (csv, csv.gz)")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--tables", help="also write the markdown tables of docs/hhp-icd10.md here")
    args = ap.parse_args(argv)
    out = Path(args.out)
    forward = read_gem(args.gem, "icd9cm", "icd10cm")
    backward = None if args.backward_gem is None else read_gem(args.backward_gem,
                                                               "icd10cm", "icd9cm")
    codes = universe(forward, backward)
    policy = yaml.safe_load((HERE / "screening_policy_v1.yaml").read_text())
    doc, trace = translate_screening(policy, forward, backward, codes)
    doc["gems"] = ["forward"] + (["backward"] if backward is not None else [])
    (out / "screening_policy_icd10_v1.yaml").write_text(
        HEADER + yaml.safe_dump(doc, sort_keys=False, width=100))
    trace.to_csv(out / "screening_icd10_trace.csv", index=False)
    level = load_hierarchies(HERE / "hierarchies.yaml")["dx"].levels[0]
    pcg = translate_groups(forward, backward, codes, level)
    pcg.to_csv(out / "icd10_pcg.csv", index=False)
    if args.tables:
        Path(args.tables).write_text(screening_tables(policy, trace, forward) + "\n"
                                     + group_table(pcg))
    (out / "hierarchies_icd10_v1.yaml").write_text(
        "# GENERATED by translate_icd10.py: hierarchies.yaml with the dx level in "
        "ICD-10-CM.\n" + yaml.safe_dump(hierarchies_doc(), sort_keys=False))


if __name__ == "__main__":
    main()
