"""A relation extractor as trained or loaded, everything but its training: parsing, the
pairs' structure views, scoring against the reference pairs, the decision, saving and
loading (:class:`TrainedExtractor`, the base of
:class:`~structkernels.extraction.RelationExtractor`, which adds ``fit``).

Applying a model needs none of the training's modules (the σ learners, the SVM solvers):
``structkernels predict`` imports this module, not :mod:`structkernels.extraction.extractor`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import warnings
from pathlib import Path as FilePath
from typing import Any, NoReturn

import numpy as np

from structkernels.engine.gram import kernel_key
from structkernels.extraction._document import decision_json as _decision_json
from structkernels.extraction._document import decision_of as _decision_of
from structkernels.extraction._document import describe_model, model_of, version_of
from structkernels.extraction._document import view_json as _view_json
from structkernels.extraction._references import pack
from structkernels.extraction.files import (
    EXTRACTOR_FORMAT,
    EXTRACTOR_VERSION,
    MODEL,
    check_extractor_document,
    check_reference_limits,
    check_sigma_params,
    is_finite_number,
    is_int,
    read_extractor_document,
    unpack_references,
)
from structkernels.extraction.scoring import ReferenceScorer
from structkernels.formats.arrays import arrays_from_bytes, arrays_to_bytes
from structkernels.relations.corpus import RelationCorpus
from structkernels.relations.decision import check_threshold
from structkernels.relations.models import RelationModel
from structkernels.relations.parse import DependencyParser
from structkernels.relations.structures import pair_views
from structkernels.utils import (
    CacheFolder,
    ParamsMixin,
    StructkernelsWarning,
    atomic_open,
    dumps_finite,
    one_line,
    user_cache_dir,
)

__all__ = ["PipelineVersionWarning", "SCORE_BATCH", "TrainedExtractor"]


class PipelineVersionWarning(StructkernelsWarning):
    """The installed spaCy pipeline is not the version the extractor was trained with."""


#: Pairs scored per step of :meth:`TrainedExtractor.decision_function` (one progress tick).
SCORE_BATCH = 1024


def _check_fitted(ex: TrainedExtractor) -> None:
    """scikit-learn's ``check_is_fitted(ex, "weights_")``, which refuses a class without
    ``fit`` (:class:`~structkernels.extraction.RelationExtractor` adds it)."""
    if not hasattr(ex, "weights_"):
        from sklearn.exceptions import NotFittedError  # scikit-learn's error, imported to raise

        raise NotFittedError(f"This {type(ex).__name__} instance is not fitted yet. Call "
                             "'fit' with appropriate arguments before using this estimator.")


class TrainedExtractor(ParamsMixin):
    """A relation extractor's parameters and learned state, applied to new pairs: what
    :class:`~structkernels.extraction.RelationExtractor` does once trained or loaded (its
    parameters and attributes are that class's; its ``fit`` is there).

    Examples
    --------
    >>> ex = TrainedExtractor.load("extractor.json", progress=False)  # doctest: +SKIP
    >>> ex.predict_pairs(read_relations("new.jsonl"))[0]["label"]  # doctest: +SKIP
    1
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
        _check_fitted(self)
        rule = self.__dict__.get("decision_")
        return 0.0 if rule is None else float(rule.threshold)

    @property
    def calibration_(self) -> dict[str, Any] | None:
        """The calibration as JSON (None without one)."""
        _check_fitted(self)
        rule = self.__dict__.get("decision_")
        return None if rule is None else rule.calibration_json()

    def describe(self) -> str:
        """The model it trains, in words: the evaluation's row and its structure views.

        Examples
        --------
        >>> TrainedExtractor().describe()
        'NPK SVM model (path + context + all-paths graph)'
        """
        return describe_model(self._model())

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
                            "(structkernels.relations.read_relations), got "
                            f"{type(corpus).__name__}")
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

    def decision_function(self, corpus: RelationCorpus, *, parsed: list[Any] | None = None
                          ) -> np.ndarray:
        """One score per pair of ``corpus.pairs()``, in order: positive means "interacts"
        (``parsed``: as :meth:`views` takes it)."""
        _check_fitted(self)
        items = self.views(corpus, parsed=parsed)
        return self._scores(items)

    def _tolerance(self) -> float:
        tol = self.__dict__.get("tolerance", 0.0)
        if not is_finite_number(tol) or tol < 0:
            raise ValueError(f"{type(self).__name__}.tolerance must be a number >= 0, got {tol!r}")
        return float(tol)

    def prepare(self) -> TrainedExtractor:
        """Prepare the reference pairs for scoring now (the first scoring does it
        otherwise: the linear views collapsed, the paths merged and encoded); returns self."""
        _check_fitted(self)
        self._reference_scorer()
        return self

    def _reference_scorer(self) -> ReferenceScorer:
        """The references prepared once per model (:mod:`~structkernels.extraction.scoring`)."""
        tol = self._tolerance()
        key = (id(self.references_), id(self.weights_), self.intercept_, id(self.sigma_), tol)
        kept = self.__dict__.get("_scorer_kept")
        if kept is None or kept[0] != key:
            kern = self._model().kernel(self.sigma_, self.kernel_params_)
            store = self._prepared_store(kern, tol)
            saved = None if store is None else _read_prepared(*store)

            def scorer_from(prepared: dict[str, np.ndarray] | None) -> ReferenceScorer:
                return ReferenceScorer(kern, self.references_, self.weights_, self.intercept_,
                                       tolerance=tol, n_jobs=self._n_jobs(), prepared=prepared)

            scorer = None
            if saved is not None:
                try:
                    scorer = scorer_from(saved)
                except ValueError as exc:  # an entry of another layout: computed again
                    store[0].discard(store[1], str(exc))
            if scorer is None:
                scorer = scorer_from(None)
                if store is not None:
                    _write_prepared(*store, scorer.prepared_arrays())
            kept = (key, scorer)
            self._scorer_kept = kept
        return kept[1]

    def _prepared_store(self, kern: Any, tol: float) -> tuple[CacheFolder, str, str] | None:
        """Where the prepared references of a model read from a document are cached
        (``cache_dir``'s ``prepared`` folder), the entry's name and its key: the document's
        digest, the weights and the kernel's code; None for the approximate route, no cache,
        or attributes changed since the document was read."""
        source = self.__dict__.get("_document_digest")
        if tol > 0 or source is None or self.cache_dir is False or source[1:] != (
                id(self.references_), id(self.sigma_), id(self.kernel_params_)):
            return None
        base = user_cache_dir() if self.cache_dir in (None, True) else FilePath(self.cache_dir)
        key = json.dumps({"kind": "prepared references", "version": 1, "document": source[0],
                          "weights": hashlib.sha256(self.weights_.tobytes()).hexdigest(),
                          "intercept": repr(self.intercept_), "kernel": kernel_key(kern)},
                         sort_keys=True)
        name = hashlib.sha256(key.encode("utf-8")).hexdigest() + ".npz"
        return CacheFolder(base / "prepared", "prepared references"), name, key

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
        _check_fitted(self)
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
        _check_fitted(self)
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

    def to_json(self) -> dict[str, Any]:
        """The model as a JSON-ready document (what :meth:`save` writes)."""
        _check_fitted(self)
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
    def load(cls, path: str | os.PathLike, *, max_bytes: int | None = None,
             **settings: Any) -> TrainedExtractor:
        """Read a model written by :meth:`save`; it predicts without fitting again.

        ``settings`` are this machine's, not in the file (:meth:`from_json`'s ``cache_dir``,
        ``n_jobs``, ``progress``, ``n_process`` and ``tolerance``); ``max_bytes`` bounds the
        file's (decompressed) size, default :data:`~structkernels.extraction.MAX_EXTRACTOR_BYTES`.

        Raises
        ------
        ExtractorFormatError
            One line naming the file: not a relation-extractor file, another version, a
            field missing, of the wrong type, not finite, or lengths that disagree.
        """
        name = os.fspath(path)
        return cls.from_json(read_extractor_document(name, max_bytes), source=name, **settings)

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
    ) -> TrainedExtractor:
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
        if cache_dir is not False:  # what keys the prepared references in the cache
            try:
                text = json.dumps(doc, sort_keys=True, ensure_ascii=False)
            except (TypeError, ValueError):  # a document not read from a file: no cache
                return ex
            ex._document_digest = (hashlib.sha256(text.encode("utf-8")).hexdigest(),
                                   id(ex.references_), id(ex.sigma_), id(ex.kernel_params_))
        return ex


def _read_prepared(folder: CacheFolder, name: str, key: str) -> dict[str, np.ndarray] | None:
    """The prepared arrays of a cache entry (plain arrays: never unpickled), or None."""
    payload = folder.read(name, key, max_bytes=1 << 30)
    arrays = None if payload is None else arrays_from_bytes(payload)
    if payload is not None and arrays is None:
        folder.discard(name, "is not an array archive")
    return arrays


def _write_prepared(folder: CacheFolder, name: str, key: str,
                    arrays: dict[str, np.ndarray] | None) -> None:
    if arrays is not None:
        folder.write(name, key, arrays_to_bytes(arrays))
