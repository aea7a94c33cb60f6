"""A relation extractor from text: train on an annotated corpus, save as data, predict.

:class:`RelationExtractor` is the ``"NPK SVM"`` model of
:mod:`structkernels.relations.models` packaged for new text: sentences parsed by spaCy,
each candidate pair's structure views (:func:`~structkernels.relations.structures.pair_views`),
σ learned on the training paths (:func:`~structkernels.npk.gradient.learn_path_weights`)
and an SVM (:class:`~structkernels.classifiers.KernelSVC`: exact up to ``max_exact``
training pairs, Nyström landmarks above).  Either way the decision function is
``Σ_j w_j k(x, r_j) + b`` over a set of reference pairs ``r_j`` (the support vectors, or
the landmarks with ``w = K_LL^{-1/2} coef``), and that is what the model keeps and saves.

The model file is one JSON document (plain, or gzip'd when its name ends in ``.gz``; every
field is described in docs/relations.md): the parameters, the spaCy pipeline, the kernels'
parameters, σ, the training counts, the SVM's intercept and weights, the reference pairs'
structure views as arrays, every string once (version 4,
:mod:`~structkernels.extraction._references`), and from version 3 the ``"decision"``: how a
score becomes a label (positive when ``> threshold``) and a probability
(:class:`~structkernels.relations.decision.DecisionRule`, chosen on the training pairs only
by :func:`~structkernels.relations.decision.fit_decision`).  Versions 1 to 3 (references as
lists of objects) are read as before; version 3 is saved again as version 4, versions 1
(the two-view model, before the all-paths graph) and 2 (threshold 0, no calibration) as
their version.

Reading it never runs code and does bounded work (:mod:`structkernels.extraction.files`:
a file it cannot use is one ``ExtractorFormatError`` line naming the file).  Writing is
atomic.  The machine-specific settings (``cache_dir``, ``n_jobs``, ``progress``) are not
saved: :meth:`RelationExtractor.load` takes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from structkernels.classifiers import KernelSVC
from structkernels.extraction._document import describe_model
from structkernels.extraction._document import reference as _reference
from structkernels.extraction._trained import TrainedExtractor
from structkernels.extraction.files import (
    EXTRACTOR_FORMAT,
    MODEL,
    check_sigma_params,
    is_finite_number,
    is_int,
)
from structkernels.npk.gradient import learn_path_weights
from structkernels.relations.corpus import RelationCorpus
from structkernels.relations.decision import (
    CALIBRATIONS,
    check_threshold,
    fallback_decision,
    fit_decision,
)
from structkernels.relations.models import SVM_PARAMS
from structkernels.utils import effective_n_jobs, one_line

__all__ = [
    "EXTRACTOR_FORMAT",
    "MODEL",
    "STRUCTURE_VIEWS",
    "RelationExtractor",
    "describe_model",
]

#: The structure views of a pair the extractor compares (:data:`MODEL`'s).
STRUCTURE_VIEWS = MODEL.views


class RelationExtractor(TrainedExtractor):
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
