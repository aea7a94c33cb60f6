"""Multi-view datasets: one structure per graph view (the sentence's AMR graph, its dependency
graph, each read from its own dataset) for each labelled candidate."""

from __future__ import annotations

from typing import Any

import numpy as np

from structkernels.datasets.interactions import InteractionDataset
from structkernels.formats._collect import check_on_error

__all__ = ["MultiViewDataset", "combine_views", "json_key"]


class MultiViewDataset:
    """Labelled candidates with one structure per graph view (e.g. ``"amr"``, ``"dependency"``).

    Attributes
    ----------
    X : list of dict
        ``{graph view: Path}`` per candidate (``{graph view: Tree}`` with ``structure="tree"``).
    labels : numpy.ndarray of int64
    records : list of dict
        The first graph view's records.
    views : tuple of str
        The graph views.
    skipped : list of str
        Records of one graph view without a match in another (``"<view>: <id>"``).
    """

    def __init__(self, X, labels, records, views, skipped=()):
        self.X = list(X)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.records = list(records)
        self.views = tuple(views)
        self.skipped = list(skipped)

    def __len__(self) -> int:
        return len(self.X)

    def split(self, name: str) -> MultiViewDataset:
        """The ``"train"`` or ``"test"`` half (by the first view's records)."""
        idx = [i for i, r in enumerate(self.records) if r.get("split") == name]
        return MultiViewDataset([self.X[i] for i in idx], self.labels[idx],
                                [self.records[i] for i in idx], self.views)

    def __repr__(self) -> str:
        return f"MultiViewDataset({len(self)} candidates, views={self.views})"


def _key(rec: dict[str, Any], by: str) -> Any:
    if by == "id":
        return rec.get("id")
    if by == "tuple":
        return (rec.get("sentence_id") or rec.get("sentence"), json_key(rec.get("interaction_tuple")))
    raise ValueError(f"by must be 'id' or 'tuple', got {by!r}")


def json_key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def combine_views(views: dict[str, InteractionDataset], by: str = "id", structure: str = "path",
                  on_error: str = "raise") -> MultiViewDataset:
    """Align datasets of the same candidates on different representations (graph views).

    Parameters
    ----------
    views : dict of str to InteractionDataset
        One dataset per graph view (``{"amr": ..., "dependency": ...}``).
    by : {"id", "tuple"}
        Match records by ``id``, or by (``sentence_id`` or sentence, ``interaction_tuple``).
    structure : {"path", "tree"}
    on_error : {"raise", "skip"}
        A record missing from another view, or two views disagreeing on its label, raises
        ``ValueError`` naming it, or is left out and listed.

    Examples
    --------
    >>> from structkernels.datasets import combine_views
    >>> both = combine_views({"amr": amr_data, "dependency": sdg_data})  # doctest: +SKIP
    """
    if structure not in ("path", "tree"):
        raise ValueError(f"structure must be 'path' or 'tree', got {structure!r}")
    check_on_error(on_error)
    if len(views) < 2:
        raise ValueError("combine_views needs at least two views")
    names = list(views)
    index: dict[str, dict[Any, int]] = {}
    for name in names[1:]:
        table = index[name] = {}
        for i, r in enumerate(views[name].records):
            k = _key(r, by)
            if k in table:
                raise ValueError(f"view {name!r}: two records share the key {k!r}")
            table[k] = i
    first = views[names[0]]
    X, labels, records, skipped = [], [], [], []
    for i, r in enumerate(first.records):
        k = _key(r, by)
        item = {names[0]: (first.paths if structure == "path" else first.trees)[i]}
        problem = None
        for name in names[1:]:
            j = index[name].get(k)
            if j is None:
                problem = f"record {k!r} of view {names[0]!r} is missing from view {name!r}"
                break
            ds = views[name]
            if int(ds.labels[j]) != int(first.labels[i]):
                problem = (f"record {k!r}: label {int(first.labels[i])} in view {names[0]!r}, "
                           f"{int(ds.labels[j])} in view {name!r}")
                break
            item[name] = (ds.paths if structure == "path" else ds.trees)[j]
        if problem is not None:
            if on_error == "raise":
                raise ValueError(problem)
            skipped.append(problem)
            continue
        X.append(item)
        labels.append(int(first.labels[i]))
        records.append(r)
    return MultiViewDataset(X, labels, records, names, skipped)
