"""The cache folder's usage, clearing, size limit and the ``structkernels cache`` command."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from structkernels.cli import commands, main
from structkernels.utils import (
    CACHE_KINDS,
    CACHE_LIMIT_ENV,
    DEFAULT_CACHE_LIMIT,
    CacheFolder,
    CacheLimitError,
    CacheSizeWarning,
    StructkernelsError,
    StructkernelsWarning,
    cache_limit,
    cache_root_of,
    cache_usage,
    clear_cache,
    forget_cache_sizes,
    note_cache_write,
    parse_cache_limit,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def cache_command(monkeypatch):
    """The ``cache`` command, registered in this process when the installed metadata
    predates it (an editable install not yet refreshed with ``pip install -e .``)."""
    if "cache" not in commands.entry_points():
        from structkernels.cli.cache_cmd import add_parser

        commands.register("cache", add_parser)
        yield
        commands.unregister("cache")
    else:
        yield


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder in ``$STRUCTKERNELS_CACHE``, measured anew."""
    root = tmp_path / "cache"
    monkeypatch.setenv("STRUCTKERNELS_CACHE", str(root))
    monkeypatch.delenv(CACHE_LIMIT_ENV, raising=False)
    forget_cache_sizes()
    yield root
    forget_cache_sizes()


def _entry(size: int) -> bytes:
    """``size`` bytes that ``cache clear`` recognises as a checked entry (its header)."""
    head = b'{"format": "structkernels.cache-entry"}\n'
    return head + b"x" * (size - len(head))


def _fill(root: Path) -> dict[str, int]:
    """A file or two in every kind and one foreign file; the bytes written per kind.

    The entries are shaped as the project writes them (``cache clear`` removes only
    those): a checked header, a Gram beside its ``.sum``, a dataset copy's name and zip
    magic, numba's index (a pickled version string) and its data file."""
    nbi = pickle.dumps("0.60.0", protocol=-1)
    files = {
        "parses/en_core_web_sm-3.8.0/a.json": _entry(100),
        "parses/en_core_web_sm-3.8.0/b.json": _entry(50),
        "grams/k.npy": b"x" * 1000,
        "grams/k.npy.sum": _entry(200),
        "datasets/interactions-" + "0" * 32 + ".npz": b"PK\x03\x04" + b"x" * 296,
        "numba/index/f.nbi": nbi + b"x" * (40 - len(nbi)),
        "numba/index/f.1.nbc": b"\x80" + b"x" * 59,
        "prepared/m.npz": _entry(80),
        "notes.txt": b"x" * 7,
    }
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return {"parses": 150, "grams": 1200, "datasets": 300, "numba": 100, "prepared": 80,
            "other": 7}


# ------------------------------------------------------------------ the limit
@pytest.mark.parametrize(("text", "expected"), [
    (None, DEFAULT_CACHE_LIMIT), ("", DEFAULT_CACHE_LIMIT), ("123", 123), ("2G", 2 << 30),
    ("500M", 500 << 20), ("1.5k", 1536), ("2GB", 2 << 30), ("2GiB", 2 << 30), (" 10 T ", 10 << 40),
    ("0", None), ("none", None), ("None", None), ("off", None),
])
def test_limit_values(text, expected):
    assert parse_cache_limit(text) == expected


@pytest.mark.parametrize("text", ["lots", "-1G", "2X", "G", "1e9", "2 G B"])
def test_a_bad_limit_is_one_line_naming_the_variable(text):
    with pytest.raises(CacheLimitError) as info:
        parse_cache_limit(text)
    message = str(info.value)
    assert "\n" not in message and CACHE_LIMIT_ENV in message and repr(text) in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, StructkernelsError)


def test_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv(CACHE_LIMIT_ENV, "3M")
    assert cache_limit() == 3 << 20
    monkeypatch.delenv(CACHE_LIMIT_ENV)
    assert cache_limit() == DEFAULT_CACHE_LIMIT == 4 << 30


# ------------------------------------------------------------------ usage and clearing
def test_usage_counts_each_kind(cache):
    assert [(u.kind, u.bytes, u.files) for u in cache_usage()] == [
        (k, 0, 0) for k in [*CACHE_KINDS, "other"]]  # no folder yet: all zero
    sizes = _fill(cache)
    usage = {u.kind: u for u in cache_usage()}
    assert list(usage) == [*CACHE_KINDS, "other"]
    assert {k: u.bytes for k, u in usage.items()} == sizes
    assert (usage["parses"].files, usage["grams"].files, usage["other"].files) == (2, 2, 1)
    assert usage["grams"].path == cache / "grams"


def test_clear_by_kind_keeps_the_rest_and_other_files(cache):
    sizes = _fill(cache)
    freed = clear_cache(["grams", "parses"])
    assert [(u.kind, u.bytes, u.files) for u in freed] == [
        ("grams", 1200, 2), ("parses", 150, 2)]
    assert not (cache / "grams").exists() and not (cache / "parses").exists()
    usage = {u.kind: u.bytes for u in cache_usage()}
    assert usage == {**sizes, "grams": 0, "parses": 0}
    clear_cache()
    assert {u.kind: u.bytes for u in cache_usage()} == {
        **dict.fromkeys(CACHE_KINDS, 0), "other": 7}
    assert (cache / "notes.txt").read_bytes() == b"x" * 7  # never removed


def test_clear_does_not_follow_links(cache, tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    _fill(cache)
    (cache / "grams" / "link").symlink_to(outside, target_is_directory=True)
    (cache / "grams" / "file-link").symlink_to(outside / "keep.txt")
    clear_cache(["grams"])
    assert (outside / "keep.txt").read_text() == "mine"
    assert not (cache / "grams" / "k.npy").exists()  # the entries went, the links stayed
    assert (cache / "grams" / "link").is_symlink()


def test_clear_refuses_an_unknown_kind(cache):
    with pytest.raises(ValueError, match="unknown cache kind 'other'"):
        clear_cache(["other"])


# ------------------------------------------------------------------ the warning
def _writes(folder: CacheFolder, n: int, size: int) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(n):
            assert folder.write(f"e{i}.json", f"key {i}", b"x" * size)
    return [w for w in caught if issubclass(w.category, CacheSizeWarning)]


def test_no_warning_below_the_limit(cache, monkeypatch):
    monkeypatch.setenv(CACHE_LIMIT_ENV, "1M")
    assert _writes(CacheFolder(cache / "grams", "Gram cache"), 5, 1000) == []


def test_the_warning_fires_once_past_the_limit(cache, monkeypatch):
    monkeypatch.setenv(CACHE_LIMIT_ENV, "4K")
    parses = CacheFolder(cache / "parses" / "en_core_web_sm-3.8.0", "parse cache")
    grams = CacheFolder(cache / "grams", "Gram cache")
    assert _writes(parses, 2, 1000) == []  # about 2.3 KiB with the headers
    caught = _writes(grams, 5, 1000) + _writes(parses, 3, 1000)
    assert len(caught) == 1  # once per process and cache folder, both kinds counted
    message = str(caught[0].message)
    assert "\n" not in message and str(cache) in message and "4 KiB" in message
    assert "structkernels cache clear" in message and CACHE_LIMIT_ENV in message
    assert issubclass(CacheSizeWarning, StructkernelsWarning)


def test_no_limit_means_no_warning(cache, monkeypatch):
    monkeypatch.setenv(CACHE_LIMIT_ENV, "none")
    assert _writes(CacheFolder(cache / "grams", "Gram cache"), 3, 2000) == []


def test_writes_are_counted_without_walking_again(cache, monkeypatch):
    monkeypatch.setenv(CACHE_LIMIT_ENV, "10K")
    grams = CacheFolder(cache / "grams", "Gram cache")
    assert _writes(grams, 1, 100) == []
    # a file the meter did not see: the size is measured once per process, then added to
    (cache / "grams" / "big.npy").write_bytes(b"x" * 20_000)
    assert _writes(grams, 1, 100) == []
    forget_cache_sizes()
    assert len(_writes(grams, 1, 100)) == 1


def test_a_bad_limit_at_write_time_is_one_warning_and_the_default(cache, monkeypatch):
    monkeypatch.setenv(CACHE_LIMIT_ENV, "lots")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        note_cache_write(cache / "grams", 10)
        note_cache_write(cache / "grams", 10)
    assert len(caught) == 1 and "'lots' is not a size" in str(caught[0].message)


def test_root_of_a_cache_folder():
    assert cache_root_of("/c/grams") == Path("/c")
    assert cache_root_of("/c/parses/en_core_web_sm-3.8.0") == Path("/c")
    assert cache_root_of("/c/datasets") == Path("/c")
    assert cache_root_of("/c/mine") == Path("/c/mine")


def test_the_warning_prints_as_one_line(tmp_path):
    code = ("from structkernels.utils import CacheFolder\n"
            f"c = CacheFolder({str(tmp_path / 'grams')!r}, 'Gram cache')\n"
            "for i in range(3): c.write(f'{i}.json', str(i), b'x' * 2000)\n")
    env = {**os.environ, CACHE_LIMIT_ENV: "2K", "STRUCTKERNELS_CACHE": str(tmp_path)}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "CacheSizeWarning" in lines[0] and "past its limit" in lines[0]


# ------------------------------------------------------------------ the command
def test_cache_info_text_and_json(cache, capsys):
    _fill(cache)
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(cache) in out and "limit 4 GiB" in out
    for kind in [*CACHE_KINDS, "other", "total"]:
        assert f"  {kind} " in out
    assert main(["cache", "info", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["root"] == str(cache) and doc["limit"] == DEFAULT_CACHE_LIMIT
    assert doc["total_bytes"] == 1837 and doc["total_files"] == 9
    assert [k["kind"] for k in doc["kinds"]] == [*CACHE_KINDS, "other"]


def test_cache_info_says_when_past_the_limit(cache, capsys, monkeypatch):
    _fill(cache)
    monkeypatch.setenv(CACHE_LIMIT_ENV, "1K")
    assert main(["cache"]) == 0
    assert "past the limit of 1 KiB: `structkernels cache clear`" in capsys.readouterr().out


def test_cache_clear_by_kind_says_what_it_freed(cache, capsys):
    _fill(cache)
    assert main(["cache", "clear", "--kind", "grams", "--kind", "numba"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("freed 1.27 KiB (4 files)") and "grams 1.17 KiB" in out
    assert (cache / "parses").is_dir() and not (cache / "grams").exists()
    assert main(["cache", "clear", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["freed_bytes"], doc["freed_files"]) == (530, 4)
    assert main(["cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total_bytes"] == 7


def test_cache_command_with_a_cache_dir(tmp_path, cache, capsys):
    other = tmp_path / "elsewhere"
    _fill(other)
    assert main(["cache", "clear", "--cache-dir", str(other), "--kind", "datasets"]) == 0
    assert "datasets 300 B" in capsys.readouterr().out
    assert not (other / "datasets").exists()


def test_cache_command_user_errors_exit_2(cache, capsys, monkeypatch):
    with pytest.raises(SystemExit) as info:
        main(["cache", "clear", "--kind", "other"])
    assert info.value.code == 2
    capsys.readouterr()
    assert main(["cache", "--cache-dir", ""]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("structkernels cache: error: --cache-dir is empty") and "\n" not in err
    monkeypatch.setenv(CACHE_LIMIT_ENV, "big")
    assert main(["cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{CACHE_LIMIT_ENV}='big' is not a size" in err


def test_cache_clear_that_cannot_remove_is_one_line(cache, capsys, monkeypatch):
    _fill(cache)

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "unlink", refuse)
    assert main(["cache", "clear", "--kind", "grams"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "2 cache file(s) could not be removed" in err
