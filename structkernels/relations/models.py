"""The relation extraction models, defined once for the evaluation and
:class:`structkernels.extraction.RelationExtractor` (:data:`RELATION_MODELS`): the normalised
kernels of one or more structure views of a pair
(:func:`~structkernels.relations.structures.pair_views`; not the graph views of
:mod:`structkernels.datasets.views`) summed into one :class:`~structkernels.kernels.views.ViewSum`,
and a classifier.  Each ``NPK`` model (σ learned on the training pairs' paths inside its sum of
views) has a twin ``PK`` with σ ≡ 1 (:func:`twin_of`).  Nothing here fits or reads files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from structkernels.kernels.base import Kernel, Normalized
from structkernels.kernels.names import kernel as make_kernel
from structkernels.kernels.views import ViewSum

__all__ = ["APG", "CLASSIFIERS", "DEFAULT_MODELS", "MODELS", "NGRAM", "NPK", "PATH_PARAMS", "PK",
           "RELATION_MODELS", "SVM_PARAMS", "PRECOMPUTED_SVC_PARAMS", "RelationModel",
           "StructureKernel", "needed_views", "relation_model", "twin_of"]

#: Path kernel parameters of every path-based model (and of the σ learner's kernel).
PATH_PARAMS: dict[str, Any] = {"lam": 0.8, "node_mismatch": 0.9}
#: The classifiers a model may name: ``"SVM"`` a C-SVM with :data:`SVM_PARAMS`, ``"k-NN"`` the
#: main job's kernel k-NN, ``"hash-RF"`` hash codes and a random forest (Garg et al. 2019),
#: ``"chosen"`` the one of those three grouped inner cross-validation picks on a training set.
CLASSIFIERS = ("SVM", "k-NN", "hash-RF", "chosen")
#: The settings of every ``"SVM"`` besides C (which the caller gives, default 1).
SVM_PARAMS: dict[str, Any] = {"class_weight": "balanced"}
#: What an SVM on a precomputed Gram adds to :data:`SVM_PARAMS`: libsvm's row cache only
#: copies Gram rows there, so a small one saves memory and changes no solution.
PRECOMPUTED_SVC_PARAMS: dict[str, Any] = {**SVM_PARAMS, "cache_size": 32}


@dataclass(frozen=True, eq=False)
class StructureKernel:
    """One structure view of a pair and the kernel that compares it (normalised in a model).

    Parameters
    ----------
    view : str
        The structure view (a key of :func:`~structkernels.relations.structures.pair_views`).
    kernel : str
        The registered kernel name; ``params`` its parameters (read-only).
    learns_sigma : bool, default False
        σ (a weight per edge label, :class:`~structkernels.NonstationaryLearner`) is learned
        on this view with this kernel and parameters, and set on the kernel.

    Examples
    --------
    >>> from structkernels.relations.models import NPK
    >>> NPK.build({"conj": 0.0}).get_params()["sigma"]
    {'conj': 0.0}
    >>> NPK.build({}).get_params().get("sigma") is None  # no σ learned: the plain path kernel
    True
    """

    view: str
    kernel: str
    params: Mapping[str, Any] = field(default_factory=dict)
    learns_sigma: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def build(self, sigma: Mapping[str, float] | None = None,
              params: Mapping[str, Any] | None = None) -> Kernel:
        """The kernel (not normalised), with ``sigma`` when it learns σ and ``sigma`` is not
        empty; ``params`` replace :attr:`params` (a model file's, checked by its reader)."""
        kw = dict(self.params if params is None else params)
        if self.learns_sigma and sigma:
            kw["sigma"] = dict(sigma)
        return make_kernel(self.kernel, **kw)

    def normalized(self, sigma: Mapping[str, float] | None = None,
                   params: Mapping[str, Any] | None = None) -> Kernel:
        """``Normalized(build(sigma, params))``: the kernel as the models use it."""
        return Normalized(self.build(sigma, params))


#: NPK on the shortest dependency path: the path kernel with σ learned on the training pairs.
NPK = StructureKernel("path", "path", PATH_PARAMS, learns_sigma=True)
#: The path kernel without σ.
PK = StructureKernel("path", "path", PATH_PARAMS)
#: The bag of context features (path n-grams, words between and around), a linear kernel.
NGRAM = StructureKernel("context", "bag", {"binary": True})
#: The all-paths graph kernel (Airola et al. 2008): no parameter, the weights are in the graphs.
APG = StructureKernel("apg", "all-paths-graph", {})


@dataclass(frozen=True, eq=False)
class RelationModel:
    """A relation model: normalised kernels on structure views, summed, and a classifier.

    Parameters
    ----------
    parts : tuple of StructureKernel
        One per structure view, in the order they are summed.
    classifier : {"SVM", "k-NN", "hash-RF", "chosen"}
    default : bool, default True
        Evaluated when no model is named (:data:`DEFAULT_MODELS`).

    Examples
    --------
    >>> from structkernels import Path
    >>> from structkernels.relations.models import relation_model
    >>> m = relation_model("NPK SVM")
    >>> m.views, m.classifier, m.learns_sigma
    (('path', 'context', 'apg'), 'SVM', True)
    >>> two = RelationModel("path + context", m.parts[:2], "SVM")
    >>> a = {"path": Path([(None, "PROT1"), ("nsubj-of", "bind"), ("dobj", "PROT2")]),
    ...      "context": ("m:bind",)}
    >>> round(float(two.kernel({"conj": 0.0}).gram([a])[0, 0]), 6)  # two views, each 1
    2.0
    """

    name: str
    parts: tuple[StructureKernel, ...]
    classifier: str = "SVM"
    default: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        views = [p.view for p in self.parts]
        if not views or len(set(views)) != len(views):
            raise ValueError(f"relation model {self.name!r}: one kernel per structure view, "
                             f"got views {views}")
        if self.classifier not in CLASSIFIERS:
            raise ValueError(f"relation model {self.name!r}: unknown classifier "
                             f"{self.classifier!r}; the classifiers are {', '.join(CLASSIFIERS)}")

    @property
    def views(self) -> tuple[str, ...]:
        """The structure views it reads, in order."""
        return tuple(p.view for p in self.parts)

    @property
    def learns_sigma(self) -> bool:
        """Whether σ is learned for it."""
        return any(p.learns_sigma for p in self.parts)

    @property
    def sigma_part(self) -> StructureKernel | None:
        """The part σ is learned on (its view, kernel and parameters), or None."""
        return next((p for p in self.parts if p.learns_sigma), None)

    def kernel(self, sigma: Mapping[str, float] | None = None,
               params: Mapping[str, Mapping[str, Any]] | None = None) -> ViewSum:
        """One kernel on dicts of structure views: the normalised kernel of every part on
        its view, summed in order (:class:`~structkernels.kernels.views.ViewSum`);
        ``params``: per view, parameters replacing the part's."""
        params = params or {}
        return ViewSum([(p.view, p.normalized(sigma, params.get(p.view))) for p in self.parts])

    def kernel_params(self) -> dict[str, dict[str, Any]]:
        """Each structure view's kernel parameters (without σ)."""
        return {p.view: dict(p.params) for p in self.parts}

    def fixed_views_gram(self, items: Sequence[Mapping[str, Any]], n_jobs: int | None = 1
                         ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``f(rows, cols)``: the Gram between ``items[rows]`` and ``items[cols]`` of the
        parts that learn no σ (zeros when every part learns σ): what a σ learner adds to
        the kernel it learns.  ``n_jobs``: threads for the kernels that release the GIL.

        Examples
        --------
        >>> from structkernels import Path
        >>> items = [{"path": Path([(None, "PROT1")]), "context": ("m:bind",),
        ...           "apg": None}]
        >>> f = relation_model("NPK path SVM").fixed_views_gram(items)
        >>> f(np.array([0]), np.array([0])).tolist()
        [[0.0]]
        """
        fixed = ViewSum([(p.view, p.normalized()) for p in self.parts if not p.learns_sigma])
        return lambda rows, cols: fixed.gram_by_view(
            [items[i] for i in rows], [items[j] for j in cols], n_jobs=n_jobs, progress=False,
            threads_only=True)


_COMPOSITE = (NPK, NGRAM, APG)
#: The composite with every nonstationary weight fixed (σ ≡ 1): the twin of ``_COMPOSITE``.
_PK_COMPOSITE = (PK, NGRAM, APG)
#: The relation models, in report order: every model that learns σ ("NPK ...") followed by
#: its twin ("PK ...": the same views, classifier and weighting, σ ≡ 1).
RELATION_MODELS: dict[str, RelationModel] = {m.name: m for m in (
    # "chosen": about three more fits per classifier and fold, evaluated only when named
    *(RelationModel(f"{kind} {classifier}", parts, classifier, default=classifier != "chosen")
      for classifier in CLASSIFIERS
      for kind, parts in (("NPK", _COMPOSITE), ("PK", _PK_COMPOSITE))),
    RelationModel("NPK path SVM", (NPK,), "SVM"),
    RelationModel("PK path SVM", (PK,), "SVM"),
    RelationModel("APG SVM", (APG,), "SVM"),
    RelationModel("n-gram SVM", (NGRAM,), "SVM"),
)}
#: The names of the relation models, in report order.
MODELS = tuple(RELATION_MODELS)
#: The models evaluated when none are named.
DEFAULT_MODELS = tuple(name for name, m in RELATION_MODELS.items() if m.default)


def relation_model(name: str) -> RelationModel:
    """The model of that name (:data:`RELATION_MODELS`).

    Raises
    ------
    ValueError
        An unknown name (the message lists the models).

    Examples
    --------
    >>> relation_model("APG SVM").views
    ('apg',)
    """
    try:
        return RELATION_MODELS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown model {name!r}; the models are {', '.join(MODELS)}") from None


def twin_of(name: str) -> str | None:
    """The σ ≡ 1 twin of a model that learns σ (``NPK`` replaced by ``PK``), else None.

    Examples
    --------
    >>> twin_of("NPK SVM"), twin_of("NPK path SVM"), twin_of("APG SVM")
    ('PK SVM', 'PK path SVM', None)
    """
    model = relation_model(name)
    if not model.learns_sigma or not name.startswith("NPK "):
        return None
    twin = "PK " + name[len("NPK "):]
    return twin if twin in RELATION_MODELS else None


def needed_views(models: Sequence[str]) -> tuple[str, ...]:
    """The structure views the ``models`` read (for
    :func:`~structkernels.relations.structures.pair_views`), each once.

    Examples
    --------
    >>> needed_views(["PK path SVM", "APG SVM", "NPK SVM"])
    ('path', 'apg', 'context')
    """
    out: list[str] = []
    for m in models:
        out += [v for v in relation_model(m).views if v not in out]
    return tuple(out)
