"""Label interning: paths and trees as integer arrays for compiled kernels."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Sequence

import numpy as np

from structkernels.structures.path import Path
from structkernels.structures.tree import Tree

__all__ = ["Vocabulary", "EncodedPaths", "EncodedTrees", "NO_EDGE"]


NO_EDGE = 0  # vocabulary id of the missing edge (the root's tuple)


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

    def copy(self) -> Vocabulary:
        """A new vocabulary with the same labels under the same ids (what is added to one
        is not added to the other).

        Examples
        --------
        >>> v = Vocabulary(["a", "b"])
        >>> w = v.copy(); w.add("c"), len(v), w["b"] == v["b"]
        (3, 3, True)
        """
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
        """Bytes of the two tables and the label strings."""
        return (object.__sizeof__(self) + sys.getsizeof(self._ids) + sys.getsizeof(self._labels)
                + sum(sys.getsizeof(label) for label in self._labels if label is not None))

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
            (c for lst in child_lists for c in lst), dtype=np.int64, count=int(child_offsets[-1]))
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
