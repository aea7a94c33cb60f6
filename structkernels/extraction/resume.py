"""The resume files of :func:`structkernels.extraction.prediction.predict`.

``OUT`` is written as ``OUT.partial``, each batch's bytes appended and flushed, then
``OUT.partial.progress`` (JSON, atomic, with its own checksum) records the batches done, the
bytes they hold and their SHA-256, the run's counts and :func:`run_identity`.  Complete, the
partial file is renamed to ``OUT``.  A stopped run with ``resume`` keeps both files; the
next checks every hash, truncates the partial file to the recorded bytes and goes on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from structkernels.formats.arrays import file_digest
from structkernels.utils import (
    RecordError,
    StructkernelsError,
    atomic_open,
    destination,
    loads_record,
    move_into_place,
    one_line,
    open_side_file,
)

__all__ = ["PartialOutput", "PredictError", "run_identity", "COUNTS", "PROGRESS_FORMAT",
           "PROGRESS_VERSION"]

PROGRESS_FORMAT = "structkernels-predict-progress"
PROGRESS_VERSION = 2
#: The counts a run keeps (and its progress file records).
COUNTS = ("batches", "sentences", "pairs", "positives", "bytes", "tp", "fp", "fn", "skipped")
_AGAIN = "; run without --resume to start again"


class PredictError(StructkernelsError, ValueError):
    """A run that cannot go on as asked: an option that does not suit the model or the
    output, a missing input, a partial output that cannot be taken up."""


def _checksum(doc: dict[str, Any]) -> str:
    """The SHA-256 of a progress document without its ``check`` (a damaged file is seen)."""
    body = {k: v for k, v in doc.items() if k != "check"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def run_identity(inputs: list[str], model: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What a run's output depends on: ``inputs``, each input file's path and the SHA-256 of
    its content (a folder: each file under it), ``model``, the SHA-256 of the model file's
    content, and ``settings``."""
    files: list[Any] = []
    for name in inputs:
        found = [name]
        if os.path.isdir(name):
            found = []
            for root, dirs, names in os.walk(name):
                dirs.sort()
                found += [os.path.join(root, f) for f in sorted(names)]
        files += [[os.path.abspath(f), file_digest(f)] for f in found]
    return {"inputs": files, "model": [os.path.abspath(model), file_digest(model)],
            "settings": json.loads(json.dumps(settings, sort_keys=True, default=str))}


class PartialOutput:
    """``OUT.partial`` and ``OUT.partial.progress`` of one run (see the module's notes).

    ``identity`` is :func:`run_identity`'s (with ``resume``; else None).  Every write error
    is a :class:`PredictError` naming ``OUT`` (and the side file written)."""

    def __init__(self, output: str, identity: dict[str, Any] | None, resume: bool):
        self.final = destination(output)
        self.partial = self.final.with_name(self.final.name + ".partial")
        self.progress = self.final.with_name(self.final.name + ".partial.progress")
        self.identity, self.resume = identity or {}, resume
        self.state = dict.fromkeys(COUNTS, 0)
        self.fd = -1
        self.digest = hashlib.sha256()  # of the bytes committed to the partial file

    def _failed(self, exc: OSError, side: Path) -> PredictError:
        why = one_line(exc.strerror if exc.strerror and not exc.filename else exc)
        which = "its progress file" if side == self.progress else "the partial output"
        return PredictError(f"{self.final}: cannot write: {why} ({which} {side})")

    def _read_progress(self) -> dict[str, Any]:
        def bad(why: str) -> PredictError:
            return PredictError(f"{self.progress}: {why}; remove it (and {self.partial.name}) "
                                "or run without --resume to start again")

        try:
            doc = loads_record(self.progress.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, RecordError) as exc:
            raise bad(f"cannot read the progress file ({one_line(exc)})") from None
        if not isinstance(doc, dict) or doc.get("format") != PROGRESS_FORMAT:
            raise bad("not a progress file of structkernels predict")
        if doc.get("version") != PROGRESS_VERSION:
            raise bad(f"a progress file of version {one_line(doc.get('version'), 20)} (an "
                      "older structkernels: its run cannot be checked)")
        if doc.get("check") != _checksum(doc):
            raise bad("the progress file is damaged (its checksum differs)")
        state = doc.get("state")
        if not isinstance(state, dict) or any(
                not isinstance(state.get(k), int) or isinstance(state.get(k), bool)
                or state[k] < 0 for k in COUNTS):
            raise bad("the progress file's counts are malformed")
        mine = self.identity
        if doc.get("model") != mine["model"]:
            raise PredictError(f"{mine['model'][0]}: cannot resume {self.partial}: written "
                               f"with another model or the model file changed{_AGAIN}")
        if doc.get("settings") != mine["settings"]:
            raise PredictError(f"{self.partial}: cannot resume: it was written with other "
                               "settings (--batch-size, --output-format, --threshold, "
                               f"--skip-bad, --tolerance){_AGAIN}")
        old = doc.get("inputs")
        if not isinstance(old, list) or [f[:1] for f in old] != [f[:1] for f in mine["inputs"]]:
            raise PredictError(f"{self.partial}: cannot resume: it was written from other "
                               f"inputs{_AGAIN}")
        for was, now in zip(old, mine["inputs"], strict=True):
            if was != now:
                raise PredictError(f"{now[0]}: cannot resume {self.partial}: this input "
                                   f"changed since the partial output was written{_AGAIN}")
        doc["labelled"] = bool(doc.get("labelled", True))
        return doc

    def _take_up(self, fd: int, doc: dict[str, Any]) -> None:
        """The partial file's first recorded bytes checked against their SHA-256."""
        size = self.state["bytes"]
        if os.fstat(fd).st_size < size:
            raise PredictError(f"{self.partial}: cannot resume: the partial output is shorter "
                               f"than its progress file records{_AGAIN}")
        with open(self.partial, "rb") as fh:
            if not os.path.samestat(os.fstat(fh.fileno()), os.fstat(fd)):
                raise PredictError(f"{self.partial}: cannot resume: the file changed while "
                                   f"opened{_AGAIN}")
            left = size
            while left:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    break
                self.digest.update(chunk)
                left -= len(chunk)
        if self.digest.hexdigest() != doc.get("output"):
            raise PredictError(f"{self.partial}: cannot resume: its bytes differ from those "
                               f"its progress file records (damaged or edited){_AGAIN}")

    def open(self) -> dict[str, Any]:
        """Start (or, resuming, take up) the partial file; the run's state so far."""
        labelled, resuming = True, self.resume and os.path.lexists(self.progress)
        if resuming:
            doc = self._read_progress()
            self.state = {k: doc["state"][k] for k in COUNTS}
            labelled = doc["labelled"]
            if not os.path.lexists(self.partial):
                raise PredictError(f"{self.partial}: cannot resume: the partial output is "
                                   f"missing{_AGAIN}")
        else:
            with contextlib.suppress(OSError):  # a stale one no longer describes the file
                self.progress.unlink()
        try:  # an old file or stale link replaced, unless resuming
            self.fd = open_side_file(self.partial, append=resuming)
            if resuming:
                self._take_up(self.fd, doc)
                os.ftruncate(self.fd, self.state["bytes"])
        except BaseException as exc:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
            if isinstance(exc, OSError):
                raise self._failed(exc, self.partial) from None
            raise
        return {**self.state, "labelled": labelled}

    def commit(self, text: str, state: dict[str, Any]) -> None:
        """Append one batch's text, flush it to disk, then record the progress."""
        data = text.encode("utf-8")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
            os.fsync(self.fd)
            size = os.fstat(self.fd).st_size
        except OSError as exc:
            raise self._failed(exc, self.partial) from None
        self.digest.update(data)
        self.state = {k: int(state[k]) for k in COUNTS if k != "bytes"}
        self.state["bytes"] = size
        if self.resume:
            doc = {"format": PROGRESS_FORMAT, "version": PROGRESS_VERSION, **self.identity,
                   "output": self.digest.hexdigest(),
                   "labelled": bool(state.get("labelled", True)), "state": self.state}
            doc["check"] = _checksum(doc)
            try:
                with atomic_open(self.progress, follow_links=False) as fh:
                    fh.write(json.dumps(doc) + "\n")
            except OSError as exc:
                raise self._failed(exc, self.progress) from None

    def finish(self) -> None:
        """Rename the complete partial file to the output; remove the progress file."""
        os.close(self.fd)
        self.fd = -1
        try:
            move_into_place(self.partial, self.final)
        except OSError as exc:
            raise self._failed(exc, self.partial) from None
        if self.resume:
            with contextlib.suppress(OSError):
                self.progress.unlink()

    def abandon(self) -> None:
        """A run stopped: keep both files when resuming, else remove the partial file."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if not self.resume:
            with contextlib.suppress(OSError):
                self.partial.unlink()
