"""Code strings as the HHP method compares them.

Diagnosis and procedure codes are compared undotted and upper-case, as CMS
writes them ('995.81' and '99581' are the same code).  A prefix written
'a-b' is the range of same-length prefixes a..b ('634-639', 'V22-V28',
'59850-59852').  Place of service codes are two digits ('5' -> '05').
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from anonymizers.errors import InputError


# Python's whitespace among the ASCII characters (str.strip, str.split, \\s)
ASCII_WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def undotted(values) -> np.ndarray:
    """Strip, drop dots and upper-case each value; missing values become ''.

    ``values``: a numpy array, a list or a pandas Series (an Arrow-backed
    Series is read without a Python string per row).  Text that is all ASCII
    is cleaned by Arrow's kernels, once per distinct value; anything else
    (other characters, numbers) value by value in Python.  Equal outputs share
    one string object: at 2.7 million claims a string per row took 170 MB.
    """
    fast = _undotted_ascii(values)
    if fast is not None:
        return fast
    s = pd.Series(values, dtype=object)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    clean = np.array([_clean(u) for u in uniques] + [""], dtype=object)
    return clean[codes]  # the sentinel -1 picks the trailing ''


def _undotted_ascii(values) -> np.ndarray | None:
    try:
        text = pa.array(code_values(values), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    if not (pa.types.is_string(text.type) or pa.types.is_large_string(text.type)):
        return None
    if pc.all(pc.string_is_ascii(text)).as_py() is not True:
        return None
    encoded = pc.dictionary_encode(text)
    words = pc.ascii_trim(encoded.dictionary, characters=ASCII_WHITESPACE)
    words = pc.ascii_upper(pc.replace_substring(words, ".", ""))
    clean = np.array(words.to_pylist() + [""], dtype=object)
    # a missing value has a null index: it picks the trailing ''
    return clean[pc.fill_null(encoded.indices, len(words)).to_numpy()]


def code_values(codes):
    """A pandas Series as it is (an Arrow-backed column is then read without a
    Python string per row), any other sequence as an object array."""
    return codes if isinstance(codes, pd.Series) else np.asarray(codes, dtype=object)


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


class CodeIndex:
    """A column of codes factorized once, so that each rule is matched once per
    distinct code instead of once per row."""

    def __init__(self, codes):
        """``codes``: a sequence, or a pandas Series (factorized as it is: an
        Arrow-backed column gives no Python string per row)."""
        self.index, uniques = pd.factorize(code_values(codes), use_na_sentinel=False)
        self.uniques = uniques.tolist()

    @classmethod
    def of_arrow(cls, codes: pa.Array) -> "CodeIndex":
        """The index of an Arrow string array (factorized by Arrow)."""
        encoded = codes.dictionary_encode()
        out = cls.__new__(cls)
        out.index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        out.uniques = encoded.dictionary.to_pylist()
        return out

    def hits(self, prefixes: tuple[str, ...], codes=()) -> np.ndarray:
        """Boolean per row: does its code start with one of ``prefixes`` (an
        empty code starts with none) or equal one of ``codes``?  A missing
        code matches nothing."""
        exact = frozenset(codes)
        per_unique = np.fromiter(
            (isinstance(u, str) and ((bool(prefixes) and bool(u) and u.startswith(prefixes))
                                     or u in exact)
             for u in self.uniques), dtype=bool, count=len(self.uniques))
        return per_unique[self.index]


# str.split()'s ASCII whitespace, and the list separators ';' and ','
_ASCII_SEPARATOR = np.zeros(256, dtype=bool)
_ASCII_SEPARATOR[list((ASCII_WHITESPACE + ";,").encode())] = True


def split_code_lists(texts) -> tuple[np.ndarray, CodeIndex]:
    """The pieces of each text split on ';', ',' or whitespace (the
    separators of ``other_dx_codes``), as (owner text per piece, CodeIndex of
    the pieces); empty pieces are dropped.

    ``texts``: a list of str, or an Arrow string array without nulls (then no
    Python string is made per text on the ASCII path).  ASCII texts are split
    on their bytes at once (numpy over the Arrow buffer); other texts piece by
    piece with ``str.split``, whose whitespace is the regular expression ``\\s``.
    """
    text = _large_strings(texts)
    if len(text) == 0:  # (Arrow may leave an empty array without buffers)
        return np.zeros(0, dtype=np.int64), CodeIndex.of_arrow(text)
    data = text.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    # a slice's texts start at its own offset in the shared buffers
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int64)[
        text.offset:text.offset + len(text) + 1]
    raw = raw[offsets[0]:offsets[-1]]
    offsets = offsets - offsets[0]
    if (raw >= 128).any():
        return _split_each(text.to_pylist())
    keep = ~_ASCII_SEPARATOR[raw]
    first = np.zeros(len(raw) + 1, dtype=bool)
    first[offsets[:-1]] = True  # a text's first byte starts a piece unless it separates
    starts = np.flatnonzero(keep & (first[:-1] | np.r_[True, ~keep[:-1]]))
    ends = np.flatnonzero(keep & (first[1:] | np.r_[~keep[1:], True])) + 1
    owner = np.searchsorted(offsets, starts, side="right") - 1
    compact = raw[keep]
    # every kept byte belongs to one piece, so the pieces tile the compacted bytes
    piece_offsets = np.r_[0, np.cumsum(ends - starts)].astype(np.int64)
    pieces = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(piece_offsets),
                                              pa.py_buffer(compact.tobytes()))
    return owner, CodeIndex.of_arrow(pieces)


ARROW_TEXT = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)


def _large_strings(texts) -> pa.LargeStringArray:
    """``texts`` as an Arrow large-string array (the split reads its buffers)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not isinstance(texts, pa.Array):
        return pa.array(texts, pa.large_string())
    if not any(is_text(texts.type) for is_text in ARROW_TEXT):
        raise TypeError(f"split_code_lists: an Arrow array of texts must hold strings, "
                        f"not {texts.type}")
    if texts.null_count:
        raise ValueError("split_code_lists: an Arrow array of texts must hold no nulls")
    return texts.cast(pa.large_string())


def _split_each(texts: list[str]) -> tuple[np.ndarray, CodeIndex]:
    pieces = [t.replace(";", " ").replace(",", " ").split() for t in texts]
    counts = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    owner = np.repeat(np.arange(len(pieces)), counts)
    return owner, CodeIndex([p for group in pieces for p in group])
