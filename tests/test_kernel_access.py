"""The kernel-access layer: sources of kernel values and the one parallel map (engine/)."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Path, kernel
from structkernels.engine.checks import NonFiniteKernelValueError
from structkernels.engine.gram import gram
from structkernels.engine.parallel import balanced_chunks, map_blocks, map_tasks
from structkernels.engine.source import KernelSource, PrecomputedSource, check_precomputed_gram
from structkernels.kernels.base import Kernel

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _paths(n: int, seed: int = 0) -> list[Path]:
    rng = np.random.default_rng(seed)
    labels, words = ["ARG0", "ARG1", "mod"], ["a", "b", "c", "d"]
    out = []
    for _ in range(n):
        m = int(rng.integers(1, 5))
        tup = [(None, str(rng.choice(words)))]
        tup += [(str(rng.choice(labels)), str(rng.choice(words))) for _ in range(m - 1)]
        out.append(Path(tup))
    return out


def test_source_blocks_pairs_and_diagonal_equal_the_gram_and_are_counted():
    k = kernel("path", lam=0.8, node_mismatch=0.9)
    X = _paths(40)
    K = gram(k, X)
    src = KernelSource(k, X)
    rows, cols = np.arange(5, 15), np.arange(20, 33)
    assert np.array_equal(src.block(rows, cols), K[np.ix_(rows, cols)])
    assert np.array_equal(src.block(rows), K[np.ix_(rows, rows)])
    lo, hi = np.triu_indices(40, 1)
    assert np.array_equal(src.pairs(lo, hi), K[lo, hi])
    assert np.array_equal(src.pairs(lo, hi, n_jobs=2), K[lo, hi])
    assert np.allclose(src.diagonal(), np.diag(K))
    assert src.n_evaluations == 10 * 13 + 55 + len(lo) * 2 + 40
    src.diagonal()  # cached: not counted again
    assert src.n_evaluations == 10 * 13 + 55 + len(lo) * 2 + 40


def test_a_kernel_without_a_paired_mode_goes_row_by_row():
    X = np.random.default_rng(1).normal(size=(30, 3))
    k = kernel("rbf", bandwidth=1.5)
    assert not k.paired_mode and kernel("path").paired_mode
    src = KernelSource(k, X)
    lo, hi = np.triu_indices(30, 1)
    assert np.allclose(src.pairs(lo, hi), gram(k, X)[lo, hi])


class _NaNAt(Kernel):
    """1 everywhere but NaN for the pair (3, 7)."""

    def pair(self, x, y):
        return float("nan") if {x, y} == {3, 7} else 1.0


def test_a_nonfinite_value_names_its_pair_by_position_in_the_data():
    src = KernelSource(_NaNAt(), list(range(10)))
    with pytest.raises(NonFiniteKernelValueError, match=r"k\(X\[3\], X\[7\]\)"):
        src.block(np.array([2, 3]), np.array([7, 8]))
    with pytest.raises(NonFiniteKernelValueError, match=r"k\(X\[3\], X\[7\]\)"):
        src.pairs([1, 3], [2, 7])


def test_one_validator_of_precomputed_grams():
    assert check_precomputed_gram([[1.0, 0.0], [0.0, 1.0]]).dtype == np.float64
    with pytest.raises(ValueError, match="square Gram"):
        check_precomputed_gram(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"cross Gram matrix of shape \(n_new, 4\)"):
        check_precomputed_gram(np.ones((2, 3)), n_cols=4)
    with pytest.raises(ValueError, match="row 1, column 0 is nan"):
        check_precomputed_gram([[1.0, 0.0], [np.nan, 1.0]])
    scipy_sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="not sparse"):
        check_precomputed_gram(scipy_sparse.eye(2, format="csr"))
    src = PrecomputedSource([[4.0, 2.0], [2.0, 9.0]])
    assert src.block([0, 1], [1]).tolist() == [[2.0], [9.0]]
    assert src.pairs([0], [1]).tolist() == [2.0]
    assert src.columns([1]).tolist() == [[2.0], [9.0]]
    assert src.tile((0, 1), (0, 2)).tolist() == [[4.0, 2.0]]
    assert src.cross([[1.0, 3.0]], [1]).tolist() == [[3.0]] and src.full() is src.K
    with pytest.raises(ValueError, match="the cross Gram matrix needs 2 columns"):
        src.cross(np.ones((1, 3)))


def test_columns_tiles_and_cross_blocks_of_a_normalised_kernel_read_its_diagonal_once():
    from structkernels import Normalized

    k = Normalized(kernel("path", lam=0.8))
    X, new = _paths(30), _paths(4, seed=9)
    K, C = gram(k, X), gram(k, new, X)
    src = KernelSource(k, X)
    np.testing.assert_allclose(src.columns([2, 5]), K[:, [2, 5]], rtol=1e-12)
    np.testing.assert_allclose(src.tile((0, 10), (10, 30)), K[:10, 10:], rtol=1e-12)
    np.testing.assert_allclose(src.tile((10, 30), (10, 30)), K[10:, 10:], rtol=1e-12)
    np.testing.assert_allclose(src.cross(new, [1, 4]), C[:, [1, 4]], rtol=1e-12)
    # the inner diagonal once (30), the new structures' once per cross block (4)
    assert src.n_evaluations == 30 + 60 + 200 + 210 + 4 + 8
    assert src.diagonal().tolist() == [1.0] * 30 and src.n_evaluations == 30 + 60 + 200 + 210 + 12
    f32 = KernelSource(k, X, dtype=np.float32)
    assert f32.tile((0, 5), (0, 5)).dtype == np.float32 and f32.full().dtype == np.float32
    np.testing.assert_allclose(f32.full(), K, rtol=1e-6)


@pytest.mark.parametrize("backend", ["threads", "processes"])
@pytest.mark.parametrize("ordered", [True, False])
def test_map_tasks_gives_every_result_once(backend, ordered):
    out = list(map_tasks(abs, range(-20, 20), n_jobs=2, backend=backend, ordered=ordered,
                         chunks_per_worker=3, cost=lambda t: abs(t) + 1))
    expected = [abs(t) for t in range(-20, 20)]
    assert out == expected if ordered else sorted(out) == sorted(expected)


def test_map_tasks_closed_early_stops_its_workers():
    started = []

    def work(t):
        started.append(t)
        return t

    gen = map_tasks(work, range(1000), n_jobs=2)
    assert next(gen) == 0
    gen.close()
    assert len(started) < 1000 or started == list(range(1000))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 100), min_size=1, max_size=30), st.integers(1, 8))
def test_balanced_chunks_partition_the_tasks(costs, n):
    chunks = balanced_chunks(costs, n, cost=float)
    assert sorted(t for c in chunks for t in c) == sorted(costs)
    assert 1 <= len(chunks) <= min(n, len(costs))


def test_map_blocks_reduces_each_block_in_its_worker():
    k = kernel("path")
    X = _paths(60, seed=3)
    K = gram(k, X)
    src = KernelSource(k, X)
    tasks = [(np.arange(a, a + 20), None if a == b else np.arange(b, b + 20))
             for a in range(0, 60, 20) for b in range(a, 60, 20)]
    sums = list(map_blocks(src, tasks, lambda B, t: (t[0][0], None if t[1] is None else t[1][0],
                                                     B.sum()), n_jobs=2, ordered=True))
    for (_a, _b, s), (rows, cols) in zip(sums, tasks, strict=True):
        cols = rows if cols is None else cols
        assert np.isclose(s, K[np.ix_(rows, cols)].sum())


# ------------------------------------------------------------------ the layer holds
def _python_files():
    for base in (ROOT / "structkernels", *sorted((ROOT / "plugins").glob("*/structkernels_*"))):
        yield from base.rglob("*.py")


POOLS = ("ThreadPoolExecutor", "ProcessPoolExecutor", "Parallel", "Pool", "ThreadPool")


def test_no_thread_or_process_pool_outside_the_engine():
    """Pools are started by ``engine.parallel`` (and the Gram engine) only."""
    found = []
    for path in _python_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("structkernels/engine/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name in POOLS:
                    found.append(f"{rel}:{node.lineno}: {name}")
    assert not found, "pools outside engine/: " + ", ".join(found)


def test_plugins_read_kernel_values_through_the_cores_sources():
    """No plugin keeps a source of its own (``engine.source`` is the one kernel-access layer)."""
    found = [f"{path.relative_to(ROOT).as_posix()}:{node.name}" for path in _python_files()
             if path.relative_to(ROOT).parts[0] == "plugins"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef) and node.name.endswith("Source")]
    assert not found, "sources outside engine/: " + ", ".join(found)

def test_no_dispatch_on_a_kernels_concrete_class_outside_kernels():
    """``type(k) is PathKernel`` and the like live in ``kernels/`` only: elsewhere a kernel is
    asked through its own methods."""
    found = []
    for path in _python_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("structkernels/kernels/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) \
                    and getattr(node.left.func, "id", "") == "type":
                for comp in node.comparators:
                    names = [getattr(e, "id", getattr(e, "attr", "")) for e in
                             (comp.elts if isinstance(comp, ast.Tuple) else [comp])]
                    if any(n.endswith("Kernel") for n in names):
                        found.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance" \
                    and len(node.args) == 2:
                cls = node.args[1]
                names = [getattr(e, "id", getattr(e, "attr", "")) for e in
                         (cls.elts if isinstance(cls, ast.Tuple) else [cls])]
                concrete = [n for n in names if n.endswith("Kernel") and n not in
                            ("Kernel", "VectorKernel", "BlockKernel")]
                if concrete:
                    found.append(f"{rel}:{node.lineno}: isinstance {concrete}")
    assert not found, "dispatch on a kernel class outside kernels/: " + ", ".join(found)


# ------------------------------------------------------------------ kernels' own fast paths
@pytest.mark.parametrize("name, params",
                         [("linear", {}), ("cosine", {}), ("rbf", {"bandwidth": 0.7})])
def test_column_function_gives_the_grams_columns(name, params):
    X = np.random.default_rng(2).normal(size=(25, 4))
    X[3] = 0.0  # a zero row: cosine's unit rows keep it 0
    k = kernel(name, **params)
    f = k.column_function(k.check_input(X))
    K = gram(k, X)
    for idx in (np.array([3]), np.array([0, 7, 24])):
        np.testing.assert_allclose(f(idx), K[:, idx], rtol=1e-12, atol=1e-12)


def test_kernels_without_a_fast_path_say_so():
    class Sub(type(kernel("path"))):
        """A subclass may change the values: the path kernel's own shortcuts do not apply."""

    assert kernel("laplacian").column_function(np.eye(2)) is None
    assert not Sub().paired_mode and not Sub().monotone_in_sigma()
    assert kernel("path").monotone_in_sigma() and not kernel("tree").monotone_in_sigma()
    assert kernel("tree").chain_bound_weights(None) is None
