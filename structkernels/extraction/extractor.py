"""A relation extractor from text: train on an annotated corpus, save as data, predict.

:class:`RelationExtractor` is the ``"NPK SVM"`` model of
:mod:`structkernels.relations.models` (the model
:mod:`structkernels.experiments.relations` evaluates under that name) packaged for use on
new text: the sentences (with entity offsets) are parsed by spaCy
(:class:`~structkernels.relations.parse.DependencyParser`), each candidate pair gets its
structure views (:func:`~structkernels.relations.structures.pair_views`: the shortest
dependency path, the bag of context features and the all-paths graph), σ is learned on the
training paths (:func:`~structkernels.npk.gradient.learn_path_weights`, the learner
``sigma_params["objective"]`` selects), and an SVM is trained with
the model's kernel (:meth:`~structkernels.relations.models.RelationModel.kernel`, a
:class:`~structkernels.kernels.views.ViewSum` of the normalised path kernel with σ, bag
and all-paths graph kernels), which also scores new pairs
(:class:`~structkernels.extraction.scoring.ReferenceScorer`).

The SVM is :class:`~structkernels.classifiers.KernelSVC` (the exact problem up to
``max_exact`` training pairs, Nyström landmarks and a linear SVM above).  Either way the
decision function is ``Σ_j w_j k(x, r_j) + b`` over a set of reference pairs ``r_j`` (the
support vectors, or the landmarks with ``w = K_LL^{-1/2} coef``), and that is what the
model keeps and saves.

The model file is one JSON document (plain, or gzip'd when its name ends in ``.gz``)::

    {"format": "structkernels-relation-extractor", "version": 4,
     "params": {"pipeline": "en_core_web_sm", "blind": true, "C": 1.0,
                "sigma_params": null, "random_state": 0, "max_exact": 20000},
     "pipeline": {"name": "en_core_web_sm", "package": "en_core_web_sm", "version": "3.8.0",
                  "spacy": "3.8.2"},
     "kernel": {"path": {"lam": 0.8, "node_mismatch": 0.9}, "context": {"binary": true},
                "apg": {}},
     "sigma": {"conj": 0.0, ...},
     "train": {"pairs": 269, "positives": 134, "route": "exact"},
     "svm": {"intercept": -0.12, "weights": [0.5, -1.0, ...]},
     "references": {"count": 151, "strings": ["PROT1", "nsubj-of", ...],
                    "path": {"offsets": "AAAAAAgAAAA...", ...}, "context": {...},
                    "apg": {...}},
     "decision": {"threshold": 0.31, "rule": "inner-cv",
                  "calibration": {"kind": "platt", "a": 1.9, "b": -1.2},
                  "inner_f1": 0.74, "folds": 3, "fallback": null}}

``"references"`` (version 4) holds the reference pairs' structure views as arrays, every
string once (:mod:`~structkernels.extraction._references`); versions 1 to 3 held them as
lists of objects (``{"path": [[null, "PROT1"], ...], "context": [...], "apg": {"labels",
"edges"}}`` each), read as before and saved again as version 4 (versions 1 and 2: as
their version).  ``"decision"`` (version 3) is how a score becomes a label and a probability
(:class:`~structkernels.relations.decision.DecisionRule`, chosen on the training pairs only by
:func:`~structkernels.relations.decision.fit_decision`): positive when the score is ``>
threshold``; ``"calibration"`` (null, Platt's ``a``, ``b`` or isotonic breakpoints) gives the
probability :meth:`RelationExtractor.predict_pairs` reports.  Version 2 files (no threshold)
load with threshold 0 and no calibration; version 1 files (before the all-paths graph view)
load as the two-view model they were trained as; both are saved again in their version.

Reading it never runs code and does bounded work (:mod:`structkernels.extraction.files`):
a bounded read (:data:`MAX_EXTRACTOR_BYTES`), JSON only, the pipeline an installed spaCy
pipeline, the kernels fixed by :mod:`structkernels.relations.models` (only their
parameters are read, each checked), every number finite and within a float's range, the
lengths in agreement, the references within their limits; anything else is one
:class:`ExtractorFormatError` line naming the file.  Writing is atomic.  The
machine-specific settings (``cache_dir``, ``n_jobs``, ``progress``) are not saved:
:meth:`RelationExtractor.load` takes them.
"""

from __future__ import annotations

import gzip
import os
import warnings
from pathlib import Path as FilePath
from typing import Any, NoReturn

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from structkernels.classifiers import KernelSVC
from structkernels.extraction._document import decision_json as _decision_json
from structkernels.extraction._document import decision_of as _decision_of
from structkernels.extraction._document import describe_model, model_of, version_of
from structkernels.extraction._document import reference as _reference
from structkernels.extraction._document import view_json as _view_json
from structkernels.extraction._references import pack
from structkernels.extraction.files import (
    EXTRACTOR_FORMAT,
    EXTRACTOR_VERSION,
    MAX_EXTRACTOR_BYTES,
    MODEL,
    ExtractorFormatError,
    check_extractor_document,
    check_reference_limits,
    check_sigma_params,
    is_finite_number,
    is_int,
    read_extractor_document,
    unpack_references,
)
from structkernels.extraction.scoring import ReferenceScorer
from structkernels.npk.gradient import learn_path_weights
from structkernels.relations.corpus import RelationCorpus
from structkernels.relations.decision import (
    CALIBRATIONS,
    check_threshold,
    fallback_decision,
    fit_decision,
)
from structkernels.relations.models import SVM_PARAMS, RelationModel
from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import pair_views
from structkernels.utils import (
    StructkernelsWarning,
    atomic_open,
    dumps_finite,
    effective_n_jobs,
    one_line,
)

__all__ = [
    "EXTRACTOR_FORMAT",
    "EXTRACTOR_VERSION",
    "MAX_EXTRACTOR_BYTES",
    "MODEL",
    "STRUCTURE_VIEWS",
    "VIEWS",
    "ExtractorFormatError",
    "PipelineVersionWarning",
    "RelationExtractor",
    "describe_model",
]

#: The structure views of a pair the extractor compares (:data:`MODEL`'s).
STRUCTURE_VIEWS = MODEL.views
#: Former name of :data:`STRUCTURE_VIEWS`.
VIEWS = STRUCTURE_VIEWS


class PipelineVersionWarning(StructkernelsWarning):
    """The installed spaCy pipeline is not the version the extractor was trained with."""


#: Pairs scored per step of :meth:`RelationExtractor.decision_function` (one progress tick).
SCORE_BATCH = 1024


class RelationExtractor(BaseEstimator):
    """Extract relations between given entities of sentences: the "NPK SVM" relation model.

    NPK on the shortest dependency path, the bag of context features and the all-paths
    graph, each normalised, summed (:data:`MODEL`), and an SVM.

    Parameters
    ----------
    pipeline : str, default "en_core_web_sm"
        The spaCy pipeline that parses the sentences (an installed one with a parser).
    cache_dir : str or path or None or False, default None
        Where parses are cached (:class:`~structkernels.relations.parse.DependencyParser`);
        False keeps nothing.  Not saved.
    blind : bool, default True
        Entity blinding: the pair's entities read ``PROT1``/``PROT2``, other entities ``PROT``.
    C : float, default 1.0
        The SVM's C (not tuned).
    sigma_params : dict, optional
        The σ learner's settings, as in
        :func:`~structkernels.experiments.relations.evaluate_relations`: ``"objective"``
        selects the learner (default ``"svm"``: σ and λ by gradient of the SVM's objective,
        :mod:`~structkernels.npk.gradient`, learned inside the sum
        with the other views; ``"alignment"``; ``"loss1"`` or ``"knn-ap"``:
        :class:`~structkernels.NonstationaryLearner`), the other keys are its keywords, e.g.
        ``{"objective": "loss1", "top_fraction": 0.3}``.
    n_jobs : int, optional
        Workers of the σ learner and the Grams; None: every core the process may use.
        Not saved.
    random_state : int or None, default 0
        Seeds the σ learner and the SVM's Nyström landmarks.
    progress : bool, default True
        Progress bars (parsing, σ) on stderr.  Not saved.
    max_exact : int, default 20000
        Most training pairs the SVM solves exactly; above, Nyström landmarks
        (:class:`~structkernels.classifiers.KernelSVC`).
    threshold : "inner-cv", "prevalence", "zero" or float, default "inner-cv"
        The decision threshold (a pair is positive when its score is ``> threshold_``):
        chosen for F1 (or to match the training prevalence) by grouped 3-fold inner
        cross-validation on the training pairs
        (:func:`~structkernels.relations.decision.fit_decision`, the corpus's documents
        kept whole), 0, or that number.  Above ``max_exact`` training pairs the inner
        cross-validation does not run: threshold 0 (``decision_.fallback`` says so).
    calibration : {"platt", "isotonic"} or None, default None
        Calibrated probabilities (fitted on the inner folds' out-of-fold scores):
        :meth:`predict_pairs` then gives each pair's ``"probability"``.  ``structkernels
        train-extractor`` asks for ``"platt"``.
    n_process : int or None, default 1
        Processes of spaCy's parser (``nlp.pipe``); None: the cores the process may use.
        Several only for a call with enough sentences to parse
        (:class:`~structkernels.relations.parse.DependencyParser`'s ``min_parallel``);
        the parses are the same.  Not saved.
    tolerance : float, default 0.0
        0: exact scores.  Above 0: the fast route, the path view scored against a
        reduced set of reference paths whose score error on every reference pair is at
        most ``tolerance`` (:class:`~structkernels.extraction.scoring.ReferenceScorer`;
        the linear views stay exact); the error reached is in :attr:`approximation_`,
        with an :class:`~structkernels.classifiers.ApproximationWarning` when the pairs
        checked exactly along the way show more.  Not saved.

    Attributes
    ----------
    sigma_ : dict of str to float
        The learned σ of the edge labels whose weight is not 1.
    kernel_params_ : dict
        ``{"path": {...}, "context": {...}, "apg": {}}``: each structure view's kernel
        parameters; its keys are the structure views the model compares (``"path"`` and
        ``"context"`` only for a model loaded from a version 1 file).
    kernel_ : Kernel
        The composite kernel (with ``sigma_``).
    references_ : list of dict
        The reference pairs' structure views (``{"path": Path, "context": tuple of str,
        "apg": LabelledGraph}``): the support vectors (exact route) or the Nyström
        landmarks.
    weights_ : ndarray of shape (n_references,)
        Their weights in the decision function (``dual_coef_`` of the exact SVM).
    intercept_ : float
    route_ : {"exact", "nystroem"}
    n_pairs_ : int
        Training pairs.
    n_positives_ : int
        Training pairs labelled True.
    pipeline_meta_ : dict
        ``{"name", "package", "version", "spacy"}``: the spaCy pipeline asked for, the
        package found, its version and spaCy's.
    decision_ : DecisionRule or None
        The threshold and calibration (None for a model read from a version 1 or 2 file:
        threshold 0, no calibration).
    threshold_ : float
        The decision threshold.
    calibration_ : dict or None
        ``{"kind": "platt", "a", "b"}``, ``{"kind": "isotonic", "x", "y"}`` or None.

    Examples
    --------
    >>> from structkernels.extraction import RelationExtractor
    >>> from structkernels.relations import read_relations
    >>> train = read_relations("train.jsonl")  # doctest: +SKIP
    >>> ex = RelationExtractor(cache_dir=False, progress=False).fit(train)  # doctest: +SKIP
    >>> ex.save("extractor.json")  # doctest: +SKIP
    >>> ex = RelationExtractor.load("extractor.json", progress=False)  # doctest: +SKIP
    >>> ex.predict_pairs(read_relations("new.jsonl"))[0]  # doctest: +SKIP
    {'sentence': 'new.1', 'pair': 'new.1.p0', 'e1': 'e0', 'e2': 'e1', 'e1_text': 'KinC', ...}
    """

    def __init__(
        self,
        pipeline: str = "en_core_web_sm",
        cache_dir: str | os.PathLike | None | bool = None,
        blind: bool = True,
        C: float = 1.0,
        sigma_params: dict[str, Any] | None = None,
        n_jobs: int | None = None,
        random_state: int | None = 0,
        progress: bool = True,
        max_exact: int = 20000,
        threshold: str | float = "inner-cv",
        calibration: str | None = None,
        n_process: int | None = 1,
        tolerance: float = 0.0,
    ):
        self.pipeline, self.cache_dir, self.blind, self.C = pipeline, cache_dir, blind, C
        self.sigma_params, self.n_jobs, self.random_state = sigma_params, n_jobs, random_state
        self.progress, self.max_exact, self.threshold = progress, max_exact, threshold
        self.calibration, self.n_process, self.tolerance = calibration, n_process, tolerance

    @property
    def threshold_(self) -> float:
        """The decision threshold: a pair is positive when its score is greater."""
        check_is_fitted(self, "weights_")
        rule = self.__dict__.get("decision_")
        return 0.0 if rule is None else float(rule.threshold)

    @property
    def calibration_(self) -> dict[str, Any] | None:
        """The calibration as JSON (None without one)."""
        check_is_fitted(self, "weights_")
        rule = self.__dict__.get("decision_")
        return None if rule is None else rule.calibration_json()

    def describe(self) -> str:
        """The model it trains, in words: the evaluation's row and its structure views.

        Examples
        --------
        >>> RelationExtractor().describe()
        'NPK SVM model (path + context + all-paths graph)'
        """
        return describe_model(self._model())

    # ------------------------------------------------------------------ parsing
    def _parser(self) -> DependencyParser:
        n_process = self.__dict__.get("n_process", 1)
        key = (self.pipeline, self.cache_dir if isinstance(self.cache_dir, bool) or
               self.cache_dir is None else os.fspath(self.cache_dir), bool(self.progress),
               n_process)
        kept = self.__dict__.get("_parser_kept")
        if kept is None or kept[0] != key:
            kept = (key, DependencyParser(self.pipeline, cache_dir=self.cache_dir,
                                          progress=bool(self.progress), n_process=n_process))
            self._parser_kept = kept
        return kept[1]

    def _model(self) -> RelationModel:
        """The relation model: a fitted or loaded one's, else :data:`MODEL`."""
        params = self.__dict__.get("kernel_params_")
        return MODEL if params is None else model_of(params)

    def parser(self) -> DependencyParser:
        """The :class:`~structkernels.relations.parse.DependencyParser` it parses with
        (its settings: ``pipeline``, ``cache_dir``, ``progress``, ``n_process``)."""
        return self._parser()

    def _pipeline_unchecked(self) -> bool:
        """A model trained with a recorded pipeline whose check has not run yet."""
        return (self.__dict__.get("pipeline_meta_") is not None
                and not self.__dict__.get("_version_checked"))

    def check_pipeline(self, info: dict[str, str]) -> None:
        """Warn (:class:`PipelineVersionWarning`, once) when the pipeline ``info``
        (:meth:`DependencyParser.pipeline_info`) is not the one the model was trained with."""
        if not self._pipeline_unchecked():
            return
        saved = self.pipeline_meta_
        if (info["package"], info["version"]) != (saved.get("package"), saved.get("version")):
            warnings.warn(
                f"the extractor was trained with spaCy pipeline {saved.get('package')} "
                f"{saved.get('version')}; {info['package']} {info['version']} is installed: "
                "parses, and so scores, may differ", PipelineVersionWarning, stacklevel=3)
        self._version_checked = True

    def views(self, corpus: RelationCorpus, *, parsed: list[Any] | None = None
              ) -> list[dict[str, Any]]:
        """The structure views (``{"path": Path, "context": tuple, "apg": LabelledGraph}``,
        those of the model) of every pair of ``corpus``, in order.

        Parses the sentences (cached on disk unless ``cache_dir=False``), or takes
        ``parsed``: the parses of its sentences with two entities or more, in order
        (:meth:`parser`'s ``parse``, or a
        :class:`~structkernels.relations.parse.BackgroundParser`'s; the caller checks
        that pipeline with :meth:`check_pipeline`).
        """
        if not isinstance(corpus, RelationCorpus):
            raise TypeError(f"{type(self).__name__} takes a RelationCorpus "
                            f"(structkernels.relations.read_relations), got {type(corpus).__name__}")
        if parsed is None and self._pipeline_unchecked():  # spaCy loaded only to check it
            self.check_pipeline(self._parser().pipeline_info())
        pairs = corpus.pairs()
        if not pairs:
            return []
        if parsed is None:
            parsed = self._parser().parse([s for s in corpus.sentences if len(s.entities) > 1])
        return pair_views(parsed, pairs, views=self._model().views, blind=bool(self.blind))

    def _n_jobs(self) -> int:
        n = self.n_jobs
        if n is None:
            return -1
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n == 0:
            raise ValueError(f"{type(self).__name__}.n_jobs must be None or a non-zero int, "
                             f"got {n!r}")
        return int(n)

    # ---------------------------------------------------------------------- fit
    def fit(self, corpus: RelationCorpus, y: Any = None) -> RelationExtractor:
        """Learn σ and the SVM from a labelled corpus (every candidate pair of it).

        Parameters
        ----------
        corpus : RelationCorpus
            Labelled sentences (:func:`~structkernels.relations.read_relations`).
        y : None
            Ignored: the labels are the corpus's.

        Returns
        -------
        self
        """
        name = type(self).__name__
        learner_params = check_sigma_params(self.sigma_params, name)
        if not is_finite_number(self.C) or self.C <= 0:
            raise ValueError(f"{name}.C must be a finite number > 0, got {self.C!r}")
        if not is_int(self.max_exact) or self.max_exact < 1:
            raise ValueError(f"{name}.max_exact must be an int >= 1, got {self.max_exact!r}")
        n_jobs = self._n_jobs()
        threshold = check_threshold(self.threshold, f"{name}.threshold")
        if self.calibration is not None and self.calibration not in CALIBRATIONS:
            raise ValueError(f"{name}.calibration must be 'platt', 'isotonic' or None, got "
                             f"{self.calibration!r}")
        if not isinstance(corpus, RelationCorpus):
            raise TypeError(f"{name}.fit takes a RelationCorpus, got {type(corpus).__name__}")
        pairs = corpus.pairs()
        if any(p.label is None for p in pairs):
            raise ValueError(f"{name}.fit needs a labelled corpus: sentences without "
                             "interactions given (labelled=False) have no pair labels")
        y = np.asarray([int(p.label) for p in pairs], dtype=np.int64)
        if len(np.unique(y)) != 2:
            raise ValueError(f"{name}.fit needs interacting and non-interacting pairs; the "
                             f"corpus has {len(y)} pairs, {int(y.sum())} interacting")
        for attr in ("pipeline_meta_", "_version_checked", "kernel_params_", "decision_"):
            self.__dict__.pop(attr, None)
        items = self.views(corpus)
        meta = self._parser().pipeline_info()
        workers = effective_n_jobs(n_jobs)
        settings = {"n_jobs": workers, "random_state": self.random_state,
                    "progress": bool(self.progress), **learner_params}
        part = MODEL.sigma_part
        groups = [p.sentence.document for p in pairs]
        try:  # σ learned inside the sum of views (the fixed views' kernels added)
            learned = learn_path_weights(
                dict(part.params), [x[part.view] for x in items], y, groups=groups,
                offset=MODEL.fixed_views_gram(items, workers), **settings)
        except TypeError as exc:
            raise ValueError(f"{name}: bad sigma_params: {one_line(exc)}") from None
        sigma, kernel_params = learned.get("sigma", {}), MODEL.kernel_params()
        kernel_params[part.view].update({k: v for k, v in learned.items() if k != "sigma"})
        kern = MODEL.kernel(sigma, kernel_params)
        C = float(self.C)
        if len(y) <= self.max_exact:
            # the training Gram once: the SVM and the threshold's inner folds share it
            K = kern.gram_by_view(items, n_jobs=n_jobs, progress=None if self.progress else False)
            svc = KernelSVC("precomputed", C=C, max_exact=self.max_exact,
                            random_state=self.random_state, **SVM_PARAMS).fit(K, y)
            decision = fit_decision(K, y, groups, C=C, random_state=self.random_state,
                                    threshold=threshold, calibration=self.calibration)
            del K
        else:
            svc = KernelSVC(kern, C=C, max_exact=self.max_exact,
                            random_state=self.random_state, n_jobs=n_jobs, normalize=False,
                            **SVM_PARAMS).fit(items, y)
            train_scores = (svc.decision_function(items) if self.calibration is not None
                            else None)
            decision = fallback_decision(
                train_scores, y, f"{len(y)} training pairs, more than max_exact = "
                f"{self.max_exact}: no inner cross-validation", threshold=threshold,
                calibration=self.calibration)
        if svc.route_ == "exact":
            refs = [items[i] for i in svc.support_]
            weights = np.asarray(svc.dual_coef_[0], dtype=np.float64)
        else:
            refs = list(svc.landmarks_)
            weights = np.asarray(svc.normalization_ @ svc.coef_[0], dtype=np.float64)
        self.sigma_ = sigma
        self.kernel_params_ = kernel_params
        self.kernel_ = kern
        self.references_ = [_reference(r, MODEL.views) for r in refs]
        self.weights_ = weights
        self.intercept_ = float(svc.intercept_[0])
        self.route_ = svc.route_
        self.n_pairs_ = len(y)
        self.n_positives_ = int(y.sum())
        self.pipeline_meta_ = meta
        self.decision_ = decision
        self._version_checked = True
        return self

    # ------------------------------------------------------------------ predict
    def decision_function(self, corpus: RelationCorpus, *, parsed: list[Any] | None = None
                          ) -> np.ndarray:
        """One score per pair of ``corpus.pairs()``, in order: positive means "interacts"
        (``parsed``: as :meth:`views` takes it)."""
        check_is_fitted(self, "weights_")
        items = self.views(corpus, parsed=parsed)
        return self._scores(items)

    def _tolerance(self) -> float:
        tol = self.__dict__.get("tolerance", 0.0)
        if not is_finite_number(tol) or tol < 0:
            raise ValueError(f"{type(self).__name__}.tolerance must be a number >= 0, got {tol!r}")
        return float(tol)

    def prepare(self) -> RelationExtractor:
        """Prepare the reference pairs for scoring now (the first scoring does it
        otherwise: the linear views collapsed, the paths merged and encoded); returns self."""
        check_is_fitted(self, "weights_")
        self._reference_scorer()
        return self

    def _reference_scorer(self) -> ReferenceScorer:
        """The references prepared once per model (:mod:`~structkernels.extraction.scoring`)."""
        tol = self._tolerance()
        key = (id(self.references_), id(self.weights_), self.intercept_, id(self.sigma_), tol)
        kept = self.__dict__.get("_scorer_kept")
        if kept is None or kept[0] != key:
            kern = self._model().kernel(self.sigma_, self.kernel_params_)
            kept = (key, ReferenceScorer(kern, self.references_, self.weights_,
                                         self.intercept_, tolerance=tol,
                                         n_jobs=self._n_jobs()))
            self._scorer_kept = kept
        return kept[1]

    @property
    def approximation_(self) -> dict[str, Any] | None:
        """The fast route's stated error (``tolerance > 0``), None on the exact route.

        ``{"tolerance", "views": {"path": {"references", "of", "error_on_references",
        "bound"}}, "checked", "observed_error"}``: the reference paths kept out of the
        distinct ones, the largest score error on the reference pairs, the bound no
        pair's error can exceed, and, over what was scored so far, the pairs also scored
        exactly and the largest difference on them
        (:class:`~structkernels.extraction.scoring.ReferenceScorer`).
        """
        check_is_fitted(self, "weights_")
        if self._tolerance() == 0:
            return None
        return self._reference_scorer().approximation

    def _scores(self, items: list[dict[str, Any]]) -> np.ndarray:
        return self._reference_scorer().scores_in_batches(
            items, self._n_jobs(), batch=SCORE_BATCH, progress=bool(self.progress))

    def predict(self, corpus: RelationCorpus) -> np.ndarray:
        """1 for each pair of ``corpus.pairs()`` predicted to interact (score >
        :attr:`threshold_`), else 0."""
        return (self.decision_function(corpus) > self.threshold_).astype(np.int64)

    def predict_proba(self, corpus: RelationCorpus) -> np.ndarray | None:
        """The calibrated probability that each pair interacts, or None when the model has
        no calibration (``calibration=None``, or a version 1 or 2 file)."""
        check_is_fitted(self, "weights_")
        rule = self.__dict__.get("decision_")
        if rule is None or rule.calibration is None:
            return None
        return rule.probability(self.decision_function(corpus))

    def predict_pairs(self, corpus: RelationCorpus, threshold: float | None = None, *,
                      parsed: list[Any] | None = None) -> list[dict[str, Any]]:
        """Every pair of ``corpus`` scored: ``{"sentence", "pair", "e1", "e2", "e1_text",
        "e2_text", "score", "label"}`` (``label`` 1 when ``score > threshold``: by default
        :attr:`threshold_`), in pair order; with a calibration, ``"probability"`` follows
        ``"score"`` (a model without one gives rows without it); ``parsed``: as
        :meth:`views` takes it."""
        scores = (self.decision_function(corpus) if parsed is None
                  else self.decision_function(corpus, parsed=parsed))
        cut = self.threshold_ if threshold is None else check_threshold(threshold, "threshold")
        if isinstance(cut, str):  # "inner-cv" or "zero" name rules of fit, not a number
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        rule = self.__dict__.get("decision_")
        proba = None if rule is None else rule.probability(scores)
        rows = []
        for i, (p, s) in enumerate(zip(corpus.pairs(), scores, strict=True)):
            row = {"sentence": p.sentence.id, "pair": p.id, "e1": p.e1.id, "e2": p.e2.id,
                   "e1_text": p.e1.text, "e2_text": p.e2.text, "score": float(s)}
            if proba is not None:
                row["probability"] = float(proba[i])
            row["label"] = int(s > cut)
            rows.append(row)
        return rows


    # --------------------------------------------------------------- save/load
    def to_json(self) -> dict[str, Any]:
        """The model as a JSON-ready document (what :meth:`save` writes)."""
        check_is_fitted(self, "weights_")
        sigma_params = check_sigma_params(self.sigma_params, type(self).__name__) or None
        rs = self.random_state if is_int(self.random_state) or self.random_state is None else None
        model = self._model()
        rule = self.__dict__.get("decision_")
        # a model read from a version 1 or 2 file is saved as its version (no decision)
        version = version_of(model) if rule is None else EXTRACTOR_VERSION
        doc = {
            "format": EXTRACTOR_FORMAT,
            "version": version,
            "params": {"pipeline": self.pipeline, "blind": bool(self.blind), "C": float(self.C),
                       "sigma_params": sigma_params, "random_state": rs,
                       "max_exact": int(self.max_exact)},
            "pipeline": dict(self.pipeline_meta_),
            "kernel": {k: dict(v) for k, v in self.kernel_params_.items()},
            "sigma": {str(k): float(v) for k, v in self.sigma_.items()},
            "train": {"pairs": int(self.n_pairs_), "positives": int(self.n_positives_),
                      "route": self.route_},
            "svm": {"intercept": float(self.intercept_),
                    "weights": [float(w) for w in self.weights_]},
            "references": (pack(self.references_, model.views) if version >= 4 else
                           [{v: _view_json(r[v]) for v in model.views}
                            for r in self.references_]),
        }
        if rule is not None:
            doc["decision"] = _decision_json(rule)
        return doc

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to ``path`` as JSON (gzip'd when the name ends in ``.gz``), atomically.

        The file appears complete or not at all; NaN or infinity anywhere, or references
        beyond the limits :meth:`load` reads (:func:`~structkernels.extraction.files.
        check_reference_limits`), are refused before anything is written.
        """
        out = FilePath(os.fspath(path))
        doc = self.to_json()

        def refuse(reason: str) -> NoReturn:
            raise ValueError(f"{out}: cannot save the extractor: {reason}")

        refs = doc["references"]
        check_reference_limits(refs if isinstance(refs, list) else self.weights_, refuse)
        if isinstance(refs, dict):  # the arrays read back as load reads them
            unpack_references(refs, self._model().views, len(self.weights_), refuse)
        try:
            text = dumps_finite(doc, what=f"{out}: the extractor",
                                separators=(",", ":"), ensure_ascii=False)
        except TypeError as exc:  # sigma_params holding a non-JSON value
            raise ValueError(f"{out}: cannot save the extractor: {one_line(exc)}") from None
        if out.name.endswith(".gz"):
            with atomic_open(out, "wb") as fh:
                with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
                    gz.write(text.encode("utf-8"))
        else:
            with atomic_open(out, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        cache_dir: str | os.PathLike | None | bool = None,
        n_jobs: int | None = None,
        progress: bool = True,
        max_bytes: int | None = None,
        n_process: int | None = 1,
        tolerance: float = 0.0,
    ) -> RelationExtractor:
        """Read a model written by :meth:`save`; it predicts without fitting again.

        ``cache_dir``, ``n_jobs``, ``progress``, ``n_process`` and ``tolerance`` are this
        machine's settings (not in the file); ``max_bytes`` bounds the file's (decompressed) size, default
        :data:`MAX_EXTRACTOR_BYTES`.

        Raises
        ------
        ExtractorFormatError
            One line naming the file: not a relation-extractor file, another version, a
            field missing, of the wrong type, not finite, or lengths that disagree.
        """
        name = os.fspath(path)
        doc = read_extractor_document(name, max_bytes)
        return cls.from_json(doc, source=name, cache_dir=cache_dir, n_jobs=n_jobs,
                             progress=progress, n_process=n_process, tolerance=tolerance)

    @classmethod
    def from_json(
        cls,
        doc: Any,
        *,
        source: str = "the extractor",
        cache_dir: str | os.PathLike | None | bool = None,
        n_jobs: int | None = None,
        progress: bool = True,
        n_process: int | None = 1,
        tolerance: float = 0.0,
    ) -> RelationExtractor:
        """The model of a decoded document (:meth:`to_json`), every field checked.

        ``source`` names the document in errors (the file).
        """
        p = check_extractor_document(doc, source)
        decision = None if p["decision"] is None else _decision_of(p["decision"])
        settings = {} if decision is None else {
            "threshold": decision.threshold if decision.rule == "fixed" else decision.rule,
            "calibration": decision.calibration}
        ex = cls(cache_dir=cache_dir, n_jobs=n_jobs, progress=progress, **p["params"],
                 **settings, n_process=n_process, tolerance=tolerance)
        ex.decision_ = decision
        ex.sigma_ = p["sigma"]
        ex.kernel_params_ = p["kernel"]
        ex.kernel_ = p["model"].kernel(p["sigma"], p["kernel"])
        ex.references_ = p["references"]
        ex.weights_ = np.asarray(p["weights"], dtype=np.float64)
        ex.intercept_ = float(p["intercept"])
        ex.route_ = p["train"]["route"]
        ex.n_pairs_ = p["train"]["pairs"]
        ex.n_positives_ = p["train"]["positives"]
        ex.pipeline_meta_ = p["pipeline"]
        return ex
