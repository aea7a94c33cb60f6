"""The gradient objectives of the σ learner: objectives on toy data where the right σ is known."""

from __future__ import annotations

import numpy as np
import pytest

from structkernels import NonstationaryLearner, Path
from structkernels.npk.gradient import learn_path_weights


def GradientSigmaLearner(objective="svm", **params):
    """The learner with a gradient objective (``"svm"`` by default)."""
    return NonstationaryLearner("path", objective=objective, **params)


def toy(n=160, seed=0):
    """``good``/``bad`` decide the class; ``noise`` tuples form clusters independent of it."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(n):
        c = int(rng.integers(3))
        lab = i % 2
        X.append(Path([(None, "P1"), ("good" if lab else "bad", "w"),
                       ("noise", f"n{c}"), ("noise", f"m{c}"), ("noise", f"k{c}")]))
        y.append(lab)
    y = np.array(y)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    return X, y


@pytest.mark.parametrize("objective", ["svm", "alignment"])
def test_irrelevant_label_goes_to_zero_decisive_stays(objective):
    X, y = toy()
    lr = GradientSigmaLearner(objective=objective, max_steps=40, learning_rate=0.1,
                              learn_lam=False, random_state=0).fit(X, y)
    # the objective improves along the steps, and the path the steps take is the expected one
    first, last = lr.history_[0]["objective"], lr.history_[-1]["objective"]
    assert last > first
    final = lr.history_[-1]["sigma"]
    assert final["noise"] < 0.1
    assert final["good"] > 0.9 and final["bad"] > 0.9
    # the kept step is never worse on the held-out documents than σ ≡ 1 (step 0)
    aps = [h["val_ap"] for h in lr.history_]
    assert aps[lr.best_step_] == max(aps) >= aps[0]
    assert lr.get_kernel(normalize=False).get_params()["sigma"] == lr.sigma_
    assert lr.get_kernel(normalize=False).lam == lr.lam_


def test_step_zero_is_the_stationary_kernel_and_groups_are_held_out_whole():
    X, y = toy(80)
    lr = GradientSigmaLearner(max_steps=0, random_state=0).fit(X, y, groups=np.arange(80) // 4)
    assert lr.best_step_ == 0
    assert set(lr.sigma_.values()) == {1.0} and lr.lam_ == 0.8


def test_offset_is_added_to_the_path_kernel():
    """A perfect other view: the SVM needs nothing from the path, the held-out AP is 1."""
    X, y = toy(80)
    perfect = np.where(y[:, None] == y[None, :], 1.0, -1.0)
    lr = GradientSigmaLearner(max_steps=2, random_state=0).fit(
        X, y, offset=lambda r, c: 10 * perfect[np.ix_(r, c)])
    assert all(h["val_ap"] == 1.0 for h in lr.history_)


def test_reproducible_and_checked():
    X, y = toy(60)
    a = GradientSigmaLearner(max_steps=3, random_state=1).fit(X, y)
    b = GradientSigmaLearner(max_steps=3, random_state=1).fit(X, y)
    assert a.history_ == [dict(h, seconds=h2["seconds"]) for h, h2 in
                          zip(b.history_, a.history_, strict=True)]
    with pytest.raises(ValueError, match="one class"):
        GradientSigmaLearner().fit(X, np.zeros(60, dtype=int))
    with pytest.raises(TypeError, match="item 0"):
        GradientSigmaLearner().fit(["x"] * 60, y)
    with pytest.raises(ValueError, match="objective"):
        GradientSigmaLearner(objective="nope").fit(X, y)
    with pytest.raises(ValueError, match="objective must be one of"):
        learn_path_weights({}, X, y, objective="nope")


def test_binary_objectives_still_route_to_algorithm_1():
    X, y = toy(60)
    out = learn_path_weights({"lam": 0.8}, X, y, objective="loss1", random_state=0,
                             alpha=2, beta=20)
    assert set(out) == {"sigma"} and set(out["sigma"].values()) <= {0.0}


def test_the_command_line_offers_every_objective():
    from structkernels.cli import _extractor
    from structkernels.npk import gradient

    assert _extractor.SIGMA_OBJECTIVES == gradient.SIGMA_OBJECTIVES
    assert _extractor.DEFAULT_SIGMA_OBJECTIVE == gradient.DEFAULT_SIGMA_OBJECTIVE


def test_a_prior_is_the_starting_point_and_step_zero():
    X, y = toy(80)
    prior = {"sigma": {"noise": 0.25, "elsewhere": 0.5}, "lam": 0.6}
    out = learn_path_weights({"lam": 0.8}, X, y, objective="svm", prior=prior, max_steps=0,
                             random_state=0)
    # no step: the prior itself, labels this corpus does not learn kept as the prior says
    assert out == {"sigma": {"noise": 0.25, "elsewhere": 0.5}, "lam": 0.6}


def test_a_gradient_fit_saves_and_loads_with_its_lambda(tmp_path):
    X, y = toy(60)
    lr = GradientSigmaLearner(max_steps=2, random_state=0).fit(X, y)
    lr.save(tmp_path / "sigma.json")
    back = NonstationaryLearner.load(tmp_path / "sigma.json")
    assert back.lam_ == lr.lam_ and back.kernel_sigma_ == lr.kernel_sigma_
    assert back.get_kernel().kernel.get_params() == lr.get_kernel().kernel.get_params()
