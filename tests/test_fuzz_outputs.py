"""Fuzzing the output rule (issue 37, item 1): random layouts of input files, folders,
BRAT pairs, symbolic links (dangling, looping, into and out of folders), hard links and
FIFOs, and random output paths.

Properties: :func:`structkernels.utils.check_output` raises nothing but
:class:`~structkernels.utils.OutputError` (one line naming the option); whatever it allows,
written through :func:`structkernels.utils.open_output`, changes no byte an input reads,
replaces no link and no FIFO, and lands in the file the rule returned.

Budget: a few seconds (one temporary folder per example).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from _fuzz_strategies import FUZZ
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.utils import OutputError, check_output, open_output

OUTPUTS = settings(FUZZ, max_examples=400 if FUZZ.max_examples > 1000 else 60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])

FIXED = {"a.txt": "file", "a.ann": "file", "b.jsonl": "file", "d": "dir"}  # always there
FREE = ["e", "l1", "l2", "p", "h"]  # any kind
NAMES = [*FIXED, *FREE]
INSIDE = ["d/x.txt", "d/x.ann", "d/sub/y.ann", "d/in-link", "e/z.jsonl"]
KINDS = ["absent", "file", "dir", "link", "link", "fifo", "hard"]


@st.composite
def layouts(draw):
    """``{name: (kind, target)}`` for the top-level names, and where the link inside the
    folder ``d`` leads (out of it, to an input, nowhere)."""
    plan = {name: (kind, name) for name, kind in FIXED.items()}
    for name in FREE:
        kind = draw(st.sampled_from(KINDS))
        target = draw(st.sampled_from(NAMES + INSIDE + ["nowhere", name]))
        plan[name] = (kind, target)
    inner = draw(st.sampled_from(NAMES + ["nowhere", "new.out"]))
    return plan, inner


def _build(root: Path, plan, inner) -> None:
    for name, (kind, _) in plan.items():
        p = root / name
        if kind == "file":
            p.write_text(f"input {name}\n")
        elif kind == "dir":
            p.mkdir()
    (root / "d" / "sub").mkdir()
    for rel in ("d/x.txt", "d/x.ann", "d/sub/y.ann"):
        (root / rel).write_text(f"input {rel}\n")
    (root / "d" / "in-link").symlink_to(root / inner)  # may lead out of the folder
    if (root / "e").is_dir():
        (root / "e" / "z.jsonl").write_text("input e/z\n")
    for name, (kind, target) in plan.items():
        p = root / name
        if kind == "link":
            p.symlink_to(target)  # relative: dangling, a loop, or into a folder
        elif kind == "fifo":
            os.mkfifo(p)
        elif kind == "hard":
            src = root / target
            if src.is_file() and not src.is_symlink():
                os.link(src, p)


def _kinds(root: Path) -> dict[str, str]:
    """What every path under ``root`` is (a link by where it points), never following one."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(folder, n)
            mode = os.lstat(p).st_mode
            out[p] = ("link:" + os.readlink(p) if stat.S_ISLNK(mode) else
                      "fifo" if stat.S_ISFIFO(mode) else "dir" if stat.S_ISDIR(mode) else "file")
    return out


def _read_view(paths: list[str]) -> dict[str, bytes | None]:
    """Every byte the inputs read: files (through links), folders (every file, links to
    files followed, as the readers do), and the BRAT sibling of a .txt or .ann input."""
    seen: dict[str, bytes | None] = {}

    def grab(f: str) -> None:
        try:
            if stat.S_ISREG(os.stat(f).st_mode):
                with open(f, "rb") as fh:
                    seen[f] = fh.read()
        except OSError:
            seen[f] = None

    for name in paths:
        if os.path.isdir(name):
            for folder, _dirs, files in os.walk(name):
                for n in files:
                    grab(os.path.join(folder, n))
        else:
            grab(name)
            root, ext = os.path.splitext(name)
            if ext in (".txt", ".ann"):
                grab(root + (".ann" if ext == ".txt" else ".txt"))
    return seen


@OUTPUTS
@given(layouts(),
       st.lists(st.sampled_from(["a.txt", "a.ann", "b.jsonl", "d", "d", "e", "l1", "l2",
                                 "d/x.ann", "d/sub/y.ann", "e/z.jsonl"]),
                min_size=1, max_size=3, unique=True),
       st.sampled_from(NAMES + INSIDE + ["new.out", "new.out", "-", "missing/x.out",
                                         "./a.txt", "d/../a.ann", "d/sub/../x.txt",
                                         "l1/x.out", "d/new.jsonl", "d/sub/y.txt",
                                         "e/../d/x.ann", "d/sub/../../b.jsonl"]),
       st.booleans())
def test_the_output_rule_never_lets_an_input_be_overwritten(layout, inputs, output, stream_ok):
    plan, inner = layout
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _build(root, plan, inner)
        ins = [str(root / i) for i in inputs]
        out = output if output == "-" else str(root / output)
        before_view, before_kinds = _read_view(ins), _kinds(root)
        try:
            target = check_output(out, ins, what="-o", stream_ok=stream_ok)
        except OutputError as exc:
            msg = str(exc)
            assert msg.startswith(f"-o {out}") and "\n" not in msg, msg
            assert _kinds(root) == before_kinds
            return
        if target is None:
            assert out == "-" and stream_ok
            return
        assert not any(os.path.realpath(target) == os.path.realpath(i) for i in ins)
        if stat.S_ISFIFO(os.stat(target).st_mode) if target.exists() else False:
            assert stream_ok  # a stream: written in place, not tried here (no reader)
            return
        with open_output(out, stream_ok=stream_ok) as fh:
            fh.write("OUTPUT\n")
        assert Path(target).read_text() == "OUTPUT\n"
        assert _read_view(ins) == before_view, (out, ins)
        after = _kinds(root)
        for path, kind in before_kinds.items():  # no link, FIFO or folder replaced
            if kind != "file":
                assert after.get(path) == kind, (path, kind, after.get(path))
