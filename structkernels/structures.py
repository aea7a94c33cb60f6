"""Structures the convolution kernels compare: paths of (edge, node) tuples and ordered trees.

Representations are separate from kernels (KeLP style): a :class:`Path` or a
:class:`Tree` knows nothing of how it is compared.  Both are immutable and
hashable, round-trip through JSON, and encode to integer arrays through a
:class:`Vocabulary` (label interning) for compiled kernels.

A path is the sequence of ``(edge, node)`` tuples read by walking a subgraph
from its root to a leaf (nonstationary kernels paper, Table 1); the root's
tuple has no edge (``edge=None``).  An edge walked against its direction
carries the ``-of`` suffix.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Path", "Tree", "Vocabulary", "EncodedPaths", "EncodedTrees", "StructureError", "take",
    "is_encoded",
]

NO_EDGE = 0  # vocabulary id of the missing edge (the root's tuple)


def is_encoded(X: Any) -> bool:
    """An encoded list of structures (``PathList``, ``TreeList``: built by ``encode``)."""
    return isinstance(X, Sequence) and callable(getattr(type(X), "encode", None))


def take(X: Sequence, idx: np.ndarray) -> Sequence:
    """The structures of ``X`` at positions ``idx`` (a NumPy array or a list).

    An array or an encoded list gives the same kind of container (an encoded
    sub-list shares its vocabulary); any other sequence gives a list.

    Examples
    --------
    >>> import numpy as np
    >>> take(["a", "b", "c"], np.array([2, 0]))
    ['c', 'a']
    """
    idx = np.asarray(idx, dtype=np.int64)
    if isinstance(X, np.ndarray) or is_encoded(X):
        return X[idx]
    return [X[i] for i in idx.tolist()]


class StructureError(ValueError):
    """A malformed path or tree (names what is wrong and where)."""


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StructureError(f"not valid JSON ({exc.msg}, column {exc.colno}): {text[:40]!r}") from None


def _check_label(value: Any, what: str, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise StructureError(f"{what} must be a str{' or None' if allow_none else ''}, got {value!r}")
    if not value:
        raise StructureError(f"{what} must be a non-empty string")
    return value


class Path(Sequence):
    """An immutable sequence of ``(edge, node)`` tuples.

    Parameters
    ----------
    tuples : iterable of (str or None, str)
        Edge label (None for the root's tuple) and node label.

    Examples
    --------
    >>> from structkernels import Path
    >>> p = Path([(None, "bind-01"), ("ARG1", "enzyme")])
    >>> len(p), p[1]
    (2, ('ARG1', 'enzyme'))
    >>> Path.from_json(p.to_json()) == p
    True
    """

    __slots__ = ("_tuples", "_hash")

    def __init__(self, tuples: Iterable[Sequence[str | None]]):
        if isinstance(tuples, (str, bytes)):
            raise StructureError("a Path is built from (edge, node) pairs, not a string")
        items = []
        for i, t in enumerate(tuples):
            if isinstance(t, (str, bytes)) or not isinstance(t, Sequence) or len(t) != 2:
                raise StructureError(f"path tuple {i} must be an (edge, node) pair, got {t!r}")
            items.append(
                (
                    _check_label(t[0], f"edge of path tuple {i}", allow_none=True),
                    _check_label(t[1], f"node of path tuple {i}"),
                )
            )
        object.__setattr__(self, "_tuples", tuple(items))
        object.__setattr__(self, "_hash", hash(("Path", self._tuples)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Path is immutable")

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return Path(self._tuples[i])
        return self._tuples[i]

    def __len__(self) -> int:
        return len(self._tuples)

    def __iter__(self) -> Iterator[tuple[str | None, str]]:
        return iter(self._tuples)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and self._tuples == other._tuples

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (Path, (self._tuples,))

    def __repr__(self) -> str:
        return f"Path({list(self._tuples)!r})"

    def __str__(self) -> str:
        return " ".join(f"({n})" if e is None else f"({e}, {n})" for e, n in self._tuples)

    @property
    def edges(self) -> tuple[str | None, ...]:
        return tuple(e for e, _ in self._tuples)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(n for _, n in self._tuples)

    def to_json(self) -> list[list[str | None]]:
        """A JSON-ready list of ``[edge, node]`` pairs."""
        return [[e, n] for e, n in self._tuples]

    @classmethod
    def from_json(cls, obj: Any) -> Path:
        """Inverse of :meth:`to_json`; also accepts a JSON string."""
        if isinstance(obj, str):
            obj = _loads(obj)
        if not isinstance(obj, list):
            raise StructureError(f"a path in JSON is a list of [edge, node] pairs, got {obj!r}")
        return cls(obj)


class Tree:
    """An immutable ordered labelled tree.

    Parameters
    ----------
    label : str
        The node's label.
    children : sequence of (str or None, Tree)
        Ordered children, each with the label of the edge from this node.

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
                raise StructureError(
                    f"child {i} of tree node {label!r} must be an (edge_label, Tree) pair, got {c!r}"
                )
            edge, sub = c
            _check_label(edge, f"edge label of child {i} of {label!r}", allow_none=True)
            if not isinstance(sub, Tree):
                raise StructureError(f"child {i} of tree node {label!r} is not a Tree: {sub!r}")
            kids.append((edge, sub))
        object.__setattr__(self, "_label", _check_label(label, "tree node label"))
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
            if (
                a._hash != b._hash
                or a._label != b._label
                or len(a._children) != len(b._children)
            ):
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
        return (_tree_from_preorder, self._preorder_lists())

    def _preorder_lists(self) -> tuple[list[str], list[str | None], list[int]]:
        labels: list[str] = []
        edges: list[str | None] = []
        arity: list[int] = []
        for edge, node in self.preorder():
            labels.append(node._label)
            edges.append(edge)
            arity.append(len(node._children))
        return labels, edges, arity

    def _render(self, leaf, open_, sep, close) -> str:
        """Iterative rendering: ``leaf(t)`` for a leaf, else ``open_(t)`` then the
        children (``sep(i, edge)`` before child ``i``) then ``close``."""
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
        """``{"label": ..., "children": [[edge, {...}], ...]}``.

        Built without recursion, so any depth works here; note that
        :func:`json.dumps` itself refuses nesting deeper than Python's
        recursion limit (a tree about 300 levels deep).
        """
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
        """Inverse of :meth:`to_json`; also accepts a JSON string.  Any depth.

        ``shared``, a dict kept across calls, builds identical subtrees once
        (datasets of many overlapping trees hold each distinct subtree once).
        """
        if isinstance(obj, str):
            obj = _loads(obj)
        if not isinstance(obj, dict) or "label" not in obj:
            raise StructureError(f"a tree in JSON is an object with a 'label', got {obj!r}")
        # post-order without recursion: (object, edges of its children, done?)
        built: list[Tree] = []
        stack: list[tuple[Any, bool]] = [(obj, False)]
        while stack:
            o, done = stack.pop()
            if not isinstance(o, dict) or "label" not in o:
                raise StructureError(f"a tree in JSON is an object with a 'label', got {o!r}")
            kids_json = o.get("children", [])
            if not isinstance(kids_json, list):
                raise StructureError(
                    f"the children of {o['label']!r} must be a list of [edge, tree], "
                    f"got {kids_json!r}"
                )
            if not done:
                stack.append((o, True))
                for i in range(len(kids_json) - 1, -1, -1):
                    c = kids_json[i]
                    if not isinstance(c, list) or len(c) != 2:
                        raise StructureError(
                            f"child {i} of {o['label']!r} must be [edge, tree], got {c!r}"
                        )
                    stack.append((c[1], False))
                continue
            n = len(kids_json)
            subs = built[len(built) - n :] if n else []
            if n:
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
        kids = built[len(built) - n :][::-1] if n else []
        if n:
            del built[len(built) - n :]
        built.append((edges[i], Tree(labels[i], kids)))
    if len(built) != 1:
        raise StructureError("a pre-order with more than one root is not a tree")
    return built[0][1]


class Vocabulary:
    """Label interning: each distinct label gets a stable integer id.

    Id 0 is reserved for the missing edge (``None``).  Ids are given in
    first-seen order, so encoding the same structures in the same order always
    gives the same arrays.  A vocabulary belongs to one computation (a Gram
    block, a fitted model); there is no process-wide table.

    Examples
    --------
    >>> from structkernels import Path, Vocabulary
    >>> v = Vocabulary()
    >>> v.encode_paths([Path([(None, "bind-01"), ("ARG1", "enzyme")])]).nodes.tolist()
    [1, 3]
    """

    def __init__(self, labels: Iterable[str] = ()):
        self._ids: dict[str | None, int] = {None: NO_EDGE}
        self._labels: list[str | None] = [None]
        for label in labels:
            self.add(label)

    def add(self, label: str | None) -> int:
        """The id of ``label``, interning it if new."""
        i = self._ids.get(label)
        if i is None:
            i = len(self._labels)
            self._ids[label] = i
            self._labels.append(label)
        return i

    def __getitem__(self, label: str | None) -> int:
        return self._ids[label]

    def get(self, label: str | None, default: int = -1) -> int:
        return self._ids.get(label, default)

    def __contains__(self, label: object) -> bool:
        return label in self._ids

    def __len__(self) -> int:
        return len(self._labels)

    @property
    def labels(self) -> list[str | None]:
        """Labels by id (index 0 is None)."""
        return list(self._labels)

    def to_json(self) -> list[str]:
        return [label for label in self._labels[1:]]  # type: ignore[misc]

    @classmethod
    def from_json(cls, obj: list[str]) -> Vocabulary:
        return cls(obj)

    def encode_paths(self, paths: Sequence[Path]) -> EncodedPaths:
        """Encode paths into flat arrays (CSR offsets), interning new labels."""
        lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
        offsets = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        for p in paths:
            if not isinstance(p, Path):
                raise TypeError(f"expected a structkernels.Path, got {type(p).__name__}")
        # edge, node, edge, node, ...: new labels are interned in first-seen order, then
        # every label is looked up at C speed (no Python statement per tuple)
        chain = itertools.chain.from_iterable
        seq = list(chain(chain(p._tuples for p in paths)))
        add = self.add
        for label in dict.fromkeys(seq):
            add(label)
        codes = np.fromiter(map(self._ids.__getitem__, seq), dtype=np.int32, count=len(seq))
        return EncodedPaths(offsets, codes[0::2].copy(), codes[1::2].copy())

    def encode_trees(self, trees: Sequence[Tree]) -> EncodedTrees:
        """Encode trees into flat pre-order arrays, interning new labels.

        For node ``v`` (global pre-order index), ``labels[v]`` and ``edges[v]``
        (edge from its parent, 0 for a root) are vocabulary ids, and its
        children are ``child_index[child_offsets[v]:child_offsets[v + 1]]`` in
        order.  Tree ``t`` owns nodes ``tree_offsets[t]:tree_offsets[t + 1]``,
        its root first.
        """
        sizes = np.fromiter((t.size for t in trees), dtype=np.int64, count=len(trees))
        tree_offsets = np.zeros(len(trees) + 1, dtype=np.int64)
        np.cumsum(sizes, out=tree_offsets[1:])
        total = int(tree_offsets[-1])
        labels = np.empty(total, dtype=np.int32)
        edges = np.empty(total, dtype=np.int32)
        n_children = np.zeros(total, dtype=np.int64)
        child_lists: list[list[int]] = [[] for _ in range(total)]
        add = self.add
        v = 0
        for t in trees:
            if not isinstance(t, Tree):
                raise TypeError(f"expected a structkernels.Tree, got {type(t).__name__}")
            # iterative pre-order with parent tracking
            stack: list[tuple[str | None, Tree, int]] = [(None, t, -1)]
            while stack:
                edge, node, parent = stack.pop()
                labels[v] = add(node.label)
                edges[v] = add(edge)
                if parent >= 0:
                    child_lists[parent].append(v)
                    n_children[parent] += 1
                for e, s in reversed(node.children):
                    stack.append((e, s, v))
                v += 1
        child_offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(n_children, out=child_offsets[1:])
        child_index = np.fromiter(
            (c for lst in child_lists for c in lst), dtype=np.int64, count=int(child_offsets[-1])
        )
        return EncodedTrees(tree_offsets, labels, edges, child_offsets, child_index)


class EncodedPaths:
    """Paths as flat integer arrays: path ``i`` is ``offsets[i]:offsets[i + 1]``."""

    __slots__ = ("offsets", "edges", "nodes")

    def __init__(self, offsets: np.ndarray, edges: np.ndarray, nodes: np.ndarray):
        self.offsets, self.edges, self.nodes = offsets, edges, nodes

    def __len__(self) -> int:
        return len(self.offsets) - 1


class EncodedTrees:
    """Trees as flat pre-order integer arrays (see :meth:`Vocabulary.encode_trees`)."""

    __slots__ = ("tree_offsets", "labels", "edges", "child_offsets", "child_index")

    def __init__(self, tree_offsets, labels, edges, child_offsets, child_index):
        self.tree_offsets = tree_offsets
        self.labels = labels
        self.edges = edges
        self.child_offsets = child_offsets
        self.child_index = child_index

    def __len__(self) -> int:
        return len(self.tree_offsets) - 1
