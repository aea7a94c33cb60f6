"""Parallel execution: bit-identical to serial, exact symmetry, bounded memory, dask out of core."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import structkernels as sk
from structkernels import Path, Tree, gram, kernel
from structkernels.engine.parallel import plan, releases_gil
from structkernels.kernels.srk.common import srk_gram_stack
from structkernels.neighbors.graph import knn_graph

EDGES = ["ARG0", "ARG1", "ARG2", "mod", "location"]
NODES = ["bind", "protein", "enzyme", "small-molecule", "activate", "cell", "gene"]
WORDS = "the a protein binds activates inhibits cell gene of in to and by was".split()


def random_paths(n: int, seed: int, longest: int = 9) -> list[Path]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, longest)
        out.append(Path([(None, rng.choice(NODES))]
                        + [(rng.choice(EDGES), rng.choice(NODES)) for _ in range(k - 1)]))
    return out


def random_tree(rng: random.Random, depth: int = 0) -> Tree:
    kids = []
    if depth < 3:
        for _ in range(rng.randint(0, 3)):
            kids.append((rng.choice(EDGES), random_tree(rng, depth + 1)))
    return Tree(rng.choice(NODES), kids)


def random_rewritings(n: int, seed: int) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = tuple(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        t = tuple(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        out.append((s, t))
    return out


def _cases():
    rng = random.Random(3)
    paths = random_paths(300, 1)
    trees = [random_tree(rng) for _ in range(300)]
    rw = random_rewritings(90, 2)
    return [
        ("path", {"lam": 0.8, "sigma": {"ARG1": 0.5}}, paths),
        ("path", {"lam": 0.7, "max_len": 3}, paths),
        ("tree", {"lam": 0.8}, trees),
        ("tree", {"lam": 0.6, "decay": "length", "contiguous": True}, trees),
        ("nonstationary", {"sigma": {"ARG0": 0.3}}, paths),
        ("kb-srk", {"k": 1, "kmax": 3}, rw),
        ("kb-srk", {"k": 2}, rw),
    ]


@pytest.mark.parametrize("name,params,X", _cases(), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("normalize", [False, True])
def test_threads_equal_serial_bit_for_bit(name, params, X, normalize):
    k = kernel(name, **params)
    assert releases_gil(k)
    serial = gram(k, X, normalize=normalize)
    # explicit threads (the engine would pick them for larger work too)
    par = gram(k, X, normalize=normalize, n_jobs=2, backend="threading", block_size=37)
    auto = gram(k, X, normalize=normalize, n_jobs=2)
    assert np.array_equal(serial, par) and np.array_equal(serial, auto)
    # exact symmetry, whatever the block size
    assert np.array_equal(serial, serial.T)
    assert np.array_equal(serial, gram(k, X, normalize=normalize, block_size=16))
    Y = X[:41]
    assert np.array_equal(gram(k, X, Y, normalize=normalize),
                          gram(k, X, Y, normalize=normalize, n_jobs=2, backend="threading",
                               block_size=13))


def test_combinations_of_gil_free_kernels_use_threads_bit_for_bit():
    from structkernels import Normalized
    from structkernels.kernels.base import ScaledKernel

    paths = random_paths(160, 3)
    p1, p2 = kernel("path", lam=0.8), kernel("nonstationary", sigma={"ARG0": 0.3})
    rw = random_rewritings(120, 4)
    kb1, kb2 = kernel("kb-srk", k=1), kernel("kb-srk", k=2, kmax=3)
    combos = [
        (p1 + Normalized(p2), paths),
        (p1 * ScaledKernel(p2, 0.5), paths),
        (Normalized(kb1) + 2.0 * (kb2 * Normalized(kb1)), rw),
    ]
    for k, X in combos:
        assert releases_gil(k)
        assert plan(k, 2).backend == "threads" and plan(k, 2).workers == 2
        serial = gram(k, X)
        par = gram(k, X, n_jobs=2, backend="threading", block_size=29)
        auto = gram(k, X, n_jobs=2)
        assert np.array_equal(serial, par) and np.array_equal(serial, auto)
        assert np.array_equal(serial, serial.T)
        Y = X[:33]
        assert np.array_equal(gram(k, X, Y), gram(k, X, Y, n_jobs=2, block_size=11))
    # one Python-level part sends the whole combination to processes
    mixed = kb1 + kernel("ps-srk", k=1)
    assert not releases_gil(mixed) and not releases_gil(Normalized(mixed))
    assert plan(mixed, 2).backend == "processes"


@pytest.mark.parametrize("name,params", [("ps-srk", {"k": 1, "kmax": 2}),
                                         ("pw-srk", {"k": 2, "lam": 0.7}),
                                         ("rbf", {"bandwidth": 1.3})])
def test_processes_equal_serial_bit_for_bit(name, params):
    if name == "rbf":
        X = np.random.default_rng(0).normal(size=(150, 7))
    else:
        X = random_rewritings(150, 5)
    k = kernel(name, **params)
    assert not releases_gil(k)
    assert plan(k, 2).backend == "processes"  # loky processes
    serial = gram(k, X)
    # the default blocks do not depend on n_jobs, so even kernels whose values
    # depend on the block (BLAS, block-local feature indices) give the same bits
    par = gram(k, X, n_jobs=2, backend="loky")
    assert np.array_equal(serial, par) and np.array_equal(serial, serial.T)


def test_kb_srk_stack_threads_and_block_size():
    X = random_rewritings(70, 8)
    k = kernel("kb-srk", k=1, kmax=3)
    S1, d1, _ = srk_gram_stack(k, X)
    S2, d2, _ = srk_gram_stack(k, X, n_jobs=2, block_size=9)
    assert np.array_equal(S1, S2) and np.array_equal(d1, d2)
    # the kmax Gram does not depend on the block size, to the last bit
    assert np.array_equal(gram(k, X, block_size=7), gram(k, X, block_size=64))


@pytest.mark.parametrize("hashing", [None, "random-knn"])
def test_knn_graph_threads_equal_serial(hashing):
    X = random_paths(400, 11)
    kw = dict(k=3, hashing=hashing, random_state=0)
    if hashing:
        kw.update(n_tables=2)
    g1 = knn_graph(X, "path", n_jobs=1, **kw)
    g2 = knn_graph(X, "path", n_jobs=2, **kw)
    assert np.array_equal(g1.indices, g2.indices)
    assert np.array_equal(g1.similarities, g2.similarities)


def test_long_path_is_quadratic():
    # issue: a path of 5,000 tuples took minutes in the path kernel
    # (25 M matching pairs: the sparse O(M^2 L) programme would not finish; the
    # dense one is O(L |S| |S'|)).  Against the by-definition count at lam = 1,
    # max_len = 1: every pair of equal tuples, 5,000^2 + 1 of them.
    p = Path([(None, "a")] + [("ARG0", "x")] * 5000)
    v = kernel("path", lam=1.0, max_len=1).value(p, p)
    assert v == 5000**2 + 1


MEMORY_SCRIPT = textwrap.dedent(
    """
    import os, random, resource, sys
    import numpy as np
    from structkernels import Path, gram
    rng = random.Random(0)
    nodes = [f"n{i}" for i in range(30)]
    X = [Path([(None, rng.choice(nodes))] + [("ARG0", rng.choice(nodes)) for _ in range(3)])
         for _ in range(int(sys.argv[2]))]
    gram("path", X[:200], normalize=True, n_jobs=2, backend="threading")  # compile, threads
    vm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
    n = len(X)
    matrix = 8 * n * n
    limit = vm + matrix + matrix // 2  # the file's mapping plus half a matrix
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    K = gram("path", X, out=sys.argv[1], normalize=True, n_jobs=2, block_size=256)
    assert abs(float(K[5, 5]) - 1.0) < 1e-12 and K[3, 7] == K[7, 3]
    print("ok", matrix)
    """
)


@pytest.mark.slow
def test_out_of_core_normalised_parallel_gram_is_memory_bounded(tmp_path):
    # an address-space limit of (the mapped file + half a matrix): building the
    # matrix in memory, or normalising it out of place, would fail
    out = tmp_path / "K.npy"
    r = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(out), "5000"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok")


def test_loky_workers_write_memmap(tmp_path):
    X = random_rewritings(50, 9)
    k = kernel("ps-srk", k=1)
    K = gram(k, X, out=tmp_path / "K.npy", n_jobs=2, backend="loky", block_size=8,
             normalize=True)
    assert np.array_equal(np.asarray(K), gram(k, X, normalize=True))


# ------------------------------------------------------------------- dask
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="the [distributed] extra is not installed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_out_of_core_equals_in_memory(dask_client, tmp_path):
    X = random_paths(350, 21)
    for normalize in (False, True):
        out = tmp_path / f"K{normalize}.npy"
        K, info = gram(sk.kernel("path"), X, out=out,
                       backend="dask", return_info=True, client=dask_client, block_size=64,
                       normalize=normalize)
        assert np.array_equal(np.asarray(K), gram("path", X, normalize=normalize))
        assert info.run["blocks_computed"] == info.run["blocks"] == 21
        assert sum(w["blocks"] for w in info.run["workers"].values()) == 21
        # a rerun skips every finished block
        _, again = gram(sk.kernel("path"), X, out=out,
                        backend="dask", return_info=True, client=dask_client, block_size=64,
                        normalize=normalize)
        assert again.run["blocks_skipped"] == 21 and again.run["blocks_computed"] == 0
    # a run stopped half-way (markers of some blocks missing, blocks zeroed) resumes
    out = tmp_path / "KTrue.npy"
    done = sorted((out.parent / f"{out.name}.parts").glob("*.done"))
    M = np.load(out, mmap_mode="r+")
    for f in done[::3]:
        r0, c0 = (int(v[1:]) for v in f.stem.split("_"))
        M[r0:r0 + 64, c0:c0 + 64] = 0.0
        M[c0:c0 + 64, r0:r0 + 64] = 0.0
        f.unlink()
    M.flush()
    del M
    K, info = gram(sk.kernel("path"), X, out=out,
                   backend="dask", return_info=True,
                   client=dask_client, block_size=64, normalize=True)
    redone = len(done[::3])
    assert info.run["blocks_computed"] == redone and info.run["blocks_skipped"] == 21 - redone
    assert np.array_equal(np.asarray(K), gram("path", X, normalize=True))
    # other parameters: nothing is reused, every block is computed again
    K, info = gram(sk.kernel("path"), X, out=out,
                   backend="dask", return_info=True,
                   client=dask_client, block_size=32, normalize=True)
    assert info.run["blocks_skipped"] == 0 and info.run["blocks_computed"] == info.run["blocks"]
    assert "block_size" in info.run["restarted"]
    assert np.array_equal(np.asarray(K), gram("path", X, normalize=True))


@pytest.mark.slow
def test_dask_gram_survives_a_killed_worker(dask_client, tmp_path):
    X = random_rewritings(240, 31)
    k = kernel("kb-srk", k=1, kmax=3)
    out = tmp_path / "K.npy"
    result: dict = {}

    def run():
        result["K"], result["info"] = gram(k, X, out=out,
                                           backend="dask", return_info=True,
                                           client=dask_client, block_size=16)

    th = threading.Thread(target=run)
    th.start()
    parts = out.parent / f"{out.name}.parts"
    deadline = time.time() + 120
    while time.time() < deadline and not list(parts.glob("*.done")):
        time.sleep(0.01)
    done_at_kill = len(list(parts.glob("*.done")))
    # asked of the scheduler now (scheduler_info() is the client's cached copy, once empty)
    victim = sorted(dask_client.nthreads())[0]
    try:
        dask_client.run(os._exit, 1, workers=[victim], wait=False)
    except Exception:
        pass
    th.join(300)
    assert not th.is_alive()
    info = result["info"]
    total = info.run["blocks"]
    assert 0 < done_at_kill < total, "the worker must die while blocks remain"
    assert len(list(parts.glob("*.done"))) == total
    assert np.array_equal(np.asarray(result["K"]), gram(k, X))
