"""The Gram engine: blocks, parallelism, memmap output, cache, counts, dask."""

from __future__ import annotations

import time

import numpy as np
import pytest
from _kernels_for_tests import CountingOverlap, SlowDot, n_calls

import structkernels as sk
from structkernels.engine.gram import block_ranges


def words(n, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("abcdefghij"), size=rng.integers(1, 8))) for _ in range(n)]


def test_block_ranges_cover():
    assert block_ranges(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert block_ranges(0, 4) == []


@pytest.mark.parametrize("block_size", [1, 3, 8, 50])
def test_blocked_equals_direct(block_size):
    X, Y = words(23), words(11, seed=3)
    k = CountingOverlap()
    direct = np.array([[k.pair(x, y) for y in X] for x in X])
    K, info = sk.gram(k, X, block_size=block_size, return_info=True)
    assert np.array_equal(K, direct)
    assert info.n_evaluations == 23 * 24 // 2
    KY, info = sk.gram(k, X, Y, block_size=block_size, return_info=True)
    assert np.array_equal(KY, [[k.pair(x, y) for y in Y] for x in X])
    assert info.n_evaluations == 23 * 11


def test_symmetric_gram_computes_upper_triangle_only(tmp_path):
    log = str(tmp_path / "calls")
    X = words(30)
    # validate=False: no symmetry/PSD probe of this test kernel, only the Gram's own calls
    sk.gram(CountingOverlap(log=log), X, block_size=7, validate=False)
    assert n_calls(log) == 30 * 31 // 2


def test_parallel_equals_serial():
    rng = np.random.default_rng(1)
    X = list(rng.normal(size=(60, 5)))
    serial = sk.gram(SlowDot(), X, block_size=16)
    parallel = sk.gram(SlowDot(), X, block_size=16, n_jobs=2)
    assert np.max(np.abs(serial - parallel)) <= 1e-12
    Y = list(rng.normal(size=(21, 5)))
    assert np.max(np.abs(sk.gram(SlowDot(), X, Y) - sk.gram(SlowDot(), X, Y, n_jobs=2))) <= 1e-12


def test_memmap_output_equals_in_memory(tmp_path):
    X = words(40)
    out = tmp_path / "sub" / "K.npy"
    K_mem = sk.gram(CountingOverlap(), X, block_size=9)
    K_map = sk.gram(CountingOverlap(), X, block_size=9, out=out, n_jobs=2)
    assert isinstance(K_map, np.memmap)
    assert np.array_equal(np.load(out), K_mem)
    assert np.array_equal(np.asarray(K_map), K_mem)


def test_cache_hit_makes_no_kernel_call(tmp_path):
    log = str(tmp_path / "calls")
    X = words(25)
    k = CountingOverlap(log=log)
    # validate=False: no symmetry/PSD probe of this test kernel, only the Gram's own calls
    K1, info1 = sk.gram(k, X, cache=tmp_path / "cache", return_info=True, validate=False)
    first = n_calls(log)
    assert first == 25 * 26 // 2 and not info1.cache_hit
    K2, info2 = sk.gram(k, X, cache=tmp_path / "cache", return_info=True, n_jobs=2,
                        validate=False)
    assert n_calls(log) == first, "a cache hit must not call the kernel"
    assert info2.cache_hit and info2.n_evaluations == 0
    assert np.array_equal(K1, K2)
    # different data or different parameters: a miss
    _, info3 = sk.gram(k, X[:-1], cache=tmp_path / "cache", return_info=True)
    assert not info3.cache_hit
    _, info4 = sk.gram(
        sk.kernel("rbf", bandwidth=1.0), np.ones((3, 2)), cache=tmp_path / "cache", return_info=True
    )
    _, info5 = sk.gram(
        sk.kernel("rbf", bandwidth=2.0), np.ones((3, 2)), cache=tmp_path / "cache", return_info=True
    )
    assert not info5.cache_hit


class _Planted:
    """Unpickled, it leaves a file: the proof that a cache loaded a pickle."""

    def __init__(self, flag: str):
        self.flag = flag

    def __reduce__(self):
        return (open, (self.flag, "w"))


def test_cache_never_loads_a_planted_pickle(tmp_path):
    import pickle

    from structkernels.utils import CacheFolder

    cache, flag = tmp_path / "cache", tmp_path / "unpickled"
    X = np.random.default_rng(0).normal(size=(6, 2))
    k = sk.kernel("rbf", bandwidth=1.0)
    expected, info = sk.gram(k, X, cache=cache, return_info=True)
    [entry] = cache.glob("gram-*.npy")
    key = entry.name[len("gram-"):-len(".npy")]
    payload = pickle.dumps(np.array([_Planted(str(flag))], dtype=object))
    # a pickle in place of the entry, with a check file that matches it, and one where
    # joblib.Memory kept its entries
    np.save(entry, np.array([_Planted(str(flag))], dtype=object), allow_pickle=True)
    CacheFolder(cache).write_file(entry.name, key, lambda p: p.write_bytes(entry.read_bytes()))
    (cache / "joblib").mkdir()
    (cache / "joblib" / "output.pkl").write_bytes(payload)
    with pytest.warns(sk.utils.CacheWarning, match="failed its check"):
        K, again = sk.gram(k, X, cache=cache, return_info=True)
    assert not flag.exists() and not again.cache_hit
    assert np.array_equal(K, expected)
    _, third = sk.gram(k, X, cache=cache, return_info=True)  # the entry was written again
    assert third.cache_hit and not flag.exists()


def test_empty_and_bad_options():
    assert sk.gram(CountingOverlap(), []).shape == (0, 0)
    with pytest.raises(ValueError, match="n_jobs"):
        sk.gram(CountingOverlap(), words(3), n_jobs=0)
    with pytest.raises(ValueError, match="block_size"):
        sk.gram(CountingOverlap(), words(3), block_size=0)


def test_gram_by_name_with_params():
    X = np.random.default_rng(0).normal(size=(5, 2))
    np.testing.assert_allclose(sk.gram("rbf", X, bandwidth=2.0),
                               sk.kernel("rbf", bandwidth=2.0).gram(X))
    with pytest.raises(TypeError, match="name"):
        sk.gram(sk.kernel("rbf"), X, bandwidth=2.0)


def test_dask_local_cluster():
    distributed = pytest.importorskip(
        "dask.distributed", reason="the 'distributed' extra (dask) is not installed"
    )
    import joblib

    X = list(np.random.default_rng(2).normal(size=(30, 4)))
    expected = sk.gram(SlowDot(), X, block_size=8)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster):
        with joblib.parallel_backend("dask"):
            K = sk.gram(SlowDot(), X, block_size=8, n_jobs=-1)
    assert np.max(np.abs(K - expected)) <= 1e-12


def test_dask_backend_sends_chunks_to_the_cluster_itself(monkeypatch):
    """Under joblib's dask backend the engine submits its chunks of blocks to the client
    itself (one task per chunk, results taken as they complete), not through
    ``joblib.Parallel``, whose dask backend polls every 10 ms; same bits as serial."""
    distributed = pytest.importorskip(
        "dask.distributed", reason="the 'distributed' extra (dask) is not installed"
    )
    import joblib

    from structkernels.engine import _blocks

    X = list(np.random.default_rng(3).normal(size=(40, 3)))
    expected = sk.gram(SlowDot(), X, block_size=8)
    blocks = sorted(_blocks.block_tasks(40, 40, 8, True), key=lambda t: -_blocks.task_evals(t, True))

    def no_parallel(*args, **kwargs):
        raise AssertionError("joblib.Parallel was used")

    monkeypatch.setattr(joblib, "Parallel", no_parallel)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as ts, joblib.parallel_backend("dask"):
            K = sk.gram(SlowDot(), X, block_size=8)
        assert np.array_equal(K, expected)
        chunks = _blocks.guided_chunks(blocks, 2, True)
        assert len([t for t in ts.data if "compute_blocks" in t["key"]]) == len(chunks) < len(blocks)
        # backend="dask" names the current client
        assert np.array_equal(sk.gram(SlowDot(), X, block_size=8, backend="dask"), expected)


def test_dask_backend_without_a_client_says_how_to_start_one():
    pytest.importorskip("dask.distributed", reason="the 'distributed' extra (dask) is not installed")
    X = list(np.random.default_rng(6).normal(size=(20, 3)))
    with pytest.raises(ValueError, match=r"needs a dask client: start one first.*LocalCluster"):
        sk.gram(SlowDot(), X, block_size=4, backend="dask")


class _HeldOnTheWorker(SlowDot):
    """SlowDot that waits 5 ms a block with the GIL released, as compiled kernels run, and
    notes how many values the dask worker holds when a block starts."""

    held: list = []

    def gram_block(self, X, Y):
        from distributed import get_worker

        time.sleep(0.005)
        try:
            _HeldOnTheWorker.held.append(len(get_worker().data))
        except ValueError:  # outside a worker
            pass
        return super().gram_block(X, Y)

    def gram_block_symmetric(self, X):
        return self.gram_block(X, X)


def test_dask_backend_releases_each_chunk_once_taken():
    """The worker holds the scattered kernel and data and the chunks not yet taken, not every
    chunk of the call until its end (800 MB of blocks for a 10,000-path Gram)."""
    distributed = pytest.importorskip(
        "dask.distributed", reason="the 'distributed' extra (dask) is not installed"
    )
    import joblib

    from structkernels.engine._blocks import block_tasks, guided_chunks, task_evals

    X = list(np.random.default_rng(5).normal(size=(60, 3)))
    blocks = sorted(block_tasks(60, 60, 4, True), key=lambda t: -task_evals(t, True))
    n_chunks = len(guided_chunks(blocks, 2, True))
    assert n_chunks >= 10
    _HeldOnTheWorker.held.clear()
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster):
        with joblib.parallel_backend("dask"):
            K = sk.gram(_HeldOnTheWorker(), X, block_size=4, validate=False)
    assert np.array_equal(K, sk.gram(SlowDot(), X, block_size=4))
    assert len(_HeldOnTheWorker.held) == len(blocks)
    # the kernel, the data and the few chunks not yet taken by the client; were every
    # chunk kept until the end of the call, the last block would see nearly all of them
    assert max(_HeldOnTheWorker.held) <= 2 + n_chunks // 2 < 2 + n_chunks - 2


def test_dask_backend_error_names_the_pair_and_leaves_nothing_on_the_cluster():
    distributed = pytest.importorskip(
        "dask.distributed", reason="the 'distributed' extra (dask) is not installed"
    )
    import joblib

    from structkernels.engine.checks import NonFiniteKernelValueError

    X = list(np.random.default_rng(4).normal(size=(40, 3)))
    X[29] = np.array([np.inf, 1.0, 1.0])
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        with joblib.parallel_backend("dask"), pytest.raises(NonFiniteKernelValueError,
                                                            match=r"X\[29\]"):
            sk.gram(SlowDot(), X, block_size=8)
        # nothing of the call stays on the cluster: the chunks not finished are cancelled and
        # the others released (the scheduler hears of it a few milliseconds later)
        deadline = time.monotonic() + 10.0
        while True:
            left = [k for k in client.who_has() if "compute_blocks" in str(k)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not left
