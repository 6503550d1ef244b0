"""ICD-9-CM diagnosis code forms, so that the IL weight (Definition 2) is
computed for every code a claim can carry rather than read as zero.

Claims write codes without the dot ('25000', 'V1005', 'E8889'); the paper's
tables write them with it ('250.00', 'V10.05', 'E888.9').  ``dotted`` turns
the first form into the second (the dot follows the 3-character category, 4
for E codes); ``place`` finds the node of the ICD-9-CM tree a code stands for,
in either form, falling back to its deepest prefix that is a node: DE-SynPUF
carries retired or non-billable codes such as '0421' (HIV with specified
infections, folded into 042 in 1994) and '71970', which CMS v32 no longer
lists; they are placed under their category ('042', '7197').  A code with no
such prefix ('OTHER', 'XX000', MEPS's '-1') cannot be placed: ``place``
returns None and the caller must say so (see ``loss.SemanticWeights``).
"""

from __future__ import annotations

import re

_NUMERIC = re.compile(r"^\d{3,5}$")
_V = re.compile(r"^V\d{2,4}$")
_E = re.compile(r"^E\d{3,4}$")


def dotted(code: str) -> str:
    """'25000' -> '250.00', 'V1005' -> 'V10.05', 'E8889' -> 'E888.9'; codes
    already dotted, 3-character categories and non-ICD strings unchanged."""
    c = str(code).strip().upper()
    if "." in c:
        return c
    head = 4 if _E.match(c) else 3
    if _NUMERIC.match(c) or _V.match(c) or _E.match(c):
        return c if len(c) == head else f"{c[:head]}.{c[head:]}"
    return str(code)


def place(code: str, hierarchy) -> str | None:
    """The hierarchy node of ``code`` (dotted or not), or of its deepest
    prefix (at least the 3-character category) that is a node; None if none is."""
    c = dotted(code).replace(".", "")
    if not (_NUMERIC.match(c) or _V.match(c) or _E.match(c)):
        return hierarchy.node(code) if code in hierarchy else None
    head = 4 if c.startswith("E") else 3
    for end in range(len(c), head - 1, -1):
        if c[:end] in hierarchy:
            return hierarchy.node(c[:end])
    return None
