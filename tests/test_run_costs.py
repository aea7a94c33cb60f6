"""The mechanisms behind the costs of a run: the binary dataset cache, where compiled
kernels are cached, and how many cores ``n_jobs`` means by default."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings
import weakref
from pathlib import Path

import numpy as np
import pytest

from structkernels.datasets import load_interactions
from structkernels.utils import available_cores, effective_n_jobs, user_cache_dir

RECORDS = [
    {"id": f"r{i}", "graph_id": f"g{i // 2}",
     "path": [[None, "bind-01"], ["ARG0", "protein"], ["ARG1", f"enzyme{i % 3}"]],
     "tree": {"label": "bind-01", "children": [["ARG0", {"label": "protein"}],
                                               ["ARG1", {"label": f"enzyme{i % 3}"}]]},
     "label": i % 2, "sentence": f"Protein {i} binds the enzyme é{i}."}
    for i in range(12)
]


def _write(path: Path, records, bad_line: str | None = None) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    if bad_line is not None:
        lines.insert(3, bad_line)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def _same(a, b) -> None:
    assert len(a) == len(b)
    assert list(a.paths) == list(b.paths)
    assert list(a.trees) == list(b.trees)
    assert list(a.records) == list(b.records)
    assert a.labels.tolist() == b.labels.tolist()
    assert a.swapped.tolist() == b.swapped.tolist()
    assert a.graph_ids == b.graph_ids
    assert [str(s) for s in a.skipped] == [str(s) for s in b.skipped]
    for name in ("train", "test"):
        assert list(a.split(name).paths) == list(b.split(name).paths)


def test_binary_copy_equals_the_parse_and_is_read_instead(tmp_path, monkeypatch):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS, bad_line='{"id": "bad", "label": 1}')
    cache = tmp_path / "cache"
    parsed = load_interactions(src, on_error="skip", cache=False)
    assert not cache.exists()
    first = load_interactions(src, on_error="skip", cache=cache)
    copies = list(cache.glob("*.npz"))
    assert len(copies) == 1
    _same(first, parsed)
    # the second load reads the copy: parsing is not called
    import structkernels.datasets.interactions as mod

    def no_parse(*a, **k):
        raise AssertionError("parsed again")

    monkeypatch.setattr(mod, "_parse_file", no_parse)
    second = load_interactions(src, on_error="skip", cache=cache)
    _same(second, parsed)
    assert load_interactions(src, split="train", on_error="skip", cache=cache).graph_ids == \
        parsed.split("train").graph_ids
    # other settings, other key: parsed (and refused here)
    with pytest.raises(AssertionError, match="parsed again"):
        load_interactions(src, on_error="raise", cache=cache)


def test_changed_file_is_parsed_again(tmp_path):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    cache = tmp_path / "c"
    a = load_interactions(src, cache=cache)
    _write(src, RECORDS[:5])
    b = load_interactions(src, cache=cache)
    assert len(a) == 12 and len(b) == 5


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign_arrays", "bad_offsets"])
def test_damaged_copy_is_ignored_and_replaced(tmp_path, damage):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    cache = tmp_path / "c"
    parsed = load_interactions(src, cache=False)
    load_interactions(src, cache=cache)
    (copy,) = cache.glob("*.npz")
    if damage == "truncate":
        copy.write_bytes(copy.read_bytes()[:200])
    elif damage == "garbage":
        copy.write_bytes(b"\x00not a zip" * 50)
    elif damage == "foreign_arrays":
        with open(copy, "wb") as fh:
            np.savez(fh, labels=np.arange(3))
    else:
        with np.load(copy) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["p_nodes"] = arrays["p_nodes"] + 10_000  # ids beyond the vocabulary
        with open(copy, "wb") as fh:
            np.savez(fh, **arrays)
    _same(load_interactions(src, cache=cache), parsed)
    _same(load_interactions(src, cache=cache), parsed)  # the replacement is good


def test_copy_is_read_without_pickle(tmp_path):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    cache = tmp_path / "c"
    parsed = load_interactions(src, cache=False)
    load_interactions(src, cache=cache)
    (copy,) = cache.glob("*.npz")
    with np.load(copy) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["labels"] = np.array([object()] * len(arrays["labels"]), dtype=object)
    with open(copy, "wb") as fh:
        np.savez(fh, **arrays)  # an object array needs pickle to be read: refused
    _same(load_interactions(src, cache=cache), parsed)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_cache_warns_and_still_loads(tmp_path):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        with pytest.warns(RuntimeWarning, match="not kept"):
            ds = load_interactions(src, cache=cache)
    finally:
        cache.chmod(0o700)
    assert len(ds) == 12


def test_unwritable_cache_warns_and_still_loads_as_root(tmp_path):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    with pytest.warns(RuntimeWarning, match="not kept"):
        ds = load_interactions(src, cache=blocker / "sub")
    assert len(ds) == 12


def test_default_cache_is_the_user_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("STRUCTKERNELS_CACHE", os.fspath(tmp_path / "home-cache"))
    assert user_cache_dir("datasets") == tmp_path / "home-cache" / "datasets"
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    load_interactions(src)
    assert len(list((tmp_path / "home-cache" / "datasets").glob("*.npz"))) == 1


def test_user_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("STRUCTKERNELS_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(tmp_path))
    assert user_cache_dir("numba") == tmp_path / "structkernels" / "numba"


def test_records_stay_compressed_until_read(tmp_path):
    src = _write(tmp_path / "x.jsonl.gz", RECORDS)
    load_interactions(src, cache=tmp_path / "c")
    ds = load_interactions(src, cache=tmp_path / "c")
    store = ds.records._packed
    assert store is not None and store._blob is None
    sub = ds.records[[5, 2]]
    assert sub[0]["id"] == "r5" and sub[1]["sentence"].endswith("é2.")
    assert store._blob is not None


_PROBE = """
import json, sys
from structkernels import Path, kernel
ps = [Path([(None, "a"), ("ARG0", "b")]), Path([(None, "a"), ("ARG1", "c")])]
kernel("path").gram(ps)
from structkernels.utils import numba_cache_dir
print(json.dumps(numba_cache_dir()))
"""


def test_compiled_kernels_are_cached_in_the_user_cache_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["STRUCTKERNELS_CACHE"] = os.fspath(tmp_path / "c")
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    assert json.loads(out.stdout) == os.fspath(tmp_path / "c" / "numba")
    index = list((tmp_path / "c" / "numba").rglob("*path_block*.nbi"))
    assert index, "the path kernel's compiled code was not cached there"


def test_users_numba_cache_dir_wins(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=os.fspath(tmp_path / "mine"),
               STRUCTKERNELS_CACHE=os.fspath(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    assert json.loads(out.stdout) == os.fspath(tmp_path / "mine")
    assert not (tmp_path / "c" / "numba").exists()


def test_other_numba_code_keeps_its_cache_setting():
    from numba.core import config

    from structkernels.utils import njit

    before = config.CACHE_DIR

    @njit(nogil=True)
    def f(x):
        return x + 1

    assert f(1) == 2
    assert config.CACHE_DIR == before


def test_available_cores_follows_affinity(monkeypatch):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert available_cores() == 1
    assert effective_n_jobs(None) == 1 and effective_n_jobs(-1) == 1


def test_available_cores_under_taskset():
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity and 2 cores")
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from structkernels.utils import available_cores; print(available_cores())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "1"


def test_effective_n_jobs():
    n = available_cores()
    assert effective_n_jobs(None) == n
    assert effective_n_jobs(-1) == n
    assert effective_n_jobs(-n - 5) == 1
    assert effective_n_jobs(3) == 3
    assert effective_n_jobs(np.int64(2)) == 2
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="n_jobs"):
            effective_n_jobs(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        effective_n_jobs(None)


def test_n_jobs_defaults_to_the_available_cores(monkeypatch):
    import inspect

    import structkernels as sk
    from structkernels.engine.gram import gram
    from structkernels.engine.parallel import plan
    from structkernels.npk.learner import NonstationaryLearner

    for f in (gram, sk.KernelKNNClassifier, NonstationaryLearner, sk.KernelLSH):
        assert inspect.signature(f).parameters["n_jobs"].default is None, f
    path = sk.kernel("path")
    assert (plan(path).backend, plan(path).workers) == ("threads", available_cores()) or \
        available_cores() == 1
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
        assert plan(path).backend == "serial"


@pytest.mark.parametrize("command", ["train-npk", "gram", "predict", "paraphrase"])
def test_commands_default_to_the_available_cores(command, capsys):
    from structkernels.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser(only=command).parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    after = text[text.index("--n-jobs N_JOBS ", text.index("options:")):]
    assert "(default: the cores this process may use)" in after[:300]


def test_loo_knn_scores_in_threads_equal_serial():
    from structkernels.npk.sigma_knn import loo_knn_scores

    rng = np.random.default_rng(0)
    A = rng.random((1500, 20))
    K = A @ A.T
    y = (rng.random(1500) < 0.2).astype(int)
    d = np.diag(K).copy()
    one = loo_knn_scores(K, y, 8, d, n_jobs=1)
    assert np.array_equal(one, loo_knn_scores(K, y, 8, d, n_jobs=2))
    assert np.array_equal(one, loo_knn_scores(K, y, 8, d, n_jobs=None))


def test_sigma_trial_swaps_tiles_in_place():
    from structkernels.npk.sigma_knn import _swap_tile

    rng = np.random.default_rng(1)
    A = rng.random((8, 3))
    R = A @ A.T
    before = R.copy()
    rows, cols = np.array([1, 4]), np.array([2, 6, 7])
    block = -rng.random((2, 3))
    new = block.copy()
    _swap_tile(R, rows, cols, block, False)
    assert np.array_equal(R[np.ix_(rows, cols)], new)
    assert np.array_equal(R[np.ix_(cols, rows)], new.T)  # the mirror too
    assert np.array_equal(block, before[np.ix_(rows, cols)])
    _swap_tile(R, rows, cols, block, False)
    assert np.array_equal(R, before)
    diag = np.array([0, 3, 5])
    sq = -np.ones((3, 3))
    _swap_tile(R, diag, diag, sq, True)
    assert np.array_equal(R[np.ix_(diag, diag)], -np.ones((3, 3)))
    _swap_tile(R, diag, diag, sq, True)
    assert np.array_equal(R, before)


def test_sigma_trial_in_tiles_equals_one_gram(monkeypatch):
    import structkernels.npk.sigma_knn as sk_mod
    from structkernels.datasets import load_interactions as load

    data = load(split="train")
    X = data.paths[:300]
    y = data.labels[:300]
    labels = sorted({e for p in X for e, _ in p if e})[:4]
    has = {lab: np.array([any(e == lab for e, _ in p) for p in X]) for lab in labels}
    from structkernels import kernel

    def kernel_with(sigma):
        return kernel("path", lam=0.8, sigma=sigma)

    def run():
        search = sk_mod.SigmaKNNSearch(kernel_with, X, y, has, {lab: 1.0 for lab in labels},
                                       8, True, 1)
        return [search.decide(lab, 0.0) for lab in labels], search.R.copy()

    whole = run()
    monkeypatch.setattr(sk_mod, "_TILE", 37)  # many tiles
    tiled = run()
    assert whole[0] == tiled[0]
    assert np.array_equal(whole[1], tiled[1])


def _streamed_votes(K, y, k, inside, scale, tile, rng):
    """Votes of a square K with the rows/columns of ``inside`` merged tile by tile in a
    shuffled order (as a σ trial merges them)."""
    from structkernels.neighbors.topk import topk_merge_block, topk_rows_masked, topk_vote

    n = len(K)
    kk = max(0, min(k, n - 1))
    skip = np.zeros(n, dtype=bool)
    skip[inside] = True
    votes = np.zeros(n)
    out_rows = np.flatnonzero(~skip)
    for rows, mask in ((out_rows, np.zeros(n, dtype=bool)), (inside, skip)):
        vals = np.empty((len(rows), max(kk, 1)))
        idx = np.empty((len(rows), max(kk, 1)), dtype=np.int64)
        filled = np.zeros(len(rows), dtype=np.int64)
        topk_rows_masked(K, scale, rows, mask, kk, 0, len(rows), vals, idx, filled)
        if rows is inside:
            starts = list(range(0, len(inside), tile))
            pairs = [(a, c) for t, a in enumerate(starts) for c in starts[t:]]
            for q in rng.permutation(len(pairs)):
                a, c = pairs[q]
                b, d = min(a + tile, len(inside)), min(c + tile, len(inside))
                blk = np.ascontiguousarray(K[np.ix_(inside[a:b], inside[c:d])])
                topk_merge_block(vals, idx, filled, kk, blk, np.arange(a, b), np.arange(c, d),
                                 inside[a:b], inside[c:d], scale, c != a)
        topk_vote(vals, idx, filled, y.astype(float), rows, votes)
    return votes


@pytest.mark.parametrize("seed", range(6))
def test_streamed_votes_equal_one_pass_over_the_rows(seed):
    """The running top k merged from tiles in any order is the top k of one ordered pass:
    the same neighbours, the same ties (to the smaller position) and the same sums, bit for
    bit."""
    from structkernels.engine.checks import diagonal_scales
    from structkernels.npk.sigma_knn import loo_knn_scores

    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    A = np.round(rng.normal(size=(n, 3)), 1)
    K = np.round(A @ A.T, 1)  # rounding makes many ties
    y = rng.integers(0, 2, n)
    inside = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False)).astype(np.int64)
    for k in (1, 3, 8):
        for diag in (None, np.abs(np.diag(K)) + (seed % 2)):
            scale = np.ones(n) if diag is None else diagonal_scales(diag)
            want = loo_knn_scores(K, y, k, diag)
            got = _streamed_votes(K, y, k, inside, scale, int(rng.integers(1, 9)), rng)
            assert np.array_equal(want, got)


@pytest.mark.parametrize("keep_bytes", [0, 64 << 20])
@pytest.mark.parametrize("min_gain", [-1.0, 1.0])
def test_sigma_trial_scores_and_r_without_the_trial_gram(monkeypatch, keep_bytes, min_gain):
    """A trial scores σ without forming its Gram; R takes the trial's values exactly when the
    trial wins (kept tiles, or tiles computed again when they did not fit), and the
    evaluations count the tiles computed again."""
    from sklearn.metrics import average_precision_score

    import structkernels.npk.sigma_knn as sk_mod
    from structkernels import kernel
    from structkernels.datasets import load_interactions as load
    from structkernels.engine.gram import gram
    from structkernels.npk.sigma_knn import loo_knn_scores

    data = load(split="train")
    X = data.paths[:240]
    y = np.asarray(data.labels[:240])
    labels = sorted({e for p in X for e, _ in p if e})[:3]
    has = {lab: np.array([any(e == lab for e, _ in p) for p in X]) for lab in labels}

    def kernel_with(sigma):
        return kernel("path", lam=0.8, sigma=sigma)

    monkeypatch.setattr(sk_mod, "_TILE", 29)
    monkeypatch.setattr(sk_mod, "_KEEP_BYTES", keep_bytes)
    search = sk_mod.SigmaKNNSearch(kernel_with, X, y, has, {lab: 1.0 for lab in labels}, 8,
                                   True, 1)
    for lab in labels:
        before = dict(search.sigma)
        n_before = search.n_evaluations
        res = search.decide(lab, min_gain)  # -1: the trial always wins; 1: never
        trial = {**before, lab: 0.0 if before[lab] else 1.0}
        K = gram(kernel_with(trial), X)
        s = loo_knn_scores(K, y, 8, np.diag(K).copy())
        assert res[str(int(trial[lab]))] == average_precision_score(y, s)
        assert np.array_equal(search.R, K if min_gain < 0 else gram(kernel_with(before), X))
        m = int(has[lab].sum())
        cell = m * (m + 1) // 2
        again = cell if (min_gain < 0 and keep_bytes == 0 and m) else 0
        assert search.n_evaluations - n_before == res["n_evaluations"] == cell + again


def test_first_load_returns_what_later_loads_read(tmp_path, monkeypatch):
    """The load that makes the binary copy returns the copy (records kept compressed as every
    later load keeps them) and gives the parse's memory back to the allocator."""
    import structkernels.datasets.interactions as mod

    src = _write(tmp_path / "x.jsonl.gz", RECORDS, bad_line='{"id": "bad", "label": 1}')
    parsed = load_interactions(src, on_error="skip", cache=False)
    released = []
    monkeypatch.setattr(mod, "release_free_memory", lambda: released.append(1) or True)
    first = load_interactions(src, on_error="skip", cache=tmp_path / "c")
    assert released == [1]
    second = load_interactions(src, on_error="skip", cache=tmp_path / "c")
    assert first.records._packed is not None and parsed.records._packed is None
    assert second.records._packed is not None
    _same(first, parsed)
    assert [r.record_id for r in first.skipped] == [r.record_id for r in parsed.skipped]


def test_release_free_memory_gives_the_heap_back():
    """After a burst of small objects is freed, glibc keeps the heap; the call returns it."""
    import ctypes.util

    from structkernels.utils import release_free_memory

    if "libc.so" not in str(ctypes.util.find_library("c")):
        pytest.skip("malloc_trim is glibc's")
    code = (
        "from structkernels.utils import release_free_memory\n"
        "def rss():\n"
        "    return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])\n"
        "junk = [bytes(1000) + str(i).encode() for i in range(100_000)]\n"
        "keep = junk[::97]\n"
        "del junk\n"
        "before = rss()\n"
        "release_free_memory()\n"
        "print(before - rss())\n"
    )
    freed_kb = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout)
    assert freed_kb > 20_000
    assert release_free_memory() is True


def test_long_lived_leaves_the_objects_alive_out_of_the_scans_until_the_block_ends():
    """Inside the block the objects alive on entry are frozen (not scanned, not collected);
    after it they are back with the collector; a process's own freeze is left alone."""
    import gc

    from structkernels.utils import long_lived

    class Cycle:
        pass

    def cycle() -> Cycle:
        a = Cycle()
        a.me = a
        return a

    gc.unfreeze()  # whatever an earlier test left frozen
    a = cycle()
    ref = weakref.ref(a)
    with long_lived():
        frozen = gc.get_freeze_count()
        del a
        gc.collect()
        assert frozen > 0 and ref() is not None  # garbage from before: kept while frozen
        b = cycle()
        ref_b = weakref.ref(b)
        del b
        gc.collect()
        assert ref_b() is None  # garbage made inside the block is collected as usual
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None  # back with the collector after the block
    c = cycle()
    ref_c = weakref.ref(c)
    gc.freeze()  # the caller's own freeze
    try:
        del c
        with long_lived():
            pass
        gc.collect()
        assert ref_c() is not None  # still frozen: the block left the caller's freeze alone
    finally:
        gc.unfreeze()
    gc.collect()
    assert ref_c() is None
