"""Verifier of GCCens releases: k-map of repeated codes (Tamersoy 2011, III.2-III.5).

Written from the definitions, sharing no code with ``anonymizers.censoring``:
a record is a multiset of code strings; a population record ``p`` contains a
multiset ``D`` when ``p`` holds at least as many copies of every code as
``D``; ``dis(D)`` is the number of population records containing ``D``
(an empty ``D`` is contained in every record).  This is III.4's definition
(Tom's ``{272, 272, 724}`` contains ``{272, 724}``); Example 1's
``dis({250, 250, 272}) = 1`` overlooks John's ``{250, 250, 272, 272}``.

Checks, in order:

1. the release is well formed: distinct pseudonyms, positive integer counts,
   one row per (pseudonym, code), no row for a pseudonym that is not released;
2. the key maps each released pseudonym to one sample patient and each
   sample patient to one released pseudonym (Y is a version of S);
3. each released record is contained in its original sample record;
4. no released count exceeds its code's final cap;
5. each sample record is contained in its patient's population record (the
   thesis' assumption that the sample is drawn from the population);
6. k-map: ``dis(released record) >= k`` for every released record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from anonymizers.errors import InputError
from anonymizers.verify.verdict import Verdict

PROPERTY = "k-map of repeated codes (GCCens; Tamersoy 2011, III.5)"


def verify_gccens(patients: Sequence[str], records: pd.DataFrame, key: pd.DataFrame,
                  sample: pd.DataFrame, population: pd.DataFrame, k: int,
                  final_caps: Mapping[str, int]) -> Verdict:
    """Check a GCCens release against its sample and population.

    ``patients``: every released pseudonym (empty records included);
    ``records``: long ``patient_id, code, count``; ``key``: ``patient_id``
    (pseudonym), ``original_id``; ``sample``/``population``: long
    ``patient_id, code`` with one row per occurrence or a ``count`` column.
    Ids and codes are compared as strings.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    patients = [str(p) for p in patients]
    problems, released = _released(patients, records)
    link = list(zip(key["patient_id"].astype(str), key["original_id"].astype(str)))
    sample_t = _tally(sample)
    population_t = _tally(population)
    originals = _multisets(sample_t)
    problems += _key_problems(patients, link, originals)
    problems += _not_in_original(released, dict(link), originals)
    problems += _over_caps(released, {str(c): v for c, v in final_caps.items()})
    problems += _sample_outside_population(originals, population_t)
    problems += _k_map(patients, released, population_t, int(k))
    return Verdict.from_violations(PROPERTY, len(patients), problems)


def records_from_document(doc: Mapping) -> tuple[list[str], pd.DataFrame, int, dict]:
    """(pseudonyms, long records, k, final caps) of a JSON release document."""
    try:
        pats = [str(r["patient_id"]) for r in doc["records"]]
        rows = [(str(r["patient_id"]), str(c), n) for r in doc["records"]
                for c, n in r["codes"].items()]
        return (pats, pd.DataFrame(rows, columns=["patient_id", "code", "count"]),
                doc["k"], dict(doc.get("final_caps", {})))
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError("release", f"not a GCCens release document ({exc!r})") from None


def _tally(df: pd.DataFrame) -> pd.DataFrame:
    """``patient_id, code, n``: copies of each code per patient (strings)."""
    n = df["count"].astype(np.int64) if "count" in df.columns else 1
    t = pd.DataFrame({"patient_id": df["patient_id"].astype(str),
                      "code": df["code"].astype(str), "n": n})
    return t.groupby(["patient_id", "code"], as_index=False, sort=False)["n"].sum()


def _multisets(tally: pd.DataFrame) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p, c, n in zip(tally["patient_id"], tally["code"], tally["n"]):
        out.setdefault(p, {})[c] = int(n)
    return out


def _released(patients: list[str], records: pd.DataFrame) -> tuple[list, dict]:
    """Problems of form, and the released multisets by pseudonym."""
    seen, out = set(), []
    for p in patients:
        if p in seen:
            out.append(f"pseudonym {p!r} is released more than once")
        seen.add(p)
    released: dict[str, dict[str, int]] = {p: {} for p in patients}
    for p, c, n in zip(records["patient_id"].astype(str), records["code"].astype(str),
                       records["count"]):
        if p not in seen:
            out.append(f"a row for {p!r}, which is not among the released records")
        elif not _positive_int(n):
            out.append(f"record {p!r}, code {c!r}: count {n!r} is not a positive integer")
        elif c in released[p]:
            out.append(f"record {p!r}: code {c!r} has more than one row")
        else:
            released[p][c] = int(n)
    return out, released


def _positive_int(n) -> bool:
    if isinstance(n, (bool, np.bool_, str)):
        return False
    try:
        return float(n).is_integer() and n >= 1
    except (TypeError, ValueError):
        return False


def _key_problems(patients: list[str], link: list[tuple[str, str]], originals: dict) -> list:
    pseudonyms, sources = Counter(p for p, _ in link), Counter(o for _, o in link)
    out = [f"key: pseudonym {p!r} appears {n} times" for p, n in pseudonyms.items() if n > 1]
    out += [f"key: source patient {o!r} has {n} pseudonyms" for o, n in sources.items() if n > 1]
    released = set(patients)
    out += [f"released record {p!r} is not in the key" for p in sorted(released - set(pseudonyms))]
    out += [f"key names {p!r}, which is not released" for p in sorted(set(pseudonyms) - released)]
    out += [f"sample patient {o!r} has no released record"
            for o in sorted(set(originals) - set(sources))]
    out += [f"key links to {o!r}, who is not in the sample"
            for o in sorted(set(sources) - set(originals))]
    return out


def _not_in_original(released: dict, link: dict, originals: dict) -> list:
    out = []
    for p, codes in released.items():
        original = originals.get(link.get(p), {})
        out += [f"record {p!r}: {n} copies of {c!r}, but its original holds {original.get(c, 0)}"
                for c, n in codes.items() if n > original.get(c, 0)]
    return out


def _over_caps(released: dict, caps: dict) -> list:
    out = []
    for p, codes in released.items():
        for c, n in codes.items():
            if c not in caps:
                out.append(f"record {p!r}: code {c!r} has no final cap")
            elif n > caps[c]:
                out.append(f"record {p!r}: {n} copies of {c!r} exceed its final cap {caps[c]}")
    return out


def _sample_outside_population(originals: dict, population_t: pd.DataFrame) -> list:
    mine = population_t[population_t["patient_id"].isin(pd.Index(list(originals)))]
    held = _multisets(mine)
    known = set(held)
    out = []
    for p, codes in originals.items():
        if p not in known:
            out.append(f"sample patient {p!r} is not in the population")
            continue
        out += [f"sample patient {p!r}: {n} copies of {c!r}, population record holds "
                f"{held[p].get(c, 0)}" for c, n in codes.items() if n > held[p].get(c, 0)]
    return out


def _k_map(patients: list[str], released: dict, population_t: pd.DataFrame, k: int) -> list:
    """dis of every released record, computed once per distinct multiset."""
    holders = _Holders(population_t)
    dis: dict[tuple, int] = {}
    out = []
    for p in dict.fromkeys(patients):
        d = tuple(sorted(released[p].items()))
        if d not in dis:
            dis[d] = holders.containing(d)
        if dis[d] < k:
            out.append(f"record {p!r} is contained in {dis[d]} population record(s), "
                       f"fewer than k={k}")
    return out


class _Holders:
    """The population records holding at least ``t`` copies of a code ``c``.

    Each set ``(c, t)`` is built once: as the sorted record numbers when few
    records hold it, as a bitset over the population when more than
    ``1 / DENSE`` of it do (n / 8 bytes, the size of n / 64 record numbers).
    ``containing`` then costs one pass over the smallest set, or bitset ANDs
    when every set is large, never a pass over the population per multiset.
    """

    DENSE = 64

    def __init__(self, population_t: pd.DataFrame):
        pid, ids = pd.factorize(population_t["patient_id"])
        counts = population_t["n"].to_numpy()
        self.n = len(ids)
        self._by_code = {c: (pid[idx], counts[idx]) for c, idx
                         in population_t.groupby("code", sort=False).indices.items()}
        self._sets: dict[tuple[str, int], tuple[int, np.ndarray, np.ndarray | None]] = {}

    def containing(self, multiset: tuple) -> int:
        """Population records holding at least ``t`` copies of ``c`` for every
        ``(c, t)`` of the multiset."""
        if not multiset:
            return self.n
        sets = sorted((self._set(c, t) for c, t in multiset), key=lambda s: s[0])
        if sets[0][2] is not None:  # the smallest is a bitset, so all are
            acc = np.bitwise_and.reduce([bits for _, _, bits in sets])
            return int(np.bitwise_count(acc).sum(dtype=np.int64))
        alive = sets[0][1]
        for _, rows, bits in sets[1:]:
            if len(alive) == 0:
                break
            if bits is not None:
                alive = alive[(bits[alive >> 3] >> (alive & 7).astype(np.uint8)) & 1 == 1]
            else:
                alive = alive[np.isin(alive, rows, assume_unique=True)]
        return len(alive)

    def _set(self, code: str, t: int) -> tuple[int, np.ndarray, np.ndarray | None]:
        """(size, sorted record numbers, bitset or None) of the set (code, t)."""
        found = self._sets.get((code, t))
        if found is None:
            who, n = self._by_code.get(code, (np.empty(0, dtype=np.int64), np.empty(0)))
            rows = np.sort(who[n >= t])  # one row per (patient, code): no repeats
            bits = None
            if len(rows) * self.DENSE > self.n:
                held = np.zeros(self.n, dtype=bool)
                held[rows] = True
                bits = np.packbits(held, bitorder="little")
            found = self._sets[(code, t)] = (len(rows), rows, bits)
        return found
