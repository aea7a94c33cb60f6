"""Fold slices read from Gram files equal the slices of the matrix in memory."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels.experiments._gram_files import GramFile, fold_slices, store_float32
from structkernels.experiments.relation_checks import SLICE_BYTES, fold_bytes, slice_budget


def _save(path, K):
    np.save(path, K)
    return GramFile(path)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 30), st.integers(1, 3), st.integers(0, 2**31 - 1), st.integers(1, 64))
def test_fold_slices_equal_the_slices_of_the_summed_matrix(tmp_path_factory, n, k, seed, band):
    rng = np.random.default_rng(seed)
    d = tmp_path_factory.mktemp("g")
    mats = [rng.normal(size=(n, n)).astype(np.float32) for _ in range(k)]
    files = [_save(d / f"{i}.npy", m) for i, m in enumerate(mats)]
    perm = rng.permutation(n)
    cut = int(rng.integers(1, n))
    tr, te = perm[:cut], perm[cut:]
    import structkernels.experiments._gram_files as gf

    old, gf.BAND_BYTES = gf.BAND_BYTES, band * 4 * n  # bands of `band` rows
    try:
        K_tr, K_te = fold_slices(files, tr, te)
    finally:
        gf.BAND_BYTES = old
    total = np.zeros((n, n))
    for m in mats:
        total += m
    assert K_tr.dtype == np.float64 and K_te.dtype == np.float64
    assert np.array_equal(K_tr, total[np.ix_(tr, tr)])
    assert np.array_equal(K_te, total[np.ix_(te, tr)])


def test_store_float32_rounds_once_and_refuses_what_is_not_a_square_gram(tmp_path):
    K = np.random.default_rng(0).normal(size=(7, 7))
    np.save(tmp_path / "wide.npy", K)
    store_float32(tmp_path / "wide.npy", tmp_path / "narrow.npy")
    f = GramFile(tmp_path / "narrow.npy")
    assert f.dtype == np.float32 and f.n == 7
    assert np.array_equal(f.to_array(), K.astype(np.float32).astype(np.float64))
    assert f.all_finite()
    np.save(tmp_path / "rect.npy", np.zeros((2, 3)))
    with pytest.raises(ValueError, match="not a square float Gram"):
        GramFile(tmp_path / "rect.npy")
    np.save(tmp_path / "ints.npy", np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="not a square float Gram"):
        GramFile(tmp_path / "ints.npy")


def test_a_temporary_file_is_removed_and_a_kept_one_is_not(tmp_path):
    a = _save(tmp_path / "a.npy", np.eye(2))
    a.remove()
    assert (tmp_path / "a.npy").exists()
    b = GramFile(tmp_path / "a.npy", temporary=True)
    b.remove()
    assert not (tmp_path / "a.npy").exists()


def test_fold_memory_counts_slices_not_whole_grams(monkeypatch):
    n = 9_666  # BioInfer
    tr, te = np.arange(8_700), np.arange(8_700, n)
    models = ["NPK SVM", "NPK k-NN", "NPK hash-RF", "NPK path SVM", "PK path SVM", "APG SVM",
              "n-gram SVM"]
    one = 8 * len(tr) * n
    need = fold_bytes(n, [(tr, te)], models, 2, SLICE_BYTES)
    assert need == 2 * one  # one group's slices at a time, its fits one after another
    assert need < 8 * n * n * 3  # the whole-Gram accounting held 5 Grams and 2 copies
    # by default, one Gram's slices when a quarter of the budget holds them, its fits run
    # together: one Gram's slices and two fits' copies, so that both cores fit models
    monkeypatch.setenv("STRUCTKERNELS_MEMORY_BUDGET", "16G")
    assert slice_budget([(tr, te)], 2) == one
    assert fold_bytes(n, [(tr, te)], models, 2) == 3 * one
    assert fold_bytes(n, [(tr, te)], models, 1) == 2 * one  # one worker: as before
    monkeypatch.setenv("STRUCTKERNELS_MEMORY_BUDGET", "2G")  # a quarter below one slice
    assert slice_budget([(tr, te)], 2) == SLICE_BYTES
    assert fold_bytes(n, [(tr, te)], models, 2) == 2 * one
