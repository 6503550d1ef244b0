"""Method name -> its cross-release attack, as ``"module:function"``, imported
only when asked for (a method's attack may pull in heavy dependencies).

Every attack is called as ``attack(releases, truth, **params) -> dict``:
``releases`` is a list of release documents in the CLI's format (oldest
first), ``truth`` None or a list of the same length of private tables that
link the releases to source patients (what each method needs: see its
module).  The report always holds ``"breached": bool``.  MedCo's attack
(``anonymizers.successive.medco``, built on branch medco-seq) takes
``attack(releases: list[DataFrame], truth: list[DataFrame] | None,
min_codes: int = 3) -> dict``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from anonymizers.errors import ParameterError

ATTACKS: dict[str, str] = {
    "disassociation": "anonymizers.successive.disassociation:attack",
    "ugaclip": "anonymizers.successive.kanon:attack_ugaclip",
    "lda": "anonymizers.successive.kanon:attack_lda",
    "gccens": "anonymizers.successive.gccens:attack",
    "medco": "anonymizers.successive.medco:attack",
}


def attack_for(method: str) -> Callable[..., dict]:
    """The attack of ``method``; ParameterError for an unknown method, or one
    whose module is not installed yet (MedCo's until medco-seq is merged)."""
    target = ATTACKS.get(method)
    if target is None:
        raise ParameterError("method", f"no successive-release attack for {method!r}; "
                             f"known: {', '.join(sorted(ATTACKS))}")
    module, _, name = target.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ParameterError("method", f"the attack of {method!r} ({target}) is not "
                             "available in this build") from None
