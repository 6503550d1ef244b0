"""Code strings as the HHP method compares them.

Diagnosis and procedure codes are compared undotted and upper-case, as CMS
writes them ('995.81' and '99581' are the same code).  A prefix written
'a-b' is the range of same-length prefixes a..b ('634-639', 'V22-V28',
'59850-59852').  Place of service codes are two digits ('5' -> '05').
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonymizers.errors import InputError


def undotted(values) -> np.ndarray:
    """Strip, drop dots and upper-case each value; missing values become ''."""
    s = pd.Series(values, dtype=object)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    clean = np.array([_clean(u) for u in uniques] + [""], dtype=object)
    return clean[codes]  # the sentinel -1 picks the trailing ''


def _clean(value) -> str:
    return str(value).strip().replace(".", "").upper()


def place_of_service(values) -> np.ndarray:
    """Place of service codes: undotted, and one digit padded to two."""
    out = undotted(values)
    one = np.array([len(v) == 1 and v.isdigit() for v in out], dtype=bool)
    out[one] = np.array(["0" + v for v in out[one]], dtype=object)
    return out


def expand_prefixes(items, source: str = "policy") -> tuple[str, ...]:
    """Expand 'a-b' ranges and undot every prefix; InputError on a bad range."""
    out: list[str] = []
    for item in items:
        text = str(item)
        if "-" in text.strip("-"):
            first, last = (_clean(p) for p in text.split("-", 1))
            out.extend(_range(first, last, source, text))
        else:
            out.append(_clean(text))
    return tuple(dict.fromkeys(p for p in out if p))


def _range(first: str, last: str, source: str, text: str) -> list[str]:
    head = first[:1] if first[:1].isalpha() else ""
    a, b = first[len(head):], last[len(head):]
    if (len(first) != len(last) or last[:len(head)] != head or not a.isdigit()
            or not b.isdigit() or int(a) > int(b)):
        raise InputError(source, f"prefix range {text!r} must join two prefixes of the same "
                         "length and kind, the first not after the last")
    return [f"{head}{i:0{len(a)}d}" for i in range(int(a), int(b) + 1)]


def starts_with_any(codes: np.ndarray, prefixes: tuple[str, ...]) -> np.ndarray:
    """Boolean per code: does it start with one of ``prefixes``?  Codes are
    matched once per distinct value."""
    if not prefixes or len(codes) == 0:
        return np.zeros(len(codes), dtype=bool)
    idx, uniques = pd.factorize(pd.Series(codes, dtype=object))
    hit = np.array([bool(u) and u.startswith(prefixes) for u in uniques], dtype=bool)
    return hit[idx]
