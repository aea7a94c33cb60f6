"""Resume and cache keys cover the data, every kernel parameter and the kernel's code (issue 23,
item 6).

``dask_gram`` resumed on same-sized data in another order reused every block (the result was
wrong by 0.67), and a σ change deep in a long ``repr`` was hidden from its key.  A run whose
key differs now reuses nothing; the matrix being built lives under a temporary name and
``out`` is replaced only when the new one is complete.
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest

import structkernels as sk
from structkernels import Kernel, Path, gram, kernel
from structkernels.engine._keys import kernel_code_version, kernel_key

EDGES = [f"e{i}" for i in range(120)]
NODES = ["bind", "protein", "enzyme", "cell", "gene", "kinase"]


def random_paths(n: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    return [
        Path([(None, rng.choice(NODES))]
             + [(rng.choice(EDGES[:6]), rng.choice(NODES)) for _ in range(rng.randint(0, 4))])
        for _ in range(n)
    ]


def long_sigma(last: float) -> dict:
    """A σ over 121 edge labels: sklearn's repr of a kernel holding it is truncated before
    the label ``zz``, the last in sorted order."""
    return {**{e: 0.5 for e in EDGES}, "zz": last}


class FailingLinear(Kernel):
    """Linear kernel on rows ``[index, features...]`` that fails on blocks from row ``fail_from``
    while the file ``flag`` exists (a worker lost mid-run, deterministically)."""

    def __init__(self, flag: str = "", fail_from: int = 10**9):
        self.flag = flag
        self.fail_from = fail_from

    def check_input(self, X):
        return np.asarray(X, dtype=np.float64)

    def gram_block(self, X, Y):
        if self.flag and os.path.exists(self.flag) and min(X[0, 0], Y[0, 0]) >= self.fail_from:
            raise RuntimeError("worker lost")
        return X[:, 1:] @ Y[:, 1:].T


class Bumped(FailingLinear):
    code_version = 2


# ------------------------------------------------------------------ keys
def test_kernel_key_sees_a_sigma_change_deep_in_a_long_sigma():
    """The key hashes the parameters (a key from scikit-learn's repr, which elides the
    middle of a long one, missed this change)."""
    a = kernel("path", lam=0.8, sigma=long_sigma(0.5))
    b = kernel("path", lam=0.8, sigma=long_sigma(0.25))
    assert kernel_key(a) != kernel_key(b)
    assert kernel_key(a) == kernel_key(kernel("path", lam=0.8, sigma=long_sigma(0.5)))


def test_code_version_covers_the_kernel_and_the_kernels_inside_it():
    assert Kernel.code_version == 1
    k = FailingLinear()
    assert kernel_code_version(k) != kernel_code_version(Bumped())
    combined = 0.5 * kernel("path") + kernel("linear")
    names = [name for name, _ in kernel_code_version(combined)]
    assert names[0] == "structkernels" and any(n.endswith(".PathKernel") for n in names)
    assert any(n.endswith("LinearKernel") for n in names)


# ------------------------------------------------------------------ cache=
def test_cache_key_holds_the_code_version(tmp_path, monkeypatch):
    X = np.random.default_rng(0).normal(size=(12, 3))
    X = np.c_[np.arange(12), X]
    k = FailingLinear()
    _, first = gram(k, X, cache=tmp_path, return_info=True)
    _, again = gram(k, X, cache=tmp_path, return_info=True)
    assert not first.cache_hit and again.cache_hit and again.n_evaluations == 0
    monkeypatch.setattr(FailingLinear, "code_version", 7)
    K, bumped = gram(k, X, cache=tmp_path, return_info=True)
    assert not bumped.cache_hit and bumped.n_evaluations > 0
    np.testing.assert_array_equal(K, gram(k, X))


def test_cache_key_sees_a_sigma_change_hidden_by_repr(tmp_path):
    X = random_paths(20, 1)
    a = kernel("path", lam=0.8, sigma=long_sigma(0.5))
    b = kernel("path", lam=0.8, sigma=long_sigma(0.0))
    gram(a, X, cache=tmp_path)
    K, info = gram(b, X, cache=tmp_path, return_info=True)
    assert not info.cache_hit
    np.testing.assert_array_equal(K, gram(b, X))


# ------------------------------------------------------------------ dask_gram
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason="the [distributed] extra is not installed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _idle(client) -> None:
    deadline = time.time() + 30
    while time.time() < deadline and any(client.processing().values()):
        time.sleep(0.02)


def test_dask_gram_reordered_data_reuses_no_block(client, tmp_path, capfd):
    X = random_paths(120, 2)
    out = tmp_path / "K.npy"
    K, info = gram(sk.kernel("path"), X, out=out,
                   backend="dask", return_info=True, client=client, block_size=32)
    assert info.run["blocks_computed"] == info.run["blocks"] == 10
    # the same data: every block reused
    _, again = gram(sk.kernel("path"), X, out=out,
                    backend="dask", return_info=True, client=client, block_size=32)
    assert again.run["blocks_skipped"] == 10 and again.run["blocks_computed"] == 0
    assert again.run["restarted"] is None
    # the same size in another order: nothing reused, the right matrix
    Xr = list(reversed(X))
    capfd.readouterr()
    K, info = gram(sk.kernel("path"), Xr, out=out,
                   backend="dask", return_info=True, client=client, block_size=32)
    assert info.run["blocks_skipped"] == 0 and info.run["blocks_computed"] == 10
    assert "data" in info.run["restarted"]
    assert "computing all 10 blocks again" in capfd.readouterr().err
    np.testing.assert_array_equal(np.asarray(K), gram("path", Xr))
    assert np.abs(np.asarray(K) - gram("path", X)).max() > 0.1  # the old result was this wrong


def test_dask_gram_sigma_change_reuses_no_block(client, tmp_path):
    X = random_paths(70, 3)
    out = tmp_path / "K.npy"
    a = kernel("path", lam=0.8, sigma=long_sigma(0.5))
    b = kernel("path", lam=0.8, sigma={**long_sigma(0.5), "e0": 0.0})
    gram(a, X, out=out, backend="dask", return_info=True, client=client, block_size=32)
    K, info = gram(b, X, out=out, backend="dask", return_info=True, client=client, block_size=32)
    assert info.run["blocks_skipped"] == 0 and "kernel parameters" in info.run["restarted"]
    np.testing.assert_array_equal(np.asarray(K), gram(b, X))
    # a new version of the kernel's code: nothing reused either
    Xv = np.c_[np.arange(40), np.random.default_rng(1).normal(size=(40, 3))]
    gram(FailingLinear(), Xv, out=tmp_path / "V.npy",
         backend="dask", return_info=True, client=client, block_size=16)
    _, info = gram(Bumped(), Xv, out=tmp_path / "V.npy",
                   backend="dask", return_info=True, client=client, block_size=16)
    assert info.run["blocks_skipped"] == 0 and info.run["restarted"]


def test_dask_gram_builds_under_a_temporary_name_and_resumes(client, tmp_path):
    n = 96
    X = np.c_[np.arange(n), np.random.default_rng(2).normal(size=(n, 4))]
    out = tmp_path / "K.npy"
    np.save(out, np.full((3, 3), 7.0))  # an old result
    old = out.read_bytes()
    flag = tmp_path / "fail"
    flag.write_text("")
    k = FailingLinear(flag=str(flag), fail_from=64)
    with pytest.raises(RuntimeError, match="worker lost"):
        gram(k, X, out=out, backend="dask", client=client, block_size=16, validate=False)
    _idle(client)
    assert out.read_bytes() == old  # untouched while the new matrix is incomplete
    assert (out.parent / f"{out.name}.parts" / "partial.npy").is_file()
    done = len(list((out.parent / f"{out.name}.parts").glob("*.done")))
    assert 0 < done < 21
    flag.unlink()
    K, info = gram(k, X, out=out, backend="dask", return_info=True, client=client, block_size=16)
    assert info.run["blocks_skipped"] == done and info.run["blocks_computed"] == 21 - done
    np.testing.assert_array_equal(np.asarray(K), gram(k, X))
    assert not (out.parent / f"{out.name}.parts" / "partial.npy").exists()
    assert np.load(out).shape == (n, n)


class WithFunction(Kernel):
    def __init__(self, f=None):
        self.f = f

    def pair(self, x, y):
        return self.f(x, y)


def test_kernel_key_of_a_parameter_plain_pickle_cannot_take():
    a = kernel_key(WithFunction(lambda x, y: 1.0))
    b = kernel_key(WithFunction(lambda x, y: 2.0))
    assert a["params"] != b["params"]
