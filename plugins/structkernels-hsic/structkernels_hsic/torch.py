"""Differentiable HSIC for PyTorch: HSIC and normalised HSIC as training losses.

Every function takes tensors of shape ``(n, d)`` (a 1-D tensor is one feature) on any
device and returns a 0-dim tensor through which gradients flow to both inputs.  In
float64 the values equal the plugin's numpy estimators (:func:`~structkernels_hsic.hsic_biased`,
:func:`~structkernels_hsic.hsic_unbiased`, :class:`~structkernels_hsic.HSIC`) with the
same kernel and bandwidth.

Kernels (names as the core registry's): ``"rbf"`` (alias ``"gaussian"``)
``exp(-||x - y||^2 / (2 sigma^2))``, ``"linear"`` ``<x, y>`` and ``"cosine"``
``<x, y> / (||x|| ||y||)`` (0 for a zero row, as scikit-learn).  The arguments are named
as those of the numpy :class:`~structkernels_hsic.HSIC`: ``kernel_x``, ``kernel_y`` and
``kernel_x_params={"sigma": ...}``, ``kernel_y_params`` (``sigma_x``/``sigma_y`` are
deprecated aliases).  ``"sigma": "median"`` (the default) is the median heuristic of
:func:`~structkernels_hsic.median_heuristic`, computed on the detached batch: the
bandwidth is a constant of the gradient.

Estimators: ``"biased"`` ``tr(K H L H) / n^2`` and ``"unbiased"`` (Song et al. 2012,
Eq. 5).  With ``n_features=D`` they are computed from explicit feature maps instead of
Gram matrices, in ``O(n D)`` memory and ``O(n D_x D_y)`` time, linear in the batch
size: random Fourier features ``sqrt(2/D) cos(x W / sigma + b)`` (Rahimi & Recht 2007;
``W`` standard normal, ``b`` uniform on ``[0, 2 pi)``, see :func:`rff_weights`) for an
RBF side, the rows themselves (linear) or the unit rows (cosine), which are exact.

Normalised HSIC (:func:`nhsic`):

- ``"regularized"`` (the HSIC bottleneck's nHSIC, Ma, Lewis & Kleijn 2020, after
  Fukumizu et al. 2008): ``tr(K~ L~)`` with ``K~ = Kc (Kc + eps n I)^-1``, ``Kc = H K H``;
  ``O(n^3)`` on Grams, ``O(n D^2 + D^3)`` on features through
  ``Kc (Kc + eps n I)^-1 = Phi (Phi^T Phi + eps n I)^-1 Phi^T`` (``Phi`` the centred features);
- ``"cka"``: ``HSIC(x, y) / sqrt(HSIC(x, x) HSIC(y, y))`` (centred kernel alignment).

A side compared with several others (a batch's inputs and labels against every layer) can
be prepared once with :func:`prepare`; the :class:`Side` it returns stands for the tensor in
:func:`hsic` and :func:`nhsic` and caches its Gram, centred Gram and normalisation terms.

A NaN or infinity in an input raises ``ValueError``; a result that overflows raises
:class:`structkernels.utils.NonFiniteError` (a ``ValueError``), as the numpy estimators do;
nothing is dropped.

Examples
--------
>>> import torch
>>> from structkernels_hsic.torch import hsic, nhsic
>>> g = torch.Generator().manual_seed(0)
>>> x = torch.randn(64, 2, generator=g, dtype=torch.float64, requires_grad=True)
>>> y = torch.sin(x.detach()) + 0.1 * torch.randn(64, 2, generator=g, dtype=torch.float64)
>>> h = hsic(x, y)                      # RBF on both sides, median bandwidths
>>> h.backward()
>>> bool(h > 0.02), tuple(x.grad.shape)
(True, (64, 2))
>>> bool(0 < nhsic(x, y, normalization="cka") <= 1)
True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from sklearn.utils import check_random_state

from structkernels.utils import NonFiniteError

__all__ = [
    "hsic",
    "nhsic",
    "prepare",
    "Side",
    "gram",
    "feature_map",
    "rff_weights",
    "median_sigma",
    "KERNELS",
    "ESTIMATORS",
    "NORMALIZATIONS",
]

KERNELS = ("rbf", "gaussian", "linear", "cosine")
ESTIMATORS = ("biased", "unbiased")
NORMALIZATIONS = ("regularized", "cka")

Tensor = torch.Tensor


# ------------------------------------------------------------------ checks
def _as_matrix(x: Any, name: str) -> Tensor:
    """``x`` as a finite 2-D floating tensor (a 1-D tensor is one column)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {tuple(x.shape)}")
    if x.is_complex():
        raise TypeError(f"{name} must be a real tensor, got {x.dtype}")
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    if x.numel() and not bool(torch.isfinite(x).all()):
        rows = torch.nonzero(~torch.isfinite(x.detach()).all(dim=1)).flatten()[:10].tolist()
        raise ValueError(f"{name} contains NaN or infinity in row(s) {rows}")
    return x


def _pair(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    x, y = _as_matrix(x, "x"), _as_matrix(y, "y")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same number of samples, got {x.shape[0]} and {y.shape[0]}")
    if x.shape[0] < 2:
        raise ValueError(f"HSIC needs at least 2 samples, got {x.shape[0]}")
    if x.device != y.device:
        raise ValueError(f"x and y are on different devices ({x.device} and {y.device})")
    if x.dtype != y.dtype:  # an integer label tensor became the default dtype: follow the wider
        dt = torch.promote_types(x.dtype, y.dtype)
        x, y = x.to(dt), y.to(dt)
    return x, y


def _check_kernel(kernel: str, name: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"{name} must be one of {KERNELS}, got {kernel!r}")
    return "rbf" if kernel == "gaussian" else kernel


def _check_estimator(estimator: str) -> bool:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    return estimator == "unbiased"


def _finite(value: Tensor, what: str, hint: str = "") -> Tensor:
    """``value``, or a :class:`~structkernels.utils.NonFiniteError` naming ``what`` (as numpy's)."""
    if not bool(torch.isfinite(value).all()):
        bad = float(value.detach().flatten()[0])
        raise NonFiniteError(f"{what} is not finite ({bad})" + hint, (), bad)
    return value


#: The default of the deprecated ``sigma_x``/``sigma_y``: not given.
_DEPRECATED = "deprecated"


def _bandwidth(params: Any, sigma: Any, side: str) -> tuple[Any, str]:
    """``(sigma, the argument's name)`` of one side from ``kernel_<side>_params`` and the
    deprecated ``sigma_<side>`` (a FutureWarning naming the new spelling)."""
    name = f"kernel_{side}_params"
    if params is None:
        params = {}
    elif not isinstance(params, Mapping):
        raise ValueError(f"{name} must be a dict such as {{'sigma': 'median'}}, got {params!r}")
    unknown = sorted(map(str, set(params) - {"sigma"}))
    if unknown:
        raise ValueError(f"{name} takes only 'sigma' (the RBF bandwidth), got {unknown}")
    if isinstance(sigma, str) and sigma == _DEPRECATED:
        return params.get("sigma", "median"), f"{name}['sigma']"
    warnings.warn(
        f"sigma_{side} is deprecated: use {name}={{'sigma': {sigma!r}}}, as the numpy estimators",
        FutureWarning, stacklevel=3,
    )
    if "sigma" in params:
        raise ValueError(f"sigma_{side} and {name}['sigma'] are both given: give {name} only")
    return sigma, f"sigma_{side}"


# --------------------------------------------------------------- bandwidth
def median_sigma(x: Tensor, *, max_samples: int = 2000, random_state: int = 0) -> Tensor:
    """Median pairwise Euclidean distance of the rows of ``x``, detached (a constant).

    The same rule as :func:`structkernels_hsic.median_heuristic` (numpy's median, i.e.
    the mean of the two middle distances for an even count; the same seeded subsample
    above ``max_samples`` rows; 1.0 for constant data), without leaving the device.

    Parameters
    ----------
    x : Tensor of shape (n, d) or (n,)
    max_samples : int, default 2000
    random_state : int, default 0
        Seed of the subsample (numpy's ``default_rng``, as the numpy function).

    Returns
    -------
    Tensor
        0-dim, ``x``'s dtype and device, no gradient.

    Examples
    --------
    >>> import torch
    >>> float(median_sigma(torch.tensor([[0.0], [1.0], [3.0]])))
    2.0
    """
    with torch.no_grad():
        a = _as_matrix(x, "x").detach()
        n = a.shape[0]
        if n < 2:
            raise ValueError(f"median heuristic needs at least 2 rows, got {n}")
        if n > max_samples:
            rng = np.random.default_rng(random_state)
            idx = np.sort(rng.choice(n, max_samples, replace=False))
            a = a[torch.as_tensor(idx, device=a.device)]
        d = torch.pdist(a)
        # torch.median is the lower middle value; numpy's is the mean of the two middle ones
        med = 0.5 * (torch.median(d) - torch.median(-d))
        return torch.where(med > 0, med, torch.ones_like(med))


def _check_sigma(sigma: Any, name: str) -> None:
    """A positive finite number, a 0-dim tensor of one, or "median"; else a ValueError naming ``name``."""
    if isinstance(sigma, str):
        if sigma != "median":
            raise ValueError(f"{name} must be a positive number or 'median', got {sigma!r}")
        return
    if isinstance(sigma, torch.Tensor):
        s = sigma.detach()
        if s.numel() != 1 or not bool(torch.isfinite(s).all() & (s > 0).all()):
            raise ValueError(f"{name} must be one positive finite number, got {sigma!r}")
        return
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a positive number or 'median', got {sigma!r}")
    if not (math.isfinite(float(sigma)) and sigma > 0):
        raise ValueError(f"{name} must be a positive finite number, got {sigma!r}")


def _sigma(x: Tensor, sigma: Any, name: str) -> Tensor:
    _check_sigma(sigma, name)
    if isinstance(sigma, str):
        return median_sigma(x)
    if isinstance(sigma, torch.Tensor):
        return sigma.detach().to(dtype=x.dtype, device=x.device).reshape(())
    return torch.tensor(float(sigma), dtype=x.dtype, device=x.device)


# -------------------------------------------------------- Grams and features
def _unit_rows(x: Tensor) -> Tensor:
    norm = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    safe = torch.where(norm > 0, norm, torch.ones_like(norm))
    return torch.where(norm > 0, x / safe, torch.zeros_like(x))


def gram(x: Tensor, kernel: str = "rbf", sigma: Any = "median") -> Tensor:
    """The Gram matrix of the rows of ``x``, differentiable in ``x``.

    Parameters
    ----------
    x : Tensor of shape (n, d) or (n,)
    kernel : {"rbf", "gaussian", "linear", "cosine"}, default "rbf"
    sigma : float, 0-dim Tensor or "median", default "median"
        RBF bandwidth (ignored by the other kernels); a tensor or the median is detached.

    Returns
    -------
    Tensor of shape (n, n)

    Examples
    --------
    >>> import torch
    >>> gram(torch.tensor([[0.0], [1.0]]), sigma=1.0)
    tensor([[1.0000, 0.6065],
            [0.6065, 1.0000]])
    """
    k = _check_kernel(kernel, "kernel")
    x = _as_matrix(x, "x")
    if k == "linear":
        return x @ x.T
    if k == "cosine":
        u = _unit_rows(x)
        return u @ u.T
    s = _sigma(x, sigma, "sigma")
    sq = (x * x).sum(dim=1)
    d2 = (sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)).clamp_min(0.0)
    d2 = d2 * (1.0 - torch.eye(x.shape[0], dtype=x.dtype, device=x.device))  # exact 0 diagonal
    return torch.exp(-d2 / (2.0 * s * s))


def rff_weights(
    n_in: int, n_features: int, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Random Fourier weights ``(W, b)`` for an RBF kernel: ``W`` of shape ``(n_in, n_features)``
    standard normal, ``b`` of shape ``(n_features,)`` uniform on ``[0, 2 pi)`` (float64 numpy).

    The features ``sqrt(2 / D) cos(x W / sigma + b)`` have inner products whose
    expectation is ``exp(-||x - y||^2 / (2 sigma^2))`` for every ``sigma`` (the weights
    are drawn once at unit bandwidth and scaled).  ``W`` is drawn before ``b`` from
    ``check_random_state(random_state)``.

    Examples
    --------
    >>> W, b = rff_weights(3, 100, random_state=0)
    >>> W.shape, b.shape
    ((3, 100), (100,))
    """
    for value, name in ((n_in, "n_in"), (n_features, "n_features")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    rng = check_random_state(random_state)
    W = rng.standard_normal((int(n_in), int(n_features)))
    b = rng.uniform(0.0, 2.0 * math.pi, int(n_features))
    return W, b


def feature_map(
    x: Tensor, kernel: str = "rbf", sigma: Any = "median", weights: Any = None
) -> Tensor:
    """Explicit features ``Phi`` of the rows of ``x``, with ``Phi Phi^T`` the (approximate) Gram.

    Parameters
    ----------
    x : Tensor of shape (n, d) or (n,)
    kernel : {"rbf", "gaussian", "linear", "cosine"}, default "rbf"
        RBF: random Fourier features (needs ``weights``); linear: ``x``; cosine: the unit rows.
    sigma : float, 0-dim Tensor or "median", default "median"
    weights : (W, b), optional
        From :func:`rff_weights` (numpy arrays or tensors), ``W`` of shape ``(d, D)``.

    Returns
    -------
    Tensor of shape (n, D)

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(5, 3, dtype=torch.float64)
    >>> phi = feature_map(x, "rbf", sigma=1.0, weights=rff_weights(3, 20_000, random_state=0))
    >>> bool(((phi @ phi.T) - gram(x, "rbf", sigma=1.0)).abs().max() < 0.05)
    True
    """
    k = _check_kernel(kernel, "kernel")
    x = _as_matrix(x, "x")
    if k == "linear":
        return x
    if k == "cosine":
        return _unit_rows(x)
    if weights is None:
        raise ValueError("random Fourier features need weights=(W, b), e.g. rff_weights(d, D, random_state)")
    W, b = (torch.as_tensor(w).to(dtype=x.dtype, device=x.device) for w in weights)
    if W.ndim != 2 or b.ndim != 1 or W.shape[1] != b.shape[0] or W.shape[0] != x.shape[1]:
        raise ValueError(
            f"weights must be (W, b) with W of shape ({x.shape[1]}, D) and b of shape (D,), got "
            f"{tuple(W.shape)} and {tuple(b.shape)}"
        )
    s = _sigma(x, sigma, "sigma")
    return math.sqrt(2.0 / W.shape[1]) * torch.cos(x @ W / s + b)


# ---------------------------------------------------------------- estimators
class Side:
    """One side of HSIC prepared once, for several statistics against other sides.

    Holds the side's Gram matrix or explicit features and caches what the statistics
    need of this side alone (its centred Gram, ``Kc (Kc + eps n I)^-1``, ``HSIC(x, x)``).
    In HSIC-bottleneck training a batch's inputs and labels are prepared once and compared
    with every layer.  Made by :func:`prepare`; :func:`hsic` and :func:`nhsic` take it in
    place of a tensor.  Gradients flow to the tensor it was prepared from.

    Attributes
    ----------
    n : int
        Samples.
    kernel : str
    features : Tensor or None
        ``Phi`` of shape (n, D) when prepared with explicit features, else None.
    """

    def __init__(self, n: int, kernel: str, gram: Tensor | None, features: Tensor | None):
        self.n = n
        self.kernel = kernel
        self.features = features
        self._cache: dict = {} if gram is None else {"K": gram}

    def __repr__(self) -> str:
        mode = f"features={tuple(self.features.shape)}" if self.features is not None else "gram"
        return f"Side(n={self.n}, kernel={self.kernel!r}, {mode})"

    @property
    def tensor(self) -> Tensor:
        """The Gram matrix or, with explicit features, the features."""
        return self.features if self.features is not None else self.gram()

    def _get(self, key: Any, make: Any) -> Tensor:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def gram(self) -> Tensor:
        """The (n, n) Gram matrix (``Phi Phi^T`` for features)."""
        return self._get("K", lambda: self.features @ self.features.T)

    def centred_gram(self) -> Tensor:
        return self._get("Kc", lambda: _center_gram(self.gram()))

    def centred_features(self) -> Tensor:
        return self._get("Fc", lambda: self.features - self.features.mean(dim=0))

    def ratio(self, epsilon: float) -> Tensor:
        """``Kc (Kc + eps n I)^-1`` (the two factors commute)."""
        def make() -> Tensor:
            Kc = self.centred_gram()
            eye = torch.eye(self.n, dtype=Kc.dtype, device=Kc.device) * (epsilon * self.n)
            return torch.linalg.solve(Kc + eye, Kc)
        return self._get(("R", epsilon), make)

    def feature_ridge(self, epsilon: float) -> Tensor:
        """``Phi_c^T Phi_c + eps n I`` (centred features)."""
        def make() -> Tensor:
            F = self.centred_features()
            return F.T @ F + torch.eye(F.shape[1], dtype=F.dtype, device=F.device) * (epsilon * self.n)
        return self._get(("G", epsilon), make)


def prepare(
    x: Tensor,
    kernel: str = "rbf",
    *,
    sigma: Any = "median",
    features: bool | None = None,
    n_features: int | None = None,
    rff: Any = None,
    random_state: Any = None,
) -> Side:
    """Prepare one side of HSIC: its Gram matrix, or explicit features.

    Parameters
    ----------
    x : Tensor of shape (n, d) or (n,)
    kernel : {"rbf", "gaussian", "linear", "cosine"}, default "rbf"
    sigma : float, 0-dim Tensor or "median", default "median"
    features : bool, optional
        Explicit features instead of the Gram matrix: random Fourier features for "rbf",
        the rows (linear) or the unit rows (cosine).  Default: when ``n_features`` or
        ``rff`` is given.
    n_features : int, optional
        Random Fourier features of "rbf" (weights drawn from ``random_state``).
    rff : (W, b), optional
        Fixed random Fourier weights (:func:`rff_weights`).
    random_state : int, RandomState or None

    Returns
    -------
    Side

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(30, 2, dtype=torch.float64)
    >>> labels = prepare(torch.nn.functional.one_hot(torch.arange(30) % 3).double(), "linear",
    ...                  features=True)
    >>> labels
    Side(n=30, kernel='linear', features=(30, 3))
    >>> bool(hsic(x, labels, kernel_x_params={"sigma": 1.0}) >= 0)
    True
    """
    k = _check_kernel(kernel, "kernel")
    x = _as_matrix(x, "x")
    if x.shape[0] < 2:
        raise ValueError(f"HSIC needs at least 2 samples, got {x.shape[0]}")
    if n_features is not None and (
        isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1
    ):
        raise ValueError(f"n_features must be a positive int or None, got {n_features!r}")
    if features is None:
        features = n_features is not None or rff is not None
    if not features:
        return Side(x.shape[0], k, gram(x, k, sigma), None)
    if k == "rbf" and rff is None:
        if n_features is None:
            raise ValueError("random Fourier features of an RBF side need n_features or rff=(W, b)")
        rff = rff_weights(x.shape[1], int(n_features), random_state)
    return Side(x.shape[0], k, None, feature_map(x, k, sigma, rff))


def _sides(x, y, kernel_x, kernel_y, sigma_x, sigma_y, n_features, random_state, rff_x, rff_y):
    """Both sides as :class:`Side` (a Side given is used as it is); ``sigma_x``, ``sigma_y``:
    ``(sigma, the argument's name)`` from :func:`_bandwidth`."""
    if not isinstance(x, Side) and not isinstance(y, Side):
        x, y = _pair(x, y)
    rng = check_random_state(random_state)  # one stream: x's weights are drawn first
    feats = n_features is not None or rff_x is not None or rff_y is not None
    sides = []
    for v, k, s, w, name in ((x, kernel_x, sigma_x, rff_x, "x"), (y, kernel_y, sigma_y, rff_y, "y")):
        if isinstance(v, Side):
            sides.append(v)
            continue
        k = _check_kernel(k, f"kernel_{name}")
        s, given_as = s
        _check_sigma(s, given_as)
        if feats and k == "rbf" and w is None and n_features is None:
            raise ValueError(f"the RBF side {name} needs n_features (or rff_{name}=(W, b))")
        sides.append(prepare(v, k, sigma=s, features=feats, n_features=n_features, rff=w,
                             random_state=rng))
    a, b = sides
    if a.n != b.n:
        raise ValueError(f"x and y must have the same number of samples, got {a.n} and {b.n}")
    ta, tb = a.tensor, b.tensor
    if ta.device != tb.device:
        raise ValueError(f"x and y are on different devices ({ta.device} and {tb.device})")
    if ta.dtype != tb.dtype:
        raise ValueError(f"x and y have different dtypes ({ta.dtype} and {tb.dtype})")
    return a, b


def _center_gram(K: Tensor) -> Tensor:
    r = K.mean(dim=0)
    return K - r[None, :] - r[:, None] + r.mean()


def _from_sums(n: int, dot: Tensor, kr: Tensor, lr: Tensor, kd: Tensor, ld: Tensor) -> Tensor:
    """Song et al.'s unbiased HSIC from ``<K, L>``, the row sums and the diagonals."""
    if n < 4:
        raise ValueError(f"the unbiased HSIC needs at least 4 samples, got {n}")
    kt, lt = kr - kd, lr - ld
    t = (dot - kd @ ld) + kt.sum() * lt.sum() / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * (kt @ lt)
    return t / (n * (n - 3))


def _hsic_sides(a: Side, b: Side, unbiased: bool, feats: bool | None = None) -> Tensor:
    n = a.n
    if feats is None:
        feats = a.features is not None and b.features is not None
    if feats:  # O(n D_a D_b)
        A, B = a.features, b.features
        if not unbiased:
            M = a.centred_features().T @ b.centred_features()
            return (M * M).sum() / n**2
        C = A.T @ B
        kr, lr = A @ A.sum(dim=0), B @ B.sum(dim=0)
        return _from_sums(n, (C * C).sum(), kr, lr, (A * A).sum(dim=1), (B * B).sum(dim=1))
    if not unbiased:
        return (a.centred_gram() * b.gram()).sum() / n**2
    K, L = a.gram(), b.gram()
    return _from_sums(n, (K * L).sum(), K.sum(dim=1), L.sum(dim=1), K.diagonal(), L.diagonal())


def _self_hsic(a: Side, unbiased: bool, feats: bool) -> Tensor:
    return a._get(("self", unbiased, feats), lambda: _hsic_sides(a, a, unbiased, feats))


def _regularized_sides(a: Side, b: Side, epsilon: float) -> Tensor:
    if a.features is not None and b.features is not None:  # O(n D^2 + D^3)
        C = a.centred_features().T @ b.centred_features()
        Pa = torch.linalg.solve(a.feature_ridge(epsilon), C)    # (A^T A + eps n I)^-1 A^T B
        Pb = torch.linalg.solve(b.feature_ridge(epsilon), C.T)  # (B^T B + eps n I)^-1 B^T A
        return (Pa * Pb.T).sum()                                 # tr(A Ma A^T B Mb B^T)
    return (a.ratio(epsilon) * b.ratio(epsilon).T).sum()


def hsic(
    x: Tensor | Side,
    y: Tensor | Side,
    kernel_x: str = "rbf",
    kernel_y: str = "rbf",
    *,
    kernel_x_params: Mapping[str, Any] | None = None,
    kernel_y_params: Mapping[str, Any] | None = None,
    estimator: str = "biased",
    n_features: int | None = None,
    random_state: Any = None,
    rff_x: Any = None,
    rff_y: Any = None,
    sigma_x: Any = _DEPRECATED,
    sigma_y: Any = _DEPRECATED,
) -> Tensor:
    """HSIC between paired rows of ``x`` and ``y``, differentiable in both.

    Parameters
    ----------
    x, y : Tensor of shape (n, d_x), (n, d_y), or Side
        A 1-D tensor is one feature; an integer or boolean tensor (e.g. one-hot labels) is
        cast to the other's dtype.  A :class:`Side` (from :func:`prepare`) is used as it
        was prepared (its kernel arguments here are ignored).
    kernel_x, kernel_y : {"rbf", "gaussian", "linear", "cosine"}, default "rbf"
    kernel_x_params, kernel_y_params : dict, optional
        ``{"sigma": s}``, the RBF bandwidth of that side (ignored by the other kernels): a
        float, a 0-dim Tensor or ``"median"`` (the default; the median heuristic computed on
        the detached batch).  Named as the numpy :class:`~structkernels_hsic.HSIC`'s.
    estimator : {"biased", "unbiased"}, default "biased"
    n_features : int, optional
        Compute from feature maps: ``n_features`` random Fourier features per RBF side
        (linear and cosine sides use their exact features), ``O(n)`` in the batch size.
        When only one side has features, the other's Gram is used (``O(n^2)``).
    random_state : int, RandomState or None
        Draws the random Fourier weights (``x``'s side first) when ``rff_x``/``rff_y`` are not given.
    rff_x, rff_y : (W, b), optional
        Fixed random Fourier weights (:func:`rff_weights`) for that side; imply features.
    sigma_x, sigma_y : float, 0-dim Tensor or "median"
        Deprecated (a ``FutureWarning``): ``kernel_x_params={"sigma": ...}`` and
        ``kernel_y_params``.

    Returns
    -------
    Tensor
        0-dim.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from structkernels_hsic import hsic_biased
    >>> from sklearn.metrics.pairwise import rbf_kernel
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.normal(size=(50, 2)), rng.normal(size=(50, 1))
    >>> t = hsic(torch.from_numpy(x), torch.from_numpy(y),
    ...          kernel_x_params={"sigma": 1.0}, kernel_y_params={"sigma": 2.0})
    >>> ref = hsic_biased(rbf_kernel(x, gamma=0.5), rbf_kernel(y, gamma=0.125))
    >>> abs(float(t) - ref) < 1e-12
    True
    """
    bx, by = _bandwidth(kernel_x_params, sigma_x, "x"), _bandwidth(kernel_y_params, sigma_y, "y")
    unbiased = _check_estimator(estimator)
    a, b = _sides(x, y, kernel_x, kernel_y, bx, by, n_features, random_state, rff_x, rff_y)
    return _finite(_hsic_sides(a, b, unbiased), "HSIC", "; the kernel values are too large: scale the input down")


def nhsic(
    x: Tensor | Side,
    y: Tensor | Side,
    kernel_x: str = "rbf",
    kernel_y: str = "rbf",
    *,
    normalization: str = "regularized",
    epsilon: float = 1e-5,
    kernel_x_params: Mapping[str, Any] | None = None,
    kernel_y_params: Mapping[str, Any] | None = None,
    estimator: str = "biased",
    n_features: int | None = None,
    random_state: Any = None,
    rff_x: Any = None,
    rff_y: Any = None,
    sigma_x: Any = _DEPRECATED,
    sigma_y: Any = _DEPRECATED,
) -> Tensor:
    """Normalised HSIC between paired rows of ``x`` and ``y``, differentiable in both.

    Parameters
    ----------
    x, y, kernel_x, kernel_y, kernel_x_params, kernel_y_params, n_features, random_state, rff_x, rff_y
        As :func:`hsic`.
    normalization : {"regularized", "cka"}, default "regularized"
        ``"regularized"``: the HSIC bottleneck's ``tr(K~ L~)``, ``K~ = Kc (Kc + eps n I)^-1``
        (between 0 and ``n - 1``; on the centred Grams, so ``estimator`` must be "biased").
        ``"cka"``: ``HSIC(x, y) / sqrt(HSIC(x, x) HSIC(y, y))`` with ``estimator``
        (between 0 and 1 for "biased"); undefined, a ``ValueError``, when one side is constant.
    epsilon : float, default 1e-5
        The ridge of ``"regularized"`` (the paper's value).
    estimator : {"biased", "unbiased"}, default "biased"
    sigma_x, sigma_y : float, 0-dim Tensor or "median"
        Deprecated (a ``FutureWarning``): ``kernel_x_params={"sigma": ...}`` and
        ``kernel_y_params``.

    Returns
    -------
    Tensor
        0-dim.

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(40, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    >>> round(float(nhsic(x, 2 * x + 1, normalization="cka")), 6)
    1.0
    >>> bool(nhsic(x, x[:, :1]) > nhsic(x, torch.randn(40, 1, dtype=torch.float64)))
    True
    """
    bx, by = _bandwidth(kernel_x_params, sigma_x, "x"), _bandwidth(kernel_y_params, sigma_y, "y")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    unbiased = _check_estimator(estimator)
    if normalization == "regularized":
        if unbiased:
            raise ValueError("normalization='regularized' is defined on the centred Grams: use estimator='biased'")
        if isinstance(epsilon, bool) or not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon)
                                             and epsilon > 0):
            raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    a, b = _sides(x, y, kernel_x, kernel_y, bx, by, n_features, random_state, rff_x, rff_y)
    if normalization == "regularized":
        value = _regularized_sides(a, b, float(epsilon))
        return _finite(value, "normalised HSIC", "; the kernel values are too large: scale the input down")
    feats = a.features is not None and b.features is not None
    hxy = _hsic_sides(a, b, unbiased)
    hxx, hyy = _self_hsic(a, unbiased, feats), _self_hsic(b, unbiased, feats)
    for h, name in ((hxx, "x"), (hyy, "y")):
        if not bool(h > 0):
            raise ValueError(
                f"normalised HSIC is undefined: HSIC({name}, {name}) = {float(h.detach()):.3g} is not "
                f"positive ({name} is constant under its kernel, or too few samples for the unbiased estimator)"
            )
    return _finite(hxy / torch.sqrt(hxx * hyy), "normalised HSIC")
