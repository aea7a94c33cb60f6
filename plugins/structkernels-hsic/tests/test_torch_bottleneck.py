"""HSICBottleneckClassifier: HSIC-bottleneck training, the back-propagation and random-weights
controls, its history, determinism, validation, and scikit-learn's check_estimator."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the [torch] extra (PyTorch) is not installed")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402
from structkernels_hsic import HSICBottleneckClassifier  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Batches of a hundred rows: threads only wait for each other on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(400, 12, n_informative=6, n_redundant=2, n_classes=3,
                               n_clusters_per_class=1, class_sep=1.5, random_state=0)
    return X, np.array(["a", "b", "c"])[y]


def _fit(data, **kw):
    params = dict(hidden=(16, 3), epochs=8, batch_size=100, learning_rate=1e-2, monitor_size=100,
                  random_state=0)
    params.update(kw)
    X, y = data
    return HSICBottleneckClassifier(**params).fit(X, y)


def test_hsic_training_raises_dependence_on_the_labels(data):
    X, y = data
    clf = _fit(data)
    h = clf.history_
    assert list(h["epoch"]) == list(range(9))
    for key in ("nhsic_x", "nhsic_y", "hsic_x", "hsic_y"):
        assert h[key].shape == (9, 2) and np.isfinite(h[key]).all()
    assert h["loss"].shape == (8, 2) and h["seconds"].shape == (8,)
    assert (h["nhsic_y"][-1] > h["nhsic_y"][0]).all()  # every layer depends more on Y
    assert h["nhsic_x"][-1, 0] < h["nhsic_x"][0, 0]     # and the first less on X
    assert clf.score(X, y) > 0.85
    proba = clf.predict_proba(X[:5])
    assert proba.shape == (5, 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(X)) <= set(clf.classes_) and list(clf.classes_) == ["a", "b", "c"]
    assert clf.represent(X[:4]).shape == (4, 3)


def test_controls_share_the_architecture_and_output_layer(data):
    X, y = data
    bp = _fit(data, training="backprop")
    rnd = _fit(data, training="none")
    hs = _fit(data)
    assert bp.head_ is not None and hs.head_ is None
    assert bp.history_["loss"].shape == (8, 1) and rnd.history_["loss"].shape == (0, 1)
    assert list(rnd.history_["epoch"]) == [0]
    # the same initial weights: untrained = every model's epoch 0
    assert np.array_equal(rnd.history_["nhsic_y"][0], hs.history_["nhsic_y"][0])
    assert np.array_equal(bp.history_["nhsic_y"][0], hs.history_["nhsic_y"][0])
    for clf in (bp, rnd, hs):
        assert isinstance(clf.output_, LogisticRegression)
        assert [m[0].out_features for m in clf.network_] == [16, 3]
    assert bp.score(X, y) > rnd.score(X, y)


def test_deterministic_given_random_state(data):
    X, _ = data
    state = torch.get_rng_state()
    a = _fit(data, epochs=3)
    assert torch.equal(torch.get_rng_state(), state)  # torch's global generator is left alone
    torch.manual_seed(123)
    b = _fit(data, epochs=3)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert np.array_equal(a.history_["nhsic_x"], b.history_["nhsic_x"])
    c = _fit(data, epochs=3, random_state=1)
    assert not np.array_equal(a.history_["nhsic_x"], c.history_["nhsic_x"])


@pytest.mark.parametrize("kw", [
    {"n_features": 32},
    {"normalization": "regularized", "sigma": 3.0, "beta": 50.0},
    {"kernel": "cosine", "activation": "relu", "dtype": "float64"},
    {"kernel": "linear", "n_features": 8, "output": LogisticRegression(C=10.0)},
])
def test_variants_train(data, kw):
    X, y = data
    clf = _fit(data, epochs=3, **kw)
    assert clf.score(X, y) > 0.6
    assert np.isfinite(clf.history_["nhsic_y"]).all()
    if "n_features" in kw and kw.get("kernel", "rbf") == "rbf":
        assert len(clf.rff_) == 3 and clf.rff_[0][0].shape == (12, 32)
    if "output" in kw:
        assert clf.output_ is not kw["output"] and clf.output_.C == 10.0


def test_pickle_round_trip(data):
    X, _ = data
    clf = _fit(data, epochs=1)
    again = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_non_finite_input_is_an_error(data):
    X, y = data
    X = X.copy()
    X[7, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HSICBottleneckClassifier(epochs=1).fit(X, y)


def test_divergence_is_an_error(data, monkeypatch):
    real = torch.nn.functional.cross_entropy
    monkeypatch.setattr(torch.nn.functional, "cross_entropy", lambda *a, **k: real(*a, **k) * np.nan)
    with pytest.raises(ValueError, match="the loss of epoch 1 is not finite"):
        _fit(data, training="backprop", epochs=2)


def test_values_beyond_float32_are_an_error(data):
    X, y = data
    X = X.copy()
    X[3, 1] = 1e39
    with pytest.raises(ValueError, match="beyond float32"):
        _fit((X, y), epochs=1, standardize=False)
    assert _fit((X, y), epochs=1).score(X, y) > 0.5  # standardised in float64 first
    assert _fit(data, epochs=1, standardize=False, dtype="float64").mean_ is None


def test_a_constant_layer_is_an_error_naming_it(data):
    X, y = data
    # a far offset saturates every tanh unit the same way for every sample
    with pytest.raises(ValueError, match="hidden layer 1 before training: normalised HSIC is undefined"):
        _fit((X + 1e6, y), epochs=1, standardize=False)


@pytest.mark.parametrize(("kw", "match"), [
    ({"hidden": ()}, "hidden must be"),
    ({"hidden": (4, 0)}, "every hidden width"),
    ({"beta": -1.0}, "beta must be"),
    ({"sigma": "mean"}, "sigma must be"),
    ({"kernel": "poly"}, "kernel must be"),
    ({"normalization": "cca"}, "normalization must be"),
    ({"training": "sgd"}, "training must be"),
    ({"activation": "gelu"}, "activation must be"),
    ({"epochs": -1}, "epochs must be"),
    ({"batch_size": 2}, "batch_size must be"),
    ({"learning_rate": 0}, "learning_rate must be"),
    ({"n_features": 0}, "n_features must be"),
    ({"dtype": "float16"}, "dtype must be"),
])
def test_bad_parameters(data, kw, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        HSICBottleneckClassifier(**kw).fit(X, y)


def test_one_class_is_an_error(data):
    X, _ = data
    with pytest.raises(ValueError, match="class"):
        HSICBottleneckClassifier(epochs=1).fit(X, np.zeros(len(X)))


def test_check_estimator():
    est = HSICBottleneckClassifier(hidden=(8, 4), epochs=1, batch_size=64, monitor_size=32,
                                   random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
    assert len(results) > 30
    assert clone(est).get_params() == est.get_params()
