"""The extractor's scorer (references encoded once) gives the composite kernel's scores."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Path
from structkernels.extraction.scoring import ReferenceScorer
from structkernels.relations.models import relation_model
from structkernels.structures import LabelledGraph

EDGES = ["nsubj-of", "conj", "dobj", "amod", "prep"]
WORDS = ["bind", "see", "activate", "PROT"]


@st.composite
def pair_items(draw):
    n = draw(st.integers(1, 4))
    nodes = [(None, "PROT1")] + [(draw(st.sampled_from(EDGES)), draw(st.sampled_from(WORDS)))
                                 for _ in range(n)] + [("dobj", "PROT2")]
    labels = [("PROT1",)] + [(e, w) for e, w in nodes[1:-1]] + [("PROT2",)]
    weights = [draw(st.sampled_from([0.3, 0.9])) for _ in range(len(labels) - 1)]
    return {
        "path": Path(nodes),
        "context": tuple(draw(st.lists(st.sampled_from([f"m:{e}" for e in EDGES] +
                                                       [f"w:{w}" for w in WORDS]),
                                       min_size=1, max_size=5))),
        "apg": LabelledGraph(labels, [(i, i + 1, w) for i, w in enumerate(weights)]),
    }


@settings(max_examples=25, deadline=None)
@given(st.lists(pair_items(), min_size=1, max_size=6),
       st.lists(pair_items(), min_size=1, max_size=6),
       st.sampled_from(["NPK SVM", "NPK path SVM", "APG SVM", "n-gram SVM"]),
       st.integers(0, 2**31 - 1))
def test_scores_equal_the_composite_kernel(refs, items, name, seed):
    model = relation_model(name)
    sigma = {"conj": 0.0, "amod": 0.5}
    w = np.random.default_rng(seed).normal(size=len(refs))
    scorer = ReferenceScorer(model.kernel(sigma), refs, w, 0.25)
    K = np.asarray(model.kernel(sigma).gram(items, refs), dtype=np.float64)
    assert np.allclose(model.kernel(sigma).gram_by_view(items, refs), K, rtol=0, atol=1e-12)
    assert np.allclose(scorer.scores(items), K @ w + 0.25, rtol=0, atol=1e-10)
    # a pair's score is the same in any batch, to the bit (labels of no reference, met
    # in another order, and the sums over the references run in one order)
    whole = scorer.scores(items)
    assert np.array_equal(scorer.scores_in_batches(items, batch=2), whole)
    assert np.array_equal(np.concatenate([scorer.scores(items[i:i + 1])
                                          for i in range(len(items))]), whole)
    assert np.array_equal(scorer.scores(items[::-1]), whole[::-1])


@settings(max_examples=20, deadline=None)
@given(st.lists(pair_items(), min_size=1, max_size=6),
       st.lists(pair_items(), min_size=1, max_size=6),
       st.sampled_from(["NPK SVM", "NPK path SVM", "APG SVM", "n-gram SVM"]),
       st.integers(0, 2**31 - 1))
def test_prepared_arrays_give_the_same_scores_to_the_bit(refs, items, name, seed):
    model = relation_model(name)
    w = np.random.default_rng(seed).normal(size=len(refs))
    scorer = ReferenceScorer(model.kernel({"conj": 0.0}), refs, w, 0.25)
    arrays = scorer.prepared_arrays()
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays.values())
    again = ReferenceScorer(model.kernel({"conj": 0.0}), refs, w, 0.25, prepared=arrays)
    assert np.array_equal(again.scores(items), scorer.scores(items))


def test_prepared_arrays_that_do_not_fit_are_refused():
    from structkernels.kernels.allpaths_features import AllPathsWeights
    from structkernels.kernels.bag import BagWeights

    model = relation_model("NPK SVM")
    refs = [{"path": Path([(None, "PROT1"), ("dobj", "PROT2")]), "context": ("m:dobj",),
             "apg": LabelledGraph([("PROT1",), ("PROT2",)], [(0, 1, 0.9)])}]
    arrays = ReferenceScorer(model.kernel({}), refs, [1.0], 0.0).prepared_arrays()
    for key, bad in [("apg.keys", arrays["apg.keys"][::-1] + 2**40), ("apg.diag", np.ones(3)),
                     ("context.values", np.array([np.nan])), ("path.diag", np.ones(2)),
                     ("apg.kind", np.frombuffer(b"Pickled", dtype=np.uint8))]:
        with pytest.raises(ValueError, match="do not fit"):
            ReferenceScorer(model.kernel({}), refs, [1.0], 0.0, prepared={**arrays, key: bad})
    with pytest.raises(ValueError, match="exact route"):
        ReferenceScorer(model.kernel({}), refs, [1.0], 0.0, tolerance=0.1, prepared=arrays)
    w = AllPathsWeights([refs[0]["apg"]], [2.0])
    assert AllPathsWeights.from_arrays(w.arrays()).dots([refs[0]["apg"]])[0] == w.dots(
        [refs[0]["apg"]])[0]
    b = BagWeights([("a", "b")], [0.5], binary=False)
    assert BagWeights.from_arrays(b.arrays()).vector == b.vector


def test_a_weight_per_reference():
    model = relation_model("NPK path SVM")
    refs = [{"path": Path([(None, "PROT1"), ("dobj", "PROT2")])}]
    with pytest.raises(ValueError, match="2 weights for 1 references"):
        ReferenceScorer(model.kernel({}), refs, [1.0, 2.0], 0.0)


@settings(max_examples=20, deadline=None)
@given(st.lists(pair_items(), min_size=1, max_size=7),
       st.sampled_from(["NPK SVM", "NPK path SVM", "APG SVM", "n-gram SVM"]))
def test_the_gram_by_view_equals_the_composite_gram(items, name):
    kernel = relation_model(name).kernel({"conj": 0.0, "amod": 0.5})
    K = np.asarray(kernel.gram(items), dtype=np.float64)
    assert np.allclose(kernel.gram_by_view(items), K, rtol=0, atol=1e-12)
