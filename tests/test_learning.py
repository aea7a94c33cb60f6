"""Tests of the nonstationary σ learner (Algorithm 1 and Loss Function 1, Garg et al. 2018)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Kernel, Normalized, Path
from structkernels import kernel as make_kernel
from structkernels.engine.gram import gram
from structkernels.engine.source import KernelSource
from structkernels.kernels.tuples import LabelKernel, TupleKernel, WordVectorSimilarity
from structkernels.npk import _trials, loss
from structkernels.npk import learner as learner_module
from structkernels.npk._objectives import neighbourhood_sample
from structkernels.npk._trials import _gram_reusing, _label_block_pruned
from structkernels.npk.learner import NonstationaryLearner
from structkernels.npk.loss import (
    _first_neighbours,
    loss_function_1,
    structure_edge_labels,
)
from structkernels.structures import take

# ---------------------------------------------------------------- test kernel


class TupleBagKernel(Kernel):
    """The length-1 convolution kernel of paths, written literally from Eq. (1).

    ``K(S, T) = Σ_a Σ_b σ(e_a) I(e_a = e_b) σ(e_b) I(n_a = n_b)`` over the
    tuples of both paths; the root's missing edge weighs 1.  σ(l) = 0 removes
    every common substructure using an ``l`` tuple, as the path kernel does.
    """

    def __init__(self, sigma=None):
        self.sigma = sigma

    def pair(self, x, y) -> float:
        sig = self.sigma or {}
        total = 0.0
        for ea, na in x:
            for eb, nb in y:
                if ea == eb and na == nb:
                    w = 1.0 if ea is None else float(sig.get(ea, 1.0))
                    total += w * w
        return total


@pytest.fixture
def registered_tuple_bag():
    """Model files name kernels by their registered name: register the test kernel."""
    from structkernels.kernels.names import kernels

    kernels.register("tuple-bag-test", TupleBagKernel, overwrite=True)
    yield "tuple-bag-test"
    kernels.unregister("tuple-bag-test")


def planted_problem(n=240, seed=0):
    """Labels depend on ARG0 and ARG1 only; mod, time, location, manner, quant are noise.

    ARG0 and ARG1 each carry the class (kinase/phosphatase, protein/gene); the
    five noise labels are present with probability 0.9 and take one of four
    nodes independently of the class.  Returns paths, labels, the signal
    labels and the noise labels.
    """
    rng = np.random.default_rng(seed)
    signal = {"ARG0": ("kinase", "phosphatase"), "ARG1": ("protein", "gene")}
    noise = ["mod", "time", "location", "manner", "quant"]
    paths, y = [], []
    for _ in range(n):
        label = int(rng.random() < 0.5)
        tuples = [(None, "interact-01")]
        for edge, (pos, neg) in signal.items():
            tuples.append((edge, pos if label == 1 else neg))
        for edge in noise:
            if rng.random() < 0.9:
                tuples.append((edge, f"{edge}-{rng.integers(4)}"))
        paths.append(Path(tuples))
        y.append(label)
    return paths, np.array(y), sorted(signal), sorted(noise)


# ------------------------------------------------------------- loss function


def brute_force_loss(K: np.ndarray, y: np.ndarray) -> float:
    """Loss Function 1 over a full similarity matrix, literally (first neighbour, lowest index on ties)."""
    n = len(y)
    total = 0.0
    for i in range(n):
        best, j_best = -math.inf, -1
        for j in range(n):
            if j != i and K[i, j] > best:
                best, j_best = K[i, j], j
        if y[i] != y[j_best]:
            total += best
        elif y[i] == 1 and y[j_best] == 1:
            total -= best
    return total


def test_loss_function_1_by_definition():
    s = np.array([0.2, 0.7, 0.4, 0.9])
    y = np.array([1, 1, 0, 0])
    y_nn = np.array([0, 1, 0, 1])
    loss, penalty, reward = loss_function_1(s, y, y_nn)
    assert penalty == pytest.approx(0.2 + 0.9)  # mismatches, either direction
    assert reward == pytest.approx(0.7)  # only positive-positive pairs are rewarded
    assert loss == pytest.approx(1.1 - 0.7)


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 12), st.integers(0, 10_000))
def test_subset_loss_matches_brute_force_and_label_block_trick(n, seed):
    """The learner's σ_t = 0 Gram (only the label's block recomputed) equals a full recomputation."""
    rng = np.random.default_rng(seed)
    edges = ["ARG0", "ARG1", "mod"]
    paths = []
    for _ in range(n):
        tuples = [(None, "r")]
        for e in edges:
            if rng.random() < 0.6:
                tuples.append((e, f"n{rng.integers(3)}"))
        paths.append(Path(tuples))
    y = rng.integers(0, 2, size=n)
    has = np.array(["ARG0" in structure_edge_labels(p) for p in paths])
    (res,) = _trials.exact_trials(TupleBagKernel(), {}, "ARG0", paths, y, [np.arange(n)], has,
                                  normalize=True)
    for v in (0, 1):
        k = TupleBagKernel(sigma={"ARG0": float(v)})
        raw = np.array([[k.pair(a, b) for b in paths] for a in paths])
        d = np.sqrt(np.diag(raw))
        with np.errstate(invalid="ignore", divide="ignore"):
            K = np.where(np.outer(d, d) > 0, raw / np.outer(d, d), 0.0)
        assert res.loss[v] == pytest.approx(brute_force_loss(K, y), abs=1e-12)


# --------------------------------------------------------------- the learner


def test_planted_problem_zeroes_exactly_the_noise_labels():
    paths, y, signal, noise = planted_problem()
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), top_fraction=1.0, alpha=4, beta=25, k=4,
        hashing=None, random_state=0, progress=False,
    )
    learner.fit(paths, y)
    assert sorted(learner.ignored_labels_) == noise
    assert all(learner.sigma_[lab] == 1.0 for lab in signal)
    # every label is decided by the summed loss (line 17 of Algorithm 1)
    for lab in signal + noise:
        summary = learner.losses_[lab]
        assert summary["chosen"] == (0.0 if summary["0"] < summary["1"] else 1.0)
    # labels are visited most frequent first
    counts = [learner.label_counts_[lab] for lab in learner.labels_]
    assert counts == sorted(counts, reverse=True)


def test_planted_problem_with_hashed_global_graph():
    paths, y, signal, noise = planted_problem(seed=1)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), top_fraction=1.0, alpha=4, beta=25,
        hashing="random-knn", random_state=1, progress=False,
    )
    learner.fit(paths, y)
    assert sorted(learner.ignored_labels_) == noise
    n = len(paths)
    assert 0 < learner.n_evaluations_graph_ < n * (n + 1) // 2


def test_cost_stays_far_below_a_full_gram():
    """Hashed global graph + bounded subsets: evaluations grow like N^1.5 + labels·α·|a|^2, not N^2."""
    paths, y, _, _ = planted_problem(n=2000, seed=9)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), top_fraction=1.0, alpha=2, beta=3, k=2,
        hashing="random-knn", random_state=0, progress=False,
    ).fit(paths, y)
    n = len(paths)
    # a = r ∪ n ∪ n̄ ∪ nn is bounded by β (1 + k) + reverse neighbours + first neighbours
    assert max(learner.subset_sizes_) < 100
    assert learner.n_evaluations_ < n * n / 20
    subset_evals = learner.n_evaluations_ - learner.n_evaluations_graph_
    assert subset_evals <= sum(s * (s + 1) for s in learner.subset_sizes_)


def test_pure_random_sampling_builds_no_global_graph():
    paths, y, _, noise = planted_problem(seed=2)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), top_fraction=1.0, alpha=3, beta=60, sampling="random",
        hashing=None, random_state=0, progress=False,
    ).fit(paths, y)
    assert learner.n_evaluations_graph_ == 0
    assert max(learner.subset_sizes_) <= 60
    assert sorted(learner.ignored_labels_) == noise


def test_neighbourhood_sample_is_lines_6_to_10_of_algorithm_1():
    n = 60
    indices = np.array([[(i + 1) % n, (i + 7) % n] for i in range(n)])
    reverse = [[j for j in range(n) if i in indices[j]] for i in range(n)]
    members = np.array([0, 30])  # fewer than beta: all become inducing points
    a = neighbourhood_sample(np.random.RandomState(0), members, (indices, reverse), 100)
    r = {0, 30}
    fwd = {1, 7, 31, 37}
    back = {59, 53, 29, 23}
    nn = {(i + 1) % n for i in fwd | back}
    assert set(a.tolist()) == r | fwd | back | nn
    assert len(set(a.tolist())) == len(a)
    # the inducing points come first: a budget cut keeps them
    assert set(a[:2].tolist()) == r
    # pure random sampling: the inducing points alone
    many = np.arange(0, n, 2)
    a = neighbourhood_sample(np.random.RandomState(0), many, None, 5)
    assert len(a) == 5 and set(a.tolist()) <= set(many.tolist())


def test_n_iter_rebuilds_graph_and_log_has_every_trial():
    paths, y, _, _ = planted_problem(n=120, seed=4)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), labels=["ARG0", "mod"], alpha=2, beta=10, n_iter=2,
        hashing="random-knn", random_state=0, progress=False,
    ).fit(paths, y)
    assert len(learner.log_) == 2 * 2 * 2 * 2  # passes x labels x trials x values
    assert {e["pass"] for e in learner.log_} == {0, 1}
    assert learner.labels_ == ["ARG0", "mod"]


def test_random_state_makes_fit_reproducible():
    paths, y, _, _ = planted_problem(n=100, seed=5)
    kw = dict(kernel=TupleBagKernel(), top_fraction=1.0, alpha=2, beta=8, random_state=7,
              hashing="random-knn", progress=False)
    a = NonstationaryLearner(**kw).fit(paths, y)
    b = NonstationaryLearner(**kw).fit(paths, y)
    assert a.sigma_ == b.sigma_
    assert [e["loss"] for e in a.log_] == [e["loss"] for e in b.log_]


def test_save_and_load_round_trip(tmp_path, registered_tuple_bag):
    paths, y, _, noise = planted_problem(n=120, seed=6)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(sigma={"rare": 0.0}), top_fraction=1.0, alpha=2, beta=20,
        hashing=None, random_state=0, progress=False,
    ).fit(paths, y)
    out = tmp_path / "model.json"
    learner.save(out)
    obj = json.loads(out.read_text())
    assert obj["format"] == "structkernels.nonstationary-sigma"
    loaded = NonstationaryLearner.load(out)
    assert loaded.sigma_ == learner.sigma_
    assert loaded.ignored_labels_ == learner.ignored_labels_
    assert loaded.n_evaluations_ == learner.n_evaluations_
    assert loaded.kernel_sigma_ == {"rare": 0.0, **learner.sigma_}
    k1, k2 = learner.get_kernel(), loaded.get_kernel()
    assert k1.value(paths[0], paths[1]) == pytest.approx(k2.value(paths[0], paths[1]))
    # the learned kernel really ignores the zeroed labels
    base = loaded.get_kernel(normalize=False)
    zeroed = Path([(None, "x"), *[(lab, "same") for lab in loaded.ignored_labels_]])
    assert base.value(zeroed, zeroed) == pytest.approx(1.0)


def test_normalized_kernel_instance_round_trips(tmp_path, registered_tuple_bag):
    paths, y, _, noise = planted_problem(n=120, seed=12)
    learner = NonstationaryLearner(
        kernel=Normalized(TupleBagKernel()), normalize=False, top_fraction=1.0, alpha=2,
        beta=20, hashing=None, random_state=0, progress=False,
    ).fit(paths, y)
    assert learner.normalize_ is True  # a Normalized kernel is unwrapped and normalised
    learner.save(tmp_path / "m.json")
    loaded = NonstationaryLearner.load(tmp_path / "m.json")
    assert isinstance(loaded.get_kernel(), Normalized)
    assert loaded.get_kernel().value(paths[0], paths[1]) == pytest.approx(
        learner.get_kernel().value(paths[0], paths[1])
    )


def test_load_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        NonstationaryLearner.load(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError, match="not a nonstationary"):
        NonstationaryLearner.load(other)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"alpha": 0}, "alpha must be a positive int"),
        ({"beta": 1.5}, "beta must be a positive int"),
        ({"sampling": "uniform"}, "sampling must be"),
        ({"hashing": "md5"}, "hashing must be"),
        ({"top_fraction": 0}, "top_fraction"),
        ({"labels": ["nowhere"]}, "occur in no training structure"),
    ],
)
def test_bad_parameters_are_named(params, message):
    paths, y, _, _ = planted_problem(n=20)
    with pytest.raises(ValueError, match=message):
        NonstationaryLearner(kernel=TupleBagKernel(), **params).fit(paths, y)


def test_bad_labels_and_kernels_are_named():
    paths, y, _, _ = planted_problem(n=20)
    with pytest.raises(ValueError, match=r"labels must be 0/1; y\[3\]"):
        NonstationaryLearner(kernel=TupleBagKernel()).fit(paths, np.r_[y[:3], 2, y[4:]])
    with pytest.raises(ValueError, match="one label per structure"):
        NonstationaryLearner(kernel=TupleBagKernel()).fit(paths, y[:-1])

    class NoSigma(Kernel):
        def pair(self, x, y):
            return 1.0

    with pytest.raises(TypeError, match="'sigma' parameter"):
        NonstationaryLearner(kernel=NoSigma()).fit(paths, y)


def test_default_labels_are_the_most_frequent_half():
    paths, y, _, _ = planted_problem(n=150, seed=8)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), alpha=1, beta=5, hashing=None, random_state=0, progress=False
    ).fit(paths, y)
    # 7 edge labels -> ceil(3.5) = 4 learned; ARG0 and ARG1 occur everywhere
    assert len(learner.labels_) == 4
    assert learner.labels_[:2] == ["ARG0", "ARG1"]


@pytest.mark.slow
def test_path_kernel_parallel_trials_equal_serial():
    """With the registered path kernel, n_jobs=2 (trials in worker processes) gives the serial result."""
    paths, y, _, noise = planted_problem(n=160, seed=10)
    kw = dict(kernel="path", kernel_params={"lam": 0.8}, top_fraction=1.0, alpha=3, beta=15,
              hashing=None, random_state=0, progress=False)
    serial = NonstationaryLearner(**kw).fit(paths, y)
    parallel = NonstationaryLearner(**kw, n_jobs=2).fit(paths, y)
    assert parallel.sigma_ == serial.sigma_
    assert [e["loss"] for e in parallel.log_] == pytest.approx([e["loss"] for e in serial.log_])
    assert parallel.n_evaluations_ == serial.n_evaluations_
    assert sorted(serial.ignored_labels_) == noise


def test_large_subsets_use_hashed_1nn_graphs():
    """Subsets of exact_below structures or more get a hashed 1-NN graph, for both values of σ_t."""
    paths, y, signal, noise = planted_problem(n=240, seed=11)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), top_fraction=1.0, alpha=4, beta=25, exact_below=50,
        hashing="random-knn", max_evaluations=None, random_state=0, progress=False,
    ).fit(paths, y)
    assert min(learner.subset_sizes_) >= 50  # every trial went through the hashed branch
    # hashed graphs evaluate far fewer pairs than the exact |a| (|a| + 1) / 2 per value
    subset_evals = learner.n_evaluations_ - learner.n_evaluations_graph_
    assert subset_evals < sum(s * (s + 1) // 2 for s in learner.subset_sizes_)
    assert sorted(learner.ignored_labels_) == noise


class InterruptingKernel(TupleBagKernel):
    """Raises KeyboardInterrupt when asked for σ(time) = 0 (as if Ctrl-C came then)."""

    def pair(self, x, y) -> float:
        if (self.sigma or {}).get("time") == 0.0:
            raise KeyboardInterrupt
        return super().pair(x, y)


def test_interrupt_keeps_the_sigma_learned_so_far():
    paths, y, signal, _ = planted_problem(n=120, seed=13)
    learner = NonstationaryLearner(
        kernel=InterruptingKernel(), labels=["ARG0", "ARG1", "time"], alpha=2, beta=10,
        hashing=None, random_state=0, progress=False,
    )
    with pytest.raises(KeyboardInterrupt):
        learner.fit(paths, y)
    assert learner.interrupted_
    assert set(learner.losses_) == set(signal)  # decided before the interruption
    assert learner.sigma_["time"] == 1.0  # not decided: keeps its initial value


# ------------------------------------------------- the budget: never more than one Gram
@pytest.mark.parametrize("n, beta", [(120, 100), (240, 25), (400, 100)])
def test_learner_never_costs_more_than_one_gram(n, beta):
    """At small N the sampled subsets cover most of the data in every trial; the default
    budget keeps the whole fit within N (N + 1) / 2 evaluations, the unbudgeted one does not."""
    paths, y, signal, noise = planted_problem(n=n, seed=3)
    kw = dict(kernel="path", top_fraction=1.0, alpha=6, beta=beta, k=4,
              hashing="random-knn", random_state=0, progress=False)
    gram_cost = n * (n + 1) // 2
    budgeted = NonstationaryLearner(**kw).fit(paths, y)
    assert budgeted.budget_ == gram_cost
    assert budgeted.n_evaluations_ <= gram_cost
    free = NonstationaryLearner(**kw, max_evaluations=None).fit(paths, y)
    assert free.n_evaluations_ > gram_cost  # what the unbudgeted algorithm costs here
    assert budgeted.n_trimmed_ > 0


def test_explicit_budget_is_respected_and_checked():
    paths, y, _, _ = planted_problem(n=200, seed=4)
    learner = NonstationaryLearner(kernel="path", top_fraction=1.0, alpha=3, beta=50,
                                   max_evaluations=15000, random_state=0, progress=False)
    learner.fit(paths, y)
    assert learner.n_evaluations_graph_ < 15000
    assert learner.n_trimmed_ > 0
    assert learner.n_evaluations_ <= 15000
    with pytest.raises(ValueError, match="max_evaluations"):
        NonstationaryLearner(max_evaluations=0).fit(paths, y)
    with pytest.raises(ValueError, match="max_evaluations"):
        NonstationaryLearner(max_evaluations="all").fit(paths, y)


def test_non_convolution_kernel_and_unfitted_access_are_clear():
    from sklearn.exceptions import NotFittedError

    X = np.random.default_rng(0).normal(size=(10, 2))
    y = np.array([0, 1] * 5)
    with pytest.raises(TypeError, match="'sigma' parameter .* RBFKernel has none"):
        NonstationaryLearner("rbf").fit(X, y)
    with pytest.raises(TypeError, match="sigma=1.0, which is not a dict"):
        NonstationaryLearner(TupleBagKernel(sigma=1.0)).fit(X, y)
    learner = NonstationaryLearner()
    with pytest.raises(NotFittedError, match="sigma_"):
        _ = learner.sigma_
    with pytest.raises(NotFittedError):
        learner.get_kernel()
    assert not hasattr(learner, "ignored_labels_")


# ------------------------- reuse: each kernel value of a label's trials evaluated once
# The reference is the learner with every trial computed from scratch (a full subset Gram
# for σ_t = 1 and the label's block for σ_t = 0), as before reuse.


def _scratch_trial(base, sigma, label, X, y, a, has, normalize):
    """One exact trial on its own, nothing reused."""
    Xa = [X[i] for i in a]
    if len(a) < 2:
        return loss.TrialResult(len(a))
    kv = {v: loss.with_sigma(base, {**sigma, label: float(v)}) for v in (0, 1)}
    raw1, info = gram(kv[1], Xa, return_info=True)
    n_eval = info.n_evaluations
    raw0 = raw1.copy()
    inside = np.flatnonzero(has[a])
    if len(inside):
        block, info = gram(kv[0], [Xa[i] for i in inside], return_info=True)
        n_eval += info.n_evaluations
        raw0[np.ix_(inside, inside)] = block
    return loss.trial_result(len(a), [loss.losses_of(r, y[a], normalize) for r in (raw0, raw1)],
                             n_eval)


def _from_scratch(base, sigma, label, X, y, subsets, has, normalize, n_jobs=1, chain_bound=True):
    """Every trial on its own, nothing reused (the learner before reuse)."""
    return [_scratch_trial(base, sigma, label, X, y, a, has, normalize) for a in subsets]


def _pairs_not_in(blocks, idx):
    """Pairs i <= j of ``idx`` that no block holds both of (what must be evaluated)."""
    m = len(idx)
    known = np.zeros((m, m), dtype=bool)
    for bidx, _ in blocks:
        inb = np.isin(idx, bidx)
        known |= np.outer(inb, inb)
    return int(np.triu(~known).sum())


@pytest.mark.parametrize("kern", [
    make_kernel("path", lam=0.8, node_mismatch=0.9),
    make_kernel("path", lam=0.7, sigma={"mod": 0.0}),
    TupleBagKernel(sigma={"time": 0.0}),
])
def test_gram_reusing_equals_a_fresh_gram_bit_for_bit(kern):
    paths, _, _, _ = planted_problem(n=160, seed=21)
    X = kern.check_input(paths)
    rng = np.random.default_rng(0)
    blocks = []
    for trial in range(6):
        size = int(rng.integers(2, 45)) if trial % 2 else int(rng.integers(64, 120))
        idx = np.unique(rng.choice(len(paths), size=size, replace=False))
        raw, n_eval = _gram_reusing(kern, X, idx, blocks)
        fresh, info = gram(kern, [paths[i] for i in idx], return_info=True)
        assert np.array_equal(raw, fresh), trial
        assert n_eval == _pairs_not_in(blocks, idx) <= info.n_evaluations
        blocks.append((idx, raw))
        lo, hi = np.triu_indices(len(idx), 1)
        assert np.array_equal(KernelSource(kern, take(X, idx), checked=True).pairs(lo, hi), fresh[lo, hi])
    # a subset met before costs nothing
    assert _gram_reusing(kern, X, blocks[2][0], blocks)[1] == 0


@pytest.mark.parametrize("budget", ["gram", None])
@pytest.mark.parametrize("kern, params", [
    ("path", {"lam": 0.8, "node_mismatch": 0.9}),
    (TupleBagKernel(), None),
])
def test_reuse_learns_the_same_sigma_with_fewer_evaluations(monkeypatch, kern, params, budget):
    """Identical σ, losses, log and subsets; strictly fewer evaluations; the saving is counted."""
    paths, y, signal, noise = planted_problem(n=150, seed=5)
    # β = 200 >= every label count: each label's α trials draw the same subset (Algorithm 1
    # with |c_t| <= β), the case where recomputation was pure waste
    kw = dict(kernel=kern, kernel_params=params, top_fraction=1.0, alpha=3, beta=200, k=2,
              hashing="random-knn", max_evaluations=budget, random_state=0, progress=False)
    reused = NonstationaryLearner(**kw).fit(paths, y)
    with monkeypatch.context() as m:
        m.setattr(learner_module, "exact_trials", _from_scratch)
        scratch = NonstationaryLearner(**kw).fit(paths, y)
    assert reused.sigma_ == scratch.sigma_
    assert reused.losses_ == scratch.losses_  # summed losses equal to the last bit
    assert reused.log_ == scratch.log_
    assert reused.subset_sizes_ == scratch.subset_sizes_
    assert reused.n_trimmed_ == scratch.n_trimmed_
    assert reused.n_evaluations_graph_ == scratch.n_evaluations_graph_
    assert reused.n_evaluations_ < scratch.n_evaluations_
    assert reused.n_evaluations_ + reused.n_evaluations_reused_ == scratch.n_evaluations_
    assert scratch.n_evaluations_reused_ == 0
    # every trial of a label meets the same subset: only the first one evaluates
    subset_evals = reused.n_evaluations_ - reused.n_evaluations_graph_
    assert subset_evals * 2 < scratch.n_evaluations_ - scratch.n_evaluations_graph_
    if budget == "gram":
        assert reused.n_evaluations_ <= 150 * 151 // 2


def test_reuse_with_overlapping_subsets_and_two_passes(monkeypatch):
    """β below the label counts (trials overlap partly), σ changing between passes."""
    paths, y, _, _ = planted_problem(n=240, seed=6)
    kw = dict(kernel="path", kernel_params={"lam": 0.8}, top_fraction=1.0, alpha=4, beta=40,
              k=3, n_iter=2, hashing="random-knn", max_evaluations=None, random_state=2,
              progress=False)
    reused = NonstationaryLearner(**kw).fit(paths, y)
    with monkeypatch.context() as m:
        m.setattr(learner_module, "exact_trials", _from_scratch)
        scratch = NonstationaryLearner(**kw).fit(paths, y)
    assert reused.sigma_ == scratch.sigma_
    assert reused.log_ == scratch.log_
    assert reused.n_evaluations_ < scratch.n_evaluations_
    assert reused.n_evaluations_ + reused.n_evaluations_reused_ == scratch.n_evaluations_


def test_paired_values_in_threads_equal_serial_and_the_gram():
    paths, _, _, _ = planted_problem(n=110, seed=8)
    kern = make_kernel("path", lam=0.8, node_mismatch=0.9)
    lo, hi = np.triu_indices(len(paths), 1)  # 5,995 pairs: split over threads
    X = kern.check_input(paths)
    serial = KernelSource(kern, X, checked=True).pairs(lo, hi)
    assert np.array_equal(KernelSource(kern, X, checked=True).pairs(lo, hi, n_jobs=2), serial)
    assert np.array_equal(serial, gram(kern, paths)[lo, hi])


def test_only_kernels_monotone_in_sigma_are_pruned():
    assert make_kernel("path", lam=0.8, node_mismatch=0.9).monotone_in_sigma()
    wv = WordVectorSimilarity({"kinase": np.array([1.0, 0.2]), "gene": np.array([0.1, 1.0])})
    assert make_kernel("path", tuple_kernel=TupleKernel(node_kernel=wv)).monotone_in_sigma()

    class Signed(LabelKernel):  # a user label kernel: its sign is unknown
        pass

    assert not make_kernel("path", tuple_kernel=TupleKernel(node_kernel=Signed())).monotone_in_sigma()
    assert not make_kernel("tree").monotone_in_sigma()
    assert not TupleBagKernel().monotone_in_sigma()


@settings(max_examples=25, deadline=None)
@given(st.integers(4, 40), st.integers(0, 10_000), st.booleans(), st.sampled_from([0.0, 0.9]))
def test_pruned_label_block_gives_the_full_blocks_first_neighbours(n, seed, normalize, c):
    """σ_t = 0 block with the bound K0 <= K1: every row's 1-NN and similarity as the full block."""
    rng = np.random.default_rng(seed)
    paths = []
    for _ in range(n):
        tuples = [(None, "r")]
        for e in ("ARG0", "ARG1", "mod", "ARG0"):
            if rng.random() < 0.6:
                tuples.append((e, f"n{rng.integers(3)}"))
        paths.append(Path(tuples))
    base = make_kernel("path", lam=0.8, node_mismatch=c)
    k0 = make_kernel("path", lam=0.8, node_mismatch=c, sigma={"ARG0": 0.0})
    X = base.check_input(paths)
    idx = np.arange(n)
    inside = np.flatnonzero(["ARG0" in structure_edge_labels(p) for p in paths])
    raw1 = gram(base, paths)
    full0 = gram(k0, paths)
    block, n_eval = _label_block_pruned(k0, X, idx, inside, raw1, [], normalize)
    ok = ~np.isnan(block)
    assert np.array_equal(block[ok], full0[np.ix_(inside, inside)][ok])
    assert n_eval == ok[np.triu_indices(len(inside))].sum() <= len(inside) * (len(inside) + 1) // 2
    raw0 = raw1.copy()
    raw0[np.ix_(inside, inside)] = np.where(ok, block, -np.inf)
    y = rng.integers(0, 2, size=n)
    for K_pruned, K_full in ((raw0, full0),):
        if normalize:
            d = np.diag(full0).copy()
            K_pruned = K_pruned * np.outer(1 / np.sqrt(d), 1 / np.sqrt(d))
            K_full = K_full * np.outer(1 / np.sqrt(d), 1 / np.sqrt(d))
        nn_p, s_p = _first_neighbours(K_pruned)
        nn_f, s_f = _first_neighbours(K_full)
        assert np.array_equal(nn_p, nn_f) and np.array_equal(s_p, s_f)
        assert loss_function_1(s_p, y, y[nn_p]) == loss_function_1(s_f, y, y[nn_f])


def test_pruning_saves_evaluations_on_bio_amr_paths(tmp_path):
    """On real paths most pairs of the label's block are nobody's first neighbour under σ_t = 0."""
    import gzip
    import itertools
    from importlib import resources

    from structkernels.datasets import load_interactions

    shipped = resources.files("structkernels") / "data" / "interactions.jsonl.gz"
    with gzip.open(shipped, "rt", encoding="utf-8") as f:
        head = list(itertools.islice(f, 600))
    (tmp_path / "head.jsonl").write_text("".join(head), encoding="utf-8")
    paths = list(load_interactions(tmp_path / "head.jsonl").paths)[:300]
    base = make_kernel("path", lam=0.8, node_mismatch=0.9)
    X, raw1 = base.check_input(paths), gram(base, paths)
    for label, at_most in (("ARG0", 0.6), ("op1", 0.3)):
        k0 = make_kernel("path", lam=0.8, node_mismatch=0.9, sigma={label: 0.0})
        inside = np.flatnonzero([label in structure_edge_labels(p) for p in paths])
        block, n_eval = _label_block_pruned(k0, X, np.arange(len(paths)), inside, raw1, [], True)
        m = len(inside)
        assert m > 20 and n_eval < at_most * m * (m + 1) / 2, (label, m, n_eval)
        # a second trial over the same structures evaluates nothing more
        assert _label_block_pruned(
            k0, X, np.arange(len(paths)), inside, raw1, [(np.arange(len(paths))[inside], block)],
            True,
        )[1] == 0


# ------------- chain bound: σ_t = 1 pairs too are evaluated only if they can be a 1-NN


def _random_paths(rng, n, labels=("ARG0", "ARG1", "mod", "op1"), nodes=3, p=0.6):
    paths = []
    for _ in range(n):
        tuples = [(None, f"r{rng.integers(2)}")]
        for e in labels + labels[:2]:
            if rng.random() < p:
                tuples.append((e, f"n{rng.integers(nodes)}"))
        paths.append(Path(tuples))
    return paths


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.integers(0, 10_000), st.sampled_from([0.0, 0.5, 1.0]),
       st.sampled_from([0.3, 0.8, 1.0]), st.sampled_from([None, 2]),
       st.sampled_from([None, {"ARG0": 0.0}, {"mod": 0.5, "op1": 2.0}]))
def test_chain_bound_is_an_upper_bound_of_the_path_kernel(n, seed, c, lam, max_len, sigma):
    rng = np.random.default_rng(seed)
    paths = _random_paths(rng, n)
    kern = make_kernel("path", lam=lam, node_mismatch=c, max_len=max_len, sigma=sigma)
    X = kern.check_input(paths)
    setup = _trials._chain_bound_setup({1: kern}, X)
    assert setup is not None
    C, w = setup
    B = _trials._chain_bound(C, w[1])
    K = gram(kern, paths)
    assert np.all(K <= B * (1 + _trials._SLACK))
    # paths that share only their root tuple: one chain, (root, root), λ² at most
    root_only = [Path([(None, "r0"), ("ARG0", "a")]), Path([(None, "r0"), ("ARG1", "b")])]
    Xr = kern.check_input(root_only)
    Cr, wr = _trials._chain_bound_setup({1: kern}, Xr)
    assert _trials._chain_bound(Cr, wr[1])[0, 1] == pytest.approx(lam * lam)


def test_chain_bound_is_refused_where_it_is_not_known_to_hold():
    paths, _, _, _ = planted_problem(n=20, seed=1)
    wv = WordVectorSimilarity({"kinase": np.array([1.0, 0.2]), "gene": np.array([0.1, 1.0])})
    for kern in (make_kernel("path", tuple_kernel=TupleKernel(node_kernel=wv)),
                 make_kernel("tree")):
        X = kern.check_input(paths) if kern.structure is Path else paths
        assert _trials._chain_bound_setup({1: kern}, X) is None
    kern = make_kernel("path", lam=0.8)
    assert _trials._chain_bound_setup({1: kern}, paths) is None  # not encoded


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 40), st.integers(0, 10_000), st.booleans(), st.sampled_from([0.0, 0.9]))
def test_bounded_trial_gives_the_full_matrices_first_neighbours(n, seed, normalize, c):
    """σ_t = 1 and σ_t = 0 with the chain bound: every row's 1-NN and similarity as the full
    matrices, the losses of the trial from scratch, and the count of evaluations exact."""
    rng = np.random.default_rng(seed)
    paths = _random_paths(rng, n)
    y = rng.integers(0, 2, size=n)
    label = "ARG0"
    base = make_kernel("path", lam=0.8, node_mismatch=c)
    kv = {1: base, 0: make_kernel("path", lam=0.8, node_mismatch=c, sigma={label: 0.0})}
    X = base.check_input(paths)
    has = np.array([label in structure_edge_labels(p) for p in paths])
    bound = _trials._chain_bound_setup(kv, X)
    blocks = {0: [], 1: []}
    for _ in range(3):  # later trials read the values of earlier ones
        a = np.unique(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False))
        inside = np.flatnonzero(has[a])
        known_before = (np.triu(~np.isnan(_trials._known_values(a, blocks[1]))).sum()
                        + np.triu(~np.isnan(_trials._known_values(a[inside], blocks[0]))).sum())
        R1, R0, n_eval = _trials._bounded_trial(kv, X, a, inside, blocks, normalize, bound)
        full1 = gram(kv[1], [paths[i] for i in a])
        full0 = gram(kv[0], [paths[i] for i in a])
        ok1, ok0 = ~np.isnan(R1), ~np.isnan(R0)
        assert np.array_equal(R1[ok1], full1[ok1])
        assert np.array_equal(R0[ok0], full0[np.ix_(inside, inside)][ok0])
        # every evaluation is a value now known that was not known before
        assert n_eval == np.triu(ok1).sum() + np.triu(ok0).sum() - known_before
        raw0 = np.where(ok1, R1, -np.inf)
        raw0[np.ix_(inside, inside)] = np.where(ok0, R0, -np.inf)
        for pruned, full in ((np.where(ok1, R1, -np.inf), full1), (raw0, full0)):
            Kp, Kf = pruned, full
            if normalize:
                s = 1 / np.sqrt(np.diag(full))
                Kp, Kf = pruned * np.outer(s, s), full * np.outer(s, s)
            nn_p, s_p = _first_neighbours(Kp)
            nn_f, s_f = _first_neighbours(Kf)
            assert np.array_equal(nn_p, nn_f) and np.array_equal(s_p, s_f)
        scratch = _scratch_trial(base, {}, label, X, y, a, has, normalize)
        for v, raw in ((1, np.where(ok1, R1, -np.inf)), (0, raw0)):
            assert loss.losses_of(raw, y[a], normalize) == (
                scratch.loss[v], scratch.penalty[v], scratch.reward[v])
        _trials._keep(blocks[1], a, R1)
        if len(inside):
            _trials._keep(blocks[0], a[inside], R0)


def test_bound_learns_the_same_sigma_as_full_trials_on_2000_bio_amr_paths():
    """At N = 2,000 Bio-AMR paths (β = 550, the budget of one Gram): the chain bound changes
    no σ, loss or log entry and saves evaluations over the trials without it."""
    from structkernels.datasets import load_interactions

    data = load_interactions().split("train")
    order = np.random.RandomState(0).permutation(len(data))
    idx = np.sort(order[:2000])
    paths, y = [data.paths[int(i)] for i in idx], np.asarray(data.labels)[idx]
    kw = dict(kernel="path", kernel_params={"lam": 0.8, "node_mismatch": 0.9}, alpha=3,
              beta=550, hashing="random-knn", random_state=0, progress=False)
    bounded = NonstationaryLearner(**kw).fit(paths, y)
    unbounded = NonstationaryLearner(**kw, chain_bound=False).fit(paths, y)
    assert bounded.sigma_ == unbounded.sigma_
    assert bounded.losses_ == unbounded.losses_
    assert bounded.log_ == unbounded.log_
    assert bounded.n_evaluations_graph_ == unbounded.n_evaluations_graph_
    assert bounded.n_evaluations_ < 0.9 * unbounded.n_evaluations_
    assert (bounded.n_evaluations_ + bounded.n_evaluations_reused_
            == unbounded.n_evaluations_ + unbounded.n_evaluations_reused_)
    assert bounded.n_evaluations_ <= 2000 * 2001 // 2
    with pytest.raises(TypeError, match="chain_bound must be True or False"):
        NonstationaryLearner(**kw, chain_bound="yes").fit(paths[:50], y[:50])


# ---------------------------------------------- scikit-learn: transform, score, Pipeline


def _fitted_on_planted(n=120, seed=0, **params):
    paths, y, _, _ = planted_problem(n=n, seed=seed)
    settings = dict(kernel="path", kernel_params={"lam": 0.8}, top_fraction=1.0, alpha=2,
                    beta=20, hashing=None, random_state=0, progress=False)
    return NonstationaryLearner(**{**settings, **params}).fit(paths, y), paths, y


def test_transform_is_the_gram_against_the_training_structures_under_the_learned_kernel():
    learner, paths, y = _fitted_on_planted()
    new, _, _, _ = planted_problem(n=15, seed=1)
    K = learner.transform(new)
    npk = learner.get_kernel()  # Normalized(path kernel with the learned σ)
    assert isinstance(npk, Normalized) and K.shape == (15, len(paths))
    np.testing.assert_allclose(K, npk.gram(new, paths), rtol=1e-12)
    # a pair by definition: K(x, t) / sqrt(K(x, x) K(t, t)) with σ applied
    raw = learner.get_kernel(normalize=False)
    x, t = new[3], paths[7]
    assert K[3, 7] == pytest.approx(
        raw.value(x, t) / math.sqrt(raw.value(x, x) * raw.value(t, t)), rel=1e-12)
    # fit_transform: the symmetric training Gram, equal to transform of the training set
    G = NonstationaryLearner(**learner.get_params()).fit_transform(paths, y)
    np.testing.assert_allclose(G, learner.transform(paths), rtol=1e-12)
    np.testing.assert_allclose(np.diag(G), 1.0)
    # σ matters: the zeroed noise labels change the values against the stationary kernel
    assert learner.ignored_labels_
    assert not np.allclose(K, Normalized(make_kernel("path", lam=0.8)).gram(new, paths))


def test_score_is_the_leave_one_out_knn_average_precision():
    from sklearn.metrics import average_precision_score

    learner, paths, y = _fitted_on_planted()
    X, yt, _, _ = planted_problem(n=40, seed=2)
    k = 8
    npk = learner.get_kernel()
    K = npk.gram(X)
    scores = []
    for i in range(len(X)):  # by definition: the k most similar others, ties to the lower index
        ranked = sorted((-K[i, j], j) for j in range(len(X)) if j != i)[:k]
        w = np.array([max(-s, 0.0) for s, _ in ranked])
        labels = np.array([yt[j] for _, j in ranked])
        scores.append(float(w @ labels / w.sum()) if w.sum() > 0 else 0.0)
    assert learner.score(X, yt) == pytest.approx(average_precision_score(yt, scores), rel=1e-12)
    assert 0.9 < learner.score(X, yt) <= 1.0  # the learned σ keeps the class labels
    assert learner.score(X, np.zeros(len(X), dtype=int)) == 0.0
    with pytest.raises(ValueError, match="score: labels must be 0/1"):
        learner.score(X, np.full(len(X), 2))
    with pytest.raises(ValueError, match="one label per structure"):
        learner.score(X, yt[:-1])


def test_learner_in_a_pipeline_with_a_precomputed_svc_and_in_grid_search():
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC

    paths, y, _, _ = planted_problem(n=120, seed=0)
    test, yt, _, _ = planted_problem(n=60, seed=3)
    learner = NonstationaryLearner("path", {"lam": 0.8}, top_fraction=1.0, alpha=2, beta=20,
                                   hashing=None, random_state=0, progress=False)
    model = make_pipeline(learner, SVC(kernel="precomputed")).fit(paths, y)
    assert model.score(test, yt) >= 0.95
    # the SVC saw the learner's Gram: the same predictions from the Grams by hand
    fitted = model[0]
    ref = SVC(kernel="precomputed").fit(fitted.transform(paths), y)
    np.testing.assert_array_equal(model.predict(test), ref.predict(fitted.transform(test)))
    # GridSearchCV selects on the learner's own score (leave-one-out k-NN AP): σ fixed at 0
    # for the two labels that carry the class ranks the held-out folds far worse
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    blind = {"lam": 0.8, "sigma": {"ARG0": 0.0, "ARG1": 0.0}}
    gs = GridSearchCV(learner, {"kernel_params": [blind, {"lam": 0.8}], "labels": [["mod"]]},
                      cv=cv).fit(paths, y)
    assert gs.best_params_["kernel_params"] == {"lam": 0.8}
    blind_ap, ap = gs.cv_results_["mean_test_score"]
    assert ap == pytest.approx(1.0) and blind_ap < 0.6
    # and through a Pipeline on the SVC's accuracy
    gs = GridSearchCV(make_pipeline(learner, SVC(kernel="precomputed")),
                      {"svc__C": [0.001, 1.0]}, cv=cv).fit(paths, y)
    assert gs.best_params_ == {"svc__C": 1.0} and gs.best_score_ >= 0.95


def test_a_loaded_learner_transforms_only_after_fit(tmp_path):
    from sklearn.exceptions import NotFittedError

    learner, paths, y = _fitted_on_planted(n=40)
    learner.save(tmp_path / "sigma.json")
    loaded = NonstationaryLearner.load(tmp_path / "sigma.json")
    with pytest.raises(NotFittedError, match="keeps σ but not the training structures"):
        loaded.transform(paths[:2])
    # score needs no training structure
    assert loaded.score(paths, y) == pytest.approx(learner.score(paths, y), rel=1e-12)
    with pytest.raises(NotFittedError):
        NonstationaryLearner().transform(paths)
    with pytest.raises(NotFittedError):
        NonstationaryLearner().score(paths, np.zeros(len(paths)))
