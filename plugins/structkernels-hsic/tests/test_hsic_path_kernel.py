"""HSIC with the structured ``path`` kernel through incomplete Cholesky, without an n x n Gram."""

from __future__ import annotations

import numpy as np
import pytest
from structkernels_hsic import HSIC

import structkernels as sk
from structkernels import Kernel
from structkernels.registry import UnknownNameError


def _path_kernel():
    try:
        return sk.kernel("path", lam=0.8)
    except (UnknownNameError, ImportError) as exc:
        pytest.skip(f"the 'path' kernel is not registered in this installation ({exc})")


class BlockLog(Kernel):
    """Wraps a kernel and records the shape of every Gram block requested from it."""

    def __init__(self, kernel=None, log=None):
        self.kernel = kernel
        self.log = log

    def check_input(self, X):
        return self.kernel.check_input(X)

    def gram_block(self, X, Y):
        self.log.append((len(X), len(Y)))
        return self.kernel.gram_block(X, Y)

    def gram_block_symmetric(self, X):
        self.log.append((len(X), len(X)))
        return self.kernel.gram_block_symmetric(X)

    def diag_block(self, X):
        return self.kernel.diag_block(X)


def _one_hot(labels) -> np.ndarray:
    _, inv = np.unique(np.asarray([str(v) for v in labels]), return_inverse=True)
    return np.eye(inv.max() + 1)[inv]


def _synthetic_paths(n: int, seed: int):
    rng = np.random.default_rng(seed)
    verbs = ["bind-01", "inhibit-01", "activate-01", "phosphorylate-01"]
    ents = ["protein", "enzyme", "gene", "small-molecule"]
    paths, labels = [], []
    for _ in range(n):
        v = int(rng.integers(len(verbs)))
        a, b = rng.integers(len(ents), size=2)
        p = sk.Path([(None, verbs[v]), ("ARG0", ents[a]), ("ARG1", ents[b])][: 2 + int(rng.integers(2))])
        paths.append(p)
        labels.append(v % 2 if rng.random() < 0.85 else 1 - v % 2)  # label depends on the verb
    return paths, labels


def test_path_kernel_icd_equals_exact_and_builds_no_square_gram():
    k = _path_kernel()
    paths, labels = _synthetic_paths(120, 0)
    Y = _one_hot(labels)
    exact = HSIC(k, "linear").fit(paths, Y).statistic_
    log: list = []
    h = HSIC(BlockLog(k, log), "linear", estimator="icd", max_rank=None, tol=1e-13).fit(paths, Y)
    assert all(cols == 1 for _, cols in log), "ICD asked for more than one kernel column at a time"
    assert h.icd_x_.rank_ < len(paths)  # few distinct paths: low rank suffices
    assert h.statistic_ == pytest.approx(exact, rel=1e-8)
    assert h.test(paths, Y, method="gamma").p_value < 1e-6


@pytest.mark.slow
def test_hsic_path_kernel_on_amr_paths_vs_labels_via_icd():
    """The shipped Bio-AMR interactions: HSIC(path kernel on AMR paths, labels) by ICD.

    A seeded stratified subset (300 positives, negatives to 1,500 paths) keeps
    the test short; the kernel is asked for single columns only.  The path
    kernel is cosine-normalised: raw values grow with path length, which then
    dominates the low-rank factor (p = 0.11 at rank 30 unnormalised against
    1/201 normalised on this subset).
    """
    k = sk.Normalized(_path_kernel())
    try:
        from structkernels.datasets import load_interactions
    except ImportError as exc:
        pytest.skip(f"structkernels.datasets.load_interactions is not available yet ({exc})")
    try:
        data = load_interactions()
    except FileNotFoundError as exc:
        pytest.skip(f"the shipped interaction dataset is not built here ({exc})")
    labels = np.asarray([int(v) for v in data.labels])
    rng = np.random.default_rng(0)
    pos = np.flatnonzero(labels == 1)
    neg = np.flatnonzero(labels != 1)
    pos = rng.choice(pos, min(300, len(pos)), replace=False)
    idx = np.sort(np.concatenate([pos, rng.choice(neg, 1500 - len(pos), replace=False)]))
    paths = [data.paths[i] for i in idx]
    Y = _one_hot(labels[idx])
    n = len(paths)
    log: list = []
    h = HSIC(sk.Normalized(BlockLog(k.kernel, log)), "linear", estimator="icd", max_rank=30, tol=0).fit(paths, Y)
    assert log and max(cols for _, cols in log) == 1, "a Gram block of more than one column was requested"
    assert h.icd_x_.n_kernel_evaluations_ == n + h.icd_x_.rank_ * n  # diagonal + one column per pivot
    assert h.statistic_ > 0
    res = h.test(paths, Y, method="permutation", n_permutations=200, random_state=0)
    assert res.p_value < 0.05, "paths should carry information about the interaction labels"
