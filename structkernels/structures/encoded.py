"""Label interning and encoded lists of structures: paths and trees as flat integer arrays
sharing a vocabulary, for the compiled kernels."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from structkernels.structures.path import Path
from structkernels.structures.tree import Tree

__all__ = ["Vocabulary", "NO_EDGE", "EncodedList", "PathList", "TreeList", "is_encoded", "take"]


NO_EDGE = 0  # vocabulary id of the missing edge (the root's tuple)


class Vocabulary:
    """Label interning: each distinct label gets an integer id in first-seen order (0 is the
    missing edge, ``None``), so the same structures in the same order give the same arrays.

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
            i = self._ids[label] = len(self._labels)
            self._labels.append(label)
        return i

    def copy(self) -> Vocabulary:
        """A new vocabulary with the same labels under the same ids."""
        out = Vocabulary.__new__(Vocabulary)
        out._ids = dict(self._ids)
        out._labels = list(self._labels)
        return out

    def __getitem__(self, label: str | None) -> int:
        return self._ids[label]

    def get(self, label: str | None, default: int = -1) -> int:
        return self._ids.get(label, default)

    def __contains__(self, label: object) -> bool:
        return label in self._ids

    def __len__(self) -> int:
        return len(self._labels)

    def __sizeof__(self) -> int:
        return (object.__sizeof__(self) + sys.getsizeof(self._ids) + sys.getsizeof(self._labels)
                + sum(sys.getsizeof(label) for label in self._labels if label is not None))

    @property
    def labels(self) -> list[str | None]:
        """Labels by id (index 0 is None)."""
        return list(self._labels)

    def encode_paths(self, paths: Sequence[Path]) -> PathList:
        """The paths encoded (a :class:`PathList` without them), interning new labels."""
        return PathList(self, *PathList._encode(paths, self))

    def encode_trees(self, trees: Sequence[Tree]) -> TreeList:
        """The trees encoded (a :class:`TreeList` without them), interning new labels."""
        return TreeList(self, *TreeList._encode(trees, self))


def is_encoded(X: Any) -> bool:
    """An encoded list of structures (``PathList``, ``TreeList``: built by ``encode``)."""
    return isinstance(X, Sequence) and callable(getattr(type(X), "encode", None))


def take(X: Sequence, idx: np.ndarray) -> Sequence:
    """The structures of ``X`` at positions ``idx``: an array or an encoded list gives the
    same kind of container, any other sequence a list.

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


def _gather_ranges(offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New CSR offsets of the rows ``idx`` and the positions of their items."""
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    new = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    pos = np.repeat(starts - new[:-1], lengths) + np.arange(new[-1], dtype=np.int64)
    return new, pos


def _as_index(i: Any, n: int) -> np.ndarray:
    if isinstance(i, slice):
        return np.arange(*i.indices(n), dtype=np.int64)
    idx = np.asarray(i)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise IndexError(f"boolean index of shape {idx.shape} for {n} structures")
        return np.flatnonzero(idx)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise IndexError(f"index must be an int, a slice or a 1-D sequence of ints, got {i!r}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"index out of range for {n} structures")
    return np.where(idx < 0, idx + n, idx)


class EncodedList(Sequence):
    """Base of the encoded lists: structures as flat integer arrays sharing a vocabulary
    (``vocab``), optionally with the structures (``_items``).  Subclasses write ``__len__``,
    ``_encode``, ``_build`` (structure ``i``), ``_subset`` (positions ``idx``) and ``_arrays``
    (what they pickle as).  Equal to a list, tuple or encoded list of the same structures
    in order."""

    __slots__ = ()
    #: what the items are called in messages
    kind = "structures"

    @classmethod
    def encode(cls, structures: Sequence, vocab: Vocabulary | None = None) -> EncodedList:
        """``structures`` encoded in ``vocab`` (grown with their labels; None: a new one)."""
        vocab = Vocabulary() if vocab is None else vocab
        return cls(vocab, *cls._encode(structures, vocab), list(structures))

    def _item(self, i: int) -> Any:
        if self._items is None:  # unpickled: rebuild structures on demand, once each
            self._items = [None] * len(self)
        x = self._items[i]
        if x is None:
            x = self._items[i] = self._build(i)
        return x

    def __getitem__(self, i):  # type: ignore[override]
        n = len(self)
        if isinstance(i, (int, np.integer)):
            if not -n <= i < n:
                raise IndexError(f"index {i} out of range for {n} {self.kind}")
            return self._item(int(i) % n)
        idx = _as_index(i, n)
        sub = self._subset(idx)
        sub._items = None if self._items is None else [self._items[j] for j in idx.tolist()]
        return sub

    def __iter__(self) -> Iterator:
        return (self._item(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (EncodedList, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> list:
        return list(self) + list(other)

    def __radd__(self, other: Any) -> list:
        return list(other) + list(self)

    def arrays_only(self) -> EncodedList:
        """The same list without the structure objects it carries (rebuilt on demand)."""
        return type(self)(*self._arrays())

    def __reduce__(self):
        return (type(self), self._arrays())

    def encode_beside(self, structures: Sequence) -> tuple[EncodedList, EncodedList]:
        """``(this list, structures encoded)`` under one new vocabulary, a copy of this list's
        with the new labels added, so that the Gram blocks between the two merge none.

        Examples
        --------
        >>> from structkernels import Path, kernel
        >>> refs = kernel("path").check_input([Path([(None, "a"), ("nsubj", "b")])])
        >>> same, new = refs.encode_beside([Path([(None, "c")])])
        >>> same.vocab is new.vocab, same == refs, len(refs.vocab), len(new.vocab)
        (True, True, 4, 5)
        """
        arrays = self._arrays()
        if not isinstance(arrays[0], Vocabulary):
            raise TypeError(f"{type(self).__name__} is not encoded with a vocabulary")
        vocab = arrays[0].copy()
        return type(self)(vocab, *arrays[1:]), type(self).encode(structures, vocab)  # type: ignore[attr-defined]

    def __sizeof__(self) -> int:
        """Bytes of the arrays and the vocabulary, what pickling sends (read by dask)."""
        return object.__sizeof__(self) + sum(
            a.nbytes if isinstance(a, np.ndarray) else sys.getsizeof(a) for a in self._arrays())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)} {self.kind}, {len(self.vocab)} labels>"


class PathList(EncodedList):
    """Paths encoded once (what :meth:`PathKernel.check_input` returns): a sequence of
    :class:`~structkernels.Path` whose slices share the vocabulary, pickled as its arrays.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> k = kernel("path")
    >>> X = k.check_input([Path([(None, "a")]), Path([(None, "a"), ("ARG0", "b")])])
    >>> X[1], len(X[:1]), type(X[[1, 0]]).__name__
    (Path([(None, 'a'), ('ARG0', 'b')]), 1, 'PathList')
    """

    __slots__ = ("vocab", "offsets", "edges", "nodes", "_items")
    kind = "paths"

    def __init__(self, vocab: Vocabulary, offsets: np.ndarray, edges: np.ndarray,
                 nodes: np.ndarray, items: list[Path] | None = None):
        self.vocab = vocab
        self.offsets = offsets
        self.edges = edges
        self.nodes = nodes
        self._items = items

    @staticmethod
    def _encode(paths: Sequence[Path], vocab: Vocabulary) -> tuple:
        """``(offsets, edges, nodes)``: path ``i`` is ``offsets[i]:offsets[i + 1]``."""
        lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
        offsets = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        for p in paths:
            if not isinstance(p, Path):
                raise TypeError(f"expected a structkernels.Path, got {type(p).__name__}")
        # edge, node, edge, node, ...: new labels interned in first-seen order, then looked up
        chain = itertools.chain.from_iterable
        seq = list(chain(chain(p._tuples for p in paths)))
        add = vocab.add
        for label in dict.fromkeys(seq):
            add(label)
        codes = np.fromiter(map(vocab._ids.__getitem__, seq), dtype=np.int64, count=len(seq))
        return offsets, codes[0::2].copy(), codes[1::2].copy()

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _build(self, i: int) -> Path:
        labels = self.vocab.labels
        a, b = self.offsets[i], self.offsets[i + 1]
        return Path([(labels[e], labels[n]) for e, n in zip(self.edges[a:b].tolist(),
                                                             self.nodes[a:b].tolist(),
                                                             strict=True)])

    def _subset(self, idx: np.ndarray) -> PathList:
        offsets, pos = _gather_ranges(self.offsets, idx)
        return PathList(self.vocab, offsets, self.edges[pos], self.nodes[pos])

    def _arrays(self) -> tuple:
        return (self.vocab, self.offsets, self.edges, self.nodes)


class TreeList(EncodedList):
    """Trees encoded once (what :meth:`TreeKernel.check_input` returns) as flat pre-order
    arrays: a sequence of :class:`~structkernels.Tree`, like :class:`PathList`.

    Examples
    --------
    >>> from structkernels import Tree, kernel
    >>> X = kernel("tree").check_input([Tree("a"), Tree("b", [("ARG0", Tree("c"))])])
    >>> X[1], len(X[1:])
    (Tree('b', [('ARG0', Tree('c'))]), 1)
    """

    __slots__ = ("vocab", "tree_offsets", "labels", "edges", "child_offsets", "child_index",
                 "_items")
    kind = "trees"

    def __init__(self, vocab: Vocabulary, tree_offsets: np.ndarray, labels: np.ndarray,
                 edges: np.ndarray, child_offsets: np.ndarray, child_index: np.ndarray,
                 items: list[Tree] | None = None):
        self.vocab = vocab
        self.tree_offsets = tree_offsets
        self.labels = labels
        self.edges = edges
        self.child_offsets = child_offsets
        self.child_index = child_index
        self._items = items

    def __len__(self) -> int:
        return len(self.tree_offsets) - 1

    @staticmethod
    def _encode(trees: Sequence[Tree], vocab: Vocabulary) -> tuple:
        """Flat pre-order arrays: node ``v`` has the ids ``labels[v]`` and ``edges[v]`` (the
        edge from its parent, 0 for a root) and the children
        ``child_index[child_offsets[v]:child_offsets[v + 1]]``; tree ``t`` owns the nodes
        ``tree_offsets[t]:tree_offsets[t + 1]``, its root first."""
        sizes = np.fromiter((t.size for t in trees), dtype=np.int64, count=len(trees))
        tree_offsets = np.zeros(len(trees) + 1, dtype=np.int64)
        np.cumsum(sizes, out=tree_offsets[1:])
        total = int(tree_offsets[-1])
        labels = np.empty(total, dtype=np.int64)
        edges = np.empty(total, dtype=np.int64)
        child_lists: list[list[int]] = [[] for _ in range(total)]
        add = vocab.add
        v = 0
        for t in trees:
            if not isinstance(t, Tree):
                raise TypeError(f"expected a structkernels.Tree, got {type(t).__name__}")
            stack: list[tuple[str | None, Tree, int]] = [(None, t, -1)]
            while stack:
                edge, node, parent = stack.pop()
                labels[v] = add(node.label)
                edges[v] = add(edge)
                if parent >= 0:
                    child_lists[parent].append(v)
                for e, s in reversed(node.children):
                    stack.append((e, s, v))
                v += 1
        child_offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum([len(kids) for kids in child_lists], out=child_offsets[1:])
        child_index = np.fromiter(
            (c for lst in child_lists for c in lst), dtype=np.int64, count=int(child_offsets[-1]))
        return tree_offsets, labels, edges, child_offsets, child_index

    def _build(self, i: int) -> Tree:
        names = self.vocab.labels
        lab, edg = self.labels, self.edges
        co, ci = self.child_offsets, self.child_index
        # children follow their parent in pre-order: built from the last node back, any depth
        a, b = int(self.tree_offsets[i]), int(self.tree_offsets[i + 1])
        built: dict[int, Tree] = {}
        for v in range(b - 1, a - 1, -1):
            kids = [(names[edg[c]], built.pop(int(c))) for c in ci[co[v]:co[v + 1]]]
            built[v] = Tree(names[lab[v]], kids)
        return built[a]

    def _subset(self, idx: np.ndarray) -> TreeList:
        tree_offsets, pos = _gather_ranges(self.tree_offsets, idx)
        sizes = np.diff(tree_offsets)
        node_shift = np.repeat(tree_offsets[:-1] - self.tree_offsets[idx], sizes)
        child_offsets, cpos = _gather_ranges(self.child_offsets, pos)
        child_index = self.child_index[cpos] + np.repeat(node_shift, np.diff(child_offsets))
        return TreeList(self.vocab, tree_offsets, self.labels[pos], self.edges[pos],
                        child_offsets, child_index)

    def _arrays(self) -> tuple:
        return (self.vocab, self.tree_offsets, self.labels, self.edges, self.child_offsets,
                self.child_index)

