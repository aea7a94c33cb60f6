"""Differentiable HSIC (structkernels_hsic.torch) against the plugin's numpy estimators, and
its gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the [torch] extra (PyTorch) is not installed")

from sklearn.metrics.pairwise import cosine_similarity, rbf_kernel  # noqa: E402
from structkernels_hsic import HSIC, hsic_biased, hsic_icd, hsic_unbiased, median_heuristic  # noqa: E402
from structkernels_hsic.torch import (  # noqa: E402
    feature_map,
    gram,
    hsic,
    median_sigma,
    nhsic,
    prepare,
    rff_weights,
)

TOL = 1e-10


def _data(n=40, dx=3, dy=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dx))
    y = np.tanh(x[:, :dy]) + 0.3 * rng.normal(size=(n, dy))
    return x, y


def _t(a, grad=False):
    return torch.tensor(a, dtype=torch.float64, requires_grad=grad)


def _rbf(x, sigma):
    return rbf_kernel(x, gamma=0.5 / sigma**2)


def _centre(K):
    n = len(K)
    H = np.eye(n) - 1.0 / n
    return H @ K @ H


def _regularized(K, L, eps=1e-5):
    n = len(K)
    Kc, Lc = _centre(K), _centre(L)
    Rx = Kc @ np.linalg.inv(Kc + eps * n * np.eye(n))
    Ry = Lc @ np.linalg.inv(Lc + eps * n * np.eye(n))
    return float(np.trace(Rx @ Ry))


def _rff_np(x, W, b, sigma):
    return np.sqrt(2.0 / W.shape[1]) * np.cos(x @ W / sigma + b)


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_rbf_equals_numpy_estimators(estimator):
    x, y = _data()
    ref_f = hsic_biased if estimator == "biased" else hsic_unbiased
    ref = ref_f(_rbf(x, 1.3), _rbf(y, 0.7))
    got = hsic(_t(x), _t(y), sigma_x=1.3, sigma_y=0.7, estimator=estimator)
    assert abs(float(got) - ref) < TOL
    est = HSIC("rbf", "rbf", estimator=estimator, kernel_x_params={"sigma": 1.3},
               kernel_y_params={"sigma": 0.7}).fit(x, y)
    assert abs(float(got) - est.statistic_) < TOL


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_median_bandwidth_equals_the_plugin(estimator):
    x, y = _data(n=51)
    est = HSIC("rbf", "rbf", estimator=estimator, kernel_x_params={"sigma": "median"},
               kernel_y_params={"sigma": "median"}).fit(x, y)
    got = hsic(_t(x), _t(y), estimator=estimator)
    assert abs(float(got) - est.statistic_) < TOL


@pytest.mark.parametrize("n", [2, 3, 4, 7, 30])
def test_median_sigma_equals_median_heuristic(n):
    x = np.random.default_rng(n).normal(size=(n, 2))
    assert float(median_sigma(_t(x))) == pytest.approx(median_heuristic(x), abs=1e-14)
    big = np.random.default_rng(1).normal(size=(90, 2))
    assert float(median_sigma(_t(big), max_samples=25)) == pytest.approx(
        median_heuristic(big, max_samples=25), abs=1e-14)
    assert float(median_sigma(torch.ones(5, 2))) == 1.0  # constant data, as the numpy rule


@pytest.mark.parametrize(("kx", "ky"), [("linear", "cosine"), ("cosine", "linear"), ("gaussian", "linear")])
@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_linear_and_cosine_equal_the_plugin(kx, ky, estimator):
    x, y = _data()
    x[3] = 0.0  # a zero row: cosine similarity 0, as scikit-learn
    params = {"sigma": 2.0}
    est = HSIC("rbf" if kx == "gaussian" else kx, ky, estimator=estimator,
               kernel_x_params=params if kx == "gaussian" else None).fit(x, y)
    got = hsic(_t(x), _t(y), kx, ky, sigma_x=2.0, estimator=estimator)
    assert abs(float(got) - est.statistic_) < TOL
    feats = hsic(_t(x), _t(y), kx, ky, sigma_x=2.0, estimator=estimator, n_features=64, random_state=0)
    if kx != "gaussian":  # linear and cosine features are exact
        assert abs(float(feats) - est.statistic_) < TOL


def test_gram_matches_scikit_learn():
    x, _ = _data()
    assert np.abs(gram(_t(x), "rbf", sigma=0.9).numpy() - _rbf(x, 0.9)).max() < 1e-14
    assert np.abs(gram(_t(x), "cosine").numpy() - cosine_similarity(x)).max() < 1e-14
    assert np.abs(gram(_t(x), "linear").numpy() - x @ x.T).max() < 1e-12


# --------------------------------------------------------------------- RFF
def test_rff_equals_numpy_with_the_same_features():
    x, y = _data(n=60)
    W1, b1 = rff_weights(3, 50, np.random.RandomState(5))
    rs = np.random.RandomState(5)
    Wx, bx = rff_weights(3, 50, rs)
    Wy, by = rff_weights(2, 50, rs)
    assert np.array_equal(W1, Wx)
    phi, psi = _rff_np(x, Wx, bx, 1.1), _rff_np(y, Wy, by, 0.8)
    assert np.abs(feature_map(_t(x), "rbf", 1.1, (Wx, bx)).numpy() - phi).max() < 1e-14
    got = hsic(_t(x), _t(y), sigma_x=1.1, sigma_y=0.8, n_features=50, random_state=5)
    assert abs(float(got) - hsic_icd(phi, psi)) < TOL
    assert abs(float(got) - hsic_biased(phi @ phi.T, psi @ psi.T)) < TOL
    unb = hsic(_t(x), _t(y), sigma_x=1.1, sigma_y=0.8, n_features=50, random_state=5,
               estimator="unbiased")
    assert abs(float(unb) - hsic_unbiased(phi @ phi.T, psi @ psi.T)) < TOL
    fixed = hsic(_t(x), _t(y), sigma_x=1.1, sigma_y=0.8, rff_x=(Wx, bx), rff_y=(Wy, by))
    assert float(fixed) == float(got)


def test_rff_error_shrinks_with_the_number_of_features():
    x, y = _data(n=80)
    exact = float(hsic(_t(x), _t(y), sigma_x=1.0, sigma_y=1.0))
    errors = []
    for D in (8, 128, 2048):
        errs = [abs(float(hsic(_t(x), _t(y), sigma_x=1.0, sigma_y=1.0, n_features=D, random_state=s))
                    - exact) for s in range(6)]
        errors.append(np.mean(errs))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05 * exact


# -------------------------------------------------------------- normalised
def test_regularized_nhsic_equals_numpy():
    x, y = _data()
    K, L = _rbf(x, 1.5), _rbf(y, 1.0)
    got = nhsic(_t(x), _t(y), sigma_x=1.5, sigma_y=1.0)
    assert abs(float(got) - _regularized(K, L)) < 1e-8 * _regularized(K, L)
    got = nhsic(_t(x), _t(y), sigma_x=1.5, sigma_y=1.0, epsilon=1e-2)
    assert abs(float(got) - _regularized(K, L, 1e-2)) < TOL


def test_regularized_nhsic_on_features_equals_the_gram_form():
    x, y = _data(n=50)
    rs = np.random.RandomState(2)
    Wx, bx = rff_weights(3, 30, rs)
    Wy, by = rff_weights(2, 20, rs)
    phi, psi = _rff_np(x, Wx, bx, 1.2), _rff_np(y, Wy, by, 1.2)
    ref = _regularized(phi @ phi.T, psi @ psi.T, 1e-3)
    got = nhsic(_t(x), _t(y), sigma_x=1.2, sigma_y=1.2, epsilon=1e-3, n_features=30,
                rff_x=(Wx, bx), rff_y=(Wy, by))
    assert abs(float(got) - ref) < TOL


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_cka_equals_numpy(estimator):
    x, y = _data()
    f = hsic_biased if estimator == "biased" else hsic_unbiased
    K, L = _rbf(x, 1.5), x[:, :1] @ x[:, :1].T + y @ y.T
    ref = f(K, L) / np.sqrt(f(K, K) * f(L, L))
    ty = _t(np.hstack([x[:, :1], y]))
    got = nhsic(_t(x), ty, "rbf", "linear", sigma_x=1.5, normalization="cka", estimator=estimator)
    assert abs(float(got) - ref) < TOL


def test_prepared_sides_give_the_same_values():
    x, y = _data()
    sx = prepare(_t(x), sigma=1.0)
    sy = prepare(_t(y), "linear")
    for norm in ("regularized", "cka"):
        direct = nhsic(_t(x), _t(y), "rbf", "linear", sigma_x=1.0, normalization=norm)
        assert float(nhsic(sx, sy, normalization=norm)) == pytest.approx(float(direct), abs=TOL)
        assert float(nhsic(_t(x), sy, sigma_x=1.0, normalization=norm)) == pytest.approx(float(direct), abs=TOL)
    assert float(hsic(sx, sy)) == pytest.approx(float(hsic(_t(x), _t(y), "rbf", "linear", sigma_x=1.0)), abs=TOL)


def test_float32_and_integer_labels():
    x, y = _data()
    labels = torch.tensor(np.arange(40) % 3)
    onehot = torch.nn.functional.one_hot(labels)
    v32 = nhsic(torch.tensor(x, dtype=torch.float32), onehot, "rbf", "linear", normalization="cka")
    v64 = nhsic(_t(x), onehot.double(), "rbf", "linear", normalization="cka")
    assert v32.dtype == torch.float32
    assert float(v32) == pytest.approx(float(v64), rel=1e-4)


# ---------------------------------------------------------------- gradients
CASES = [
    ("hsic", "rbf", "rbf", "biased", {}),
    ("hsic", "rbf", "linear", "unbiased", {}),
    ("hsic", "cosine", "linear", "biased", {}),
    ("hsic", "linear", "cosine", "unbiased", {}),
    ("hsic", "rbf", "rbf", "biased", {"n_features": 7, "random_state": 0}),
    ("hsic", "rbf", "cosine", "unbiased", {"n_features": 7, "random_state": 0}),
    ("regularized", "rbf", "rbf", "biased", {"epsilon": 1e-2}),
    ("regularized", "rbf", "linear", "biased", {"epsilon": 1e-2, "n_features": 5, "random_state": 1}),
    ("cka", "rbf", "linear", "biased", {}),
    ("cka", "cosine", "rbf", "unbiased", {}),
    ("cka", "rbf", "rbf", "biased", {"n_features": 6, "random_state": 2}),
]


@pytest.mark.parametrize(("kind", "kx", "ky", "estimator", "extra"), CASES)
def test_gradients_agree_with_finite_differences(kind, kx, ky, estimator, extra):
    x, y = _data(n=9, dx=3, dy=2, seed=3)
    tx, ty = _t(x, grad=True), _t(y, grad=True)

    def f(a, b):
        args = dict(sigma_x=1.2, sigma_y=0.9, estimator=estimator, **extra)
        if kind == "hsic":
            return hsic(a, b, kx, ky, **args)
        return nhsic(a, b, kx, ky, normalization=kind, **args)

    assert torch.autograd.gradcheck(f, (tx, ty), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_median_bandwidth_is_a_constant_of_the_gradient():
    x, y = _data(n=20)
    a = _t(x, grad=True)
    hsic(a, _t(y)).backward()
    b = _t(x, grad=True)
    hsic(b, _t(y), sigma_x=float(median_sigma(_t(x))), sigma_y=float(median_sigma(_t(y)))).backward()
    assert torch.allclose(a.grad, b.grad, atol=1e-14, rtol=0)


# ------------------------------------------------------------------- errors
def test_non_finite_input_is_an_error():
    x, y = _data()
    x[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"x contains NaN or infinity in row\(s\) \[4\]"):
        hsic(_t(x), _t(y))
    y[2, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        nhsic(_t(_data()[0]), _t(y))


def test_overflow_is_an_error():
    x = np.random.default_rng(0).normal(size=(10, 2)) * 1e200
    with pytest.raises(ValueError, match="not finite"):
        hsic(_t(x), _t(x), "linear", "linear")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"kernel_x": "poly"}, "kernel_x must be one of"),
    ({"estimator": "icd"}, "estimator must be one of"),
    ({"sigma_x": -1.0}, "sigma_x must be a positive"),
    ({"sigma_x": float("nan")}, "sigma_x must be a positive"),
    ({"sigma_y": "mean"}, "sigma_y must be a positive number or 'median'"),
    ({"n_features": 0}, "n_features must be a positive int"),
])
def test_bad_arguments(kwargs, match):
    x, y = _data()
    with pytest.raises(ValueError, match=match):
        hsic(_t(x), _t(y), **kwargs)


def test_undefined_cases_are_errors():
    x, y = _data()
    with pytest.raises(ValueError, match="same number of samples"):
        hsic(_t(x), _t(y[:-1]))
    with pytest.raises(ValueError, match="HSIC\\(y, y\\) = 0 is not positive"):
        nhsic(_t(x), torch.ones(40, 2, dtype=torch.float64), normalization="cka")
    with pytest.raises(ValueError, match="at least 4 samples"):
        hsic(_t(x[:3]), _t(y[:3]), estimator="unbiased")
    with pytest.raises(ValueError, match="use estimator='biased'"):
        nhsic(_t(x), _t(y), estimator="unbiased")
    with pytest.raises(ValueError, match="epsilon must be"):
        nhsic(_t(x), _t(y), epsilon=0.0)
    with pytest.raises(ValueError, match="normalization must be"):
        nhsic(_t(x), _t(y), normalization="cca")
    with pytest.raises(ValueError, match="needs n_features"):
        hsic(_t(x), _t(y), "rbf", "rbf", rff_x=rff_weights(3, 5, 0))
    with pytest.raises(TypeError, match="torch.Tensor"):
        hsic(x, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_values_and_gradients_on_the_gpu_equal_the_cpu():
    x, y = _data(n=300)
    for norm in ("regularized", "cka"):
        cpu, gpu = _t(x, grad=True), torch.tensor(x, device="cuda", requires_grad=True)
        v_cpu = nhsic(cpu, _t(y), normalization=norm, epsilon=1e-3)
        v_gpu = nhsic(gpu, torch.tensor(y, device="cuda"), normalization=norm, epsilon=1e-3)
        v_cpu.backward()
        v_gpu.backward()
        assert float(v_gpu) == pytest.approx(float(v_cpu), rel=1e-9)
        assert torch.allclose(gpu.grad.cpu(), cpu.grad, rtol=1e-6, atol=1e-9)
