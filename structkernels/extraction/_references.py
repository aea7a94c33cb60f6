"""An extractor's reference pairs as arrays (version 4 files): written by :func:`pack`, read
back, every field checked, by :func:`unpack`.

Every string (path labels, context features, graph labels) stands once in ``"strings"``;
each view is integer arrays with offsets, each array the base64 of its little-endian bytes
(int32; the graphs' edge weights float64, so that every weight reads back to the bit)::

    {"count": 2, "strings": ["PROT1", "nsubj-of", ...],
     "path": {"offsets": ..., "edges": ..., "nodes": ...},        # edge -1: none
     "context": {"offsets": ..., "features": ...},
     "apg": {"frame": ..., "vertices": ..., "edge_offsets": ..., "ends": ...,
             "label_offsets": ..., "labels": ..., "vertex_labels": ...,
             "weight_values": ..., "weights": ...}}

The all-paths graphs of one sentence's pairs join the same vertices by the same edges: each
such frame (its vertex count and edge ends) is stored and checked once
(:class:`~structkernels.structures.GraphFrame`), each graph keeping its frame's index, its
vertices' labels (each distinct tuple of labels stored and checked once) and its edges'
weights (each distinct value stored once).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from functools import partial
from typing import Any, NoReturn

import numpy as np

from structkernels.structures import GraphFrame, Path, StructureError

__all__ = ["pack", "unpack"]

_INT, _FLOAT = np.dtype("<i4"), np.dtype("<f8")
# the arrays of each view, the float ones named apart
_KEYS = {"path": ("offsets", "edges", "nodes"), "context": ("offsets", "features"),
         "apg": ("frame", "vertices", "edge_offsets", "ends", "label_offsets", "labels",
                 "vertex_labels", "weight_values", "weights")}


def _b64(values: Any, dtype: np.dtype = _INT) -> str:
    return base64.b64encode(np.asarray(values, dtype=dtype).tobytes()).decode("ascii")


def _offsets(lengths: Any) -> np.ndarray:
    """Where each part starts in the flat list, and where the last ends."""
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])


def pack(refs: list[dict[str, Any]], views: tuple[str, ...]) -> dict[str, Any]:
    """The reference pairs' structure views (``{"path": Path, "context": tuple of str,
    "apg": LabelledGraph}`` each) as the arrays of a version 4 file."""
    ids: dict[str, int] = {}
    code = ids.setdefault
    out: dict[str, Any] = {"count": len(refs)}
    if "path" in views:
        paths = [r["path"] for r in refs]
        out["path"] = {"offsets": _offsets([len(p) for p in paths]),
                       "edges": [-1 if e is None else code(e, len(ids))
                                 for p in paths for e, _ in p],
                       "nodes": [code(n, len(ids)) for p in paths for _, n in p]}
    if "context" in views:
        bags = [r["context"] for r in refs]
        out["context"] = {"offsets": _offsets([len(b) for b in bags]),
                          "features": [code(f, len(ids)) for b in bags for f in b]}
    if "apg" in views:
        graphs = [r["apg"] for r in refs]
        frames: dict[tuple, int] = {}
        frame = [frames.setdefault((len(g), tuple((u, v) for u, v, _ in g.edges)), len(frames))
                 for g in graphs]
        tuples: dict[tuple, int] = {}
        vertex = [tuples.setdefault(lab, len(tuples)) for g in graphs for lab in g.labels]
        values: dict[float, int] = {}
        out["apg"] = {"frame": frame, "vertices": [n for n, _ in frames],
                      "edge_offsets": _offsets([len(e) for _, e in frames]),
                      "ends": [x for _, e in frames for pair in e for x in pair],
                      "label_offsets": _offsets([len(lab) for lab in tuples]),
                      "labels": [code(x, len(ids)) for lab in tuples for x in lab],
                      "vertex_labels": vertex,
                      "weights": [values.setdefault(w, len(values))
                                  for g in graphs for _, _, w in g.edges],
                      "weight_values": list(values)}
    for view in views:
        out[view] = {k: _b64(v, _FLOAT if k == "weight_values" else _INT)
                     for k, v in out[view].items()}
    out["strings"] = list(ids)
    return out


class _Arrays:
    """The checks of a version 4 ``"references"`` object, one failure a line."""

    def __init__(self, obj: dict, fail: Callable[[str], NoReturn], n_strings: int):
        self.obj, self.fail, self.n_strings = obj, fail, n_strings

    def array(self, view: str, key: str) -> np.ndarray:
        where = f"references[{view!r}][{key!r}]"
        text = self.obj[view].get(key)
        if not isinstance(text, str):
            self.fail(f"{where} must be a base64 string, got {type(text).__name__}")
        dtype = _FLOAT if key == "weight_values" else _INT
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            self.fail(f"{where} is not base64")
        if len(raw) % dtype.itemsize:
            self.fail(f"{where} holds {len(raw)} bytes, not a whole number of "
                      f"{dtype.itemsize}-byte values")
        return np.frombuffer(raw, dtype=dtype).astype(np.float64 if key == "weight_values"
                                                      else np.int64)

    def offsets(self, view: str, key: str, n: int | None = None) -> np.ndarray:
        """Offsets of ``n`` parts (None: as many as the array holds)."""
        a = self.array(view, key)
        n = max(len(a) - 1, 0) if n is None else n
        if len(a) != n + 1 or a[0] != 0 or (np.diff(a) < 0).any():
            self.fail(f"references[{view!r}][{key!r}] must be {n + 1} non-decreasing offsets "
                      "from 0")
        return a

    def codes(self, view: str, key: str, n: int, low: int = 0, high: int | None = None
              ) -> np.ndarray:
        a = self.array(view, key)
        high = self.n_strings if high is None else high
        if len(a) != n:
            self.fail(f"references[{view!r}][{key!r}] holds {len(a)} values; {n} expected")
        if len(a) and (a.min() < low or a.max() >= high):
            self.fail(f"references[{view!r}][{key!r}] holds a value out of [{low}, {high})")
        return a

    def sizes(self, what: str, lengths: np.ndarray, limit: int) -> None:
        big = np.flatnonzero(lengths > limit)
        if len(big):
            i = int(big[0])
            self.fail(f"reference {i}'s {what} holds {int(lengths[i])} items; at most "
                      f"MAX_REFERENCE_SIZE = {limit}")


def unpack(obj: Any, views: tuple[str, ...], count: int, fail: Callable[[str], NoReturn],
           limits: tuple[int, int]) -> list[dict[str, Any]]:
    """The reference pairs of a version 4 ``"references"`` object, every field checked:
    ``count`` pairs, each view within ``limits`` (``MAX_REFERENCE_SIZE``,
    ``MAX_GRAPH_CELLS``) counted before anything is built; ``fail(reason)`` on the first
    problem."""
    size, max_cells = limits
    keys = ("count", "strings", *views)
    if not isinstance(obj, dict) or set(obj) != set(keys):
        fail(f"'references' must be an object with exactly {', '.join(keys)}")
    if type(obj["count"]) is not int or obj["count"] != count:
        fail(f"references['count'] must be {count}, the number of weights")
    strings = obj["strings"]
    if not isinstance(strings, list) or not all(type(s) is str for s in strings):
        fail("references['strings'] must be a list of strings")
    for view in views:
        if not isinstance(obj[view], dict) or set(obj[view]) != set(_KEYS[view]):
            fail(f"references[{view!r}] must be an object with exactly "
                 f"{', '.join(_KEYS[view])}")
    a = _Arrays(obj, fail, len(strings))
    got: dict[str, list] = {}
    if "path" in views:
        off = a.offsets("path", "offsets", count)
        a.sizes("path", np.diff(off), size)
        if (np.diff(off) == 0).any():
            fail(f"reference {int(np.flatnonzero(np.diff(off) == 0)[0])}'s path is empty")
        edges = a.codes("path", "edges", int(off[-1]), low=-1)
        nodes = a.codes("path", "nodes", int(off[-1]))
        names = [*strings, None]  # -1: no edge
        steps = list(zip(map(names.__getitem__, edges.tolist()),
                         map(strings.__getitem__, nodes.tolist()), strict=True))
        got["path"] = [_built(Path, fail, f"reference {i}'s path", list(p))
                       for i, p in enumerate(_spans(steps, off))]
    if "context" in views:
        off = a.offsets("context", "offsets", count)
        a.sizes("context", np.diff(off), size)
        feats = [strings[j] for j in a.codes("context", "features", int(off[-1])).tolist()]
        got["context"] = _spans(feats, off)
    if "apg" in views:
        got["apg"] = _graphs(a, count, strings, size, max_cells)
    return [{v: got[v][i] for v in views} for i in range(count)]


def _spans(flat: list, offsets: np.ndarray) -> list[tuple]:
    """``flat`` cut at ``offsets``, each part a tuple."""
    cuts = offsets.tolist()
    return [tuple(flat[s:e]) for s, e in zip(cuts[:-1], cuts[1:], strict=True)]


def _built(make: Callable, fail: Callable[[str], NoReturn], what: str, *args: Any) -> Any:
    try:
        return make(*args)
    except (StructureError, TypeError, ValueError) as exc:
        fail(f"{what} is malformed: {exc}")


def _graphs(a: _Arrays, count: int, strings: list[str], size: int, max_cells: int) -> list:
    """The all-paths graphs: their frames checked once, then each graph's labels and
    weights."""
    vertices = a.array("apg", "vertices")
    n_frames = len(vertices)
    eoff = a.offsets("apg", "edge_offsets", n_frames)
    for what, counts in (("vertices", vertices), ("edges", np.diff(eoff))):
        if n_frames and (counts.min() < 0 or counts.max() > size):
            f = int(np.flatnonzero((counts < 0) | (counts > size))[0])
            a.fail(f"references['apg'] frame {f} holds {int(counts[f])} {what}; from 0 to "
                   f"MAX_REFERENCE_SIZE = {size}")
    frame = a.codes("apg", "frame", count, high=n_frames)
    per_ref, n_edges = vertices[frame], np.diff(eoff)[frame]
    cells = int(np.sum(per_ref.astype(np.float64) ** 2))
    if cells > max_cells:
        a.fail(f"the reference graphs hold {cells} vertex pairs (the sum of their squared "
               f"sizes); at most MAX_GRAPH_CELLS = {max_cells}")
    ends = a.codes("apg", "ends", 2 * int(eoff[-1]), high=max(int(vertices.max(initial=0)), 1))
    # the distinct tuples of vertex labels, each checked once: distinct non-empty strings
    loff = a.offsets("apg", "label_offsets")
    words = [strings[j] for j in a.codes("apg", "labels", int(loff[-1])).tolist()]
    tuples = _spans(words, loff)
    bad = next((t for t in tuples if not all(t) or len(set(t)) != len(t)), None)
    if bad is not None:
        a.fail(f"references['apg'] holds the vertex labels {bad!r}: labels must be distinct "
               "non-empty strings")
    vertex = a.codes("apg", "vertex_labels", int(per_ref.sum()), high=len(tuples))
    vstart = _offsets(per_ref)
    sizes = _offsets(np.diff(loff)[vertex])
    a.sizes("graph's vertex labels", sizes[vstart[1:]] - sizes[vstart[:-1]], size)
    vstart = vstart.tolist()
    labels = list(map(tuples.__getitem__, vertex.tolist()))
    values = a.array("apg", "weight_values").tolist()
    weights = a.codes("apg", "weights", int(n_edges.sum()), high=len(values))
    pairs = ends.reshape(-1, 2).tolist()
    frames = []
    for f in range(n_frames):
        frames.append(_built(GraphFrame, a.fail, f"references['apg'] frame {f}",
                             int(vertices[f]), [tuple(e) for e in pairs[eoff[f]:eoff[f + 1]]]))
    ws = list(map(values.__getitem__, weights.tolist()))
    wstart = _offsets(n_edges).tolist()
    # the labels checked above, as the tuples the frames take
    return [_built(partial(frames[f].graph, check_labels=False), a.fail,
                   f"reference {i}'s graph", labels[vstart[i]:vstart[i + 1]],
                   ws[wstart[i]:wstart[i + 1]])
            for i, f in enumerate(frame.tolist())]
