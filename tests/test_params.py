"""The declarative parameter validation (utils._params) and its use by every estimator."""

from __future__ import annotations

import numbers
import pathlib

import numpy as np
import pytest

from structkernels.utils import (
    Interval,
    InvalidParameterError,
    Options,
    ValidatedParamsMixin,
    effective_n_jobs,
    n_jobs_value,
    validate_params,
)


def _refused(value, constraints, name="p", owner="Owner"):
    with pytest.raises(InvalidParameterError) as info:
        validate_params(owner, {name: value}, {name: constraints})
    return str(info.value)


def _accepted(value, constraints):
    validate_params("Owner", {"p": value}, {"p": constraints})


@pytest.mark.parametrize("value", [1, 5, np.int64(3), 10**20])
def test_positive_int_interval_accepts(value):
    _accepted(value, [Interval(numbers.Integral, 1, None)])


@pytest.mark.parametrize("value", [0, -1, 1.0, 2.5, True, np.bool_(True), "3", None])
def test_positive_int_interval_refuses(value):
    msg = _refused(value, [Interval(numbers.Integral, 1, None)])
    assert msg == f"Owner.p must be a positive int, got {value!r}"


def test_interval_bounds_and_descriptions():
    half_open = Interval(numbers.Real, 0, 1, closed="left")
    assert str(half_open) == "a number in [0, 1)"
    assert half_open.is_satisfied_by(0) and half_open.is_satisfied_by(np.float32(0.5))
    assert not half_open.is_satisfied_by(1.0) and not half_open.is_satisfied_by(float("nan"))
    assert str(Interval(numbers.Real, 0, 1, closed="right")) == "a number in (0, 1]"
    assert str(Interval(numbers.Real, 0, None, closed="neither")) == "a finite number > 0"
    assert str(Interval(numbers.Integral, 2, None)) == "an int >= 2"
    assert str(Interval(numbers.Integral, 1, 62)) == "an int in [1, 62]"
    positive = Interval(numbers.Real, 0, None, closed="neither")
    for bad in (0.0, -1, float("inf"), float("nan"), True):
        assert not positive.is_satisfied_by(bad)
    assert Interval(numbers.Integral, None, 3).is_satisfied_by(-7)
    with pytest.raises(ValueError):
        Interval(numbers.Real, 0, 1, closed="open")


def test_options_none_types_and_named_constraints():
    opts = Options(["uniform", "similarity"])
    assert opts.is_satisfied_by("uniform") and not opts.is_satisfied_by("Uniform")
    assert not opts.is_satisfied_by(np.array(["uniform", "x"]))
    assert Options([0, 1]).is_satisfied_by(np.int64(1))
    assert not Options([0, 1]).is_satisfied_by(True)
    assert not Options(["1"]).is_satisfied_by(1)
    assert Options(["a"], hidden=["b"]).is_satisfied_by("b")
    assert _refused("c", [Options(["a"], hidden=["b"])]) == "Owner.p must be 'a', got 'c'"
    _accepted(None, [None, dict])
    _accepted({}, [None, dict])
    assert _refused([1], [None, dict]) == "Owner.p must be None or a dict, got [1]"
    _accepted(pathlib.Path("x"), [str, __import__("os").PathLike])
    for value in (True, False, np.bool_(False)):
        _accepted(value, ["boolean"])
    assert _refused(1, ["boolean", Options(["auto"])]) == \
        "Owner.p must be True, False or 'auto', got 1"
    for value in (None, 1, -1, -3, np.int32(4)):
        _accepted(value, ["n_jobs"])
    for value in (0, 1.5, "2", True):
        assert _refused(value, ["n_jobs"], "n_jobs") == \
            f"Owner.n_jobs must be None or a non-zero int, got {value!r}"
    for value in (None, 0, 2**32 - 1, np.random.RandomState(0)):
        _accepted(value, ["random_state"])
    for value in (-1, 2**32, 1.0, "0", np.random.default_rng(0)):
        assert "Owner.p must be None, an int in [0, 2**32) or a numpy RandomState" in \
            _refused(value, ["random_state"])
    with pytest.raises(ValueError, match="unknown constraint"):
        _accepted(1, ["positive"])


def test_the_message_names_owner_and_parameter():
    class Model:
        pass

    assert _refused(0, ["n_jobs"], "n_jobs", Model()).startswith("Model.n_jobs must be")
    assert _refused(0, ["n_jobs"], "n_jobs", Model).startswith("Model.n_jobs must be")
    assert _refused(0, ["n_jobs"], "n_jobs", None).startswith("n_jobs must be")
    # one error, a ValueError and a TypeError alike; unconstrained parameters pass
    err = InvalidParameterError("x")
    assert isinstance(err, ValueError) and isinstance(err, TypeError)
    validate_params("Owner", {"free": object()}, {"p": ["n_jobs"]})


def test_mixin_and_n_jobs_helpers():
    class Model(ValidatedParamsMixin):
        _param_constraints = {"k": [Interval(numbers.Integral, 1, None)], "n_jobs": ["n_jobs"]}

        def __init__(self, k=1, n_jobs=None):
            self.k, self.n_jobs = k, n_jobs

    Model()._validate_params()
    with pytest.raises(ValueError, match=r"^Model\.k must be a positive int, got 0$"):
        Model(k=0)._validate_params()
    assert n_jobs_value(None) == -1 and n_jobs_value(np.int64(2)) == 2
    with pytest.raises(ValueError, match=r"^n_jobs must be None or a non-zero int, got 0$"):
        effective_n_jobs(0)


def _estimators():
    from structkernels import GramTransformer, KernelKNNClassifier, KernelLSH, RandomKNNHash
    from structkernels.classifiers import HashForestClassifier, KernelSVC
    from structkernels.npk.learner import NonstationaryLearner

    return [
        (KernelSVC, {"kernel": "rbf"}), (HashForestClassifier, {"kernel": "rbf"}),
        (KernelKNNClassifier, {"kernel": "rbf"}), (RandomKNNHash, {"kernel": "rbf"}),
        (KernelLSH, {"kernel": "rbf"}), (GramTransformer, {"kernel": "rbf"}),
        (NonstationaryLearner, {"kernel": "path"}),
    ]


@pytest.mark.parametrize("bad", [0, 1.5, "2", True])
def test_every_estimator_refuses_a_bad_n_jobs_with_one_message_shape(bad):
    from structkernels import Path

    X = np.arange(12.0).reshape(6, 2)
    paths = [Path([(None, "bind"), ("ARG0", a)]) for a in "abcdef"]
    y = np.array([0, 1, 0, 1, 0, 1])
    for cls, params in _estimators():
        est = cls(n_jobs=bad, **params)
        data = paths if params["kernel"] == "path" else X
        with pytest.raises(ValueError) as info:
            est.fit(data, y)
        assert str(info.value) == \
            f"{cls.__name__}.n_jobs must be None or a non-zero int, got {bad!r}", cls
