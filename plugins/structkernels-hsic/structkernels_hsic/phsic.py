"""Pointwise HSIC (PHSIC), a kernelised co-occurrence score (Yokoi et al., EMNLP 2018).

PHSIC(x, y) is the contribution of the pair (x, y) to HSIC, as PMI is the
contribution of a pair to mutual information (Eq. 14-15), so the mean of
PHSIC over the training pairs is HSIC (MI : PMI = HSIC : PHSIC).  Estimators:

- ``"feature"`` (Eq. 18-21), kernels with an explicit feature map
  (:meth:`structkernels.Kernel.feature_map`: linear and cosine):
  ``(phi(x) - phi_bar)^T C_XY (psi(y) - psi_bar)`` with ``phi(x) = x`` (linear)
  or ``x / ||x||`` (cosine) and ``C_XY = 1/n sum_i phi(x_i) psi(y_i)^T - phi_bar psi_bar^T``;
  fit O(n d^2), score O(d^2) per pair.
- ``"icd"`` (Eq. 30-34), any kernel: the same form on incomplete Cholesky
  factors, ``(a - a_bar)^T C_ICD (b - b_bar)`` with ``C_ICD = 1/n (HA)^T B``;
  new points are projected "from halfway" (Eq. 34).
- ``"naive"`` (Eq. 27), any kernel, O(n) kernel values per scored point:
  ``(k - k_bar)^T (H / n) (l - l_bar)`` with ``k = (k(x, x_i))_i`` and
  ``k_bar = K 1 / n``; for checking.

Model files
-----------
:meth:`PHSIC.save` writes a fitted model as **data only**, and :meth:`PHSIC.load`
reads it without running anything the file names (never pickle/joblib): one NumPy
``.npz`` archive whose ``meta`` entry is UTF-8 JSON, written atomically.  The format, its
error (:class:`PHSICModelError`) and its checked reader live in
:mod:`structkernels_hsic.phsic_files` (``MODEL_FORMAT``, ``MODEL_VERSION`` are served
here too).
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from structkernels.structures import take
from structkernels.utils import check_finite, check_header
from structkernels_hsic._kernels import (
    as_column,
    check_dtype,
    check_n_features,
    check_vectors,
    cross_source,
    input_tags,
    resolve_kernel,
    resolve_source,
    set_n_features,
)
from structkernels_hsic._lowrank import centred_cross, fit_pair, resolve_ranks
from structkernels_hsic.icd import IncompleteCholesky
from structkernels_hsic.phsic_files import (
    MODEL_FORMAT,
    MODEL_VERSION,
    READABLE_VERSIONS,
    ModelReader,
    ModelWriter,
    PHSICModelError,
    checked_archive,
    count_field,
    jsonable,
    kernel_from_json,
    kernel_to_json,
)

__all__ = ["PHSIC", "PHSICModelError", "MODEL_FORMAT", "MODEL_VERSION"]

ESTIMATORS = ("feature", "icd", "naive")


def _feature_map(kernel: Any, X: Any, dtype, allow_1d: bool = True,
                 name: str = "Y") -> tuple[np.ndarray, np.ndarray | None]:
    """Explicit feature map of Eq. 19 as ``(A, w)``: ``phi(x_i) = w_i A_i``.

    The kernel's own map (:meth:`structkernels.Kernel.feature_map`) of the validated
    input: ``A`` is the input itself (no copy when it is already ``dtype``); ``w`` is
    ``1 / ||x_i||`` for the cosine kernel (1 for a zero row, which stays 0) and None for
    the linear kernel.  The row scales are folded into the products, so no normalised
    copy of the data is made.
    """
    A = check_vectors(kernel, as_column(kernel, X, name=name, allow_1d=allow_1d), dtype)
    if isinstance(A, np.ndarray) and A.dtype != dtype:
        A = A.astype(dtype)
    phi = kernel.feature_map(A)
    if phi is None:
        raise ValueError(
            f"estimator='feature' needs the linear or cosine kernel (explicit feature map, Eq. 19), "
            f"got {type(kernel).__name__}; use estimator='icd' or 'naive'"
        )
    return phi


_OVERFLOW_HINT = (
    "the values overflow (float32 ends at 3.4e38, float64 at 1.8e308): use dtype=np.float64, "
    "normalise the kernels or scale the input down"
)


def _finite_scores(scores: np.ndarray) -> np.ndarray:
    """The PHSIC scores, or a ``NonFiniteError`` naming the first pair that overflowed."""
    check_finite(scores, "PHSIC score", ("pair",), hint=_OVERFLOW_HINT)
    return scores


def _rowwise_bilinear(
    U: np.ndarray,
    C: np.ndarray,
    V: np.ndarray,
    mu: np.ndarray,
    nu: np.ndarray,
    wu: np.ndarray | None = None,
    wv: np.ndarray | None = None,
    block: int = 32768,
) -> np.ndarray:
    """``(wu_i u_i - mu)^T C (wv_i v_i - nu)`` for every row i: one GEMM per block, no per-pair loop.

    Expanded as ``wu wv u^T C v - wu u^T (C nu) - wv (mu^T C) v + mu^T C nu`` so
    that no centred or scaled copy of ``U`` or ``V`` is made (row scales None: 1).
    """
    dt = U.dtype
    C = np.asarray(C, dtype=dt)
    c_nu = C @ nu.astype(dt)
    mu_c = mu.astype(dt) @ C
    const = float(mu_c @ nu.astype(dt))
    out = np.empty(len(U), dtype=np.float64)
    for s in range(0, len(U), block):
        e = min(s + block, len(U))
        Ub, Vb = U[s:e], V[s:e]
        quad = np.einsum("ij,ij->i", Ub @ C, Vb)
        lin_u = Ub @ c_nu
        lin_v = Vb @ mu_c
        if wu is not None:
            quad *= wu[s:e]
            lin_u *= wu[s:e]
        if wv is not None:
            quad *= wv[s:e]
            lin_v *= wv[s:e]
        out[s:e] = quad - lin_u - lin_v + const
    return out


class PHSIC(BaseEstimator):
    """Pointwise HSIC: how strongly each pair (x, y) co-occurs given training pairs.

    Parameters
    ----------
    kernel_x, kernel_y : str, Kernel or "precomputed", default "cosine"
        Registered kernel name, instance or ``"precomputed"``: then ``fit``
        takes the training Gram matrices and ``score`` the cross Grams of
        shape (n_new, n_train).
    estimator : {"feature", "icd", "naive"}, default "feature"
    max_rank : int, None or (int, int), default None
        Largest incomplete Cholesky rank per side (``"icd"``; None: what ``tol``
        needs).  The paper uses a fixed rank 100: ``max_rank=100, tol=0``.
    tol : float, default 1e-3
        Incomplete Cholesky stop: ``trace(K - A A^T) <= tol trace(K)`` per side;
        stopped earlier by ``max_rank``, a ``ConvergenceWarning`` states the
        residual reached (``tol=0``: exactly ``max_rank``, no warning).
    kernel_x_params, kernel_y_params : dict, optional
        Parameters of kernels given by name (``{"bandwidth": "median"}`` allowed).
    dtype : np.float64 or np.float32, default np.float64
        Arithmetic of the feature and ICD estimators, end to end: float32 input
        is validated and used as it is (no float64 copy); scores are returned
        in float64.
    n_jobs : int, default 1
        ``"icd"``: decompose the two sides in two threads when not 1.
    rank : int, optional
        Deprecated alias of ``max_rank``.

    Attributes
    ----------
    n_samples_ : int
    n_features_in_ : int
        Columns of ``X`` when it is a 2-D array (``score`` checks them).
    cov_ : ndarray
        ``C_XY`` (feature) or ``C_ICD`` (icd).
    mean_x_, mean_y_ : ndarray
        ``phi_bar``, ``psi_bar`` (feature) or ``a_bar``, ``b_bar`` (icd).
    icd_x_, icd_y_ : IncompleteCholesky
        (``"icd"``.)
    rank_, residual_ : (int, int), (float, float)
        Ranks and relative residual traces of the two factors (``"icd"``).
    n_kernel_evaluations_ : int
        Kernel evaluations of ``fit`` (icd, naive) plus those of later ``score`` calls.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 5)); Y = X @ rng.normal(size=(5, 4))
    >>> model = PHSIC("linear", "linear").fit(X, Y)
    >>> s = model.score(X, Y)              # one score per training pair
    >>> s.shape
    (500,)
    >>> bool(model.score(X, Y[::-1]).mean() < s.mean())   # shuffled pairs score lower
    True
    """

    def __init__(
        self,
        kernel_x: Any = "cosine",
        kernel_y: Any = "cosine",
        estimator: str = "feature",
        max_rank: Any = None,
        tol: float = 1e-3,
        kernel_x_params: dict | None = None,
        kernel_y_params: dict | None = None,
        dtype: Any = np.float64,
        n_jobs: int = 1,
        rank: Any = "deprecated",
    ):
        self.kernel_x = kernel_x
        self.kernel_y = kernel_y
        self.estimator = estimator
        self.max_rank = max_rank
        self.tol = tol
        self.kernel_x_params = kernel_x_params
        self.kernel_y_params = kernel_y_params
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.rank = rank

    def fit(self, X: Any, Y: Any) -> PHSIC:
        """Learn from the training pairs ``(X[i], Y[i])``."""
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        dt = check_dtype(self.dtype)
        if self.estimator == "feature":
            kx = resolve_kernel(self.kernel_x, self.kernel_x_params, X)
            ky = resolve_kernel(self.kernel_y, self.kernel_y_params, Y)
            if kx is None or ky is None:
                raise ValueError("estimator='feature' cannot take precomputed Gram matrices")
            kx.validate_params()
            ky.validate_params()
            Phi, wx = _feature_map(kx, X, dt, allow_1d=False, name="X")
            Psi, wy = _feature_map(ky, Y, dt)
            self._check_pairs(len(Phi), len(Psi))
            n = len(Phi)
            set_n_features(self, Phi)
            self.kernel_x_, self.kernel_y_ = kx, ky
            self.mean_x_ = Phi.mean(axis=0) if wx is None else (wx @ Phi) / dt(n)
            self.mean_y_ = Psi.mean(axis=0) if wy is None else (wy @ Psi) / dt(n)
            # C = 1/n sum phi psi^T - phi_bar psi_bar^T  (Eq. 21): one GEMM, the row
            # scales w_i v_i of the cosine kernel applied to one side only
            w = wx if wy is None else (wy if wx is None else wx * wy)
            C = Phi.T @ (Psi if w is None else Psi * w[:, None])
            C /= n
            C -= np.outer(self.mean_x_, self.mean_y_).astype(C.dtype)
            self.cov_ = C
            self.n_kernel_evaluations_ = 0
        elif self.estimator == "icd":
            rx, ry = resolve_ranks(self.rank, self.max_rank, self.tol)
            sx = resolve_source(self.kernel_x, self.kernel_x_params, X, name="X", dtype=dt,
                                allow_1d=False)
            sy = resolve_source(self.kernel_y, self.kernel_y_params, Y, name="Y", dtype=dt)
            self._check_pairs(sx.n, sy.n)
            n = sx.n
            set_n_features(self, None if sx.precomputed else sx.X)
            self.icd_x_, self.icd_y_ = fit_pair(
                self.n_jobs,
                lambda: IncompleteCholesky(max_rank=rx, tol=self.tol)._fit_source(sx, name="X"),
                lambda: IncompleteCholesky(max_rank=ry, tol=self.tol)._fit_source(sy, name="Y"),
            )
            A, B = self.icd_x_.factor_, self.icd_y_.factor_
            self.rank_ = (self.icd_x_.rank_, self.icd_y_.rank_)
            self.residual_ = (self.icd_x_.residual_, self.icd_y_.residual_)
            self.mean_x_ = A.mean(axis=0)
            self.mean_y_ = B.mean(axis=0)
            self.cov_ = centred_cross(A, self.mean_x_, B) / dt(n)  # Eq. 32: 1/n (HA)^T B
            self._train_x = A
            self._train_y = B
            self.n_kernel_evaluations_ = self.icd_x_.n_kernel_evaluations_ + self.icd_y_.n_kernel_evaluations_
        else:
            sx = resolve_source(self.kernel_x, self.kernel_x_params, X, name="X", allow_1d=False)
            sy = resolve_source(self.kernel_y, self.kernel_y_params, Y, name="Y")
            self._check_pairs(sx.n, sy.n)
            n = sx.n
            set_n_features(self, None if sx.precomputed else sx.X)
            K, L = sx.full(), sy.full()
            self.source_x_, self.source_y_ = sx, sy
            self.mean_x_ = K.mean(axis=1)  # k_bar = K 1 / n
            self.mean_y_ = L.mean(axis=1)
            self.n_kernel_evaluations_ = sx.n_evaluations + sy.n_evaluations
        if self.estimator != "naive":
            # float32 products of large features overflow here, not in any kernel value
            check_finite(self.cov_, "PHSIC covariance C", ("row", "column"), hint=_OVERFLOW_HINT)
        self.n_samples_ = n
        return self

    @staticmethod
    def _check_pairs(nx: int, ny: int) -> None:
        if nx != ny:
            raise ValueError(f"X and Y must hold the same number of pairs, got {nx} and {ny}")
        if nx < 2:
            raise ValueError(f"PHSIC needs at least 2 training pairs, got n_samples={nx}")

    def score(self, X: Any, Y: Any) -> np.ndarray:
        """PHSIC of each pair ``(X[i], Y[i])``.

        Parameters
        ----------
        X, Y : paired structures (same length), or cross Gram matrices of shape
            (n_new, n_train) with ``"precomputed"`` kernels.

        Returns
        -------
        ndarray of float64, shape (n_pairs,)
        """
        if not hasattr(self, "n_samples_"):
            raise ValueError("PHSIC is not fitted; call fit(X, Y) first")
        check_n_features(self, X)
        if self.estimator == "feature":
            dt = check_dtype(self.dtype)
            U, wu = _feature_map(self.kernel_x_, X, dt)
            V, wv = _feature_map(self.kernel_y_, Y, dt)
            self._check_same(len(U), len(V))
            return _finite_scores(
                _rowwise_bilinear(U, self.cov_, V, self.mean_x_, self.mean_y_, wu, wv)
            )
        if self.estimator == "icd":
            A = self.icd_x_.transform(X)
            B = self.icd_y_.transform(Y)
            self._check_same(len(A), len(B))
            self.n_kernel_evaluations_ = self.icd_x_.n_kernel_evaluations_ + self.icd_y_.n_kernel_evaluations_
            return _finite_scores(_rowwise_bilinear(A, self.cov_, B, self.mean_x_, self.mean_y_))
        Kn = cross_source(self.source_x_, X)
        Ln = cross_source(self.source_y_, Y)
        self._check_same(len(Kn), len(Ln))
        self.n_kernel_evaluations_ = self.source_x_.n_evaluations + self.source_y_.n_evaluations
        n = self.n_samples_
        Kc = Kn - self.mean_x_[None, :]  # k - k_bar
        Lc = Ln - self.mean_y_[None, :]
        Kc -= Kc.mean(axis=1, keepdims=True)  # (k - k_bar)^T H
        return _finite_scores(np.einsum("ij,ij->i", Kc, Lc) / n)  # Eq. 27

    def save(self, path: str | os.PathLike, *, encoder: str = "none") -> None:
        """Write the fitted model to ``path`` as data only (see "Model files" above), atomically.

        Parameters
        ----------
        path : path-like
            The file (used as given; ``.npz`` by convention).
        encoder : str, default "none"
            How text input is encoded when scoring (``"glove"``), kept for the CLI.

        Raises
        ------
        ValueError
            Not fitted; a kernel class that is not registered (register it with
            ``structkernels.register(name, cls)`` or an entry point); training
            structures that cannot be written as data; a NaN or infinity.

        Examples
        --------
        >>> import numpy as np, tempfile, pathlib
        >>> X = np.random.default_rng(0).normal(size=(50, 3)); Y = X ** 2
        >>> model = PHSIC("linear", "linear").fit(X, Y)
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "phsic.npz"
        >>> model.save(f)
        >>> bool(np.array_equal(PHSIC.load(f).score(X, Y), model.score(X, Y)))
        True
        """
        _save_model(self, path, encoder)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes: int | None = None) -> PHSIC:
        """Read a model written by :meth:`save`; nothing in the file is imported or unpickled.

        ``max_bytes`` bounds the arrays' total size (default
        ``structkernels.npk.model.MAX_MODEL_BYTES``).  The loaded model has
        ``encoder_``, the encoder saved with it.

        Raises
        ------
        PHSICModelError
            One line naming the file: not a PHSIC model file (pickle files are
            never read), an unknown version, a kernel that is not registered,
            damaged or oversized content.
        """
        return _load_model(path, max_bytes)

    def __sklearn_tags__(self):
        return input_tags(super().__sklearn_tags__(), self.kernel_x, self.kernel_x_params)

    def score_training(self) -> np.ndarray:
        """PHSIC of every training pair without re-reading the data (icd estimator)."""
        if self.estimator != "icd" or not hasattr(self, "_train_x"):
            raise ValueError("score_training is available for a fitted estimator='icd'")
        return _rowwise_bilinear(self._train_x, self.cov_, self._train_y, self.mean_x_, self.mean_y_)

    @staticmethod
    def _check_same(a: int, b: int) -> None:
        if a != b:
            raise ValueError(f"X and Y must hold the same number of pairs to score, got {a} and {b}")


# ------------------------------------------------------------------ model files

#: Estimator classes a model file may name (registered measure name -> class).
_ESTIMATOR_CLASSES = {"phsic": PHSIC}


def _save_model(model: PHSIC, path: str | os.PathLike, encoder: str) -> None:
    from structkernels.utils import atomic_open, dumps_finite

    name = os.fspath(path)
    if not hasattr(model, "n_samples_"):
        raise ValueError(f"{name}: PHSIC is not fitted; call fit(X, Y) before save")
    if not isinstance(encoder, str):
        raise ValueError(f"{name}: encoder must be a str, got {encoder!r}")
    w = ModelWriter(name)
    params = model.get_params(deep=False)
    params["kernel_x"] = kernel_to_json(params["kernel_x"], f"{name}: kernel_x")
    params["kernel_y"] = kernel_to_json(params["kernel_y"], f"{name}: kernel_y")
    params["dtype"] = np.dtype(check_dtype(params["dtype"])).name
    params = jsonable(params, f"{name}: PHSIC parameters")
    state: dict[str, Any] = {
        "n_samples": int(model.n_samples_),
        "n_kernel_evaluations": int(model.n_kernel_evaluations_),
        "mean_x": w.array("mean_x", model.mean_x_),
        "mean_y": w.array("mean_y", model.mean_y_),
    }
    if model.estimator == "feature":
        state["cov"] = w.array("cov", model.cov_)
        state["kernel_x"] = kernel_to_json(model.kernel_x_, f"{name}: kernel_x")
        state["kernel_y"] = kernel_to_json(model.kernel_y_, f"{name}: kernel_y")
    elif model.estimator == "icd":
        state["cov"] = w.array("cov", model.cov_)
        for side, icd in (("x", model.icd_x_), ("y", model.icd_y_)):
            state[f"icd_{side}"] = {
                "max_rank": jsonable(icd.max_rank, f"{name}: max_rank"),
                "tol": float(icd.tol),
                "factor": w.array(f"{side}.factor", icd.factor_),
                "pivots": w.array(f"{side}.pivots", np.asarray(icd.pivots_, dtype=np.int64)),
                "residual_trace": float(icd.residual_trace_),
                "trace": float(icd.trace_),
                "n_kernel_evaluations": int(icd.n_kernel_evaluations_),
                "source": w.source(side, icd.source_),
            }
    else:
        state["source_x"] = w.source("x", model.source_x_)
        state["source_y"] = w.source("y", model.source_y_)
    meta = {
        "format": MODEL_FORMAT, "version": MODEL_VERSION, "estimator_class": "phsic",
        "params": params, "encoder": encoder, "state": state, "arrays": sorted(w.arrays),
    }
    try:
        text = dumps_finite(meta, what=f"{name}: the PHSIC model", separators=(",", ":"))
    except RecursionError:
        raise ValueError(f"{name}: a training structure is nested too deeply to save as JSON") from None
    arrays = {"meta": np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **w.arrays}
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _load_model(path: str | os.PathLike, max_bytes: int | None = None) -> PHSIC:
    from structkernels.npk import model as model_io
    from structkernels.registry import UnknownNameError

    name = os.fspath(path)
    limit = model_io.MAX_MODEL_BYTES if max_bytes is None else max_bytes
    entries = checked_archive(name, limit)
    if "meta" not in entries:
        raise PHSICModelError(f"{name}: not a PHSIC model file (no 'meta' entry)")
    try:
        with np.load(name, allow_pickle=False) as npz:
            raw = npz["meta"]
            if raw.dtype != np.uint8 or raw.ndim != 1:
                raise ValueError("the 'meta' entry is not UTF-8 JSON bytes")
            try:
                meta = json.loads(raw.tobytes().decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                raise ValueError(f"the 'meta' entry is not valid JSON ({type(exc).__name__})") from None
            check_header(meta, name=name, format=MODEL_FORMAT, versions=READABLE_VERSIONS,
                         what="PHSIC model", error=PHSICModelError)
            return _model_from(meta, ModelReader(name, npz, entries))
    except PHSICModelError:
        raise
    except UnknownNameError as exc:
        raise PHSICModelError(f"{name}: {exc}") from None
    except (ValueError, TypeError, KeyError, AttributeError, ImportError, zipfile.BadZipFile,
            OSError, EOFError) as exc:
        raise PHSICModelError(f"{name}: damaged PHSIC model ({type(exc).__name__}: {exc})") from None


def _model_from(meta: dict[str, Any], r: ModelReader) -> PHSIC:
    from structkernels_hsic.icd import IncompleteCholesky

    cls = _ESTIMATOR_CLASSES.get(meta.get("estimator_class"))
    if cls is None:
        raise ValueError(f"unknown estimator class {meta.get('estimator_class')!r}")
    params = meta.get("params")
    state = meta.get("state")
    if not isinstance(params, dict) or not isinstance(state, dict):
        raise ValueError("'params' and 'state' must be objects")
    unknown = set(params) - set(cls._get_param_names())
    if unknown:
        raise ValueError(f"unknown PHSIC parameter(s) {sorted(unknown)}")
    params = dict(params)
    for side in ("kernel_x", "kernel_y"):
        if side in params:
            params[side] = kernel_from_json(params[side], side)
    for key in ("max_rank", "rank"):
        if isinstance(params.get(key), list):
            params[key] = tuple(params[key])
    dt = check_dtype(params.get("dtype", "float64"))
    params["dtype"] = dt
    model = cls(**params)
    if model.estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {model.estimator!r}")
    encoder = meta.get("encoder", "none")
    if not isinstance(encoder, str):
        raise ValueError("'encoder' must be a str")
    model.encoder_ = encoder
    model.mean_x_ = r.array(state.get("mean_x"), 1)
    model.mean_y_ = r.array(state.get("mean_y"), 1)
    if model.estimator == "feature":
        kx = kernel_from_json(state.get("kernel_x"), "state kernel_x")
        ky = kernel_from_json(state.get("kernel_y"), "state kernel_y")
        from structkernels import kernel as make_kernel

        model.kernel_x_ = make_kernel(kx) if isinstance(kx, str) else kx
        model.kernel_y_ = make_kernel(ky) if isinstance(ky, str) else ky
        model.cov_ = r.array(state.get("cov"), 2)
        if model.cov_.shape != (len(model.mean_x_), len(model.mean_y_)):
            raise ValueError("the covariance does not match the means")
    elif model.estimator == "icd":
        model.cov_ = r.array(state.get("cov"), 2)
        icds = []
        for side in ("x", "y"):
            spec = state.get(f"icd_{side}")
            if not isinstance(spec, dict):
                raise ValueError(f"'icd_{side}' must be an object")
            max_rank = spec.get("max_rank")
            icd = IncompleteCholesky(max_rank=tuple(max_rank) if isinstance(max_rank, list) else max_rank,
                                     tol=float(spec.get("tol")))
            icd.source_ = r.source(side, spec.get("source"), dt)
            icd.factor_ = r.array(spec.get("factor"), 2)
            pivots = r.array(spec.get("pivots"), 1)
            if pivots.dtype.kind not in "iu":
                raise ValueError(f"pivots of {side} must be integers")
            icd.pivots_ = pivots.astype(np.intp)
            n, rank = icd.factor_.shape
            if n != icd.source_.n or len(icd.pivots_) != rank or (
                rank and (icd.pivots_.min() < 0 or icd.pivots_.max() >= n)
            ):
                raise ValueError(f"the factor, pivots and training data of {side} do not match")
            icd.residual_trace_ = float(spec.get("residual_trace"))
            icd.trace_ = float(spec.get("trace"))
            icd.residual_ = icd.residual_trace_ / icd.trace_ if icd.trace_ > 0 else 0.0
            icd.rank_ = int(rank)
            icd.n_samples_ = n
            icd.n_kernel_evaluations_ = count_field(spec.get("n_kernel_evaluations"),
                                                    "n_kernel_evaluations")
            icd._pivot_block = np.ascontiguousarray(icd.factor_[icd.pivots_, :])
            if not icd.source_.precomputed:
                icd.pivot_structures_ = take(icd.source_.X, icd.pivots_)
            icds.append(icd)
        model.icd_x_, model.icd_y_ = icds
        model.rank_ = (model.icd_x_.rank_, model.icd_y_.rank_)
        model.residual_ = (model.icd_x_.residual_, model.icd_y_.residual_)
        model._train_x = model.icd_x_.factor_
        model._train_y = model.icd_y_.factor_
        if model.cov_.shape != model.rank_:
            raise ValueError("the covariance does not match the factors' ranks")
    else:
        model.source_x_ = r.source("x", state.get("source_x"), dt)
        model.source_y_ = r.source("y", state.get("source_y"), dt)
        if len(model.mean_x_) != model.source_x_.n or len(model.mean_y_) != model.source_y_.n:
            raise ValueError("the means do not match the training data")
    model.n_samples_ = count_field(state.get("n_samples"), "n_samples")
    model.n_kernel_evaluations_ = count_field(state.get("n_kernel_evaluations"),
                                              "n_kernel_evaluations")
    return model
