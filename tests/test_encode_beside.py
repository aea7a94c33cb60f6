"""Structures encoded beside others (one vocabulary, the others' ids kept): the Gram blocks
between them are those of separately encoded lists, and the others are left as they were."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Path, Tree, kernel

EDGES = ["nsubj", "dobj", "prep", "conj"]
NODES = ["bind", "PROT1", "PROT2", "cell", "new", "other"]


@st.composite
def paths(draw):
    n = draw(st.integers(1, 4))
    return Path([(None, draw(st.sampled_from(NODES)))]
                + [(draw(st.sampled_from(EDGES)), draw(st.sampled_from(NODES)))
                   for _ in range(n - 1)])


@st.composite
def trees(draw, depth=2):
    label = draw(st.sampled_from(NODES))
    if depth == 0:
        return Tree(label)
    kids = draw(st.lists(st.tuples(st.sampled_from(EDGES), trees(depth=depth - 1)), max_size=2))
    return Tree(label, kids)


@settings(max_examples=40, deadline=None)
@given(st.lists(paths(), min_size=1, max_size=6), st.lists(paths(), min_size=1, max_size=6))
def test_paths_beside_references_give_the_same_blocks(refs, batch):
    k = kernel("path", lam=0.8, sigma={"conj": 0.5}, node_mismatch=0.9)
    R = k.check_input(refs)
    labels = R.vocab.labels
    same, X = k.check_input_beside(batch, R)
    assert same.vocab is X.vocab and same.vocab is not R.vocab
    assert R.vocab.labels == labels  # the references' own vocabulary is not grown
    assert same == refs and X == batch
    assert same.vocab.labels[:len(labels)] == labels  # the references' ids kept
    want = np.asarray(k.gram(batch, refs))
    assert np.array_equal(np.asarray(k.gram(X, same)), want)
    assert np.array_equal(np.asarray(k.gram(X, R)), want)  # the vocabularies merged, as before


@settings(max_examples=25, deadline=None)
@given(st.lists(trees(), min_size=1, max_size=5), st.lists(trees(), min_size=1, max_size=5))
def test_trees_beside_references_give_the_same_blocks(refs, batch):
    k = kernel("tree")
    same, X = k.check_input_beside(batch, refs)
    assert np.array_equal(np.asarray(k.gram(X, same)), np.asarray(k.gram(batch, refs)))


def test_beside_checks_as_check_input_does():
    k = kernel("path")
    refs = k.check_input([Path([(None, "a")])])
    with pytest.raises(TypeError, match="item 1 is a str"):
        k.check_input_beside([Path([(None, "b")]), "b"], refs)
    with pytest.raises(TypeError, match="bare str"):
        k.check_input_beside("ab", refs)
    X = k.check_input([Path([(None, "b")])])
    assert k.check_input_beside(X, refs) == (refs, X)  # already encoded: kept as it is
