"""HSIC-bottleneck training of a multilayer perceptron (Ma, Lewis & Kleijn, AAAI 2020).

Each hidden layer ``Z_i = act(W_i Z_{i-1} + b_i)`` is trained on its own loss

    nHSIC(Z_i, X) - beta * nHSIC(Z_i, Y)

(``Y`` the one-hot labels) with the input of every block detached, so no gradient flows
between layers; then an output ("format") layer, a scikit-learn classifier
(``LogisticRegression`` by default), is fitted on the last hidden representation.
``training="backprop"`` trains the same network end to end through a linear soft-max
head on cross-entropy instead, and ``training="none"`` keeps the initial random weights:
both then fit the same output layer, so the three compare like with like.

PyTorch is needed only by ``fit`` (the extra ``pip install 'structkernels-hsic[torch]'``);
the module imports without it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from structkernels.utils import NonFiniteError, optional_module, tqdm

__all__ = ["HSICBottleneckClassifier", "TORCH_HINT"]

TORCH_HINT = (
    "HSIC training needs PyTorch, an optional extra: pip install 'structkernels-hsic[torch]' "
    "(or pip install torch)"
)
TRAININGS = ("hsic", "backprop", "none")
ACTIVATIONS = ("tanh", "relu", "elu", "sigmoid")
DTYPES = ("float32", "float64")
NORMALIZATIONS = ("cka", "regularized")  # structkernels_hsic.torch.NORMALIZATIONS, without torch


def _torch() -> Any:
    return optional_module("torch", TORCH_HINT)


def _positive(value: Any, name: str, integer: bool = False, minimum: float = 0.0) -> None:
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(float(value)) \
            or value <= minimum:
        what = "an int" if integer else "a finite number"
        raise ValueError(f"{name} must be {what} > {minimum:g}, got {value!r}")


class HSICBottleneckClassifier(ClassifierMixin, BaseEstimator):
    """Multilayer perceptron trained layer by layer on the HSIC bottleneck, plus an output layer.

    Parameters
    ----------
    hidden : tuple of int, default (64, 32, 10)
        Widths of the hidden layers.  The paper's setting ends on a narrow layer (as many
        units as classes), which is what the output layer reads.
    beta : float, default 10.0
        Weight of ``nHSIC(Z_i, Y)`` against ``nHSIC(Z_i, X)`` in each layer's loss.
    sigma : float or "median", default "median"
        RBF bandwidth of ``X`` and of every ``Z_i`` (the median heuristic on each batch,
        detached); the labels use a linear kernel on their one-hot code, which after
        centring is an RBF kernel on it up to a scale.
    kernel : {"rbf", "linear", "cosine"}, default "rbf"
        Kernel of ``X`` and of the ``Z_i``.
    normalization : {"cka", "regularized"}, default "cka"
        :func:`structkernels_hsic.torch.nhsic`: kernel alignment
        ``HSIC(Z, X) / sqrt(HSIC(Z, Z) HSIC(X, X))``, or the paper's ``tr(K~ L~)`` with
        ``K~ = Kc (Kc + eps n I)^-1`` (``O(b^3)``; on digits it needed a fixed, wide ``sigma``
        where kernel alignment trains with the median, docs/hsic_training.md).
    epsilon : float, default 1e-5
        Ridge of ``"regularized"``.
    n_features : int or None, default None
        None: exact Grams, ``O(b^2)`` per layer and batch (``O(b^3)`` with "regularized");
        an int: that many random Fourier features per RBF side, linear in the batch size.
    training : {"hsic", "backprop", "none"}, default "hsic"
        HSIC-bottleneck layers; the same network trained end to end through a linear
        soft-max head with cross-entropy; or the untrained network (random weights).
    activation : {"tanh", "relu", "elu", "sigmoid"}, default "tanh"
    epochs : int, default 30
    batch_size : int, default 256
        A last batch smaller than half of it is dropped from each epoch (a new shuffle each epoch).
    learning_rate : float, default 1e-2
        Adam's step size (one optimiser per layer with "hsic").
    output : scikit-learn classifier or None, default None
        The output layer fitted on the last hidden representation (cloned);
        None: ``LogisticRegression(max_iter=2000)``.
    monitor_size : int, default 512
        Training samples (a fixed random subset) on which ``history_`` measures the
        dependence of each layer after every epoch.
    standardize : bool, default True
        Centre each feature and scale it to unit variance (the mean and standard deviation
        of the training data; a constant feature is only centred) before the network.
    device : str, default "cpu"
        Torch device, e.g. "cuda"; the initial weights and the batch order are drawn on
        the CPU, so they do not depend on it.
    dtype : {"float32", "float64"}, default "float32"
    verbose : bool, default False
        A progress bar over epochs (stderr).
    random_state : int, RandomState or None
        Initial weights, batch order, the monitored subset and the random Fourier weights.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    mean_, scale_ : ndarray of shape (n_features,) or None
        The standardisation (None with ``standardize=False``).
    network_ : torch.nn.ModuleList
        One ``Sequential(Linear, activation)`` per hidden layer.
    head_ : torch.nn.Linear or None
        The soft-max head of ``training="backprop"``.
    output_ : classifier
        The fitted output layer.
    history_ : dict
        ``"epoch"`` (0 is before training), ``"nhsic_x"`` and ``"nhsic_y"`` (arrays of shape
        ``(epochs + 1, n_layers)``: ``nHSIC(Z_i, X)`` and ``nHSIC(Z_i, Y)`` on the monitored
        subset, normalised as in training), ``"hsic_x"`` and ``"hsic_y"`` (the same with
        the biased HSIC), ``"loss"`` (mean training loss per epoch, per layer for "hsic",
        one column for "backprop") and ``"seconds"`` (training time of each epoch, the
        monitoring excluded).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(300, 10, n_informative=5, random_state=0)
    >>> clf = HSICBottleneckClassifier(hidden=(16, 2), epochs=5, batch_size=100, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.8
    True
    >>> clf.history_["nhsic_y"].shape   # epochs 0..5, two layers
    (6, 2)
    """

    def __init__(
        self,
        hidden: tuple[int, ...] = (64, 32, 10),
        beta: float = 10.0,
        sigma: Any = "median",
        kernel: str = "rbf",
        normalization: str = "cka",
        epsilon: float = 1e-5,
        n_features: int | None = None,
        training: str = "hsic",
        activation: str = "tanh",
        epochs: int = 30,
        batch_size: int = 256,
        learning_rate: float = 1e-2,
        output: Any = None,
        monitor_size: int = 512,
        standardize: bool = True,
        device: str = "cpu",
        dtype: str = "float32",
        verbose: bool = False,
        random_state: Any = None,
    ):
        self.hidden = hidden
        self.beta = beta
        self.sigma = sigma
        self.kernel = kernel
        self.normalization = normalization
        self.epsilon = epsilon
        self.n_features = n_features
        self.training = training
        self.activation = activation
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.output = output
        self.monitor_size = monitor_size
        self.standardize = standardize
        self.device = device
        self.dtype = dtype
        self.verbose = verbose
        self.random_state = random_state

    # ------------------------------------------------------------ checks
    def _check_params(self) -> None:
        hidden = self.hidden
        if isinstance(hidden, (int, np.integer)):
            hidden = (hidden,)
        if not isinstance(hidden, (tuple, list)) or not hidden:
            raise ValueError(f"hidden must be a non-empty tuple of positive ints, got {self.hidden!r}")
        for h in hidden:
            _positive(h, "every hidden width", integer=True)
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(float(self.beta)) and self.beta >= 0):
            raise ValueError(f"beta must be a finite number >= 0, got {self.beta!r}")
        if not (isinstance(self.sigma, str) and self.sigma == "median"):
            _positive(self.sigma, "sigma")
        if self.kernel not in ("rbf", "linear", "cosine"):
            raise ValueError(f"kernel must be 'rbf', 'linear' or 'cosine', got {self.kernel!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {self.normalization!r}")
        _positive(self.epsilon, "epsilon")
        if self.n_features is not None:
            _positive(self.n_features, "n_features", integer=True)
        if self.training not in TRAININGS:
            raise ValueError(f"training must be one of {TRAININGS}, got {self.training!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        _positive(self.epochs, "epochs", integer=True, minimum=-1)  # epochs >= 0
        _positive(self.batch_size, "batch_size", integer=True, minimum=3)  # at least 4
        _positive(self.learning_rate, "learning_rate")
        _positive(self.monitor_size, "monitor_size", integer=True, minimum=3)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        self._hidden = tuple(int(h) for h in hidden)

    def _scaled(self, X: np.ndarray) -> np.ndarray:
        return X if self.mean_ is None else (X - self.mean_) / self.scale_

    @staticmethod
    def _check_range(X: np.ndarray, float32: bool) -> None:
        if float32 and X.size:
            big = np.abs(X) > np.finfo(np.float32).max
            if big.any():
                r, c = (int(v) for v in np.argwhere(big)[0])
                raise ValueError(
                    f"X[{r}, {c}] = {X[r, c]:.3g} is beyond float32's range (3.4e38): scale X down "
                    "or use dtype='float64'"
                )

    # ----------------------------------------------------------- network
    def _build(self, torch: Any, n_in: int, n_classes: int, gen: Any, dt: Any) -> None:
        nn = torch.nn
        act = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "sigmoid": nn.Sigmoid}[self.activation]
        blocks = []
        widths = (n_in, *self._hidden)
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            lin = torch.nn.utils.skip_init(nn.Linear, a, b, dtype=dt)  # torch's global RNG untouched
            bound = 1.0 / math.sqrt(a)  # torch's default Linear scale, drawn from our generator
            with torch.no_grad():
                lin.weight.uniform_(-bound, bound, generator=gen)
                lin.bias.uniform_(-bound, bound, generator=gen)
            blocks.append(nn.Sequential(lin, act()))
        self.network_ = nn.ModuleList(blocks).to(self.device)
        self.head_ = None
        if self.training == "backprop":
            head = torch.nn.utils.skip_init(nn.Linear, widths[-1], n_classes, dtype=dt)
            bound = 1.0 / math.sqrt(widths[-1])
            with torch.no_grad():
                head.weight.uniform_(-bound, bound, generator=gen)
                head.bias.uniform_(-bound, bound, generator=gen)
            self.head_ = head.to(self.device)

    def _layers(self, x: Any, detach: bool) -> list:
        out = []
        for block in self.network_:
            x = block(x.detach() if detach else x)
            out.append(x)
        return out

    def _sigma(self) -> Any:
        return self.sigma if isinstance(self.sigma, str) else float(self.sigma)

    def _side(self, th: Any, t: Any, layer: int) -> Any:
        """``t`` (layer 0: the input, i: the i-th hidden layer) prepared for nHSIC."""
        rff = self.rff_[layer] if self.rff_ is not None else None
        return th.prepare(t, self.kernel, sigma=self._sigma(), features=self.n_features is not None,
                          rff=rff)

    def _label_side(self, th: Any, t: Any) -> Any:
        return th.prepare(t, "linear", features=self.n_features is not None)

    def _nhsic(self, th: Any, a: Any, b: Any) -> Any:
        return th.nhsic(a, b, normalization=self.normalization, epsilon=float(self.epsilon))

    # --------------------------------------------------------- training
    def fit(self, X: Any, y: Any) -> HSICBottleneckClassifier:
        """Train the network on ``(X, y)`` and fit the output layer on its last representation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite values (a NaN or infinity is a ValueError).
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self._check_params()
        if self.standardize:
            self.mean_ = X.mean(axis=0)
            sd = X.std(axis=0)
            self.scale_ = np.where(sd > 0, sd, 1.0)  # a constant column stays as it is
        else:
            self.mean_, self.scale_ = None, None
        X = self._scaled(X)
        self._check_range(X, self.dtype == "float32")
        torch = _torch()
        from structkernels_hsic import torch as th

        enc = LabelEncoder().fit(y)
        self.classes_ = enc.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"HSICBottleneckClassifier needs at least 2 classes, got {len(self.classes_)}")
        codes = enc.transform(y)
        dt = torch.float32 if self.dtype == "float32" else torch.float64
        rng = check_random_state(self.random_state)
        gen = torch.Generator().manual_seed(int(rng.randint(2**31 - 1)))
        n, d = X.shape
        k = len(self.classes_)
        self._build(torch, d, k, gen, dt)
        dev = torch.device(self.device)
        Xt = torch.as_tensor(X, dtype=dt).to(dev)
        Yt = torch.nn.functional.one_hot(torch.as_tensor(codes), k).to(dt).to(dev)
        ct = torch.as_tensor(codes).to(dev)

        # random Fourier weights, fixed for the whole training (X and each layer; Y is linear)
        self.rff_ = None
        if self.n_features is not None and self.kernel == "rbf":
            widths = (d, *self._hidden)
            self.rff_ = [th.rff_weights(w, int(self.n_features), rng) for w in widths]
        mon = np.sort(rng.choice(n, min(n, int(self.monitor_size)), replace=False))
        mon_t = torch.as_tensor(mon).to(dev)

        layers = len(self._hidden)
        n_loss = layers if self.training == "hsic" else 1
        hist: dict = {"epoch": [], "nhsic_x": [], "nhsic_y": [], "hsic_x": [], "hsic_y": [],
                      "loss": [], "seconds": []}
        self._monitor(torch, th, Xt[mon_t], Yt[mon_t], 0, hist)
        if self.training == "hsic":
            opts = [torch.optim.Adam(b.parameters(), lr=float(self.learning_rate)) for b in self.network_]
        elif self.training == "backprop":
            params = [p for b in self.network_ for p in b.parameters()] + list(self.head_.parameters())
            opts = [torch.optim.Adam(params, lr=float(self.learning_rate))]
        bs = int(self.batch_size)
        bar = tqdm(range(1, int(self.epochs) + 1) if self.training != "none" else [],
                   desc=f"{self.training} epochs", disable=not self.verbose, leave=False)
        for epoch in bar:
            start = time.perf_counter()
            perm = torch.randperm(n, generator=gen).to(dev)
            batches = list(torch.split(perm, bs))
            if len(batches) > 1 and len(batches[-1]) < bs / 2:
                batches.pop()
            total = torch.zeros(n_loss, dtype=dt, device=dev)
            for idx in batches:
                xb, yb = Xt[idx], Yt[idx]
                if self.training == "hsic":
                    sx, sy = self._side(th, xb, 0), self._label_side(th, yb)
                    for i, z in enumerate(self._layers(xb, detach=True)):
                        loss = self._layer_loss(th, z, sx, sy, i, epoch)
                        opts[i].zero_grad(set_to_none=True)
                        loss.backward()
                        opts[i].step()
                        total[i] += loss.detach()
                else:
                    logits = self.head_(self._layers(xb, detach=False)[-1])
                    loss = torch.nn.functional.cross_entropy(logits, ct[idx])
                    opts[0].zero_grad(set_to_none=True)
                    loss.backward()
                    opts[0].step()
                    total[0] += loss.detach()
            mean = (total / len(batches)).cpu().numpy()
            if not np.isfinite(mean).all():
                raise NonFiniteError(
                    f"training diverged: the loss of epoch {epoch} is not finite ({mean.tolist()}); "
                    "lower learning_rate or beta, or scale X"
                )
            hist["seconds"].append(time.perf_counter() - start)
            hist["loss"].append(mean)
            self._monitor(torch, th, Xt[mon_t], Yt[mon_t], epoch, hist)
        self.history_ = {
            "epoch": np.asarray(hist["epoch"]),
            **{key: np.asarray(hist[key], dtype=np.float64) for key in ("nhsic_x", "nhsic_y", "hsic_x", "hsic_y")},
            "loss": np.asarray(hist["loss"], dtype=np.float64).reshape(len(hist["loss"]), n_loss),
            "seconds": np.asarray(hist["seconds"], dtype=np.float64),
        }
        Z = self._forward(X)
        self.output_ = clone(self.output) if self.output is not None else LogisticRegression(max_iter=2000)
        self.output_.fit(Z, y)
        return self

    @staticmethod
    def _undefined(exc: ValueError, where: str) -> ValueError:
        # an overflow stays a NonFiniteError (a ValueError), as everywhere in the plugin
        return (NonFiniteError if isinstance(exc, NonFiniteError) else ValueError)(
            f"{where}: {exc} (saturated or dead units: standardise X, lower learning_rate, or "
            "change the activation)"
        )

    def _layer_loss(self, th: Any, z: Any, sx: Any, sy: Any, i: int, epoch: int) -> Any:
        try:
            sz = self._side(th, z, i + 1)
            return self._nhsic(th, sz, sx) - float(self.beta) * self._nhsic(th, sz, sy)
        except ValueError as exc:
            raise self._undefined(exc, f"hidden layer {i + 1} in epoch {epoch}") from None

    def _monitor(self, torch: Any, th: Any, xm: Any, ym: Any, epoch: int, hist: dict) -> None:
        """Dependence of every layer on X and Y on the monitored subset (exact Grams)."""
        row: dict = {"nhsic_x": [], "nhsic_y": [], "hsic_x": [], "hsic_y": []}
        with torch.no_grad():
            sx = th.prepare(xm, self.kernel, sigma=self._sigma())
            sy = th.prepare(ym, "linear")
            for i, z in enumerate(self._layers(xm, detach=True)):
                sz = th.prepare(z, self.kernel, sigma=self._sigma())
                try:
                    row["nhsic_x"].append(float(self._nhsic(th, sz, sx)))
                    row["nhsic_y"].append(float(self._nhsic(th, sz, sy)))
                except ValueError as exc:
                    when = "before training" if epoch == 0 else f"after epoch {epoch}"
                    raise self._undefined(exc, f"hidden layer {i + 1} {when}") from None
                row["hsic_x"].append(float(th.hsic(sz, sx)))
                row["hsic_y"].append(float(th.hsic(sz, sy)))
        hist["epoch"].append(epoch)
        for key, values in row.items():
            hist[key].append(values)

    # ------------------------------------------------------------- use
    def _forward(self, X: np.ndarray) -> np.ndarray:
        torch = _torch()
        w = self.network_[0][0].weight  # the weights' dtype and device, whatever set_params did
        out = []
        with torch.no_grad():
            for s in range(0, len(X), 4096):
                xt = torch.as_tensor(X[s : s + 4096], dtype=w.dtype).to(w.device)
                out.append(self._layers(xt, detach=True)[-1].cpu().numpy().astype(np.float64))
        Z = np.concatenate(out) if out else np.empty((0, self.network_[-1][0].out_features))
        if not np.isfinite(Z).all():
            raise NonFiniteError("the network's representation is not finite (the weights diverged)")
        return Z

    def represent(self, X: Any) -> np.ndarray:
        """The last hidden representation of ``X``, what the output layer reads.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, hidden[-1])
        """
        check_is_fitted(self, "output_")
        X = self._scaled(validate_data(self, X, dtype=np.float64, reset=False))
        self._check_range(X, self.network_[0][0].weight.dtype != _torch().float64)
        return self._forward(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the output layer, columns in the order of ``classes_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "output_")
        return self.output_.predict_proba(self.represent(X))

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "output_")
        return self.output_.predict(self.represent(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
