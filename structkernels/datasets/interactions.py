"""Labelled candidate interactions: the shipped Bio AMR dataset and your own files.

:func:`load_interactions` reads JSON Lines (optionally gzip'd) of candidate
biomolecular interactions, each with its :class:`~structkernels.Path`
(nonstationary kernels paper, Table 1), its :class:`~structkernels.Tree`
(Fig. 1(b), 1(c)) and a binary label.  With no path it loads the dataset
shipped as package data in ``structkernels/data/`` (built from the Bio AMR corpus
by ``datasets/build_bio_amr_interactions.py``, provenance in
``datasets/bio-amr-interactions/README.md``; its labels are *distant* labels,
see that folder's README and :mod:`structkernels.amr.labels`).

Records are JSON objects, one per line (blank lines ignored), in the **structkernels
form** (``path``, ``tree`` and ``label`` required, or ``amr`` and ``interaction`` from which
they are extracted by :mod:`structkernels.graphs.candidates`; what the shipped file holds)
or the **PubMed45 form** (Garg et al., 2016: ``interaction_tuple`` resolved in the record's
``amr``; label 2, roles swapped, loads as 0 with ``swapped`` true); docs/amr.md gives both.
A record without ``split`` is put in ``"train"`` or ``"test"`` by :func:`split_of` of its
``graph_id`` (else its ``id``, else its line), so no graph is in both halves.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import warnings
import zlib
from pathlib import Path as FilePath

from structkernels.datasets._interaction_cache import (
    CACHE_FORMAT,
    CACHE_SPEC,
    dataset_from_arrays,
    dataset_to_arrays,
)
from structkernels.datasets.interaction_dataset import SPLITS, InteractionDataset, SkippedRecord
from structkernels.datasets.interaction_records import _parse_file, split_of
from structkernels.formats.arrays import file_digest, read_arrays, write_arrays
from structkernels.formats.labels import InteractionFormatError
from structkernels.utils import (
    MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH,
    note_cache_write,
    one_line,
    release_free_memory,
    user_cache_dir,
)

__all__ = ["InteractionDataset", "InteractionFormatError", "SkippedRecord", "load_interactions",
           "split_of", "SHIPPED_DATASET"]

#: Where the shipped dataset lives: the package data folder ``structkernels/data``
#: (inside an installed wheel too), found through :mod:`importlib.resources`.
SHIPPED_DATASET = FilePath(os.fspath(importlib.resources.files("structkernels") / "data"))
_SHIPPED_FILE = "interactions.jsonl.gz"


def load_interactions(
    path: str | os.PathLike | None = None,
    split: str | None = None,
    on_error: str = "raise",
    *,
    max_depth: int = MAX_RECORD_DEPTH,
    max_bytes: int = MAX_RECORD_BYTES,
    cache: bool | str | os.PathLike | None = None,
) -> InteractionDataset:
    """Load labelled candidate interactions.

    Parameters
    ----------
    path : path, optional
        A JSON Lines file (plain or gzip'd) in the structkernels or PubMed45
        record form (module docstring), or a folder holding
        ``interactions.jsonl.gz``.  None loads the shipped Bio AMR dataset.
    split : {"train", "test"}, optional
        Return only that half (split by graph id; no graph in both).
    on_error : {"raise", "skip"}
        ``"raise"``: a bad record raises :class:`InteractionFormatError`
        naming the file, line and record id.  ``"skip"``: it is left out and
        listed in :attr:`InteractionDataset.skipped`.  A bad record is also
        a line that is not UTF-8, a record nested deeper than ``max_depth``
        or longer than ``max_bytes``, ``NaN``/``Infinity``, and the end of a
        truncated gzip file (every record before it is kept).
    max_depth, max_bytes : int
        Limits of one record (:func:`structkernels.utils.loads_record`).
    cache : bool or path or None, default None
        A compact binary copy of the parsed file (integer arrays of the
        encoded paths and trees, the vocabularies, the labels, and the
        records' text compressed until first read) is kept in
        ``user_cache_dir("datasets")`` (None or True;
        :func:`structkernels.utils.user_cache_dir`) or in the folder given, and
        read instead of parsing when the file's bytes, ``on_error``, the limits
        and the reader's version are the same: the shipped dataset loads in
        well under a second after the first time.  ``False`` parses every time.
        The copy is written atomically and read without pickle; a damaged or
        foreign copy is ignored and replaced.

    Returns
    -------
    InteractionDataset

    Examples
    --------
    >>> from structkernels.datasets import load_interactions
    >>> data = load_interactions()  # doctest: +SKIP
    >>> train, test = data.split("train"), data.split("test")  # doctest: +SKIP
    >>> set(train.graph_ids).isdisjoint(test.graph_ids)  # doctest: +SKIP
    True
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, got {split!r}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if path is None:
        file = SHIPPED_DATASET / _SHIPPED_FILE
        if not file.is_file():
            raise FileNotFoundError(
                f"the shipped interaction dataset is not at {file} (package data of "
                "structkernels); reinstall structkernels, or build it with "
                "`python datasets/build_bio_amr_interactions.py` in a checkout"
            )
    else:
        file = FilePath(os.fspath(path))
        if file.is_dir():
            file = file / _SHIPPED_FILE
        if not file.is_file():
            raise FileNotFoundError(f"no interaction file at {file}")
    fname = os.fspath(file)
    folder = _cache_folder(cache)
    if folder is not None:
        ds = _load_cached(fname, folder, on_error, max_depth, max_bytes)
        return ds if split is None else ds.split(split)
    return _parse_file(fname, split, on_error, max_depth, max_bytes)


def _cache_folder(cache: bool | str | os.PathLike | None) -> FilePath | None:
    if cache is None or cache is True:
        return FilePath(user_cache_dir("datasets"))
    if cache is False:
        return None
    if isinstance(cache, (str, os.PathLike)):
        return FilePath(os.fspath(cache))
    raise TypeError(f"cache must be a bool, a folder or None, got {type(cache).__name__}")


def _load_cached(fname: str, folder: FilePath, on_error: str, max_depth: int,
                 max_bytes: int) -> InteractionDataset:
    """The parsed file from its binary copy in ``folder``, made on first use."""
    try:
        digest = file_digest(fname)
    except OSError as exc:
        raise InteractionFormatError(f"{fname}: cannot read ({one_line(exc)})") from None
    key = hashlib.sha256(json.dumps(
        [CACHE_FORMAT, digest, on_error, int(max_depth), int(max_bytes)]).encode()).hexdigest()
    target = folder / f"interactions-{key[:32]}.npz"
    arrays = read_arrays(target, CACHE_SPEC)
    if arrays is not None:
        try:
            return dataset_from_arrays(arrays, fname)
        except (ValueError, IndexError, UnicodeDecodeError, zlib.error):
            pass  # damaged or foreign: parse again and replace it
    ds = _parse_file(fname, None, on_error, max_depth, max_bytes)
    arrays = dataset_to_arrays(ds)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_arrays(target, arrays)
    except OSError as exc:
        warnings.warn(f"the binary copy of {fname} was not kept ({one_line(exc)}); "
                      "it is parsed again on every load", RuntimeWarning, stacklevel=3)
        return ds
    try:
        note_cache_write(folder, target.stat().st_size)  # one warning past the size limit
    except OSError:
        pass
    # the first load returns what every later load reads (the copy's arrays), and the
    # parse's objects go: the process keeps about the memory of a later load, not the
    # parse's peak
    copy = dataset_from_arrays(arrays, fname)
    del ds, arrays
    release_free_memory()
    return copy
