"""Tokeniser, stemmer, PR features and kernel."""

from __future__ import annotations

import numpy as np
import pytest

from structkernels.kernels.names import kernel
from structkernels.kernels.srk.pr import PRKernel, overlap_features, pr_features
from structkernels.text import TextPipeline, stem, tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Shakespeare wrote Hamlet.", ["Shakespeare", "wrote", "Hamlet", "."]),
        ("He didn't pay $2.5 billion, did he?",
         ["He", "did", "n't", "pay", "$", "2.5", "billion", ",", "did", "he", "?"]),
        ('The U.S. "witness" said', ["The", "U.S.", '"', "witness", '"', "said"]),
        ("Amrozi's brother; 1,000 state-owned firms (10:30)",
         ["Amrozi", "'s", "brother", ";", "1,000", "state-owned", "firms", "(", "10:30", ")"]),
        ("Wait... -- no", ["Wait", "...", "--", "no"]),
        ("", []),
    ],
)
def test_tokenize(text, expected):
    assert tokenize(text) == expected


def test_lowercase_and_stem():
    assert tokenize("The Witness", lowercase=True) == ["the", "witness"]
    assert stem(["accused", "distorting", "evidence", "running"]) == [
        "accus", "distort", "evid", "run"]
    assert TextPipeline(lowercase=False, stem=False)("Ran fast.") == ("Ran", "fast", ".")
    assert TextPipeline()("Ran FAST.") == ("ran", "fast", ".")
    with pytest.raises(TypeError, match="bare str"):
        stem("running")
    with pytest.raises(TypeError):
        tokenize(["not", "a", "string"])


def test_pr_features_by_hand():
    # s = a b b c, t = b a d: clipped matches a:1, b:1 -> 2
    f = pr_features([(("a", "b", "b", "c"), ("b", "a", "d")), ((), ("x",))])
    np.testing.assert_allclose(f, [[2 / 3, 2 / 4], [0.0, 0.0]])


def test_pr_kernel_linear_and_rbf():
    X = [(("a", "b"), ("a", "c")), (("a",), ("a",)), (("x", "y"), ("z",))]
    f = pr_features(X)
    np.testing.assert_allclose(kernel("pr").gram(X), f @ f.T)
    G = PRKernel(gamma=2.0).gram(X)
    d2 = ((f[:, None] - f[None]) ** 2).sum(-1)
    np.testing.assert_allclose(G, np.exp(-2.0 * d2))
    np.testing.assert_allclose(PRKernel(gamma=2.0).diag(X), 1.0)
    with pytest.raises(ValueError, match="gamma"):
        PRKernel(gamma=-1.0).gram(X)


def test_pr_added_to_an_srk():
    X = [(("a", "b"), ("a", "c")), (("a", "a"), ("a", "b")), (("x", "y"), ("x", "x"))]
    combo = kernel("kb-srk", k=1, kmax=2) + kernel("pr")
    G = combo.gram(X)
    np.testing.assert_allclose(G, kernel("kb-srk", k=1, kmax=2).gram(X) + kernel("pr").gram(X))
    assert np.linalg.eigvalsh(G).min() > -1e-10


def _overlap_by_definition(s, t, n_max):
    """n-gram precision/recall/F by listing n-grams and striking out matches one by one."""
    row = []
    for n in range(1, n_max + 1):
        gs = [tuple(s[i:i + n]) for i in range(len(s) - n + 1)]
        gt = [tuple(t[i:i + n]) for i in range(len(t) - n + 1)]
        left, m = list(gt), 0
        for g in gs:
            if g in left:
                left.remove(g)
                m += 1
        p = m / len(gt) if gt else 0.0
        r = m / len(gs) if gs else 0.0
        row += [p, r, 2 * p * r / (p + r) if p + r else 0.0]
    return row + [len(s) - len(t), abs(len(s) - len(t)),
                  min(len(s), len(t)) / max(len(s), len(t), 1)]


def test_overlap_features_by_definition_and_pr_is_their_unigram_part():
    rng = np.random.default_rng(0)
    X = [(tuple(rng.choice(list("abcd"), rng.integers(0, 7))),
          tuple(rng.choice(list("abcd"), rng.integers(0, 7)))) for _ in range(40)]
    F = overlap_features(X, 3)
    np.testing.assert_allclose(F, [_overlap_by_definition(s, t, 3) for s, t in X])
    np.testing.assert_allclose(F[:, :2], pr_features(X))
    with pytest.raises(ValueError, match="ngram_max"):
        overlap_features(X, 0)
