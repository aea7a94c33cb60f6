"""The nonstationary extension (Theorem 2, Eq. 1) and the tuple similarities of Sec. 5.1."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from structkernels import Kernel, Path, Tree, kernel
from structkernels.kernels.nonstationary import NonstationaryKernel
from structkernels.kernels.sigma import check_sigma, combine_sigma
from structkernels.kernels.tuples import TupleKernel, WeightedTupleKernel, WordVectorSimilarity

EDGES = ["ARG0", "ARG1", "ARG2", "mod"]
NODES = ["protein", "enzyme", "bind-01"]


def random_path(rng: random.Random, n_max: int = 6) -> Path:
    return Path(
        [(None if k == 0 else rng.choice(EDGES), rng.choice(NODES))
         for k in range(rng.randint(0, n_max))]
    )


class BagOfTuples(Kernel):
    """A plugin-style convolution kernel: Σ_s Σ_t k(S[s], T[t]) over all tuple pairs."""

    def __init__(self, tuple_kernel: Any = None):
        self.tuple_kernel = tuple_kernel

    def pair(self, x, y) -> float:
        tk = self.tuple_kernel or (lambda a, b: float(a == b))
        return float(sum(tk(a, b) for a in x for b in y))


def plain_tuple_kernel(a, b) -> float:
    """A stationary tuple kernel given as a plain function (nodes compared by first letter)."""
    return float(a[0] == b[0]) * (1.0 if a[1] == b[1] else 0.5 if a[1][0] == b[1][0] else 0.0)


# ---------------------------------------------------------------------- wrapper
def test_registered_and_equal_to_builtin_sigma():
    rng = random.Random(0)
    X = [random_path(rng) for _ in range(20)]
    sigma = {"ARG0": 0.0, "ARG1": 0.4}
    ns = kernel("nonstationary", kernel=kernel("path", lam=0.8), sigma=sigma)
    assert isinstance(ns, NonstationaryKernel)
    np.testing.assert_array_equal(ns.gram(X), kernel("path", lam=0.8, sigma=sigma).gram(X))
    # by name, and combined multiplicatively with the wrapped kernel's own σ
    ns2 = kernel("nonstationary", kernel=kernel("path", sigma={"ARG1": 2.0}), sigma={"ARG1": 0.2})
    np.testing.assert_allclose(ns2.gram(X), kernel("path", sigma={"ARG1": 0.4}).gram(X),
                               rtol=1e-14)
    trees = [Tree("b", [("ARG0", Tree("x")), ("ARG1", Tree("y"))]), Tree("b", [("ARG1", Tree("y"))])]
    nt = kernel("nonstationary", kernel="tree", sigma=sigma)
    np.testing.assert_array_equal(nt.gram(trees), kernel("tree", sigma=sigma).gram(trees))


def test_wraps_plugin_kernels_by_definition():
    rng = random.Random(1)
    X = [random_path(rng) for _ in range(12)]
    sigma = {"ARG0": 0.0, "ARG2": 1.7, "mod": 0.3}

    def weight(e):
        return 1.0 if e is None else sigma.get(e, 1.0)

    # a plugin with a plain-function tuple kernel gets σ(e) k σ(e') (WeightedTupleKernel)
    ns = NonstationaryKernel(BagOfTuples(plain_tuple_kernel), sigma)
    want = np.array([[sum(weight(a[0]) * plain_tuple_kernel(a, b) * weight(b[0])
                           for a in x for b in y) for y in X] for x in X])
    np.testing.assert_allclose(ns.gram(X), want, rtol=1e-12)
    assert isinstance(ns._effective().tuple_kernel, WeightedTupleKernel)
    # a plugin with the default (None) tuple kernel gets a σ-weighted TupleKernel
    ns = NonstationaryKernel(BagOfTuples(), sigma)
    want = np.array([[sum(weight(a[0]) ** 2 * (a == b) for a in x for b in y) for y in X]
                     for x in X])
    np.testing.assert_allclose(ns.gram(X), want, rtol=1e-12)
    # σ ≡ 1 leaves the plugin kernel as it was
    ones = NonstationaryKernel(BagOfTuples(plain_tuple_kernel), {e: 1.0 for e in EDGES})
    np.testing.assert_array_equal(ones.gram(X), BagOfTuples(plain_tuple_kernel).gram(X))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    sigma=st.dictionaries(st.sampled_from(EDGES), st.floats(0.0, 3.0), max_size=4),
)
def test_plugin_nonstationary_symmetric_psd(seed, sigma):
    rng = random.Random(seed)
    X = [random_path(rng) for _ in range(7)]
    K = NonstationaryKernel(BagOfTuples(), sigma).gram(X)
    np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=0)
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * max(1.0, float(np.abs(K).max()))


def test_refuses_kernels_without_tuple_kernel():
    with pytest.raises(TypeError, match="tuple_kernel"):
        kernel("nonstationary", kernel="rbf", sigma={"ARG0": 0.0}).validate_params()


@pytest.mark.parametrize("name", ["path", "tree", "nonstationary"])
def test_negative_weights_refused(name):
    k = kernel(name, sigma={"ARG0": 1.0, "ARG1": -0.5})
    with pytest.raises(ValueError, match="ARG1"):
        k.validate_params()


def test_clone_set_params_sigma():
    ns = kernel("nonstationary", kernel=kernel("path", lam=0.8), sigma={"ARG0": 0.0})
    c = clone(ns)
    c.set_params(sigma={"ARG1": 0.0})
    p = Path([(None, "b"), ("ARG0", "x"), ("ARG1", "y")])
    assert ns.value(p, p) == pytest.approx(kernel("path", sigma={"ARG0": 0.0}).value(p, p))
    assert c.value(p, p) == pytest.approx(kernel("path", sigma={"ARG1": 0.0}).value(p, p))


# ----------------------------------------------------------------- tuple kernels
def test_tuple_kernel_is_eq_1():
    tk = WeightedTupleKernel(TupleKernel(), {"ARG0": 0.5, "ARG1": 0.0})
    assert tk(("ARG0", "a"), ("ARG0", "a")) == 0.25
    assert tk(("ARG1", "a"), ("ARG1", "a")) == 0.0
    assert tk(("ARG0", "a"), ("ARG0", "b")) == 0.0
    assert tk(("ARG2", "a"), ("ARG2", "a")) == 1.0
    assert tk((None, "a"), (None, "a")) == 1.0
    assert tk((None, "a"), ("ARG2", "a")) == 0.0


def test_sigma_checks_and_combination():
    assert check_sigma(None) == {}
    assert check_sigma({"a": 1}) == {"a": 1.0}
    for bad, err in [({"a": -1}, ValueError), ({"a": math.inf}, ValueError),
                     ({"a": "1"}, TypeError), ({3: 1.0}, TypeError), ({"a": True}, TypeError)]:
        with pytest.raises(err):
            check_sigma(bad)
    assert combine_sigma({"a": 0.5, "b": 2.0}, {"a": 4.0}, None) == {"a": 2.0, "b": 2.0}


def test_word_vector_similarity_formula():
    g = np.random.default_rng(0)
    vecs = {w: g.normal(size=5) for w in ["enzyme", "protein", "bind", "site"]}
    gamma = 0.2
    wv = WordVectorSimilarity(vecs, gamma=gamma)
    for a in vecs:
        for b in vecs:
            ua = vecs[a] / np.linalg.norm(vecs[a])
            ub = vecs[b] / np.linalg.norm(vecs[b])
            c = float(ua @ ub)
            want = math.exp(c - 1.0) * max((c - gamma) / (1.0 - gamma), 0.0)
            assert wv(a, b) == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert wv("enzyme", "enzyme") == pytest.approx(1.0)
    # case and PropBank sense suffix are stripped before the lookup; unknown labels: indicator
    assert wv("bind-01", "Bind") == pytest.approx(1.0)
    assert wv("bind-01", "site") == pytest.approx(wv("bind", "site"))
    assert wv("xyz", "xyz") == 1.0 and wv("xyz", "enzyme") == 0.0
    # the vocabulary + matrix form gives the same matrix
    words = list(vecs)
    wm = WordVectorSimilarity(np.array([vecs[w] for w in words]), vocabulary=words, gamma=gamma)
    np.testing.assert_allclose(wm.matrix(words + ["xyz"], words),
                               wv.matrix(words + ["xyz"], words), rtol=1e-14)


@pytest.mark.parametrize("gamma", [1.0, -1.0, 2.0])
def test_word_vector_gamma_range(gamma):
    with pytest.raises(ValueError, match="gamma"):
        WordVectorSimilarity({"a": np.ones(2)}, gamma=gamma)("a", "a")


def test_word_vector_path_kernel_uses_similarity():
    vecs = {"enzyme": np.array([1.0, 0.0]), "protein": np.array([0.8, 0.6])}
    tk = TupleKernel(node_kernel=WordVectorSimilarity(vecs, gamma=0.5))
    a = Path([("ARG1", "enzyme")])
    b = Path([("ARG1", "protein")])
    k = kernel("path", lam=1.0, tuple_kernel=tk)
    assert k.value(a, b) == pytest.approx(math.exp(-0.2) * 0.3 / 0.5, rel=1e-12)
    assert kernel("path", lam=1.0).value(a, b) == 0.0
    # σ multiplies the word-vector similarity as well
    k0 = kernel("path", lam=1.0, tuple_kernel=tk, sigma={"ARG1": 0.5})
    assert k0.value(a, b) == pytest.approx(0.25 * math.exp(-0.2) * 0.6, rel=1e-12)


def test_word_vector_lookup_follows_set_params_and_is_not_pickled():
    import pickle

    wv = WordVectorSimilarity({"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])})
    assert wv("a", "b") == pytest.approx(math.exp(-1.0) * 0.0)
    wv.set_params(vectors={"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.0])})
    assert wv("a", "b") == pytest.approx(1.0)
    assert "_lookup_cache" not in pickle.loads(pickle.dumps(wv)).__dict__
    assert clone(wv)("a", "b") == pytest.approx(1.0)
