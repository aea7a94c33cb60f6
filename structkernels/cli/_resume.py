"""An output file written batch by batch, renamed into place when complete, resumable.

``OUT`` is written as ``OUT.partial`` beside it; after each batch the batch's bytes are
appended and flushed to disk, then ``OUT.partial.progress`` (small JSON, written
atomically) records the batches done, the bytes they hold, the run's counts and the
SHA-256 of the run's identity (the inputs' paths, sizes and modification times, the
model file's content, the settings that change the bytes written).  When the last batch
is written the partial file is renamed to ``OUT`` and the progress file removed.

Stopped (Ctrl-C, an error), a run without ``resume`` removes both files; with ``resume``
it keeps them, and the next run with ``resume`` and the same identity truncates the
partial file to the recorded bytes (a batch half written is dropped) and goes on after
the recorded batches.  Another identity is refused with one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from structkernels.cli import CommandError
from structkernels.utils import (
    RecordError,
    atomic_open,
    destination,
    loads_record,
    move_into_place,
    one_line,
)

PROGRESS_FORMAT = "structkernels-predict-progress"
PROGRESS_VERSION = 1
_COUNTS = ("batches", "sentences", "pairs", "positives", "bytes", "tp", "fp", "fn", "skipped")


def _stat(path: str) -> list[Any]:
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_identity(inputs: list[str], model: str, settings: dict[str, Any]) -> str:
    """The SHA-256 of what a run's output depends on: each input's path, size and
    modification time (a folder: each file under it), the model file's content, and
    ``settings``."""
    files: list[Any] = []
    for name in inputs:
        if os.path.isdir(name):
            for root, dirs, found in os.walk(name):
                dirs.sort()
                files += [_stat(os.path.join(root, f)) for f in sorted(found)]
        else:
            files.append(_stat(name))
    blob = json.dumps({"inputs": files, "model": _file_sha256(model), "settings": settings},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class PartialOutput:
    """``OUT.partial`` and ``OUT.partial.progress`` of one run (see the module's notes)."""

    def __init__(self, output: str, identity: str, resume: bool):
        self.final = destination(output)
        self.partial = self.final.with_name(self.final.name + ".partial")
        self.progress = self.final.with_name(self.final.name + ".partial.progress")
        self.identity, self.resume = identity, resume
        self.state = dict.fromkeys(_COUNTS, 0)
        self.fd = -1

    def _read_progress(self) -> dict[str, Any]:
        def bad(why: str) -> CommandError:
            return CommandError(f"{self.progress}: {why}; remove it (and {self.partial.name}) "
                                "or run without --resume")

        try:
            doc = loads_record(self.progress.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, RecordError) as exc:
            raise bad(f"cannot read the progress file ({one_line(exc)})") from None
        if not isinstance(doc, dict) or doc.get("format") != PROGRESS_FORMAT:
            raise bad("not a progress file of structkernels predict")
        if doc.get("version") != PROGRESS_VERSION:
            raise bad(f"a progress file of version {one_line(doc.get('version'), 20)}")
        state = doc.get("state")
        if not isinstance(state, dict) or any(
                not isinstance(state.get(k), int) or isinstance(state.get(k), bool)
                or state[k] < 0 for k in _COUNTS):
            raise bad("the progress file's counts are malformed")
        if doc.get("identity") != self.identity:
            raise CommandError(
                f"{self.partial}: cannot resume: it was written from other inputs, another "
                "model or other settings (--batch-size, --output-format, --threshold, "
                "--skip-bad); run without --resume to start again")
        doc["labelled"] = bool(doc.get("labelled", True))
        return doc

    def open(self) -> dict[str, Any]:
        """Start (or, resuming, take up) the partial file; the run's state so far."""
        labelled = True
        if self.resume and self.progress.exists():
            doc = self._read_progress()
            self.state = {k: doc["state"][k] for k in _COUNTS}
            labelled = doc["labelled"]
            size = self.partial.stat().st_size if self.partial.exists() else -1
            if size < self.state["bytes"]:
                raise CommandError(f"{self.partial}: cannot resume: the partial output is "
                                   "missing or shorter than its progress file records; run "
                                   "without --resume to start again")
            os.truncate(self.partial, self.state["bytes"])
        else:
            with contextlib.suppress(FileNotFoundError):
                self.progress.unlink()
            with atomic_open(self.partial, "wb"):
                pass  # a new, empty partial file (an old one is replaced)
        self.fd = os.open(self.partial, os.O_WRONLY | os.O_APPEND)
        return {**self.state, "labelled": labelled}

    def commit(self, text: str, state: dict[str, Any]) -> None:
        """Append one batch's text, flush it to disk, then record the progress."""
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
        os.fsync(self.fd)
        self.state = {k: int(state[k]) for k in _COUNTS if k != "bytes"}
        self.state["bytes"] = os.fstat(self.fd).st_size
        if self.resume:
            doc = {"format": PROGRESS_FORMAT, "version": PROGRESS_VERSION,
                   "identity": self.identity, "labelled": bool(state.get("labelled", True)),
                   "state": self.state}
            with atomic_open(self.progress) as fh:
                fh.write(json.dumps(doc) + "\n")

    def finish(self) -> None:
        """Rename the complete partial file to the output; remove the progress file."""
        os.close(self.fd)
        self.fd = -1
        move_into_place(self.partial, self.final)
        with contextlib.suppress(FileNotFoundError):
            self.progress.unlink()

    def abandon(self) -> None:
        """A run stopped: keep both files when resuming, else remove them."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if not self.resume:
            for p in (self.partial, self.progress):
                with contextlib.suppress(OSError):
                    Path(p).unlink()
