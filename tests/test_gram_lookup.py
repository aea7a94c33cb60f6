"""GramLookup: a kernel read from a stored Gram matrix (structures are indices)."""

from __future__ import annotations

import numpy as np
import pytest

from structkernels import KernelKNNClassifier, gram, kernel
from structkernels.kernels.lookup import GramLookup
from structkernels.structures import Path


def _paths(n, seed):
    rng = np.random.default_rng(seed)
    edges, nodes = ["ARG0", "ARG1", "op1", "mod"], ["a", "b", "c", "d", "e"]
    return [
        Path([(None, str(rng.choice(nodes)))]
             + [(str(rng.choice(edges)), str(rng.choice(nodes))) for _ in range(rng.integers(1, 6))])
        for _ in range(n)
    ]


def test_values_are_the_stored_entries_and_missing_ones_are_errors():
    G = np.arange(12, dtype=float).reshape(4, 3)  # 3 column structures, 1 more row
    k = GramLookup(G)
    np.testing.assert_array_equal(k(np.array([3, 0]), np.array([2, 1])), [[11.0, 10.0], [2.0, 1.0]])
    np.testing.assert_array_equal(k.diag(np.array([0, 2])), [0.0, 8.0])
    np.testing.assert_array_equal(GramLookup(G, diagonal=np.ones(4)).diag(np.array([3])), [1.0])
    with pytest.raises(IndexError, match="structure 3 .position 1.*first 3 structures"):
        k(np.array([0]), np.array([1, 3]))
    with pytest.raises(IndexError, match="index 7 .position 0.*4 stored rows"):
        k(np.array([7]), np.array([0]))
    with pytest.raises(TypeError, match="integer indices"):
        k(np.array([0.5]), np.array([0]))
    with pytest.raises(ValueError, match="2-D NumPy array"):
        GramLookup([[1.0]])(np.array([0]))
    with pytest.raises(ValueError, match=r"diagonal must have shape \(4,\)"):
        GramLookup(G, diagonal=np.ones(3))(np.array([0]))


@pytest.mark.parametrize("hashing", ["random-knn", "klsh"])
def test_hashed_classifier_on_a_lookup_equals_the_kernel_itself(hashing):
    """The same neighbours, scores and evaluation counts as with the path kernel."""
    X_tr, X_te = _paths(90, 0), _paths(40, 1)
    y = (np.arange(90) % 5 == 0).astype(int)
    k = kernel("path", lam=0.8, node_mismatch=0.5)
    settings = dict(n_neighbors=4, hashing=hashing, weights="similarity", threshold="auto",
                    n_tables=2, probe=1, n_probes=2, random_state=3)
    ref = KernelKNNClassifier(k, normalize=True, **settings).fit(X_tr, y)
    p_ref = ref.predict_proba(X_te)
    G = np.vstack([gram(k, X_tr, normalize=True), gram(k, X_te, X_tr, normalize=True)])
    look = KernelKNNClassifier(GramLookup(G), **settings).fit(np.arange(90), y)
    p_look = look.predict_proba(np.arange(90, 130))
    np.testing.assert_allclose(p_look, p_ref, rtol=1e-12)
    assert look.threshold_ == pytest.approx(ref.threshold_, rel=1e-12)
    # the values read are the kernel's evaluations less the self-similarities that
    # normalisation takes (once for the queries, and per table for the queries and
    # the reference set): the lookup stores normalised values
    refs = sum(len(h.reference_indices_) for h in ref.hashers_)
    saved = ref.n_evaluations_ - look.n_evaluations_
    assert len(X_te) <= saved <= (1 + len(ref.hashers_)) * len(X_te) + refs
