"""Every fenced ```python block of README.md and docs/*.md runs (CONTRIBUTING: "Every code
block in the README and docs/ runs in the test suite").

Each block runs in a fresh namespace with the working directory set to a temporary
directory.  A block is skipped only through an HTML comment on the line right before its
fence::

    <!-- test: skip, needs the GloVe extra -->
    <!-- test: needs shared data -->
    <!-- test: needs torch -->

The first skips with the text after ``skip,`` as the reason; the second runs the block
with ``SHARED_DATA`` (a :class:`pathlib.Path` to ``../shared/data``) in its namespace, and
skips with the ``shared_data`` fixture's reason when that directory is absent; the third
runs the block where PyTorch is installed and skips it, saying so, where it is not.
A block fails when it emits one of the project's warnings (``StructkernelsWarning``): an
example that prints one looks broken.
The temporary directory holds a link ``datasets`` to the repository's ``datasets/``, so a
block reads ``datasets/ppi/LLL-train.xml`` as a user does from the repository root.
"""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path

import pytest

from structkernels.utils import StructkernelsWarning

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(\s*)```python\s*$")
_CLOSE = re.compile(r"^\s*```\s*$")
_MARKER = re.compile(r"^\s*<!--\s*test:\s*(.*?)\s*-->\s*$")


def _blocks() -> list:
    params = []
    for path in DOC_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            start = i
            indent = len(m.group(1))
            body = []
            i += 1
            while i < len(lines) and not _CLOSE.match(lines[i]):
                body.append(lines[i][indent:] if lines[i].startswith(m.group(1)) else lines[i].lstrip())
                i += 1
            if i == len(lines):
                raise ValueError(f"{path.name}:{start + 1}: unclosed ```python block")
            i += 1
            marker = _MARKER.match(lines[start - 1]) if start else None
            directive = marker.group(1) if marker else None
            name = path.relative_to(ROOT).as_posix()
            params.append(
                pytest.param(name, start + 1, "\n".join(body) + "\n", directive,
                             id=f"{name}:{start + 1}")
            )
    return params


BLOCKS = _blocks()


def test_blocks_found():
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize(("doc", "line", "source", "directive"), BLOCKS)
def test_doc_block_runs(doc, line, source, directive, tmp_path, monkeypatch, request):
    namespace: dict = {"__name__": "__docs_example__"}
    if directive is not None:
        if directive.startswith("skip"):
            reason = directive[len("skip"):].lstrip(" ,:;-")
            pytest.skip(f"{doc}:{line}: {reason or 'marked skip'}")
        elif directive == "needs shared data":
            namespace["SHARED_DATA"] = request.getfixturevalue("shared_data")
        elif directive == "needs torch":
            pytest.importorskip(
                "torch", reason=f"{doc}:{line}: needs PyTorch "
                "(pip install 'structkernels-hsic[torch]')")
        else:
            raise ValueError(f"{doc}:{line}: unknown test directive {directive!r}")
    monkeypatch.chdir(tmp_path)
    # the blocks are written for the repository root: `datasets/ppi/...` reaches its corpora
    (tmp_path / "datasets").symlink_to(ROOT / "datasets", target_is_directory=True)
    code = compile("\n" * line + source, str(ROOT / doc), "exec")
    with warnings.catch_warnings():  # an example that prints one of our warnings looks broken
        warnings.simplefilter("error", StructkernelsWarning)
        exec(code, namespace)


def _readme_blocks(kind: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each fenced block of ``kind`` in README.md."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == f"```{kind}":
            j = next(k for k in range(i + 1, len(lines)) if _CLOSE.match(lines[k]))
            out.append((i + 1, "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


def _outputs(text: str) -> list[str]:
    """The files a README command line or snippet writes (-o, --out, "--out" in a call)."""
    return re.findall(r"""(?:-o|--out|--output)["',]*\s+["']?([\w./-]+)""", text)


def test_readme_steps_write_distinct_files():
    """No README step overwrites an earlier step's output, and .gitignore covers each one
    written in the repository root."""
    written = [f for _, text in _readme_blocks("bash") + _readme_blocks("python")
               for f in _outputs(text)]
    assert {"model.npk.json.gz", "small.npk.json.gz", "lll.extractor.json.gz"} <= set(written)
    assert len(written) == len(set(written)), sorted(written)
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    for f in written:
        assert f"/{f}" in ignored or f.endswith(".npy"), f


def test_readme_gram_commands_run_on_what_the_snippet_before_them_makes(tmp_path, monkeypatch,
                                                                          capsys):
    from structkernels.cli import main

    (line, snippet), = [b for b in _readme_blocks("python") if '"small.jsonl"' in b[1]]
    commands = [(n, text) for n, text in _readme_blocks("bash") if "small.jsonl" in text]
    assert commands and commands[0][0] > line  # the commands come after the snippet
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {"__name__": "__docs_example__"})
    for command in commands[0][1].splitlines():
        argv = shlex.split(command, comments=True)
        assert argv[0] == "structkernels"
        inputs = [a for a in argv if a.endswith((".jsonl", ".gz")) and a not in _outputs(command)]
        assert all((tmp_path / a).exists() for a in inputs), command
        assert main(argv[1:]) == 0, (command, capsys.readouterr().err)
        assert all((tmp_path / f).exists() for f in _outputs(command)), command
