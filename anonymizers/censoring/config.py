"""Parameters of GCCens (Tamersoy 2011, III.5) and their validation."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from anonymizers.declare import param, parameters, pseudonym_key, validate
from anonymizers.errors import ParameterError


@parameters
@dataclass(frozen=True)
class GCCensConfig:
    """What GCCens protects against and how far it may censor."""

    k: int = param(kind="int", minimum=1,
                   doc="Privacy parameter of k-map (III.5): every released record must be "
                   "contained in at least k population records.  At most the population "
                   "size (checked when the data is known).")
    caps: None | int | Mapping[str, int] = param(
        None, kind="object", nullable=True, cli=False, check=lambda name, caps: _checked_caps(caps),
        json={"type": ["integer", "object", "null"], "minimum": 0,
              "additionalProperties": {"type": "integer", "minimum": 0}},
        doc="The cap set C (III.5): the most copies of a code a released record may hold.  "
        "An int is one cap for every code; a mapping gives a cap per code string (e.g. "
        "{'250': 2, '401': 0}) and must cover every code of the sample (extra codes are "
        "allowed); None derives each code's cap from the sample, as the thesis allows: the "
        "largest number of copies of that code in any sample record.  Caps are integers "
        ">= 0; a cap of 0 censors every copy of the code.")
    seed: int | None = param(
        None, kind="int", minimum=0, nullable=True,
        doc="Seed of the numpy Generator that draws the fresh pseudonyms of the released "
        "records (the only random choice).  None draws fresh entropy from the operating "
        "system (not reproducible).")
    pseudonym_key: bytes | None = pseudonym_key()

    def __post_init__(self):
        validate(self)


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
