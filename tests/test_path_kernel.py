"""Path kernel: literal by-definition oracle, the paper's Table 1 paths, properties."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from structkernels import Normalized, Path, kernel
from structkernels.kernels.path import PathKernel
from structkernels.kernels.tuples import TupleKernel, WeightedTupleKernel, WordVectorSimilarity

EDGES = ["ARG0", "ARG1", "ARG2", "op1", "mod"]
NODES = ["protein", "enzyme", "bind-01", "site", "and"]


# ------------------------------------------------------------------ the oracle
def oracle_path(S, T, lam, max_len=None, tk=None):
    """K(S, T) by enumerating every pair of equal-length index subsequences (Sec. 4.1)."""
    tk = tk or TupleKernel()
    longest = min(len(S), len(T))
    if max_len is not None:
        longest = min(longest, max_len)
    total = 0.0
    for n in range(1, longest + 1):
        for i in itertools.combinations(range(len(S)), n):
            for j in itertools.combinations(range(len(T)), n):
                prod = 1.0
                for a, b in zip(i, j, strict=True):
                    prod *= tk(S[a], T[b])
                    if prod == 0.0:
                        break
                if prod:
                    span = (i[-1] - i[0] + 1) + (j[-1] - j[0] + 1)
                    total += prod * lam**span
    return total


def random_path(rng: random.Random, max_len: int = 6) -> Path:
    n = rng.randint(0, max_len)
    tuples = []
    for k in range(n):
        edge = None if (k == 0 and rng.random() < 0.5) or rng.random() < 0.08 else rng.choice(EDGES)
        tuples.append((edge, rng.choice(NODES)))
    return Path(tuples)


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


def word_vectors(seed: int) -> dict[str, np.ndarray]:
    g = np.random.default_rng(seed)
    # a few labels deliberately without a vector (indicator fallback)
    return {w: g.normal(size=4) for w in NODES[:-1] + EDGES[:-1]}


def assert_close(fast: np.ndarray, slow: np.ndarray, rtol: float = 1e-10) -> None:
    fast = np.asarray(fast)
    slow = np.asarray(slow)
    np.testing.assert_allclose(fast, slow, rtol=rtol, atol=1e-300)


# ------------------------------------------------------- oracle agreement (≥ 200)
@pytest.mark.parametrize("max_len", [None, 1, 2, 3])
@pytest.mark.parametrize("node_kernel", ["indicator", "wordvec"])
def test_equals_literal_enumeration(max_len, node_kernel):
    rng = random.Random(1000 + (max_len or 0) + (7 if node_kernel == "wordvec" else 0))
    n_pairs = 0
    for rep in range(8):
        lam = rng.choice([1.0, rng.uniform(0.05, 1.0)])
        sigma = random_sigma(rng)
        tk = None
        if node_kernel == "wordvec":
            wv = WordVectorSimilarity(word_vectors(rep), gamma=rng.uniform(-0.9, 0.6))
            edge = wv if rep % 2 else "indicator"
            tk = TupleKernel(edge_kernel=edge, node_kernel=wv)
        k = kernel("path", lam=lam, max_len=max_len, sigma=sigma, tuple_kernel=tk)
        X = [random_path(rng) for _ in range(5)]
        Y = [random_path(rng) for _ in range(6)]
        fast = k.gram_block(X, Y)
        eff = WeightedTupleKernel(tk or TupleKernel(), sigma)
        slow = np.array([[oracle_path(x, y, lam, max_len, eff) for y in Y] for x in X])
        assert_close(fast, slow)
        # symmetric and diagonal modes agree with the full block
        sym = k.gram_block_symmetric(X + Y)
        assert_close(sym[:5, 5:], slow)
        assert_close(k.diag_block(X), [oracle_path(x, x, lam, max_len, eff) for x in X])
        n_pairs += fast.size
    assert n_pairs >= 200


def test_hand_computed_small_case():
    a = Path([(None, "bind-01"), ("ARG1", "enzyme"), ("ARG2", "small-molecule")])
    b = Path([(None, "bind-01"), ("ARG2", "small-molecule")])
    lam = 0.5
    # matches (0,0) and (2,1): lam^(1+1) each; the pair of both: spans 3 and 2
    expected = 2 * lam**2 + lam**5
    assert kernel("path", lam=lam).value(a, b) == pytest.approx(expected, rel=1e-14)
    assert kernel("path", lam=lam, max_len=1).value(a, b) == pytest.approx(2 * lam**2, rel=1e-14)
    assert kernel("path", lam=lam, sigma={"ARG2": 0.0}).value(a, b) == pytest.approx(lam**2, rel=1e-14)
    assert kernel("path", lam=lam, sigma={"ARG2": 3.0}).value(a, b) == pytest.approx(
        lam**2 + 9 * lam**2 + 9 * lam**5, rel=1e-14
    )


def test_empty_paths_and_no_match():
    k = kernel("path")
    e = Path([])
    p = Path([(None, "x"), ("ARG0", "y")])
    q = Path([(None, "z")])
    assert k.value(e, p) == 0.0 and k.value(e, e) == 0.0 and k.value(p, q) == 0.0
    assert k.gram([e, p, q]).shape == (3, 3)


# ------------------------------------------------------------ Table 1 of the paper
def table1_paths() -> tuple[Path, Path]:
    """The two paths of Table 1 (Garg et al. 2018), as (edge, node) tuples.

    The table writes the upward part of a path as (node, edge) and the root
    as (bind); "(enyzme, arg1)" is the table's typo for (enzyme, arg1).
    """
    pos = Path([
        ("example", "protein"), ("arg0", "protein"), ("arg1-of", "have"), ("op1-of", "and"),
        ("purpose-of", "site"), (None, "bind"), (None, "bind"), ("arg1", "enzyme"),
        (None, "bind"), ("purpose-of", "site"), ("op1-of", "and"), ("op2", "site"),
        ("purpose", "exchange"), ("arg1", "small-molecule"),
    ])
    neg = Path([
        ("arg1", "enzyme"), (None, "bind"), (None, "bind"), ("purpose-of", "site"),
        ("op1-of", "and"), ("op2", "site"), ("purpose", "exchange"), ("arg1", "small-molecule"),
        (None, "bind"), ("purpose-of", "site"), ("op1-of", "and"), ("op2", "site"),
        ("arg2", "small-molecule"),
    ])
    return pos, neg


SCREENED = {"arg0": 0.0, "arg2": 0.0, "op2": 0.0, "example": 0.0}


def test_table1_counts_by_hand():
    pos, neg = table1_paths()
    # max_len = 1, lam = 1 counts matching tuple pairs: enzyme 1, bind 3x3, purpose-of site
    # 2x2, op1-of and 2x2, op2 site 1x2, exchange 1, arg1 small-molecule 1 -> 22
    assert kernel("path", lam=1.0, max_len=1).value(pos, neg) == 22.0
    # σ = 0 on arg0, arg2, op2, example screens the two op2-site matches out
    assert kernel("path", lam=1.0, max_len=1, sigma=SCREENED).value(pos, neg) == 20.0
    assert kernel("path", lam=0.8, max_len=1).value(pos, neg) == pytest.approx(22 * 0.64, rel=1e-14)
    # self-similarity of the screened positive path: 11 kept tuples, bind 3x3,
    # purpose-of site 2x2, op1-of and 2x2, the other 4 once -> 21
    assert kernel("path", lam=1.0, max_len=1, sigma=SCREENED).value(pos, pos) == 21.0


@pytest.mark.parametrize("sigma", [None, SCREENED])
def test_table1_equals_enumeration(sigma):
    pos, neg = table1_paths()
    k = kernel("path", lam=0.8, max_len=3, sigma=sigma)
    eff = WeightedTupleKernel(TupleKernel(), sigma)
    assert k.value(pos, neg) == pytest.approx(oracle_path(pos, neg, 0.8, 3, eff), rel=1e-10)


def test_table1_screened_tuples_are_ignored():
    pos, neg = table1_paths()
    k = kernel("path", lam=1.0, sigma=SCREENED)

    def drop(p):
        return Path([t for t in p if t[0] not in SCREENED])

    # λ = 1: σ = 0 equals the kernel of the paths with those tuples deleted
    assert k.value(pos, neg) == pytest.approx(kernel("path", lam=1.0).value(drop(pos), drop(neg)), rel=1e-12)
    # any λ: what a screened tuple says does not matter
    k8 = kernel("path", lam=0.8, sigma=SCREENED)
    renamed = Path([(e, "other") if e in SCREENED else (e, n) for e, n in neg])
    assert k8.value(pos, neg) == pytest.approx(k8.value(pos, renamed), rel=1e-12)
    # and screening lowers the similarity of this negative to the positive
    assert k8.value(pos, neg) < kernel("path", lam=0.8).value(pos, neg)


# --------------------------------------------------------------------- properties
def test_sigma_one_equals_stationary_exactly():
    rng = random.Random(3)
    X = [random_path(rng) for _ in range(30)]
    ones = {e: 1.0 for e in EDGES}
    for max_len in (None, 2):
        K0 = kernel("path", lam=0.7, max_len=max_len).gram(X)
        K1 = kernel("path", lam=0.7, max_len=max_len, sigma=ones).gram(X)
        np.testing.assert_array_equal(K0, K1)


def test_sigma_zero_lambda_one_equals_deleted_tuples():
    rng = random.Random(4)
    for _ in range(40):
        x, y = random_path(rng, 8), random_path(rng, 8)
        label = rng.choice(EDGES)

        def drop(p, label=label):
            return Path([t for t in p if t[0] != label])

        for max_len in (None, 2):
            got = kernel("path", lam=1.0, max_len=max_len, sigma={label: 0.0}).value(x, y)
            want = kernel("path", lam=1.0, max_len=max_len).value(drop(x), drop(y))
            assert got == pytest.approx(want, rel=1e-12, abs=0)


tuples_st = st.tuples(st.sampled_from([None, *EDGES[:3]]), st.sampled_from(NODES[:3]))
paths_st = st.lists(tuples_st, min_size=0, max_size=6).map(Path)
sigma_st = st.dictionaries(st.sampled_from(EDGES), st.floats(0.0, 2.0), max_size=4)


@settings(max_examples=40, deadline=None)
@given(
    X=st.lists(paths_st, min_size=1, max_size=8),
    lam=st.floats(0.05, 1.0),
    max_len=st.sampled_from([None, 1, 3]),
    sigma=sigma_st,
)
def test_symmetric_psd(X, lam, max_len, sigma):
    K = kernel("path", lam=lam, max_len=max_len, sigma=sigma).gram(X)
    np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=0)
    scale = max(1.0, float(np.abs(K).max()))
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * scale


@settings(max_examples=25, deadline=None)
@given(X=st.lists(paths_st.filter(len), min_size=1, max_size=6), lam=st.floats(0.05, 1.0))
def test_normalised_diagonal_is_one(X, lam):
    K = Normalized(kernel("path", lam=lam)).gram(X)
    np.testing.assert_allclose(np.diag(K), 1.0, rtol=1e-12)
    assert np.all(K <= 1.0 + 1e-12)


def test_gram_engine_parallel_and_blocks_agree():
    rng = random.Random(5)
    X = [random_path(rng, 10) for _ in range(70)]
    k = kernel("path", lam=0.8, sigma={"ARG1": 0.5})
    K1 = k.gram(X, block_size=16)
    K2 = k.gram(X)
    np.testing.assert_allclose(K1, K2, rtol=1e-13)
    Y = X[:9]
    np.testing.assert_allclose(k.gram(X, Y), K2[:, :9], rtol=1e-13)


# ------------------------------------------------------------------ parameters
def test_clone_and_set_params():
    k = kernel("path", lam=0.8, max_len=None, sigma={"ARG0": 0.0})
    c = clone(k)
    assert c.get_params()["sigma"] == {"ARG0": 0.0}
    c.set_params(sigma={"ARG1": 0.0})
    p = Path([(None, "a"), ("ARG0", "b"), ("ARG1", "c")])
    assert k.value(p, p) != c.value(p, p)
    assert isinstance(k, PathKernel)


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"lam": 0.0}, ValueError, "lam"),
        ({"lam": 1.5}, ValueError, "lam"),
        ({"max_len": 0}, ValueError, "max_len"),
        ({"sigma": {"ARG0": -1.0}}, ValueError, "ARG0"),
        ({"sigma": {"ARG0": float("nan")}}, ValueError, "ARG0"),
        ({"sigma": [("ARG0", 1.0)]}, TypeError, "sigma"),
        ({"tuple_kernel": "indicator"}, TypeError, "tuple_kernel"),
    ],
)
def test_bad_parameters(params, error, match):
    p = Path([(None, "a")])
    with pytest.raises(error, match=match):
        kernel("path", **params).value(p, p)


def test_bad_input_names_the_item():
    with pytest.raises(TypeError, match="item 1"):
        kernel("path").gram([Path([(None, "a")]), [("ARG0", "b")]])


# ------------------------------------------------------------ encoded input lists
def test_path_list_slices_gathers_and_pickles():
    import pickle

    rng = random.Random(11)
    paths = [random_path(rng, 8) for _ in range(30)]
    k = kernel("path", lam=0.8, sigma={"ARG0": 0.3})
    X = k.check_input(paths)
    assert list(X) == paths and X[-1] == paths[-1] and len(X) == 30
    idx = [5, 0, 29, 5]
    for sub, want in [(X[3:17], paths[3:17]), (X[::4], paths[::4]), (X[idx], [paths[i] for i in idx]),
                      (X[np.array(idx)], [paths[i] for i in idx])]:
        assert list(sub) == want
        np.testing.assert_array_equal(k.gram_block(sub, X[:7]), k.gram_block(want, paths[:7]))
    # after pickling only the arrays travel; the paths are rebuilt from them
    Z = pickle.loads(pickle.dumps(X[2:9]))
    assert list(Z) == paths[2:9] and list(Z[[1, 0]]) == [paths[3], paths[2]]
    # mixed inputs: encoded with different vocabularies, or raw lists
    Y = k.check_input(paths[10:20])
    full = k.gram_block(paths, paths[10:20])
    np.testing.assert_array_equal(k.gram_block(X, Y), full)
    np.testing.assert_array_equal(k.gram_block(Z, paths[10:20]), full[2:9])
    np.testing.assert_array_equal(k.gram_block(paths, Y), full)
    np.testing.assert_array_equal(k.gram_block_symmetric(Z), k.gram_block(paths[2:9], paths[2:9]))
    assert isinstance(X[:3] + X[3:5], list)
    with pytest.raises(IndexError):
        X[30]


def test_encoded_lists_report_their_size():
    """sys.getsizeof (and dask's sizeof, which joblib's dask backend reads to scatter large
    arguments once) counts the arrays and the vocabulary, not the 72-byte object header."""
    import pickle
    import sys

    rng = random.Random(13)
    paths = [random_path(rng, 8) for _ in range(300)]
    X = kernel("path").check_input(paths)
    arrays = X.offsets.nbytes + X.edges.nbytes + X.nodes.nbytes
    vocab = sys.getsizeof(X.vocab)
    assert vocab > sum(sys.getsizeof(label) for label in X.vocab.labels[1:]) > 0
    assert sys.getsizeof(X) >= arrays + vocab
    assert sys.getsizeof(X) > len(pickle.dumps(X)) / 2 > 1000
    assert sys.getsizeof(X[:30]) < sys.getsizeof(X)
    sizeof = pytest.importorskip("dask.sizeof", reason="the 'distributed' extra (dask) is not installed")
    assert sizeof.sizeof(X) >= arrays + vocab


# ------------------------------------------- long, repetitive paths (dense programme)
@pytest.mark.parametrize("max_len", [None, 1, 3])
@pytest.mark.parametrize("node_kernel", ["indicator", "wordvec"])
def test_repetitive_paths_dense_programme_equals_enumeration(max_len, node_kernel):
    # two labels only: most position pairs match, so the pair is computed by
    # the dense O(L |S| |S'|) programme rather than the sparse one over matches
    rng = random.Random(77 + (max_len or 0))
    tk = None
    if node_kernel == "wordvec":
        wv = WordVectorSimilarity(word_vectors(3), gamma=0.2)
        tk = TupleKernel(node_kernel=wv)
    for _ in range(4):
        lam = rng.uniform(0.3, 1.0)
        X = [Path([(rng.choice(EDGES[:1]), rng.choice(NODES[:2])) for _ in range(rng.randint(7, 8))])
             for _ in range(3)]
        k = kernel("path", lam=lam, max_len=max_len, tuple_kernel=tk)
        eff = tk or TupleKernel()
        slow = np.array([[oracle_path(x, y, lam, max_len, eff) for y in X] for x in X])
        assert_close(k.gram_block(X, X), slow)
        assert_close(k.gram_block_symmetric(X), slow)


def test_long_repetitive_path_costs_quadratic_not_quartic():
    # 2,000 equal tuples: 4 M matching pairs; the sparse programme would need
    # 1.6e13 steps, the dense one 4 M.  The value is finite and symmetric.
    p = Path([(None, "a")] + [("ARG0", "x")] * 2000)
    q = Path([(None, "a")] + [("ARG0", "x")] * 1500)
    k = kernel("path", lam=0.5, max_len=3)
    K = k.gram_block_symmetric([p, q])
    assert np.isfinite(K).all() and K[0, 1] == K[1, 0] > 0


# ------------------------------------------- partial credit between tuples (node_mismatch)
@pytest.mark.parametrize("c", [0.3, 0.9, 1.0])
def test_node_mismatch_equals_enumeration(c):
    """Equal edges with different nodes count ``c``; many matches take the dense programme."""
    from structkernels.kernels.tuples import PartialIndicator

    rng = random.Random(int(100 * c))
    for _rep in range(6):
        lam = rng.choice([1.0, rng.uniform(0.3, 1.0)])
        sigma = random_sigma(rng)
        k = kernel("path", lam=lam, sigma=sigma, node_mismatch=c)
        # long paths over two edge labels: K**2 > 4 |S| |T| matches, the dense branch
        def few_edges():
            n = rng.randint(5, 8)
            return Path([(rng.choice(["ARG0", "ARG1"]), rng.choice(NODES)) for _ in range(n)])

        X = [few_edges() for _ in range(3)] + [random_path(rng, 8)]
        Y = [few_edges() for _ in range(3)] + [random_path(rng, 8)]
        eff = WeightedTupleKernel(TupleKernel(node_kernel=PartialIndicator(c)), sigma)
        slow = np.array([[oracle_path(x, y, lam, None, eff) for y in Y] for x in X])
        assert_close(k.gram_block(X, Y), slow, rtol=1e-9)
        assert_close(k.gram_block_symmetric(X + Y)[:4, 4:], slow, rtol=1e-9)
    # c = 0 is the indicator kernel exactly
    X = [random_path(rng, 6) for _ in range(5)]
    np.testing.assert_array_equal(
        kernel("path", node_mismatch=0.0).gram_block(X, X), kernel("path").gram_block(X, X)
    )


@pytest.mark.parametrize("c", [0.0, 0.25, 0.9, 1.0])
def test_partial_node_credit_by_id_equals_the_label_matrix(c):
    """``PartialIndicator`` compared by id (one weight) equals the same kernel as a matrix."""
    from structkernels.kernels.tuples import LabelKernel, PartialIndicator

    class AsMatrix(LabelKernel):  # the same similarity, through the dense KN route
        def matrix(self, a, b):
            return PartialIndicator(c).matrix(a, b)

    rng = random.Random(7 + int(100 * c))
    sigma = random_sigma(rng)
    X = [random_path(rng, 9) for _ in range(12)]
    for max_len in (None, 3):
        by_id = kernel("path", lam=0.7, sigma=sigma, node_mismatch=c, max_len=max_len)
        by_matrix = kernel("path", lam=0.7, sigma=sigma, max_len=max_len,
                           tuple_kernel=TupleKernel(node_kernel=AsMatrix()))
        np.testing.assert_allclose(by_id.gram_block_symmetric(X), by_matrix.gram_block_symmetric(X),
                                   rtol=1e-13, atol=0)
        np.testing.assert_allclose(by_id.gram_block(X[:5], X[5:]), by_matrix.gram_block(X[:5], X[5:]),
                                   rtol=1e-13, atol=0)


def test_node_mismatch_gives_partial_credit_and_checks_range():
    a = Path([(None, "bind-01"), ("ARG1", "enzyme")])
    b = Path([(None, "bind-01"), ("ARG1", "protein")])
    assert kernel("path", lam=1.0).value(a, b) == 1.0  # the root only
    # root, (ARG1) at weight 0.5, and the pair of both: 1 + 0.5 + 0.5
    assert kernel("path", lam=1.0, node_mismatch=0.5).value(a, b) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="node_mismatch"):
        kernel("path", node_mismatch=1.5).value(a, b)
    wv = TupleKernel(node_kernel=WordVectorSimilarity(word_vectors(0)))
    with pytest.raises(ValueError, match="node_mismatch"):
        kernel("path", node_mismatch=0.5, tuple_kernel=wv).value(a, b)
