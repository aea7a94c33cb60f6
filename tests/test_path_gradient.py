"""∂K/∂σ and ∂K/∂λ of the path kernel: literal enumeration and finite differences."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from structkernels import Path, kernel
from structkernels.kernels.tuples import PartialIndicator, TupleKernel, WordVectorSimilarity

EDGES = ["ARG0", "ARG1", "ARG2", "op1", "mod"]
NODES = ["protein", "enzyme", "bind-01", "site", "and"]


def oracle_grad(S, T, lam, sigma, labels, max_len=None, tk0=None):
    """The derivative of K(S, T) by enumerating every subsequence pair and differentiating
    each term by the product rule (σ per label, then λ)."""
    tk0 = tk0 or TupleKernel()
    sig = {**{e: 1.0 for e in EDGES}, **(sigma or {})}

    def s(e):
        return 1.0 if e is None else sig.get(e, 1.0)

    grad = np.zeros(len(labels) + 1)
    longest = min(len(S), len(T))
    if max_len is not None:
        longest = min(longest, max_len)
    for n in range(1, longest + 1):
        for i in itertools.combinations(range(len(S)), n):
            for j in itertools.combinations(range(len(T)), n):
                factors = [(S[a], T[b]) for a, b in zip(i, j, strict=True)]
                vals = [s(x[0]) * s(y[0]) * tk0(x, y) for x, y in factors]
                span = (i[-1] - i[0] + 1) + (j[-1] - j[0] + 1)
                decay = lam**span
                for q, (x, y) in enumerate(factors):
                    rest = np.prod([v for r, v in enumerate(vals) if r != q])
                    base = tk0(x, y) * rest * decay
                    for p, label in enumerate(labels):
                        d = 0.0
                        if x[0] == label:
                            d += s(y[0])
                        if y[0] == label:
                            d += s(x[0])
                        grad[p] += d * base
                grad[-1] += np.prod(vals) * span * lam ** (span - 1)
    return grad


def random_path(rng, n_max=5):
    n = rng.randint(0, n_max)
    return Path([(None if k == 0 and rng.random() < 0.5 else rng.choice(EDGES),
                  rng.choice(NODES)) for k in range(n)])


def random_sigma(rng):
    return {e: rng.choice([0.0, 1.0, rng.uniform(0.0, 1.5)]) for e in EDGES if rng.random() < 0.7}


def word_vectors(seed):
    g = np.random.default_rng(seed)
    return {w: g.normal(size=4) for w in NODES[:-1] + EDGES[:-1]}


@pytest.mark.parametrize("max_len", [None, 1, 3])
@pytest.mark.parametrize("tuples", ["indicator", "partial", "wordvec"])
def test_gradient_equals_literal_enumeration(max_len, tuples):
    rng = random.Random(7 + (max_len or 0) + len(tuples))
    labels = ["ARG0", "ARG1", "mod", "absent"]
    for rep in range(4):
        lam = rng.choice([1.0, rng.uniform(0.2, 1.0)])
        sigma = random_sigma(rng)
        if tuples == "partial":
            tk0 = TupleKernel(node_kernel=PartialIndicator(0.6))
        elif tuples == "wordvec":
            wv = WordVectorSimilarity(word_vectors(rep), gamma=0.3)
            tk0 = TupleKernel(edge_kernel=wv if rep % 2 else "indicator", node_kernel=wv)
        else:
            tk0 = None
        k = kernel("path", lam=lam, max_len=max_len, sigma=sigma, tuple_kernel=tk0)
        X = [random_path(rng) for _ in range(4)]
        Y = [random_path(rng) for _ in range(3)]
        V = np.random.default_rng(rep).normal(size=(4, 3))
        want = sum(V[a, b] * oracle_grad(X[a], Y[b], lam, sigma, labels, max_len, tk0)
                   for a in range(4) for b in range(3))
        got = k.weighted_gradient(X, V, labels, Y, lam=True)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        # the symmetric and diagonal modes
        W = np.random.default_rng(rep + 1).normal(size=(4, 4))
        want = sum(W[a, b] * oracle_grad(X[a], X[b], lam, sigma, labels, max_len, tk0)
                   for a in range(4) for b in range(4))
        np.testing.assert_allclose(k.weighted_gradient(X, W, labels, lam=True), want,
                                   rtol=1e-9, atol=1e-12)
        d = np.arange(1.0, 5.0)
        want = sum(d[a] * oracle_grad(X[a], X[a], lam, sigma, labels, max_len, tk0)
                   for a in range(4))
        np.testing.assert_allclose(k.weighted_gradient(X, d, labels, diagonal=True, lam=True),
                                   want, rtol=1e-9, atol=1e-12)


def test_gradient_equals_finite_differences_on_long_paths():
    """Long repetitive paths (many matches, the dense branch of the value programme)."""
    rng = random.Random(3)
    labels = ["ARG0", "ARG1"]
    X = [Path([(rng.choice(labels), rng.choice(NODES)) for _ in range(rng.randint(6, 12))])
         for _ in range(5)]
    sigma = {"ARG0": 0.7, "ARG1": 0.4}
    lam, h = 0.6, 1e-6
    V = np.random.default_rng(0).normal(size=(5, 5))

    def J(sig, lam_):
        return float((V * kernel("path", lam=lam_, sigma=sig, node_mismatch=0.5).gram(X)).sum())

    got = kernel("path", lam=lam, sigma=sigma, node_mismatch=0.5).weighted_gradient(
        X, V, labels, lam=True)
    for p, label in enumerate(labels):
        up, down = dict(sigma), dict(sigma)
        up[label] += h
        down[label] -= h
        fd = (J(up, lam) - J(down, lam)) / (2 * h)
        assert got[p] == pytest.approx(fd, rel=1e-6)
    fd = (J(sigma, lam + h) - J(sigma, lam - h)) / (2 * h)
    assert got[-1] == pytest.approx(fd, rel=1e-6)


def test_zero_sigma_keeps_a_derivative_through_another_label():
    """σ = 0 on one side of a cross-label match still has a derivative (word-vector edges)."""
    wv = WordVectorSimilarity({"ARG0": np.array([1.0, 0.2]), "ARG1": np.array([0.9, 0.3])})
    tk0 = TupleKernel(edge_kernel=wv)
    a, b = Path([("ARG0", "x")]), Path([("ARG1", "x")])
    k = kernel("path", lam=1.0, sigma={"ARG0": 0.0}, tuple_kernel=tk0)
    g = k.weighted_gradient([a], [[1.0]], ["ARG0", "ARG1"], [b])
    assert g[0] == pytest.approx(tk0(("ARG0", "x"), ("ARG1", "x")))
    assert g[1] == 0.0


def test_gradient_checks_its_weights():
    a = Path([(None, "x")])
    k = kernel("path")
    with pytest.raises(ValueError, match="shape"):
        k.weighted_gradient([a, a], np.ones((2, 3)), ["ARG0"])
    with pytest.raises(ValueError, match="non-finite"):
        k.weighted_gradient([a], [[np.nan]], ["ARG0"])


@pytest.mark.parametrize("mode", ["symmetric", "full", "diagonal"])
def test_gradient_in_bands_of_rows_is_the_sum_whatever_the_threads(mode, monkeypatch):
    """Rows cut into bands (a band from 16 pairs on, so that every mode is cut): the banded
    sum equals the pairs' own gradients added up, and is the same bytes for one thread or
    two."""
    from structkernels.kernels import path as path_module

    monkeypatch.setattr(path_module, "_BAND_PAIRS", 16)
    assert len(path_module._row_bands(150, 150)) == path_module.GRADIENT_BANDS
    rng = random.Random(5)
    X = [random_path(rng, 7) for _ in range(150)]
    Y = None if mode != "full" else [random_path(rng, 7) for _ in range(120)]
    g = np.random.default_rng(1)
    V = (g.normal(size=(150, 1)) if mode == "diagonal"
         else g.normal(size=(150, 150 if Y is None else 120)))
    k = kernel("path", lam=0.7, sigma={"ARG0": 0.5, "mod": 0.2})
    labels = ["ARG0", "ARG1", "mod"]
    kw = {"diagonal": mode == "diagonal", "lam": True}
    one = k.weighted_gradient(X, V, labels, Y, n_jobs=1, **kw)
    two = k.weighted_gradient(X, V, labels, Y, n_jobs=2, **kw)
    assert np.array_equal(one, two)
    # the same derivative from the pairs one by one
    want = np.zeros(len(labels) + 1)
    if mode == "diagonal":
        for i, x in enumerate(X):
            want += k.weighted_gradient([x], V[i:i + 1], labels, diagonal=True, lam=True)
    else:
        Z = X if Y is None else Y
        for i, x in enumerate(X):
            want += k.weighted_gradient([x], V[i:i + 1], labels, Z, lam=True)
    assert np.allclose(one, want, rtol=1e-9, atol=1e-9)


def test_row_bands_share_the_work_equally():
    """One band for little work; with ``triangle``, bands of equal area (row ``i`` holds
    ``n - i`` pairs)."""
    from structkernels.kernels.path import _row_bands

    assert _row_bands(10, 100) == [(0, 10)]
    bands = _row_bands(800, 800 * 801 // 2, triangle=True)
    assert (len(bands), bands[:2], bands[-1]) == (8, [(0, 52), (52, 107)], (517, 800))
