"""The trigger forms' fields, derived from each method's one declaration in
``anonymizers`` (``anonymizers.methods.params``), and the little a release
deployment adds to it, stated here once:

- ``k`` is the method's own declared field, narrowed to 2..1000: a release
  with k = 1 protects no one (the libraries accept it for experiments), and
  1000 keeps a typo from wiping a release out;
- ``seed`` is the method's own, narrowed to a non-null integer below 2**31 (a
  release always records the seed it drew from, never fresh entropy);
- the deployment defaults k = 5 and seed = 20081.

A method module writes ``PARAMS = {**form.params("<method>", [fields]),
**plugin_only}``; what only the plugin knows (batch sizes, successive-release
defences, policy names) stays declared in the module, once.
"""

from __future__ import annotations

from anonymizers import methods

LIMITS = {"k": {"minimum": 2, "maximum": 1000},
          "seed": {"type": "integer", "maximum": 2**31 - 1}}
DEFAULTS = {"k": 5, "seed": 20081}


def params(method: str, only, limits: dict | None = None, **defaults) -> dict:
    """``anonymizers.methods.params`` with the release limits and defaults of
    ``k`` and ``seed`` (when the form shows them) and the module's own ``limits``."""
    names = list(only)
    limits = {**{n: v for n, v in LIMITS.items() if n in names}, **(limits or {})}
    defaults = {**{n: v for n, v in DEFAULTS.items() if n in names}, **defaults}
    return methods.params(method, only, limits=limits, **defaults)
