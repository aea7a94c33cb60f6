"""Issue 52, case 1: ``cache clear`` removes only the entries the cache wrote.

It used to delete whole folders named ``datasets``, ``parses``, ``grams`` or ``numba``
under the folder given, whatever they held (the PPI corpora of a checkout with
``--cache-dir .``; plain files through a link).  Now only recognised entries go (a
checked entry by its header, a Gram by its ``.sum`` check file, a dataset copy and a
compiled kernel by name and magic bytes), links inside the cache are never traversed, and
a folder that is neither marked as a cache nor holds an entry is refused (one line, exit 2).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.cli import commands, main
from structkernels.utils import (
    CACHE_KINDS,
    CacheFolder,
    cache_usage,
    clear_cache,
    forget_cache_sizes,
)

ROOT = Path(__file__).resolve().parents[1]
MARKER = "CACHEDIR.TAG"


@pytest.fixture(autouse=True)
def cache_command():
    if "cache" not in commands.entry_points():
        from structkernels.cli.cache_cmd import add_parser

        commands.register("cache", add_parser)
        yield
        commands.unregister("cache")
    else:
        yield


@pytest.fixture(autouse=True)
def _fresh_sizes(monkeypatch):
    monkeypatch.delenv("STRUCTKERNELS_NO_CACHE", raising=False)
    forget_cache_sizes()
    yield
    forget_cache_sizes()


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every path under ``folder`` (links not followed): a file's bytes, a link's target."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                out[rel] = "->" + os.readlink(path)
            elif path.is_file():
                out[rel] = path.read_bytes()
            else:
                out[rel] = "dir"
    return out


def _corpus_checkout(root: Path) -> None:
    """A folder shaped like a checkout: corpora under ``datasets``, notes in ``grams``."""
    for name, text in {
        "datasets/ppi/AIMed.xml": b"<corpus>AIMed</corpus>\n",
        "datasets/ppi/LLL.xml": b"<corpus>LLL</corpus>\n",
        "datasets/interactions.jsonl.gz": b"\x1f\x8b not really\n",
        "parses/README.txt": b"parse notes\n",
        "grams/k.npy": b"\x93NUMPY my own gram\n",
        "numba/notes.nbi": b"plain text\n",
        "src/code.py": b"print(1)\n",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)


def _real_entries(root: Path) -> None:
    """Entries written by the project's own cache (a parse, a Gram with its check file)."""
    parses = CacheFolder(root / "parses" / "pipe", "parse cache")
    assert parses.write("a.json", "key a", b'{"x": 1}')
    grams = CacheFolder(root / "grams", "Gram cache")
    assert grams.write_file("g.npy", "key g", lambda p: Path(p).write_bytes(b"\x93NUMPY" * 9))


def test_a_checkout_is_refused_and_left_whole(tmp_path, capsys):
    _corpus_checkout(tmp_path)
    before = _snapshot(tmp_path)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a structkernels cache" in err
    assert _snapshot(tmp_path) == before


def test_the_command_refuses_a_checkout_in_a_subprocess(tmp_path):
    _corpus_checkout(tmp_path)
    before = _snapshot(tmp_path)
    env = {**os.environ, "STRUCTKERNELS_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "structkernels", "cache", "clear",
                           "--cache-dir", "."], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert _snapshot(tmp_path) == before


def test_an_empty_folder_is_not_a_cache(tmp_path):
    with pytest.raises(ValueError, match="not a structkernels cache"):
        clear_cache(root=tmp_path)


def test_a_missing_folder_has_nothing_to_clear(tmp_path):
    assert [u.files for u in clear_cache(root=tmp_path / "none")] == [0] * len(CACHE_KINDS)


def test_the_cache_marks_its_folder_and_clear_keeps_foreign_files(tmp_path):
    root = tmp_path / "cache"
    _real_entries(root)
    assert (root / MARKER).is_file()
    _corpus_checkout(root)
    foreign = {k: v for k, v in _snapshot(root).items()
               if k.startswith(("datasets", "src", "parses/README", "numba"))
               or k == "grams/k.npy"}
    freed = {u.kind: u.files for u in clear_cache(root=root)}
    assert freed["parses"] == 1 and freed["grams"] == 2  # g.npy and g.npy.sum
    after = _snapshot(root)
    assert {k: after.get(k) for k in foreign} == foreign
    assert not (root / "parses" / "pipe" / "a.json").exists()
    assert not (root / "grams" / "g.npy").exists()
    assert (root / MARKER).is_file()  # still a cache


def test_a_marked_empty_cache_clears_to_nothing(tmp_path):
    root = tmp_path / "cache"
    _real_entries(root)
    clear_cache(root=root)
    assert [u.files for u in clear_cache(root=root)] == [0] * len(CACHE_KINDS)


def test_links_in_the_cache_are_never_traversed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "grams").mkdir(parents=True)
    (outside / "notes.txt").write_text("mine")
    (outside / "grams" / "x.txt").write_text("mine too")
    root = tmp_path / "cache"
    _real_entries(root)
    (root / "datasets").symlink_to(outside, target_is_directory=True)
    (root / "parses" / "pipe" / "link").symlink_to(outside, target_is_directory=True)
    (root / "grams" / "file-link.npy").symlink_to(outside / "notes.txt")
    before = _snapshot(outside)
    clear_cache(root=root)
    assert _snapshot(outside) == before


def test_usage_counts_what_clear_removes(tmp_path):
    root = tmp_path / "cache"
    _real_entries(root)
    _corpus_checkout(root)
    usage = {u.kind: (u.bytes, u.files) for u in cache_usage(root)}
    freed = {u.kind: (u.bytes, u.files) for u in clear_cache(root=root)}
    assert {k: usage[k] for k in freed} == freed
    assert usage["other"][1] >= 7  # the foreign files are shown as other


# ------------------------------------------------------------------ fuzz
_PARTS = ["parses", "grams", "datasets", "numba", "pipe", "x"]
_NAMES = ["a.json", "g.npy", "k.nbi", "k.1.nbc", "interactions-" + "0" * 32 + ".npz",
          "notes.txt", "g.npy.sum", ".hmac-key"]
_FOREIGN_BYTES = [b"", b"plain text\n", b'{"format": "mine"}\n', b"PK\x03\x04zip",
                  b"\x80\x04pickle", b"\x93NUMPY"]

_places = st.lists(st.sampled_from(_PARTS), min_size=0, max_size=3).map(tuple)
_items = st.lists(st.tuples(
    st.sampled_from(["entry", "bigentry", "numba", "dataset", "foreign", "link", "dirlink"]),
    _places, st.sampled_from(_NAMES), st.sampled_from(_FOREIGN_BYTES)), max_size=12)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=_items, marked=st.booleans())
def test_fuzz_clear_removes_only_cache_entries(tmp_path_factory, items, marked):
    base = tmp_path_factory.mktemp("fuzz")
    outside = base / "outside"
    (outside / "grams").mkdir(parents=True)
    (outside / "grams" / "g.npy").write_bytes(b"outside gram")
    (outside / "a.json").write_bytes(b"outside")
    root = base / "cache"
    root.mkdir()
    if marked:
        _real_entries(root)
    entries: set[str] = set()
    if marked:
        entries |= {"parses/pipe/a.json", "grams/g.npy", "grams/g.npy.sum"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (what, place, name, data) in enumerate(items):
            folder = root.joinpath(*place)
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                continue
            if any(p.is_symlink() or (p.exists() and not p.is_dir())
                   for p in [root.joinpath(*place[:j]) for j in range(1, len(place))]):
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{i}-{name}"
            if what in ("entry", "bigentry"):
                cache = CacheFolder(folder, "fuzz cache")
                if what == "entry":
                    ok = cache.write(path.name, str(i), data)
                    made = [path]
                else:
                    ok = cache.write_file(path.name, str(i), lambda p, d=data: p.write_bytes(d))
                    made = [path, path.with_name(path.name + ".sum")]
                if ok and place[:1] and place[0] in ("parses", "grams", "datasets", "numba"):
                    entries |= {m.relative_to(root).as_posix() for m in made}
            elif what in ("numba", "dataset"):
                if what == "numba":  # as numba writes them: a pickled version, then data
                    made = [folder / f"{i}-k.nbi", folder / f"{i}-k.1.nbc"]
                    made[0].write_bytes(pickle.dumps("0.60.0", protocol=-1) + data)
                    made[1].write_bytes(pickle.dumps(("data", data), protocol=-1))
                else:
                    made = [folder / f"interactions-{i:032x}.npz"]
                    with open(made[0], "wb") as fh:
                        np.savez(fh, a=np.arange(3))
                if place[:1] and place[0] in ("parses", "grams", "datasets", "numba"):
                    entries |= {m.relative_to(root).as_posix() for m in made}
            elif what == "foreign":
                path.write_bytes(data)
            elif what == "link":
                path.symlink_to(outside / "a.json")
            else:
                path.symlink_to(outside, target_is_directory=True)
    outside_before = _snapshot(outside)
    before = _snapshot(root)
    usage = {u.kind: (u.bytes, u.files) for u in cache_usage(root)}
    try:
        freed = {u.kind: (u.bytes, u.files) for u in clear_cache(root=root)}
        assert {k: usage[k] for k in freed} == freed  # `cache` shows what `clear` removes
    except ValueError as exc:  # refused: not a cache, and nothing touched
        assert "not a structkernels cache" in str(exc)
        assert _snapshot(root) == before
    after = _snapshot(root)
    assert _snapshot(outside) == outside_before
    for rel, value in before.items():
        if rel in entries:
            assert rel not in after, rel
        elif value != "dir" and not (isinstance(value, str) and rel not in after
                                     and _is_link_in_kind(rel)):
            assert after.get(rel) == value, rel


def _is_link_in_kind(rel: str) -> bool:
    """A link under a kind folder may be removed (as a link, never followed)."""
    return rel.split("/", 1)[0] in ("parses", "grams", "datasets", "numba") and "/" in rel


def test_a_kind_folder_linked_elsewhere_is_skipped_even_holding_entries(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _real_entries(elsewhere)  # real entries, but in another cache
    root = tmp_path / "cache"
    _real_entries(root)
    (root / "numba").symlink_to(elsewhere / "grams", target_is_directory=True)
    (root / "datasets").symlink_to(elsewhere / "parses", target_is_directory=True)
    before = _snapshot(elsewhere)
    freed = {u.kind: u.files for u in clear_cache(root=root)}
    assert freed == {"parses": 1, "grams": 2, "datasets": 0, "numba": 0, "prepared": 0}
    assert _snapshot(elsewhere) == before
    assert (root / "numba").is_symlink()


def test_a_cache_dir_that_links_to_a_plain_folder_is_refused(tmp_path, capsys):
    plain = tmp_path / "plain"
    _corpus_checkout(plain)
    (tmp_path / "link").symlink_to(plain, target_is_directory=True)
    before = _snapshot(plain)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path / "link")]) == 2
    assert "not a structkernels cache" in capsys.readouterr().err
    assert _snapshot(plain) == before
