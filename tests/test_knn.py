"""Exact and hashed k-NN graphs against brute-force oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import structkernels
from structkernels import KernelLSH, KNNGraph, Normalized, RandomKNNHash, kernel, knn_graph
from structkernels.neighbors.graph import exact_knn_graph


def _brute_topk(sim, k, candidates=None, exclude_self=True):
    """Literal top-k: loop over candidate columns, sort by (-similarity, index)."""
    n = sim.shape[0]
    idx = np.full((n, k), -1)
    val = np.full((n, k), -np.inf)
    for i in range(n):
        cols = range(sim.shape[1]) if candidates is None else sorted(candidates[i])
        pairs = [(-sim[i, j], j) for j in cols if not (exclude_self and j == i)]
        pairs.sort()
        for r, (negs, j) in enumerate(pairs[:k]):
            idx[i, r], val[i, r] = j, -negs
    return idx, val


def _literal_gram(k, X):
    return np.array([[k.value(x, y) for y in X] for x in X])


def _clusters(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(2, n // 25), d)) * 6
    return centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, d)) * 0.5


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("block_size", [4, 512])
def test_exact_graph_matches_brute_force(k, block_size):
    X = np.round(_clusters(30, seed=k), 1)  # rounding makes ties
    kern = kernel("laplacian", bandwidth=2.0)
    g = exact_knn_graph(X, kern, k, block_size=block_size)
    idx, val = _brute_topk(_literal_gram(kern, X), k)
    np.testing.assert_array_equal(g.indices, idx)
    np.testing.assert_allclose(g.similarities, val, rtol=1e-12)
    assert g.n_evaluations == 30 * 31 // 2
    assert g.buckets is None


def test_exact_graph_with_ties_prefers_smaller_index():
    X = np.array([[0.0], [1.0], [-1.0], [1.0], [5.0]])
    g = knn_graph(X, "linear", k=2)
    # similarities of row 1 with 0,2,3,4 are 0,-1,1,5
    assert g.indices[1].tolist() == [4, 3]
    X = np.zeros((4, 2))
    assert knn_graph(X, "linear", k=2).indices.tolist() == [[1, 2], [0, 2], [0, 1], [0, 1]]


def test_exact_graph_normalized_kernel_and_self_inclusion():
    X = np.abs(_clusters(20, seed=3)) + 0.1
    k = Normalized(kernel("polynomial", degree=2))
    g = knn_graph(X, k, k=3)
    idx, val = _brute_topk(_literal_gram(k, X), 3)
    np.testing.assert_array_equal(g.indices, idx)
    np.testing.assert_allclose(g.similarities, val, rtol=1e-10)
    assert g.n_evaluations == 20 + 20 * 21 // 2  # diagonal once, then the upper triangle
    g2 = knn_graph(X, "cosine", k=1, exclude_self=False)
    assert np.allclose(g2.similarities[:, 0], 1.0)


def test_padding_when_fewer_than_k():
    X = _clusters(4)
    g = knn_graph(X, "rbf", k=6)
    assert (g.indices[:, 3:] == -1).all() and np.isneginf(g.similarities[:, 3:]).all()
    assert all(len(g.neighbors(i)) == 3 for i in range(4))
    assert all(i not in g.neighbors(i) for i in range(4))


def test_reverse_neighbours_literal():
    X = _clusters(40, seed=4)
    g = knn_graph(X, "rbf", k=3)
    rev = g.reverse()
    for i in range(40):
        expected = [j for j in range(40) if i in g.indices[j].tolist()]
        assert rev[i].tolist() == expected


def _candidate_oracle(g, n, probe):
    """Every pair the hashed graph may compare: same bucket (or Hamming-1), or a reference."""
    cand = [set() for _ in range(n)]
    for h, buckets in zip(g.hashers, g.buckets, strict=True):
        code_of = {int(i): c for c, members in buckets.items() for i in members}
        for i in range(n):
            for j in range(n):
                diff = code_of[i] ^ code_of[j]
                if diff == 0 or (probe and diff & (diff - 1) == 0):
                    cand[i].add(j)
        for r in h.reference_indices_.tolist():
            for i in range(n):
                cand[i].add(r)
                cand[r].add(i)
    return cand


@pytest.mark.parametrize("family", ["random-knn", "klsh"])
@pytest.mark.parametrize("probe,n_tables", [(0, 1), (1, 1), (0, 2), (1, 3)])
def test_hashed_graph_is_the_exact_top_k_over_its_candidates(family, probe, n_tables):
    n, k = 70, 3
    X = _clusters(n, seed=probe + 2 * n_tables)
    kern = kernel("rbf", bandwidth=2.0)
    g = knn_graph(X, kern, k, hashing=family, n_tables=n_tables, probe=probe, random_state=11)
    cand = _candidate_oracle(g, n, probe)
    idx, val = _brute_topk(_literal_gram(kern, X), k, cand)
    np.testing.assert_array_equal(g.indices, idx)
    np.testing.assert_allclose(g.similarities, val, rtol=1e-12)
    assert len(g.buckets) == n_tables == len(g.hashers)
    assert sorted(i for b in g.buckets[0].values() for i in b.tolist()) == list(range(n))


def test_hashed_evaluation_count():
    n = 200
    X = _clusters(n, seed=1)
    g = knn_graph(X, "rbf", 2, hashing="random-knn", random_state=0)
    m = math.ceil(math.sqrt(n))
    sizes = [len(b) for b in g.buckets[0].values()]
    assert g.n_evaluations == n * m + sum(s * (s + 1) // 2 for s in sizes)
    g = knn_graph(X, "rbf", 2, hashing="klsh", probe=1, random_state=0)
    b = g.buckets[0]
    cross = sum(
        len(b[c]) * len(b[c ^ (1 << j)])
        for c in b
        for j in range(g.hashers[0].n_bits_)
        if (c ^ (1 << j)) in b and (c ^ (1 << j)) > c
    )
    within = sum(len(v) * (len(v) + 1) // 2 for v in b.values())
    assert g.n_evaluations == m * (m + 1) // 2 + n * m + within + cross


def test_hashed_graph_recall_on_clusters():
    X = _clusters(1500, seed=7, d=4)
    kern = kernel("rbf", bandwidth=3.0)
    exact = knn_graph(X, kern, k=1)
    for family in ("random-knn", "klsh"):
        g = knn_graph(X, kern, k=1, hashing=family, probe=1, random_state=0)
        recall = np.mean(g.similarities[:, 0] >= exact.similarities[:, 0] - 1e-12)
        assert recall >= 0.9, (family, recall)
        assert g.n_evaluations < exact.n_evaluations / 3


def test_deterministic_and_parallel_equal():
    X = _clusters(300, seed=2)
    a = knn_graph(X, "rbf", 4, hashing="random-knn", n_tables=2, probe=1, random_state=5)
    b = knn_graph(X, "rbf", 4, hashing="random-knn", n_tables=2, probe=1, random_state=5,
                  n_jobs=2)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.similarities, b.similarities, rtol=1e-12)
    assert a.n_evaluations == b.n_evaluations
    e1 = knn_graph(X, "rbf", 4)
    e2 = exact_knn_graph(X, "rbf", 4, n_jobs=2, block_size=64)
    np.testing.assert_array_equal(e1.indices, e2.indices)


def test_fitted_hashers_are_used_as_given():
    X = _clusters(120, seed=3)
    h = KernelLSH("rbf", n_bits=4, random_state=0).fit(X)
    g = knn_graph(X, "rbf", 2, hashing=h)
    np.testing.assert_array_equal(
        sorted(np.concatenate(list(g.buckets[0].values()))), np.arange(120)
    )
    for code, members in g.buckets[0].items():
        assert (h.hash(X[members]) == code).all()
    hs = [RandomKNNHash("rbf", n_bits=3, random_state=s).fit(X) for s in range(2)]
    g2 = knn_graph(X, "rbf", 2, hashing=hs)
    assert len(g2.buckets) == 2
    with pytest.raises(ValueError, match="not fitted"):
        knn_graph(X, "rbf", 2, hashing=RandomKNNHash("rbf"))
    with pytest.raises(ValueError, match="n_tables"):
        knn_graph(X, "rbf", 2, hashing=h, n_tables=3)


def test_bad_arguments():
    X = _clusters(10)
    with pytest.raises(ValueError, match="unknown hashing"):
        knn_graph(X, "rbf", hashing="minhash")
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(X, "rbf", k=0)
    with pytest.raises(ValueError, match="probe"):
        knn_graph(X, "rbf", hashing="klsh", probe=2)
    with pytest.raises(ValueError, match="only with hashing"):
        knn_graph(X, "rbf", n_tables=2)
    with pytest.raises(TypeError, match="bad hash parameter"):
        knn_graph(X, "rbf", hashing="klsh", n_reference=3)
    with pytest.raises(ValueError, match="NaN"):
        knn_graph(np.array([[0.0], [np.nan]]), "rbf")


def test_top_level_exports():
    for name in ("RandomKNNHash", "KernelLSH", "knn_graph", "KNNGraph", "KernelKNNClassifier"):
        assert getattr(structkernels, name) is not None
    assert structkernels.KNNGraph is KNNGraph


@settings(max_examples=20, deadline=None)
@given(
    X=arrays(np.float64, (15, 2), elements=st.floats(-3, 3, allow_nan=False).map(
        lambda v: round(v, 1))),
    k=st.integers(1, 5),
)
def test_graph_properties(X, k):
    """Rows descend, no self-loops, no repeats; reverse() inverts indices exactly."""
    g = knn_graph(X, "rbf", k, hashing="random-knn", random_state=0, n_reference=4)
    for i in range(len(X)):
        row = g.neighbors(i)
        assert i not in row.tolist() and len(set(row.tolist())) == len(row)
        s = g.similarities[i][: len(row)]
        assert np.all(np.diff(s) <= 0)
    pairs = {(j, i) for i, r in enumerate(g.reverse()) for j in r.tolist()}
    assert pairs == {(i, j) for i in range(len(X)) for j in g.neighbors(i).tolist()}


def test_path_structures():
    """The graph on (small, synthetic) paths under the registered path kernel."""
    if "path" not in structkernels.list_kernels():
        pytest.skip("the path kernel is not registered in this installation")
    rng = np.random.default_rng(0)
    edges, nodes = ["ARG0", "ARG1", "mod"], ["bind-01", "protein", "enzyme", "gene"]
    paths = [
        structkernels.Path(
            [(None, str(rng.choice(nodes)))]
            + [(str(rng.choice(edges)), str(rng.choice(nodes))) for _ in range(rng.integers(1, 4))]
        )
        for _ in range(25)
    ]
    kern = Normalized(kernel("path", lam=0.8))
    g = knn_graph(paths, kern, k=2)
    idx, val = _brute_topk(_literal_gram(kern, paths), 2)
    np.testing.assert_allclose(g.similarities, val, rtol=1e-9)
    gh = knn_graph(paths, kern, k=2, hashing="random-knn", random_state=0)
    assert gh.n_evaluations > 0 and (gh.indices >= 0).all()


@pytest.mark.slow
def test_shipped_amr_paths():
    """On 300 shipped Bio-AMR paths: hashed neighbours are true kernel values, fewer evaluations."""
    datasets = pytest.importorskip("structkernels.datasets", reason="dataset loader not installed")
    try:
        paths = list(datasets.load_interactions().split("train").paths)
    except (FileNotFoundError, OSError) as exc:
        pytest.skip(f"shipped dataset not available: {exc}")
    rng = np.random.default_rng(0)
    X = [paths[i] for i in rng.choice(len(paths), 300, replace=False)]
    kern = Normalized(kernel("path", lam=0.8))
    exact = knn_graph(X, kern, k=1)
    g = knn_graph(X, kern, k=1, hashing="random-knn", probe=1, random_state=0)
    assert g.n_evaluations < exact.n_evaluations
    for i in range(0, 300, 15):
        j = g.indices[i, 0]
        assert np.isclose(g.similarities[i, 0], kern.value(X[i], X[j]))
        assert g.similarities[i, 0] <= exact.similarities[i, 0] + 1e-12


def block_topk(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The reference top-k by sorting: positions ``(rows, cols)`` of the ``k`` largest entries
    of each row of ``S``, ties at the ``k``-th value to the smaller column, ``-inf``/NaN never."""
    S = np.asarray(S, dtype=np.float64)
    n, m = S.shape
    if n == 0 or m == 0 or k <= 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    valid = np.isfinite(S) | (S == np.inf)
    if k >= m:
        sel = valid
    else:
        work = np.where(valid, S, -np.inf)
        kth = np.partition(work, m - k, axis=1)[:, m - k][:, None]
        greater = (work > kth) & valid
        need = k - greater.sum(axis=1, keepdims=True)
        equal = (work == kth) & valid
        sel = greater | (equal & (np.cumsum(equal, axis=1) <= need))
    rows, cols = np.nonzero(sel)
    return rows.astype(np.int64), cols.astype(np.int64)


def test_compiled_topk_matches_block_topk():
    """The compiled per-line top-k (bucket blocks, line_topk) chooses what a sort chooses:
    ties to the smaller position, -inf/NaN never, +inf allowed, self pairs masked,
    normalisation with the arithmetic of normalize_gram, upper-triangle mirroring."""
    from structkernels.engine.checks import diagonal_scales as _scales
    from structkernels.engine.checks import normalize_gram
    from structkernels.neighbors.graph import line_topk
    from structkernels.neighbors.topk import topk_lines as _topk_lines

    rng = np.random.default_rng(3)
    none = np.ones(0)
    for _ in range(400):
        n, m = (int(v) for v in rng.integers(1, 8, 2))
        k = int(rng.integers(1, 5))
        S = rng.integers(0, 3, (n, m)).astype(float)  # many ties
        S[rng.random((n, m)) < 0.15] = -np.inf
        S[rng.random((n, m)) < 0.1] = np.nan
        S[rng.random((n, m)) < 0.05] = np.inf
        rows = rng.permutation(20)[:n].astype(np.int64)
        cols = rng.permutation(20)[:m].astype(np.int64)
        for transpose in (False, True):
            masked = np.where(rows[:, None] == cols[None, :], -np.inf, S)
            A = masked.T if transpose else masked
            r, c = block_topk(A, k)
            lines, others = (cols, rows) if transpose else (rows, cols)
            want = sorted(zip(lines[r].tolist(), others[c].tolist(), A[r, c].tolist(), strict=True))
            got = _topk_lines(S, lines, others, k, transpose, True, none, none, False, False)
            assert sorted(zip(*(a.tolist() for a in got), strict=True)) == want
        r, c = block_topk(S, k)  # what the classifier searches: plain rows, positions as ids
        want = sorted(zip(r.tolist(), c.tolist(), S[r, c].tolist(), strict=True))
        assert sorted(zip(*(a.tolist() for a in line_topk(S, k)), strict=True)) == want
        # normalised, symmetric (upper triangle read, lower one ignored)
        d = rng.integers(0, 4, n).astype(float)  # includes zero self-similarities
        U = rng.random((n, n))
        sym = np.triu(U) + np.triu(U, 1).T
        K = normalize_gram(sym, d, d, warn=False)
        K = np.where(np.eye(n, dtype=bool), -np.inf, K)
        r, c = block_topk(K, k)
        want = sorted(zip(rows[r].tolist(), rows[c].tolist(), K[r, c].tolist(), strict=True))
        low = np.tril(rng.random((n, n)), -1)  # garbage below the diagonal
        s = _scales(d)
        got = _topk_lines(np.triu(U) + low, rows, rows, k, False, True, s, s, True, True)
        assert sorted(zip(*(a.tolist() for a in got), strict=True)) == want


def test_hashed_graph_keeps_encoded_paths():
    """An encoded PathList goes through hashing and buckets without being re-encoded
    (sub-lists share its vocabulary) and gives the graph of the plain list of paths."""
    from structkernels.datasets import load_interactions
    from structkernels.structures.encoded import PathList

    paths = load_interactions().split("train").paths[:400]
    assert isinstance(paths, PathList)
    kern = Normalized(kernel("path", lam=0.8))
    kw = dict(hashing="random-knn", n_tables=2, probe=1, random_state=0, progress=False)
    g_enc = knn_graph(paths, kern, 2, **kw)
    g_list = knn_graph(list(paths), kern, 2, **kw)
    assert np.array_equal(g_enc.indices, g_list.indices)
    assert np.array_equal(g_enc.similarities, g_list.similarities)
    assert g_enc.n_evaluations == g_list.n_evaluations
    assert g_enc.hashers[0].reference_.vocab is paths.vocab


def test_precomputed_loo_threshold_in_bands_equals_one_band(monkeypatch):
    """The leave-one-out scores of a precomputed Gram, computed a band of rows at a time
    (no copy of the whole Gram), give the threshold of the one-band computation."""
    import structkernels.neighbors.classifier as mod
    from structkernels.neighbors.classifier import KernelKNNClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    K = X @ X.T
    y = (X[:, 0] > 0.3).astype(int)
    whole = KernelKNNClassifier(kernel="precomputed").fit(K, y)
    monkeypatch.setattr(mod, "_LOO_BAND_BYTES", 8 * 60 * 7)  # bands of 7 rows
    banded = KernelKNNClassifier(kernel="precomputed").fit(K, y)
    assert banded.threshold_ == whole.threshold_
    assert np.array_equal(banded.predict_proba(K), whole.predict_proba(K))
