"""An example structkernels plugin: bag-of-labels and bag-of-words kernels, a text reader.

``k(x, y) = sum_l c_x(l) c_y(l)``, where ``c_x(l)`` counts label ``l`` among the
node labels (and, with ``use_edges``, the edge labels) of a path or tree: the
dot product of label-count vectors, so positive semi-definite.  ``pair`` is the
literal definition; ``gram_block`` is the batched fast path (sparse counts,
one sparse product per block).

The plugin also shows how to feed a kernel on a new structure from the command
line: :func:`read_text` is registered in the entry-point group
``structkernels.readers`` under the name ``text``, so a JSON Lines record
``{"text": "Ras binds Raf."}`` becomes a tuple of tokens, and
``structkernels gram texts.jsonl --kernel bag-of-words -o K.npy`` works.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from structkernels import Kernel, Path, Tree

__all__ = ["BagOfLabelsKernel", "BagOfWordsKernel", "read_text"]


def read_text(value: str) -> tuple[str, ...]:
    """Record reader for ``{"text": ...}``: the lower-cased tokens of the text.

    Uses the core tokeniser (:func:`structkernels.text.tokenize`).

    Examples
    --------
    >>> read_text("Ras binds Raf.")
    ('ras', 'binds', 'raf', '.')
    """
    if not isinstance(value, str):
        raise TypeError(f"'text' must be a string, got {type(value).__name__}")
    from structkernels.text import tokenize

    return tuple(tokenize(value, lowercase=True))


class BagOfLabelsKernel(Kernel):
    """Dot product of label counts of paths or trees.

    Parameters
    ----------
    use_edges : bool, default True
        Count edge labels (prefixed ``":"`` so they never equal a node label).
    use_nodes : bool, default True
        Count node labels.

    Examples
    --------
    >>> from structkernels import Path, kernel
    >>> k = kernel("bag-of-labels")
    >>> k.value(Path([(None, "bind-01"), ("ARG1", "protein")]),
    ...         Path([(None, "bind-01"), ("ARG0", "protein")]))
    2.0
    """

    def __init__(self, use_edges: bool = True, use_nodes: bool = True):
        self.use_edges = use_edges
        self.use_nodes = use_nodes

    def validate_params(self) -> None:
        if not (self.use_edges or self.use_nodes):
            raise ValueError("BagOfLabelsKernel needs use_edges or use_nodes to be True")

    def check_input(self, X) -> list:
        X = super().check_input(X)
        for i, x in enumerate(X):
            if not isinstance(x, (Path, Tree)):
                raise TypeError(
                    f"bag-of-labels: item {i} is a {type(x).__name__}, expected a Path or Tree"
                )
        return X

    def _labels(self, x: Path | Tree) -> list[str]:
        pairs = x if isinstance(x, Path) else ((e, t.label) for e, t in x.preorder())
        out = []
        for edge, node in pairs:
            if self.use_edges and edge is not None:
                out.append(":" + edge)
            if self.use_nodes:
                out.append(node)
        return out

    def pair(self, x, y) -> float:
        cx, cy = Counter(self._labels(x)), Counter(self._labels(y))
        return float(sum(c * cy[label] for label, c in cx.items()))

    def _counts(self, X: Sequence, index: dict[str, int]) -> sp.csr_matrix:
        rows, cols = [], []
        for i, x in enumerate(X):
            for label in self._labels(x):
                rows.append(i)
                cols.append(index.setdefault(label, len(index)))
        data = np.ones(len(rows), dtype=np.float64)
        return sp.csr_matrix((data, (rows, cols)), shape=(len(X), max(len(index), 1)))

    def gram_block(self, X: Sequence, Y: Sequence) -> np.ndarray:
        index: dict[str, int] = {}
        A = self._counts(X, index)
        B = self._counts(Y, index)
        A.resize((A.shape[0], max(len(index), 1)))
        return np.asarray((A @ B.T).toarray(), dtype=np.float64)

    def gram_block_symmetric(self, X: Sequence) -> np.ndarray:
        A = self._counts(X, {})
        return np.asarray((A @ A.T).toarray(), dtype=np.float64)


class BagOfWordsKernel(Kernel):
    """Dot product of word counts of token sequences (``{"text": ...}`` records).

    Examples
    --------
    >>> from structkernels import kernel
    >>> k = kernel("bag-of-words")
    >>> k([("ras", "binds", "raf")], [("raf", "binds", "raf")]).tolist()
    [[3.0]]
    """

    def check_input(self, X) -> list:
        X = super().check_input(X)
        for i, x in enumerate(X):
            if isinstance(x, str) or not all(isinstance(t, str) for t in x):
                raise TypeError(
                    f"bag-of-words: item {i} is not a sequence of tokens (str); "
                    "read {'text': ...} records with the 'text' reader"
                )
        return [tuple(x) for x in X]

    def pair(self, x, y) -> float:
        cx, cy = Counter(x), Counter(y)
        return float(sum(c * cy[w] for w, c in cx.items()))
