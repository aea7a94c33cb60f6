"""The torch functions take the numpy estimators' argument names (kernel_x_params, ...), keep
sigma_x/sigma_y as deprecated aliases, and report an overflow as the numpy side does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the [torch] extra (PyTorch) is not installed")

from structkernels_hsic import HSIC  # noqa: E402
from structkernels_hsic.torch import hsic, nhsic  # noqa: E402

from structkernels.utils import NonFiniteError  # noqa: E402


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return x, np.tanh(x[:, :2]) + 0.3 * rng.normal(size=(n, 2))


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def test_kernel_params_as_the_numpy_estimator():
    x, y = _data()
    params = {"kernel_x_params": {"sigma": 1.3}, "kernel_y_params": {"sigma": "median"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        got = hsic(_t(x), _t(y), "rbf", "rbf", **params)
        n = nhsic(_t(x), _t(y), normalization="cka", **params)
    ref = HSIC("rbf", "rbf", **params).fit(x, y).statistic_
    assert float(got) == pytest.approx(ref, abs=1e-10)
    assert 0 < float(n) <= 1


@pytest.mark.parametrize("fn", [hsic, nhsic])
def test_sigma_aliases_warn_and_give_the_same_value(fn):
    x, y = _data()
    new = fn(_t(x), _t(y), kernel_x_params={"sigma": 1.5}, kernel_y_params={"sigma": 0.8})
    with pytest.warns(FutureWarning) as caught:
        old = fn(_t(x), _t(y), sigma_x=1.5, sigma_y=0.8)
    assert sorted(str(w.message) for w in caught) == [
        "sigma_x is deprecated: use kernel_x_params={'sigma': 1.5}, as the numpy estimators",
        "sigma_y is deprecated: use kernel_y_params={'sigma': 0.8}, as the numpy estimators",
    ]
    assert all(w.filename == __file__ for w in caught)  # points at the caller
    assert float(old) == float(new)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"kernel_x_params": {"sigma": -1.0}}, r"kernel_x_params\['sigma'\] must be a positive"),
    ({"kernel_y_params": {"sigma": "mean"}}, r"kernel_y_params\['sigma'\] must be a positive"),
    ({"kernel_x_params": {"gamma": 1.0}}, "kernel_x_params takes only 'sigma'"),
    ({"kernel_y_params": 1.0}, "kernel_y_params must be a dict"),
])
def test_bad_kernel_params(kwargs, match):
    x, y = _data()
    with pytest.raises(ValueError, match=match):
        hsic(_t(x), _t(y), **kwargs)


def test_both_spellings_at_once_is_an_error():
    x, y = _data()
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="both given"):
        hsic(_t(x), _t(y), sigma_x=1.0, kernel_x_params={"sigma": 2.0})


def test_overflow_is_the_numpy_estimators_error():
    x = np.random.default_rng(0).normal(size=(10, 2)) * 1e200
    for fn in (hsic, nhsic):
        with pytest.raises(NonFiniteError, match="not finite"):
            fn(_t(x), _t(x), "linear", "linear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(NonFiniteError):
            HSIC("linear", "linear").fit(x, x)
