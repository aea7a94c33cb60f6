"""Tree kernel: literal by-definition oracle, hand-computed cases, properties."""

from __future__ import annotations

import itertools
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Normalized, Tree, kernel
from structkernels.kernels.tuples import TupleKernel, WeightedTupleKernel, WordVectorSimilarity

EDGES = ["ARG0", "ARG1", "ARG2", "op1", "mod"]
NODES = ["protein", "enzyme", "bind-01", "site", "and"]


# ------------------------------------------------------------------ the oracle
def oracle_tree(T, U, lam, decay="span", contiguous=False, tk=None, e1=None, e2=None):
    """K(T, U) of Sec. 4.1 by enumerating every pair of child subsequences.

    K = k.value(r, r') (k.value(r, r') + Σ_{i,j: |i|=|j|} decay Σ_s K(T[i_s], U[j_s]) Π_s k.value(T[i_s].r, U[j_s].r))
    with the tuple of a node = (edge from its parent, label).
    """
    tk = tk or TupleKernel()
    m = tk((e1, T.label), (e2, U.label))
    if m == 0.0:
        return 0.0
    a, b = T.children, U.children
    C = 0.0
    for n in range(1, min(len(a), len(b)) + 1):
        for i in itertools.combinations(range(len(a)), n):
            if contiguous and i[-1] - i[0] + 1 != n:
                continue
            for j in itertools.combinations(range(len(b)), n):
                if contiguous and j[-1] - j[0] + 1 != n:
                    continue
                prod = 1.0
                for s, t in zip(i, j, strict=True):
                    prod *= tk((a[s][0], a[s][1].label), (b[t][0], b[t][1].label))
                if prod == 0.0:
                    continue
                sumK = sum(
                    oracle_tree(a[s][1], b[t][1], lam, decay, contiguous, tk, a[s][0], b[t][0])
                    for s, t in zip(i, j, strict=True)
                )
                if decay == "span":
                    w = lam ** ((i[-1] - i[0] + 1) + (j[-1] - j[0] + 1))
                else:
                    w = lam**n
                C += w * sumK * prod
    return m * (m + C)


def random_tree(rng: random.Random, depth: int = 3, width: int = 3) -> Tree:
    kids = []
    if depth > 0:
        for _ in range(rng.randint(0, width)):
            edge = None if rng.random() < 0.05 else rng.choice(EDGES)
            kids.append((edge, random_tree(rng, depth - 1, width)))
    return Tree(rng.choice(NODES[:3]) if rng.random() < 0.6 else rng.choice(NODES), kids)


def random_sigma(rng: random.Random) -> dict[str, float] | None:
    if rng.random() < 0.15:
        return None
    out = {}
    for e in EDGES:
        r = rng.random()
        if r < 0.25:
            out[e] = 0.0
        elif r < 0.7:
            out[e] = rng.uniform(0.0, 2.0)
    return out


def assert_close(fast, slow, rtol: float = 1e-10) -> None:
    np.testing.assert_allclose(np.asarray(fast), np.asarray(slow), rtol=rtol, atol=1e-300)


OPTIONS = [
    (decay, contiguous, node)
    for decay in ("span", "length")
    for contiguous in (False, True)
    for node in ("indicator", "wordvec", "partial")
]


@pytest.mark.parametrize("decay, contiguous, node_kernel", OPTIONS)
def test_equals_literal_enumeration(decay, contiguous, node_kernel):
    rng = random.Random(100 + OPTIONS.index((decay, contiguous, node_kernel)))
    n_pairs = 0
    for rep in range(7):
        lam = rng.choice([1.0, rng.uniform(0.05, 1.0)])
        sigma = random_sigma(rng)
        tk = None
        if node_kernel == "wordvec":
            g = np.random.default_rng(rep)
            vectors = {w: g.normal(size=3) for w in NODES[:-1] + EDGES[:-1]}
            wv = WordVectorSimilarity(vectors, gamma=rng.uniform(-0.9, 0.6))
            tk = TupleKernel(edge_kernel=wv if rep % 2 else "indicator", node_kernel=wv)
        elif node_kernel == "partial":  # compared by id with one mismatch weight, no matrix
            from structkernels.kernels.tuples import PartialIndicator

            tk = TupleKernel(node_kernel=PartialIndicator(rng.choice([0.0, 0.4, 1.0])))
        k = kernel("tree", lam=lam, decay=decay, contiguous=contiguous, sigma=sigma,
                   tuple_kernel=tk)
        X = [random_tree(rng) for _ in range(5)]
        Y = [random_tree(rng) for _ in range(6)]
        eff = WeightedTupleKernel(tk or TupleKernel(), sigma)
        fast = k.gram_block(X, Y)
        slow = np.array([[oracle_tree(x, y, lam, decay, contiguous, eff) for y in Y] for x in X])
        assert_close(fast, slow)
        assert_close(k.gram_block_symmetric(X + Y)[:5, 5:], slow)
        assert_close(k.diag_block(Y), [oracle_tree(y, y, lam, decay, contiguous, eff) for y in Y])
        n_pairs += fast.size
    assert n_pairs >= 200


def test_hand_computed_cases():
    a = Tree("r", [("A", Tree("x")), ("B", Tree("y")), ("C", Tree("z"))])
    b = Tree("r", [("A", Tree("x")), ("C", Tree("z"))])
    lam = 0.5
    # leaves: K = 1; root: 1 * (1 + two single matches + the pair (A, C) with sum of K = 2)
    span = 1 + 2 * lam**2 + 2 * lam ** (3 + 2)
    length = 1 + 2 * lam + 2 * lam**2
    assert kernel("tree", lam=lam).value(a, b) == pytest.approx(span, rel=1e-14)
    assert kernel("tree", lam=lam, decay="length").value(a, b) == pytest.approx(length, rel=1e-14)
    assert kernel("tree", lam=lam, contiguous=True).value(a, b) == pytest.approx(1 + 2 * lam**2)
    assert kernel("tree", lam=lam, decay="length", contiguous=True).value(a, b) == pytest.approx(
        1 + 2 * lam
    )
    # σ(C) = 0 removes both substructures using the C child
    assert kernel("tree", lam=lam, sigma={"C": 0.0}).value(a, b) == pytest.approx(1 + lam**2)
    # different roots: nothing in common
    assert kernel("tree").value(a, Tree("s", b.children)) == 0.0
    # a matching grandchild counts only under matching children
    c = Tree("r", [("A", Tree("x", [("mod", Tree("w"))]))])
    d = Tree("r", [("A", Tree("x", [("mod", Tree("w"))]))])
    inner = 1 * (1 + lam**2 * 1)  # K at the A child
    assert kernel("tree", lam=lam).value(c, d) == pytest.approx(1 + lam**2 * inner * 1)


# --------------------------------------------------------------------- properties
def test_sigma_one_equals_stationary_exactly():
    rng = random.Random(8)
    X = [random_tree(rng) for _ in range(25)]
    ones = {e: 1.0 for e in EDGES}
    for decay in ("span", "length"):
        np.testing.assert_array_equal(
            kernel("tree", lam=0.7, decay=decay).gram(X),
            kernel("tree", lam=0.7, decay=decay, sigma=ones).gram(X),
        )


def _prune(t: Tree, label: str) -> Tree:
    return Tree(t.label, [(e, _prune(s, label)) for e, s in t.children if e != label])


def test_sigma_zero_equals_pruned_trees_with_length_decay():
    rng = random.Random(9)
    for _ in range(40):
        x, y = random_tree(rng), random_tree(rng)
        label = rng.choice(EDGES)
        lam = rng.uniform(0.1, 1.0)
        got = kernel("tree", lam=lam, decay="length", sigma={label: 0.0}).value(x, y)
        want = kernel("tree", lam=lam, decay="length").value(_prune(x, label), _prune(y, label))
        assert got == pytest.approx(want, rel=1e-12, abs=0)
        # span decay at λ = 1 as well
        got = kernel("tree", lam=1.0, sigma={label: 0.0}).value(x, y)
        want = kernel("tree", lam=1.0).value(_prune(x, label), _prune(y, label))
        assert got == pytest.approx(want, rel=1e-12, abs=0)


def _trees(depth: int):
    leaf = st.sampled_from(NODES[:3]).map(Tree)
    if depth == 0:
        return leaf
    child = st.tuples(st.sampled_from(EDGES[:3]), _trees(depth - 1))
    return st.builds(Tree, st.sampled_from(NODES[:2]), st.lists(child, max_size=3))


trees_st = _trees(2)


@settings(max_examples=40, deadline=None)
@given(
    X=st.lists(trees_st, min_size=1, max_size=8),
    lam=st.floats(0.05, 1.0),
    decay=st.sampled_from(["span", "length"]),
    contiguous=st.booleans(),
    sigma=st.dictionaries(st.sampled_from(EDGES), st.floats(0.0, 2.0), max_size=3),
)
def test_symmetric_psd(X, lam, decay, contiguous, sigma):
    K = kernel("tree", lam=lam, decay=decay, contiguous=contiguous, sigma=sigma).gram(X)
    np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=0)
    scale = max(1.0, float(np.abs(K).max()))
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * scale


@settings(max_examples=25, deadline=None)
@given(X=st.lists(trees_st, min_size=1, max_size=6), lam=st.floats(0.05, 1.0))
def test_normalised_diagonal_is_one(X, lam):
    K = Normalized(kernel("tree", lam=lam)).gram(X)
    np.testing.assert_allclose(np.diag(K), 1.0, rtol=1e-12)


def test_parallel_equals_serial():
    rng = random.Random(10)
    X = [random_tree(rng, 3, 4) for _ in range(60)]
    k = kernel("tree", lam=0.8, sigma={"ARG1": 0.0})
    np.testing.assert_allclose(k.gram(X, block_size=16), k.gram(X), rtol=1e-13)
    np.testing.assert_allclose(k.gram(X, X[:7]), k.gram(X)[:, :7], rtol=1e-13)


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"lam": -0.1}, ValueError, "lam"),
        ({"decay": "depth"}, ValueError, "decay"),
        ({"contiguous": "yes"}, TypeError, "contiguous"),
        ({"sigma": {"ARG1": -0.5}}, ValueError, "ARG1"),
    ],
)
def test_bad_parameters(params, error, match):
    t = Tree("a")
    with pytest.raises(error, match=match):
        kernel("tree", **params).value(t, t)


def test_bad_input_names_the_item():
    with pytest.raises(TypeError, match="item 0"):
        kernel("tree").gram(["(a :ARG0 b)"])


def test_tree_list_slices_gathers_and_pickles():
    import pickle

    rng = random.Random(12)
    trees = [random_tree(rng) for _ in range(25)]
    k = kernel("tree", lam=0.8, sigma={"ARG1": 0.0})
    X = k.check_input(trees)
    assert list(X) == trees and len(X) == 25
    idx = [7, 0, 24, 7]
    for sub, want in [(X[3:17], trees[3:17]), (X[1::3], trees[1::3]), (X[idx], [trees[i] for i in idx])]:
        assert list(sub) == want
        np.testing.assert_array_equal(k.gram_block(sub, X[:6]), k.gram_block(want, trees[:6]))
    Z = pickle.loads(pickle.dumps(X[4:12]))
    assert list(Z) == trees[4:12]
    assert list(Z[[3, 1]]) == [trees[7], trees[5]]
    full = k.gram_block(trees, trees[10:20])
    np.testing.assert_array_equal(k.gram_block(X, k.check_input(trees[10:20])), full)
    np.testing.assert_array_equal(k.gram_block(Z, trees[10:20]), full[4:12])
    np.testing.assert_array_equal(k.diag_block(Z[[2, 0]]), k.diag_block([trees[6], trees[4]]))
    arrays = sum(a.nbytes for a in (X.tree_offsets, X.labels, X.edges, X.child_offsets,
                                    X.child_index))
    assert sys.getsizeof(X) >= arrays + sys.getsizeof(X.vocab) > arrays
