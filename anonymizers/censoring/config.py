"""Parameters of GCCens (Tamersoy 2011, III.5) and their validation."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from anonymizers.errors import ParameterError


@dataclass(frozen=True)
class GCCensConfig:
    """What GCCens protects against and how far it may censor.

    Parameters
    ----------
    k : int
        Privacy parameter of k-map (III.5): every released record must be
        contained in at least ``k`` population records.  At least 1, and at
        most the population size (checked when the data is known).
    caps : None, int or mapping of str to int, default None
        The cap set ``C`` (III.5): the most copies of a code a released record
        may hold.  An int is one cap for every code; a mapping gives a cap per
        code string (e.g. ``{"250": 2, "401": 0}``) and must cover every code of
        the sample (extra codes are allowed); ``None`` derives each code's cap
        from the sample, as the thesis allows: the largest number of copies of
        that code in any sample record.  Caps are integers >= 0; a cap of 0
        censors every copy of the code.
    seed : int or None, default None
        Seed of the ``numpy.random.Generator`` that draws the fresh
        pseudonyms of the released records (the only random choice).  ``None``
        draws fresh entropy from the operating system (not reproducible).
    pseudonym_key : bytes or None, default None
        Secret key of the pseudonym permutation (``anonymizers.pseudonyms``):
        with it the permutation cannot be drawn again from the seed alone.
        Not shown in the config's repr.
    """

    k: int
    caps: None | int | Mapping[str, int] = None
    seed: int | None = None
    pseudonym_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        if not _is_int(self.k) or self.k < 1:
            raise ParameterError("k", f"must be an integer of at least 1, got {self.k!r}")
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "caps", _checked_caps(self.caps))
        if self.seed is not None and (not _is_int(self.seed) or self.seed < 0):
            raise ParameterError("seed", f"must be a non-negative integer or None, "
                                 f"got {self.seed!r}")


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _checked_caps(caps):
    if caps is None:
        return None
    if _is_int(caps):
        if caps < 0:
            raise ParameterError("caps", f"a cap must be an integer >= 0, got {caps!r}")
        return int(caps)
    if not isinstance(caps, Mapping):
        raise ParameterError("caps", "must be None (caps from the sample's maxima), one "
                             f"integer for all codes, or a mapping code -> cap; got "
                             f"{type(caps).__name__}")
    out = {}
    for code, cap in caps.items():
        if not isinstance(code, str):
            raise ParameterError("caps", f"cap keys are code strings such as '250'; "
                                 f"got {code!r} ({type(code).__name__})")
        if not _is_int(cap) or cap < 0:
            raise ParameterError("caps", f"the cap of code {code!r} must be an integer "
                                 f">= 0, got {cap!r}")
        out[code] = int(cap)
    return MappingProxyType(out)
