"""An evaluation's Gram matrices in files, read a fold at a time: each structure view's
normalised Gram is stored as float32 (a relative error of at most ``2**-24`` per entry; the
sum of the views and everything after it is float64) and a fold's slices are gathered a band
of rows at a time (:func:`fold_slices`), never the whole matrix.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import joblib
import numpy as np

from structkernels.engine.gram import kernel_key
from structkernels.engine.parallel import releases_gil
from structkernels.kernels.base import Kernel
from structkernels.relations.models import StructureKernel
from structkernels.utils import (
    CacheFolder,
    atomic_open,
    check_cache_dir,
    one_line,
    read_npy_header,
)

__all__ = ["GramFile", "fold_slices", "store_float32", "BAND_BYTES", "RelationGrams"]

#: Bytes of one band of rows read at a time.
BAND_BYTES = 32 << 20


class GramFile:
    """A square float matrix in a ``.npy`` file, read in bands of rows without mapping it.

    Parameters
    ----------
    path : path-like
        A C-ordered ``(n, n)`` float32 or float64 ``.npy`` file.
    temporary : bool, default False
        :meth:`remove` deletes the file (one computed for one fold).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "K.npy"
    >>> np.save(f, np.arange(9, dtype=np.float32).reshape(3, 3))
    >>> GramFile(f).to_array()[2].tolist()
    [6.0, 7.0, 8.0]
    """

    def __init__(self, path: str | os.PathLike, temporary: bool = False):
        self.path = Path(path)
        with open(self.path, "rb") as fh:
            shape, fortran, dtype = read_npy_header(fh, str(self.path))
            self.offset = fh.tell()
        if fortran:
            raise ValueError(f"{self.path}: a Fortran-ordered array, not a Gram file")
        shape, dtype = tuple(shape), np.dtype(dtype)
        if len(shape) != 2 or shape[0] != shape[1] or dtype not in (np.float32, np.float64):
            raise ValueError(f"{self.path}: a {dtype} array of shape {shape}, not a square "
                             "float Gram")
        self.n = int(shape[0])
        self.dtype = dtype
        self.temporary = temporary

    def bands(self):
        """``(r0, rows)`` for consecutive bands of rows ``rows = K[r0:r0 + h]``, each about
        :data:`BAND_BYTES`."""
        h = max(1, BAND_BYTES // max(1, self.n * self.dtype.itemsize))
        with open(self.path, "rb") as fh:
            for r0 in range(0, self.n, h):
                r1 = min(self.n, r0 + h)
                fh.seek(self.offset + r0 * self.n * self.dtype.itemsize)
                block = np.fromfile(fh, dtype=self.dtype, count=(r1 - r0) * self.n)
                if block.size != (r1 - r0) * self.n:
                    raise ValueError(f"{self.path}: the file ends inside row {r0 + block.size // self.n}")
                yield r0, block.reshape(r1 - r0, self.n)

    def all_finite(self) -> bool:
        """Whether every value is finite (one pass over the file)."""
        return all(np.isfinite(rows).all() for _, rows in self.bands())

    def to_array(self) -> np.ndarray:
        """The whole matrix in memory, float64."""
        out = np.empty((self.n, self.n), dtype=np.float64)
        for r0, rows in self.bands():
            out[r0:r0 + len(rows)] = rows
        return out

    def remove(self) -> None:
        """Delete the file when it is temporary."""
        if self.temporary:
            self.path.unlink(missing_ok=True)


def store_float32(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Write the float64 ``.npy`` Gram ``source`` to ``target`` as float32, a band at a
    time, atomically (``target`` appears complete or not at all)."""
    src = GramFile(source)
    with atomic_open(target, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                 "fortran_order": False, "shape": (src.n, src.n)})
        for _, rows in src.bands():
            fh.write(np.ascontiguousarray(rows, dtype=np.float32).tobytes())


def fold_slices(files: Sequence[GramFile], train: np.ndarray, test: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(K[train][:, train], K[test][:, train])`` of ``K`` the sum of the files' matrices,
    in float64, added in the order given; each file is read once, a band of rows at a time.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> np.save(d / "a.npy", np.eye(3, dtype=np.float32))
    >>> np.save(d / "b.npy", np.ones((3, 3), dtype=np.float32))
    >>> K_tr, K_te = fold_slices([GramFile(d / "a.npy"), GramFile(d / "b.npy")],
    ...                          np.array([2, 0]), np.array([1]))
    >>> K_tr.tolist(), K_te.tolist()
    ([[2.0, 1.0], [1.0, 2.0]], [[1.0, 1.0]])
    """
    train = np.asarray(train, dtype=np.intp)
    test = np.asarray(test, dtype=np.intp)
    if not files:
        raise ValueError("fold_slices needs at least one Gram file")
    n = files[0].n
    for f in files:
        if f.n != n:
            raise ValueError(f"{f.path}: a Gram over {f.n} items where {n} were expected")
    out = (np.zeros((len(train), len(train))), np.zeros((len(test), len(train))))
    wanted = []  # each side's rows in file order, and where each goes in its slice
    for rows in (train, test):
        order = np.argsort(rows, kind="stable")
        in_order = bool((order == np.arange(len(rows))).all())  # folds' rows come sorted
        wanted.append((rows[order], None if in_order else order))
    for f in files:
        for r0, block in f.bands():
            r1 = r0 + len(block)
            for K, (srt, order) in zip(out, wanted, strict=True):
                a, b = np.searchsorted(srt, r0), np.searchsorted(srt, r1)
                if a == b:
                    continue
                # rows, then columns, each by np.take (a third of the time of one
                # two-dimensional fancy index); sorted rows are added in place
                part = np.take(np.take(block, srt[a:b] - r0, axis=0), train, axis=1)
                if order is None:
                    np.add(K[a:b], part, out=K[a:b])
                else:
                    K[order[a:b]] += part
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))


def _learned_problem(doc: Any) -> str | None:
    """What is wrong with a cached σ learner's result, or None."""
    if not (isinstance(doc, dict) and set(doc) <= {"sigma", "lam"}
            and isinstance(doc.get("sigma"), dict)):
        return "not a dict of 'sigma' (and 'lam')"
    if not all(isinstance(k, str) and _number(v) and v >= 0 for k, v in doc["sigma"].items()):
        return "not finite σ values ≥ 0 by label"
    if "lam" in doc and not (_number(doc["lam"]) and 0 < doc["lam"] <= 1):
        return "λ not a number in (0, 1]"
    return None


def _jsonable(x: Any) -> Any:
    return x.to_json() if hasattr(x, "to_json") else list(x)


class RelationGrams:
    """Normalised Grams over all pairs, one float32 file per structure view and kernel,
    reused by every fold and model.

    With ``cache_dir`` the files (keyed by the view, a SHA-256 of its structures and
    :func:`structkernels.engine.gram.kernel_key`) and each split's σ (keyed by its training
    data, kernel and settings) are kept there, checked and validated when read (a damaged
    entry is discarded with one warning and computed again); without it the files live in a
    temporary folder removed by :meth:`close`.
    """

    def __init__(self, items: Sequence[dict], n_jobs: int,
                 cache_dir: str | os.PathLike | None = None,
                 work_dir: str | os.PathLike | None = None, progress: bool = False):
        self.items = items
        self.progress = progress
        self.n_jobs = n_jobs
        base = check_cache_dir(cache_dir, "cache_dir")
        self.folder = None if base is None else base / "grams"
        self.store = CacheFolder(self.folder, "Gram cache")
        self.work_dir = work_dir
        self._work: tempfile.TemporaryDirectory | None = None
        self._files: dict[str, GramFile] = {}
        self._digests: dict[str, str] = {}
        self.seconds = 0.0

    def _scratch(self) -> Path:
        if self._work is None:
            self._work = tempfile.TemporaryDirectory(prefix="structkernels-grams-",
                                                     dir=self.work_dir)
        return Path(self._work.name)

    def close(self) -> None:
        """Remove the temporary folder (the Grams not kept in the cache)."""
        self._files.clear()
        if self._work is not None:
            self._work.cleanup()
            self._work = None

    def _digest(self, view: str) -> str:
        if view not in self._digests:
            h = hashlib.sha256()
            for item in self.items:
                h.update(json.dumps(_jsonable(item[view]), separators=(",", ":")).encode())
                h.update(b"\n")
            self._digests[view] = h.hexdigest()
        return self._digests[view]

    @staticmethod
    def _key(*parts: Any) -> str:
        """SHA-256 of the JSON of ``parts`` (strings, numbers, lists, dicts only)."""
        blob = json.dumps(list(parts), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, entry: str, key: str) -> GramFile | None:
        """The cached Gram ``entry`` if an ``(n, n)`` finite float32 one, else None."""
        n = len(self.items)
        if not self.store.check_file(entry, key, 4 * n * n + (1 << 16)):
            return None
        try:
            f = GramFile(self.store.file(entry))
        except (OSError, ValueError, SyntaxError) as exc:
            self.store.discard(entry, f"not a .npy Gram: {one_line(exc)}")
            return None
        if f.n != n or f.dtype != np.float32 or not f.all_finite():
            self.store.discard(entry, f"a {f.dtype} Gram over {f.n} items, not a finite "
                               f"float32 ({n}, {n}) one")
            return None
        return f

    def file(self, view: str, kern: Kernel, keep: bool = True) -> GramFile:
        """The Gram of ``view`` under ``kern`` (a normalised kernel) in a float32 file;
        ``keep=False``: a temporary file (a σ of one split), unless a kept file of the same
        kernel is at hand (σ ≡ 1 and λ kept: its twin's Gram)."""
        t = time.perf_counter()
        key = kernel_key(kern)
        memo = self._key(view, key)
        f = self._files.get(memo)
        entry = name = None
        if f is None and self.folder is not None and keep:
            name = self._key(view, self._digest(view), key)
            entry = f"{name}.npy"
            f = self._cached(entry, name)
        if f is None:
            scratch = self._scratch()
            wide = scratch / f"{memo}-float64.npy"
            narrow = scratch / f"{memo}-{'kept' if keep else 'split'}.npy"
            try:
                # a kernel holding the GIL (the bag's sparse products) runs here: worker
                # processes would each hold the structures and stay for the whole run
                kern.gram([item[view] for item in self.items],
                          n_jobs=self.n_jobs if releases_gil(kern) else 1,
                          out=wide, progress=None if self.progress else False)
                if entry is not None and self.store.write_file(
                        entry, name, lambda file, src=wide: store_float32(src, file)):
                    f = GramFile(self.store.file(entry))
                else:
                    store_float32(wide, narrow)
                    f = GramFile(narrow, temporary=not keep)
            finally:
                wide.unlink(missing_ok=True)
        if keep:
            self._files[memo] = f
        self.seconds += time.perf_counter() - t
        return f

    def get(self, view: str, kern: Kernel, keep: bool = True) -> np.ndarray:
        """:meth:`file`'s Gram as a float64 array in memory."""
        f = self.file(view, kern, keep)
        try:
            return f.to_array()
        finally:
            f.remove()

    def sigma(self, part: StructureKernel, train: np.ndarray, y: np.ndarray,
              settings: dict[str, Any], fit: Callable[[], dict]) -> dict[str, Any]:
        """What a σ learner learned on a split (``{"sigma": ..., "lam": ...}``): the cache's,
        else ``fit()``."""
        if self.folder is None:
            return fit()
        h = hashlib.sha256(self._digest(part.view).encode())
        h.update(np.ascontiguousarray(train, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(y[train], dtype=np.int64).tobytes())
        name = self._key("sigma", part.view, h.hexdigest(), kernel_key(part.build()),
                         joblib.hash(settings))
        entry = f"sigma-{name}.json"
        payload = self.store.read(entry, name, 1 << 20)
        if payload is not None:
            try:
                doc = json.loads(payload.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                doc = None
            problem = "not JSON" if doc is None else _learned_problem(doc)
            if problem is None:
                return doc
            self.store.discard(entry, problem)
        learned = fit()
        self.store.write(entry, name, json.dumps(learned).encode("ascii"))
        return learned
