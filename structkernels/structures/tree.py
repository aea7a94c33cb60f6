"""Ordered labelled trees: the structure the tree kernels compare."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from structkernels.structures.path import StructureError, check_label, load_json

__all__ = ["Tree"]


class Tree:
    """An immutable ordered labelled tree.

    ``children`` are ordered ``(edge label or None, Tree)`` pairs.

    Examples
    --------
    >>> from structkernels import Tree
    >>> t = Tree("bind-01", [("ARG1", Tree("enzyme")), ("ARG2", Tree("small-molecule"))])
    >>> t.size, [e for e, _ in t.children]
    (3, ['ARG1', 'ARG2'])
    >>> Tree.from_json(t.to_json()) == t
    True
    """

    __slots__ = ("_label", "_children", "_hash", "_size")

    def __init__(self, label: str, children: Iterable[Sequence[Any]] = ()):
        kids = []
        for i, c in enumerate(children):
            if isinstance(c, Tree) or not isinstance(c, Sequence) or len(c) != 2:
                raise StructureError(f"child {i} of tree node {label!r} must be an (edge_label, "
                                     f"Tree) pair, got {c!r}")
            edge, sub = c
            check_label(edge, f"edge label of child {i} of {label!r}", allow_none=True)
            if not isinstance(sub, Tree):
                raise StructureError(f"child {i} of tree node {label!r} is not a Tree: {sub!r}")
            kids.append((edge, sub))
        object.__setattr__(self, "_label", check_label(label, "tree node label"))
        object.__setattr__(self, "_children", tuple(kids))
        object.__setattr__(self, "_hash", hash(("Tree", self._label, self._children)))
        object.__setattr__(self, "_size", 1 + sum(s.size for _, s in kids))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Tree is immutable")

    @property
    def label(self) -> str:
        return self._label

    @property
    def children(self) -> tuple[tuple[str | None, Tree], ...]:
        return self._children

    @property
    def size(self) -> int:
        """Number of nodes."""
        return self._size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return False
        stack = [(self, other)]  # iterative: any depth
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if (a._hash != b._hash or a._label != b._label
                    or len(a._children) != len(b._children)):
                return False
            for (ea, sa), (eb, sb) in zip(a._children, b._children, strict=True):
                if ea != eb:
                    return False
                stack.append((sa, sb))
        return True

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # flat pre-order (not nested tuples), so pickling has no depth limit
        nodes = list(self.preorder())
        return (_tree_from_preorder, ([t._label for _, t in nodes], [e for e, _ in nodes],
                                      [len(t._children) for _, t in nodes]))

    def _render(self, leaf, open_, sep, close) -> str:
        """``leaf(t)`` for a leaf, else ``open_(t)``, the children (``sep(i, edge)`` before
        child ``i``) and ``close``; iterative."""
        out: list[str] = []
        stack: list[Any] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            if not item._children:
                out.append(leaf(item))
                continue
            out.append(open_(item))
            stack.append(close)
            for i in range(len(item._children) - 1, -1, -1):
                edge, sub = item._children[i]
                stack.append(sub)
                stack.append(sep(i, edge))
        return "".join(out)

    def __repr__(self) -> str:
        return self._render(
            lambda t: f"Tree({t._label!r})",
            lambda t: f"Tree({t._label!r}, [",
            lambda i, e: f"{'), ' if i else ''}({e!r}, ",
            ")])",
        )

    def __str__(self) -> str:
        return self._render(
            lambda t: t._label,
            lambda t: f"({t._label}",
            lambda i, e: f" :{e} " if e else " ",
            ")",
        )

    def preorder(self) -> Iterator[tuple[str | None, Tree]]:
        """``(edge from parent, subtree)`` in pre-order; the root's edge is None."""
        stack: list[tuple[str | None, Tree]] = [(None, self)]
        while stack:
            edge, node = stack.pop()
            yield edge, node
            stack.extend(reversed(node._children))

    def to_json(self) -> dict[str, Any]:
        """``{"label": ..., "children": [[edge, {...}], ...]}``, built without recursion
        (:func:`json.dumps` itself refuses nesting past Python's recursion limit)."""
        root: dict[str, Any] = {"label": self._label}
        stack = [(self, root)]
        while stack:
            node, out = stack.pop()
            if node._children:
                kids = []
                for e, sub in node._children:
                    d = {"label": sub._label}
                    kids.append([e, d])
                    stack.append((sub, d))
                out["children"] = kids
        return root

    @classmethod
    def from_json(cls, obj: Any, shared: dict[tuple, Tree] | None = None) -> Tree:
        """Inverse of :meth:`to_json`; also accepts a JSON string.  Any depth.  ``shared``, a
        dict kept across calls, builds identical subtrees once (for many overlapping trees)."""
        # post-order without recursion: (object, done?)
        built: list[Tree] = []
        stack: list[tuple[Any, bool]] = [(load_json(obj), False)]
        while stack:
            o, done = stack.pop()
            if not isinstance(o, dict) or "label" not in o:
                raise StructureError(f"a tree in JSON is an object with a 'label', got {o!r}")
            kids_json = o.get("children", [])
            if not isinstance(kids_json, list):
                raise StructureError(
                    f"the children of {o['label']!r} must be a list of [edge, tree], "
                    f"got {kids_json!r}")
            if not done:
                stack.append((o, True))
                for i in range(len(kids_json) - 1, -1, -1):
                    c = kids_json[i]
                    if not isinstance(c, list) or len(c) != 2:
                        raise StructureError(
                            f"child {i} of {o['label']!r} must be [edge, tree], got {c!r}")
                    stack.append((c[1], False))
                continue
            n = len(kids_json)
            subs = built[len(built) - n :]
            del built[len(built) - n :]
            kids = [(c[0], t) for c, t in zip(kids_json, subs, strict=True)]
            if shared is None:
                built.append(cls(o["label"], kids))
                continue
            key = (o["label"], tuple(kids))
            tree = shared.get(key)
            if tree is None:
                tree = shared[key] = cls(o["label"], kids)
            built.append(tree)
        return built[0]


def _tree_from_preorder(
    labels: list[str], edges: list[str | None], arity: list[int]
) -> Tree:
    """Rebuild a :class:`Tree` from its flat pre-order (see ``Tree.__reduce__``)."""
    if not labels:
        raise StructureError("an empty pre-order is not a tree")
    built: list[tuple[str | None, Tree]] = []
    for i in range(len(labels) - 1, -1, -1):  # reverse pre-order: children come first
        n = arity[i]
        kids = built[len(built) - n :][::-1]
        del built[len(built) - n :]
        built.append((edges[i], Tree(labels[i], kids)))
    if len(built) != 1:
        raise StructureError("a pre-order with more than one root is not a tree")
    return built[0][1]
