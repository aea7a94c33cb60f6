"""The example plugin kernel, named as a string, works in every consumer of kernels."""

from __future__ import annotations

import numpy as np
import pytest

import structkernels as sk


def toy_paths(n: int = 60, seed: int = 0):
    """Paths whose class shows in their labels: class 1 uses ARG0/enzyme, class 0 ARG1/protein."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = []
    for c in y:
        edge, node = ("ARG0", "enzyme") if c else ("ARG1", "protein")
        noise = [(str(rng.choice(["mod", "op1", "location"])), str(rng.choice(list("abcde"))))
                 for _ in range(rng.integers(0, 3))]
        X.append(sk.Path([(None, "bind")] + noise + [(edge, node)]))
    return X, y


def test_exact_and_hashed_knn_graph():
    X, _ = toy_paths()
    exact = sk.knn_graph(X, "bag-of-labels", k=3)
    K = sk.gram("bag-of-labels", X)
    np.fill_diagonal(K, -np.inf)
    top = np.sort(K, axis=1)[:, ::-1][:, :3]
    np.testing.assert_allclose(exact.similarities, top)
    for hashing in ("random-knn", "klsh"):
        g = sk.knn_graph(X, "bag-of-labels", k=3, hashing=hashing, n_bits=3, random_state=0)
        assert g.indices.shape == (60, 3) and g.n_evaluations > 0


@pytest.mark.parametrize("hashing", [None, "random-knn", "klsh"])
def test_knn_classifier(hashing):
    X, y = toy_paths(80)
    clf = sk.KernelKNNClassifier(kernel="bag-of-labels", n_neighbors=3, hashing=hashing,
                                 n_bits=None if hashing is None else 2, random_state=0)
    clf.fit(X[:60], y[:60])
    assert clf.score(X[60:], y[60:]) >= 0.9


def test_hashers():
    X, _ = toy_paths()
    for cls in (sk.RandomKNNHash, sk.KernelLSH):
        h = cls("bag-of-labels", n_bits=4, random_state=1).fit(X)
        codes = h.hash(X)
        assert len(codes) == len(X) and h.n_evaluations_ > 0
        again = cls("bag-of-labels", n_bits=4, random_state=1).fit(X).hash(X)
        np.testing.assert_array_equal(codes, again)


def test_hsic_measure_by_name():
    hsic_module = pytest.importorskip(
        "structkernels_hsic", reason="plugins/structkernels-hsic is not installed"
    )
    X, y = toy_paths(80)
    Y = y[:, None].astype(float)
    h = sk.measure("hsic", kernel_x="bag-of-labels", kernel_y="linear").fit(X, Y)
    assert isinstance(h, hsic_module.HSIC) and h.statistic_ > 0
    result = h.test(X, Y, method="permutation", n_permutations=100, random_state=0)
    assert result.p_value < 0.05
    icd = sk.measure("hsic", kernel_x="bag-of-labels", kernel_y="linear", estimator="icd",
                     rank=20).fit(X, Y)
    assert icd.statistic_ == pytest.approx(h.statistic_, rel=0.2)
