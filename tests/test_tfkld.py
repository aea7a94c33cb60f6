"""TF-KLD (Ji & Eisenstein 2013): weights by definition, features, PSD, fitted on train only."""

import math

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold

from structkernels.kernels.tfkld import TfKld, TfKldKernel, ngram_features


def _pairs(rng, n, alphabet="abcdef", lo=2, hi=6):
    def sent():
        return tuple(rng.choice(list(alphabet), rng.integers(lo, hi + 1)).tolist())
    return [(sent(), sent()) for _ in range(n)]


def _weights_by_definition(X, y, vocab, ngram_max, a):
    """Bernoulli KL(p || q), p = P(k in one side | k in the other side, r = 1) and q the
    same for r = 0, counted over both directions of every pair, a pseudo-counts each."""
    out = {}
    for w in vocab:
        pq = []
        for label in (1, 0):
            hits = trials = 0
            for (s, t), r in zip(X, y, strict=True):
                if r != label:
                    continue
                fs, ft = set(ngram_features(s, ngram_max)), set(ngram_features(t, ngram_max))
                for mine, other in ((fs, ft), (ft, fs)):
                    if w in other:          # condition: k in the other side
                        trials += 1
                        hits += w in mine   # event: k in this side too
            pq.append((hits + a) / (trials + 2 * a))
        p, q = pq
        out[w] = p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
    return out


def test_weights_on_a_hand_made_corpus():
    # "not": shared by both paraphrases, in one side only of both non-paraphrases;
    # "cat": shared in every pair, so sharing it says nothing (weight 0)
    X = [(("not", "cat"), ("not", "cat")), (("not", "cat", "x"), ("cat", "not")),
         (("not", "cat"), ("cat",)), (("cat", "y"), ("not", "cat"))]
    y = [1, 1, 0, 0]
    tf = TfKld(n_components=1, ngram_max=1, smoothing=1.0).fit(X, y)
    w = {k: tf.weights_[j] for k, j in tf.vocabulary_.items()}
    p, q = (4 + 1) / (4 + 2), (0 + 1) / (2 + 2)       # P(shared | in the other side, r)
    assert w["not"] == pytest.approx(p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q)))
    assert w["cat"] == pytest.approx(0.0, abs=1e-12)
    # "x" (one side of a paraphrase) and "y" (one side of a non-paraphrase): no pair of
    # the other label holds it, so 1/2 there; (0 + 1) / (1 + 2) where it occurs
    px = 1 / 3
    assert w["x"] == pytest.approx(px * math.log(px / 0.5) + (1 - px) * math.log((1 - px) / 0.5))
    assert w["y"] == pytest.approx(0.5 * math.log(0.5 / px) + 0.5 * math.log(0.5 / (1 - px)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weights_equal_definition(seed):
    rng = np.random.default_rng(seed)
    X = _pairs(rng, 12)
    y = np.array([0, 1] * 6)
    tf = TfKld(n_components=3, ngram_max=2, min_df=2, smoothing=0.5).fit(X, y)
    ref = _weights_by_definition(X, y, tf.vocabulary_, 2, 0.5)
    for w, j in tf.vocabulary_.items():
        assert tf.weights_[j] == pytest.approx(ref[w], rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("factorization", ["nmf", "svd"])
def test_unlabeled_pairs_shape_the_basis_never_the_weights(factorization):
    rng = np.random.default_rng(6)
    X = _pairs(rng, 20)
    y = rng.integers(0, 2, 20)
    y[:2] = [0, 1]
    Z = _pairs(rng, 8, alphabet="abcxyz")
    a = TfKld(n_components=3, factorization=factorization).fit(X, y)
    b = TfKld(n_components=3, factorization=factorization).fit(X, y, unlabeled=Z)
    assert a.vocabulary_ == b.vocabulary_
    np.testing.assert_array_equal(a.weights_, b.weights_)
    F = b.transform(Z)
    assert F.shape == (8, 6) and np.isfinite(F).all()
    if factorization == "nmf":
        assert (F >= 0).all()


def test_vocabulary_min_df_counts_training_sentences():
    X = [(("a", "b"), ("a", "c")), (("a", "d"), ("e", "c")), (("b", "e"), ("f",))]
    tf = TfKld(n_components=1, ngram_max=1, min_df=2).fit(X, [1, 0, 0])
    assert set(tf.vocabulary_) == {"a", "b", "c", "e"}


def test_features_are_sum_and_absolute_difference_of_latent_vectors():
    rng = np.random.default_rng(3)
    X = _pairs(rng, 20)
    y = rng.integers(0, 2, 20)
    y[:2] = [0, 1]
    tf = TfKld(n_components=4).fit(X, y)
    U, V = tf.latent(X)
    np.testing.assert_allclose(tf.transform(X), np.hstack([U + V, np.abs(U - V)]))
    # swapping the sides of a pair does not change its features
    swapped = [(t, s) for s, t in X]
    np.testing.assert_allclose(tf.transform(swapped), tf.transform(X), atol=1e-12)


@pytest.mark.parametrize("gamma", [None, 0.5])
def test_kernel_is_psd_and_matches_features(gamma):
    rng = np.random.default_rng(4)
    X = _pairs(rng, 30)
    y = rng.integers(0, 2, 30)
    y[:2] = [0, 1]
    k = TfKldKernel(n_components=5, gamma=gamma).fit(X, y, unlabeled=X[:10])
    K = k(X)
    np.testing.assert_allclose(K, K.T, atol=1e-10)
    assert np.linalg.eigvalsh(K).min() > -1e-8 * max(1.0, np.abs(K).max())
    F = k.model_.transform(X)
    if gamma is None:
        np.testing.assert_allclose(K, F @ F.T, atol=1e-10)
    np.testing.assert_allclose(np.diag(K), k.diag(X), atol=1e-10)


def test_test_pairs_do_not_change_the_fit():
    rng = np.random.default_rng(5)
    X = _pairs(rng, 25)
    y = rng.integers(0, 2, 25)
    y[:2] = [0, 1]
    a = TfKldKernel(n_components=3, min_df=1).fit(X, y)
    b = TfKldKernel(n_components=3, min_df=1).fit(X, y)
    Z = _pairs(rng, 7, alphabet="abcxyz")
    np.testing.assert_allclose(a(Z, X), b(Z[:3] + Z[3:], X))
    np.testing.assert_allclose(a(Z[:3], X), b(Z, X)[:3])


def test_unfitted_and_bad_params():
    X = [(("a",), ("a",)), (("b",), ("c",))]
    with pytest.raises(NotFittedError):
        TfKldKernel()(X)
    with pytest.raises(ValueError, match="both labels"):
        TfKld(n_components=1, min_df=1).fit(X, [1, 1])
    with pytest.raises(ValueError, match="factorization"):
        TfKld(n_components=1, factorization="pca").fit(X, [0, 1])
    with pytest.raises(ValueError, match="smoothing"):
        TfKld(n_components=1, smoothing=0).fit(X, [0, 1])
    with pytest.raises(ValueError, match="gamma"):
        TfKldKernel(gamma=-1.0).validate_params()
    with pytest.raises(TypeError):
        TfKld(n_components=1, min_df=1).fit(["a b", "c d"], [0, 1])


def test_cross_fit_features_use_only_the_other_folds_labels():
    rng = np.random.default_rng(7)
    X = _pairs(rng, 30)
    y = np.array([0, 1] * 15)
    tf = TfKld(n_components=3, factorization="svd", cross_fit=3, random_state=2)
    F = tf.fit_transform(X, y)
    # the basis and the test-time features are those of a plain fit
    plain = TfKld(n_components=3, factorization="svd", random_state=2).fit(X, y)
    np.testing.assert_array_equal(tf.weights_, plain.weights_)
    np.testing.assert_allclose(tf.transform(X), plain.transform(X), atol=1e-12)
    # each fold's rows: weights from the other folds' labels by definition, through the basis
    for fit_idx, out_idx in StratifiedKFold(3, shuffle=True, random_state=2).split(X, y):
        ref = _weights_by_definition([X[i] for i in fit_idx], y[fit_idx], tf.vocabulary_, 2,
                                     tf.smoothing)
        w = np.array([ref[k] for k in sorted(tf.vocabulary_, key=tf.vocabulary_.get)])
        U, V = tf.latent([X[i] for i in out_idx], weights=w)
        np.testing.assert_allclose(F[out_idx], np.hstack([U + V, np.abs(U - V)]), atol=1e-10)
    with pytest.raises(ValueError, match="cross_fit"):
        TfKld(n_components=1, cross_fit=1).fit_transform(X, y)
