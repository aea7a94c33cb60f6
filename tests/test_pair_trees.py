"""Pair trees: the two dependency trees of a re-writing with its aligned words marked
(``datasets.rewriting.aligned_trees``) and the pair kernel, a sum of normalised tree kernels
over the two sides (``ViewSum``)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Normalized, Tree, gram, kernel
from structkernels.datasets.rewriting import RewritingCorpus, aligned_trees
from structkernels.kernels.views import ViewSum

POS = ["VERB", "REL-VERB", "NOUN", "REL-NOUN", "DET"]
DEPS = ["nsubj", "dobj", "det", "aux"]


def pair_kernel(**params):
    return ViewSum([(0, Normalized(kernel("tree", **params))),
                    (1, Normalized(kernel("tree", **params)))])


def by_definition(x, y, **params):
    """``TK^(a1, a2) + TK^(b1, b2)``, each side's tree kernel normalised, pair by pair."""
    tk = kernel("tree", **params)
    return sum(tk.value(a, b) / np.sqrt(tk.value(a, a) * tk.value(b, b))
               for a, b in zip(x, y, strict=True))


# ------------------------------------------------------------------ hand-made parses
@pytest.fixture(scope="module")
def hand_nlp():
    """A stand-in for a spaCy pipeline whose parses are written by hand (spaCy itself, no
    model): what each sentence is, exactly, so the trees can be checked node by node."""
    spacy = pytest.importorskip("spacy", reason="spaCy (extra 'parse') is not installed")
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    vocab = Vocab()
    # words, lemmas, POS, dependency labels, heads (absolute)
    table = {
        "A man plays.": ("A man plays .", "a man play .", "DET NOUN VERB PUNCT",
                         "det nsubj ROOT punct", [1, 2, 2, 2]),
        "The man is playing.": ("The man is playing .", "the man be play .",
                                "DET NOUN AUX VERB PUNCT", "det nsubj aux ROOT punct",
                                [1, 3, 3, 3, 3]),
        # a punctuation token with a dependent: the dependent moves up to "said"
        "He said - loudly - no.": ("He said - loudly - no .", "he say - loudly - no .",
                                   "PRON VERB PUNCT ADV PUNCT INTJ PUNCT",
                                   "nsubj ROOT punct advmod punct intj punct",
                                   [1, 1, 1, 2, 1, 1, 1]),
        "She spoke. He left.": ("She spoke . He left .", "she speak . he leave .",
                                "PRON VERB PUNCT PRON VERB PUNCT",
                                "nsubj ROOT punct nsubj ROOT punct", [1, 1, 1, 4, 4, 4]),
        "Kids run.": ("Kids run .", "kid run .", "NOUN VERB PUNCT", "nsubj ROOT punct",
                      [1, 1, 1]),
        # a whitespace token (two spaces in the text) is dropped as punctuation is
        "Kids  sing.": (["Kids", " ", "sing", "."], ["kid", " ", "sing", "."],
                        "NOUN SPACE VERB PUNCT",
                        "nsubj dep ROOT punct", [2, 0, 2, 2]),
        "Children sprint.": ("Children sprint .", "child sprint .", "NOUN VERB PUNCT",
                             "nsubj ROOT punct", [1, 1, 1]),
    }

    class HandPipeline:
        seen: list[str] = []

        def pipe(self, texts, batch_size=256):
            for text in texts:
                self.seen.append(text)
                words, lemmas, pos, deps, heads = table[text]
                words = words.split() if isinstance(words, str) else words
                lemmas = lemmas.split() if isinstance(lemmas, str) else lemmas
                yield Doc(vocab, words=words, lemmas=lemmas, pos=pos.split(),
                          deps=deps.split(), heads=heads)

    assert spacy is not None
    return HandPipeline()


def test_rel_marks_edges_and_word_order(hand_nlp):
    (s, t), = aligned_trees([("A man plays.", "The man is playing.")], hand_nlp)
    # "man" by form, "plays"/"playing" by lemma; "A"/"The" and "is" match nothing
    assert s == Tree("REL-VERB", [("nsubj", Tree("REL-NOUN", [("det", Tree("DET"))]))])
    assert t == Tree("REL-VERB", [("nsubj", Tree("REL-NOUN", [("det", Tree("DET"))])),
                                  ("aux", Tree("AUX"))])
    assert [e for e, _ in t.children] == ["nsubj", "aux"]  # word order: man, is


def test_punctuation_dropped_dependents_move_up_and_sentences_joined(hand_nlp):
    (s, t), = aligned_trees([("He said - loudly - no.", "She spoke. He left.")], hand_nlp)
    # "loudly" hung from the dash: it now hangs from "said", between "He" and "no"
    assert s == Tree("VERB", [("nsubj", Tree("REL-PRON")), ("advmod", Tree("ADV")),
                              ("intj", Tree("INTJ"))])
    assert t == Tree("TEXT", [("ROOT", Tree("VERB", [("nsubj", Tree("PRON"))])),
                              ("ROOT", Tree("VERB", [("nsubj", Tree("REL-PRON"))]))])


def test_each_distinct_sentence_parsed_once_and_corpus_input(hand_nlp):
    hand_nlp.seen.clear()
    corpus = RewritingCorpus(["A man plays.", "Kids run.", "A man plays."],
                             ["The man is playing.", "A man plays.", "Kids run."],
                             np.array([1, 0, 0]), ["a", "b", "c"])
    trees = aligned_trees(corpus, hand_nlp)
    assert sorted(hand_nlp.seen) == sorted({*corpus.sources, *corpus.targets})
    assert len(trees) == 3
    # the marks depend on the pair: "A man plays." is all unaligned against "Kids run."
    assert trees[1][1] == Tree("VERB", [("nsubj", Tree("NOUN", [("det", Tree("DET"))]))])
    assert trees[0][0].label == "REL-VERB"


def test_whitespace_dropped(hand_nlp):
    (s, t), = aligned_trees([("Kids  sing.", "Kids run.")], hand_nlp)
    assert s == Tree("VERB", [("nsubj", Tree("REL-NOUN"))])


def test_vector_alignment_threshold(hand_nlp):
    vectors = {"Kids": [1.0, 0.0], "children": [0.8, 0.6], "run": [0.0, 1.0],
               "sprint": [0.0, -1.0]}
    pairs = [("Kids run.", "Children sprint.")]
    (s, t), = aligned_trees(pairs, hand_nlp)
    assert s == Tree("VERB", [("nsubj", Tree("NOUN"))])
    (s, t), = aligned_trees(pairs, hand_nlp, vectors=vectors, threshold=0.8)
    # cos(Kids, children) = 0.8 (the lower-cased key serves "Children"); run/sprint: -1
    assert s == Tree("VERB", [("nsubj", Tree("REL-NOUN"))])
    assert t == Tree("VERB", [("nsubj", Tree("REL-NOUN"))])
    (s, _), = aligned_trees(pairs, hand_nlp, vectors=vectors, threshold=0.81)
    assert s == Tree("VERB", [("nsubj", Tree("NOUN"))])
    (s, _), = aligned_trees(pairs, hand_nlp, vectors=vectors, threshold=-1.0)
    assert s == Tree("REL-VERB", [("nsubj", Tree("REL-NOUN"))])


@pytest.mark.parametrize("pairs, error, match", [
    ("A man plays.", TypeError, "single string"),
    ([("A man plays.",)], TypeError, "pair 0"),
    ([("A man plays.", 3)], TypeError, "pair 0"),
])
def test_bad_pairs(hand_nlp, pairs, error, match):
    with pytest.raises(error, match=match):
        aligned_trees(pairs, hand_nlp)


def test_bad_options(hand_nlp):
    pairs = [("Kids run.", "Children sprint.")]
    with pytest.raises(ValueError, match="threshold"):
        aligned_trees(pairs, hand_nlp, threshold=1.5)
    with pytest.raises(TypeError, match="vectors"):
        aligned_trees(pairs, hand_nlp, vectors=[1.0])
    with pytest.raises(ValueError, match="Kids"):
        aligned_trees(pairs, hand_nlp, vectors={"Kids": [np.nan, 1.0], "run": [1.0, 0.0]})


def test_pipeline_without_tags_is_refused():
    pytest.importorskip("spacy", reason="spaCy (extra 'parse') is not installed")
    import spacy

    with pytest.raises(ValueError, match="coarse POS"):
        aligned_trees([("Kids run.", "Children sprint.")], spacy.blank("en"))


# ------------------------------------------------------------------ the English pipeline
@pytest.fixture(scope="module")
def english():
    pytest.importorskip("spacy", reason="parsing needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        return load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")


def test_english_pipeline_trees(english):
    (s, t), (u, v) = aligned_trees(
        [("A man plays.", "The man is playing."),
         ("The cat sleeps. It is tired!", "A dog barks.")], english)
    assert s == Tree("REL-VERB", [("nsubj", Tree("REL-NOUN", [("det", Tree("DET"))]))])
    assert t == Tree("REL-VERB", [("nsubj", Tree("REL-NOUN", [("det", Tree("DET"))])),
                                  ("aux", Tree("AUX"))])
    # two sentences under one root; nothing aligned but nothing either; no punctuation
    assert u.label == "TEXT" and [e for e, _ in u.children] == ["ROOT", "ROOT"]
    assert all(not n.label.startswith("REL-") for _, n in u.preorder())
    assert v == Tree("VERB", [("nsubj", Tree("NOUN", [("det", Tree("DET"))]))])
    assert all(n.label != "PUNCT" for tree in (s, t, u, v) for _, n in tree.preorder())


# ------------------------------------------------------------------ the pair kernel
def random_tree(rng: random.Random, depth: int = 2) -> Tree:
    kids = [(rng.choice(DEPS), random_tree(rng, depth - 1))
            for _ in range(rng.randint(0, 3 if depth > 0 else 0))]
    return Tree(rng.choice(POS[:2] if depth == 2 else POS), kids)


def random_pairs(seed: int, n: int) -> list[tuple[Tree, Tree]]:
    rng = random.Random(seed)
    return [(random_tree(rng), random_tree(rng)) for _ in range(n)]


@pytest.mark.parametrize("params", [{"lam": 0.5}, {"lam": 1.0, "decay": "length"},
                                    {"lam": 0.8, "contiguous": True}])
def test_pair_kernel_by_definition(params):
    X = random_pairs(1, 12)
    k = pair_kernel(**params)
    expected = np.array([[by_definition(x, y, **params) for y in X] for x in X])
    np.testing.assert_allclose(gram(k, X, n_jobs=1), expected, rtol=1e-12, atol=1e-14)
    x, y = X[0], X[5]
    assert k.value(x, y) == pytest.approx(by_definition(x, y, **params), rel=1e-12)


def test_pair_gram_through_the_engine_cross_and_parallel():
    X, Y = random_pairs(2, 30), random_pairs(3, 7)
    k = pair_kernel(lam=0.5)
    K = gram(k, X, n_jobs=1)
    np.testing.assert_allclose(gram(k, X, n_jobs=2, block_size=8), K, rtol=1e-13)
    cross = gram(k, Y, X, n_jobs=2)
    expected = np.array([[by_definition(y, x, lam=0.5) for x in X] for y in Y])
    np.testing.assert_allclose(cross, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.diag(K), 2.0, rtol=1e-12)


def _trees(depth):
    leaf = st.builds(Tree, st.sampled_from(POS))
    if depth == 0:
        return leaf
    child = st.tuples(st.sampled_from(DEPS[:2]), _trees(depth - 1))
    return st.builds(Tree, st.sampled_from(POS[:2]), st.lists(child, max_size=3))


@settings(max_examples=30, deadline=None)
@given(X=st.lists(st.tuples(_trees(2), _trees(2)), min_size=1, max_size=8),
       lam=st.floats(0.05, 1.0))
def test_pair_kernel_symmetric_psd(X, lam):
    K = gram(pair_kernel(lam=lam), X, n_jobs=1)
    np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=0)
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * max(1.0, float(np.abs(K).max()))
