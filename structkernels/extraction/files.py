"""The relation-extractor file: its format, its limits and the checks of every field.

:class:`~structkernels.extraction.RelationExtractor` saves one JSON document (see
:mod:`structkernels.extraction.extractor` for its fields).  Reading one never runs code and
does bounded work: the file is read within :data:`MAX_EXTRACTOR_BYTES` (by
:meth:`RelationExtractor.load` and ``structkernels predict`` alike), the references within
:data:`MAX_REFERENCES`, :data:`MAX_REFERENCE_SIZE` and :data:`MAX_GRAPH_CELLS`, the pipeline
an installed spaCy pipeline (so no other module is ever imported by a name in the file),
every number finite and within a float's range, the scores bounded by
:data:`MAX_SCORE_BOUND`.  Anything else is one :class:`ExtractorFormatError` line naming the
file and the field.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from typing import Any, NoReturn

from structkernels.extraction._references import unpack
from structkernels.npk.files import (
    ModelFormatError,
    decode_document,
    oversized_int,
    read_model_bytes,
    sigma_problem,
)
from structkernels.relations.decision import THRESHOLD_RULES
from structkernels.relations.models import NGRAM, NPK, RelationModel, relation_model
from structkernels.relations.pipelines import check_pipeline
from structkernels.structures import LabelledGraph, Path, StructureError
from structkernels.utils import check_header, one_line, read_head

__all__ = [
    "EXTRACTOR_FORMAT",
    "EXTRACTOR_VERSION",
    "MAX_CALIBRATION_POINTS",
    "MAX_EXTRACTOR_BYTES",
    "MAX_GRAPH_CELLS",
    "MAX_REFERENCES",
    "MAX_REFERENCE_SIZE",
    "MAX_SCORE_BOUND",
    "MODEL",
    "MODELS",
    "ExtractorFormatError",
    "check_decision",
    "check_extractor_document",
    "check_reference_limits",
    "check_sigma_params",
    "is_finite_number",
    "is_int",
    "read_extractor_document",
    "read_model_document",
    "unpack_references",
]

#: The ``"format"`` of a relation-extractor file.
EXTRACTOR_FORMAT = "structkernels-relation-extractor"
#: The version this release writes for a newly trained extractor (it reads 1 to 4):
#: version 3 added the decision threshold and the calibration (``"decision"``), version 4
#: the references as arrays (:mod:`structkernels.extraction._references`).
EXTRACTOR_VERSION = 4
#: The most isotonic breakpoints a model's calibration may hold.  Read at each call.
MAX_CALIBRATION_POINTS = 100_000
#: The most bytes a relation-extractor file may hold, decompressed: the one limit of
#: :meth:`RelationExtractor.load` and ``structkernels predict`` (read at each call).
MAX_EXTRACTOR_BYTES = 256 << 20
#: The most reference pairs (support vectors or Nyström landmarks) a model may hold: each
#: costs one kernel evaluation per pair scored.  Read at each call.
MAX_REFERENCES = 50_000
#: The most path steps, context features, graph vertices, graph edges or graph labels (all
#: vertices together) one reference may hold.  Read at each call.
MAX_REFERENCE_SIZE = 2_000
#: The most ``Σ (graph vertices)²`` over a model's reference graphs: the all-paths kernel
#: enumerates up to ``vertices²`` walks of each.  Read at each call.
MAX_GRAPH_CELLS = 10**9
#: The most ``|intercept| + views × Σ |weights|`` a model may have: it bounds the magnitude of
#: every score (each view is a normalised kernel, within [-1, 1]), and the room left below a
#: float's range keeps the products of the scoring (feature counts and walk sums of the pair
#: scored, times the weights) finite.  A trained SVM's weights are at most its C in
#: magnitude.  Read at each call.
MAX_SCORE_BOUND = 1e150
#: The relation model an extractor trains: the evaluation's "NPK SVM".
MODEL = relation_model("NPK SVM")
# version 1 extractors left the all-paths graph out
_V1_MODEL = RelationModel("NPK SVM on path and context (version 1 files)", (NPK, NGRAM), "SVM")
#: The model of each file version (3: the model of 2 with its decision threshold; 4: the
#: references as arrays).
MODELS: dict[int, RelationModel] = {1: _V1_MODEL, 2: MODEL, 3: MODEL, 4: MODEL}
# the parameters each view's kernel may take from a file; the kernels themselves are fixed
_KERNEL_KEYS = {"path": ("lam", "node_mismatch", "max_len"), "context": ("binary",), "apg": ()}
_PARAM_KEYS = ("pipeline", "blind", "C", "sigma_params", "random_state", "max_exact")
_TOP_KEYS = ("format", "version", "params", "pipeline", "kernel", "sigma", "train", "svm",
             "references")
# version 3 adds the decision threshold and calibration
_DECISION_KEYS = ("threshold", "rule", "calibration", "inner_f1", "folds", "fallback")
_DECISION_RULES = (*THRESHOLD_RULES, "fixed")
_MAX_FOLDS = 100
# the learner's keywords the extractor sets itself
_OWN_LEARNER_KEYS = ("kernel", "kernel_params")
# the seeds NumPy takes
_MAX_SEED = 2**32 - 1
# an error message cuts the value it shows here
_SHOWN = 80
# the largest float: an integer beyond it cannot be converted (OverflowError)
_FLOAT_MAX = sys.float_info.max


class ExtractorFormatError(ModelFormatError):
    """A relation-extractor file that cannot be used; one line naming the file."""


def _shown(v: Any) -> str:
    """``repr(v)`` on one line, cut at :data:`_SHOWN` characters (for error messages)."""
    return one_line(repr(v), _SHOWN)


def _number_problem(v: Any) -> str | None:
    """What keeps ``v`` from being a finite float (a bool is not a number), or None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"must be a finite number, got {_shown(v)}"
    if isinstance(v, int) and abs(v) > _FLOAT_MAX:
        return "is an integer too large for a float"
    if not math.isfinite(v):
        return f"must be a finite number, got {v!r}"
    return None


def is_finite_number(v: Any) -> bool:
    """Whether ``v`` is an int or float (not a bool) that is a finite float.

    Examples
    --------
    >>> is_finite_number(1.5), is_finite_number(10 ** 400), is_finite_number(True)
    (True, False, False)
    """
    return _number_problem(v) is None


def is_int(v: Any) -> bool:
    """Whether ``v`` is an int and not a bool.

    Examples
    --------
    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(v, int) and not isinstance(v, bool)


def _learner_keys() -> set[str]:
    # imported here, for the files that name learner keywords beyond "objective" (trained
    # through the library, not the command line): the learner's modules (the σ objectives,
    # the SVM solvers) stay out of applying every other model
    from structkernels.npk.learner import NonstationaryLearner

    keys = set(inspect.signature(NonstationaryLearner).parameters)
    return (keys | {"objective"}) - set(_OWN_LEARNER_KEYS)


def check_sigma_params(sigma_params: Any, owner: str) -> dict[str, Any]:
    """The σ learner's settings in ``sigma_params`` (None: none): ``"objective"`` and keywords
    of :class:`~structkernels.NonstationaryLearner`, checked to be keywords it takes
    that the extractor does not set itself.

    Examples
    --------
    >>> check_sigma_params({"top_fraction": 0.3}, "params")
    {'top_fraction': 0.3}
    """
    if sigma_params is None:
        return {}
    if not isinstance(sigma_params, dict):
        raise ValueError(f"{owner}: sigma_params must be a dict of NonstationaryLearner "
                         f"keywords or None, got {type(sigma_params).__name__}")
    named = set(map(str, sigma_params)) - {"objective"}
    unknown = sorted(named - _learner_keys()) if named else []
    if unknown:
        shown = one_line(", ".join(map(repr, unknown)), _SHOWN)
        raise ValueError(f"{owner}: sigma_params holds {shown}, which "
                         "NonstationaryLearner does not take (or the extractor sets itself)")
    return dict(sigma_params)


def read_extractor_document(path: str | os.PathLike, max_bytes: int | None = None) -> Any:
    """The decoded JSON document of the file ``path``, read within ``max_bytes`` (default
    :data:`MAX_EXTRACTOR_BYTES`); its fields are not checked yet
    (:func:`check_extractor_document`).

    Raises
    ------
    ExtractorFormatError
        One line naming the file: unreadable, too large, a pickle, not JSON, an integer
        too large for a float.

    Examples
    --------
    >>> read_extractor_document("extractor.json")["format"]  # doctest: +SKIP
    'structkernels-relation-extractor'
    """
    name = os.fspath(path)
    limit = MAX_EXTRACTOR_BYTES if max_bytes is None else max_bytes
    try:
        return decode_document(name, read_model_bytes(name, limit))
    except ExtractorFormatError:
        raise
    except ModelFormatError as exc:
        raise ExtractorFormatError(
            str(exc).replace("default structkernels.npk.model.MAX_MODEL_BYTES",
                             "default structkernels.extraction.MAX_EXTRACTOR_BYTES")) from None


def read_model_document(path: str | os.PathLike) -> Any:
    """The decoded document of a model file of either kind, each within its own limit: a
    relation extractor within :data:`MAX_EXTRACTOR_BYTES`, a train-npk model or σ file
    within :data:`~structkernels.npk.files.MAX_MODEL_BYTES` (what ``structkernels predict``
    reads).

    A file whose first 64 KiB name the extractor format (as :meth:`RelationExtractor.save`
    writes it) is read as an extractor; any other extractor above its limit is refused
    before its JSON is decoded (or, with the format's name escaped, right after).

    Examples
    --------
    >>> read_model_document("extractor.json")["format"]  # doctest: +SKIP
    'structkernels-relation-extractor'
    """
    name = os.fspath(path)
    marker = EXTRACTOR_FORMAT.encode()
    if marker in read_head(name):
        return read_extractor_document(name)
    data = read_model_bytes(name)
    limit = MAX_EXTRACTOR_BYTES
    if len(data) > limit and marker in data:
        _too_large(name, limit)
    doc = decode_document(name, data)
    if len(data) > limit and isinstance(doc, dict) and doc.get("format") == EXTRACTOR_FORMAT:
        _too_large(name, limit)
    return doc


def _too_large(name: str, limit: int) -> NoReturn:
    raise ExtractorFormatError(
        f"{name}: the model file holds more than {limit} bytes (decompressed); refused "
        "(limit: max_bytes, default structkernels.extraction.MAX_EXTRACTOR_BYTES)")


def check_extractor_document(doc: Any, source: str = "the extractor") -> dict[str, Any]:
    """Every field of a decoded extractor document checked; its parts, ready to use.

    ``source`` names the document (the file) in errors.  Returns ``{"params", "pipeline",
    "model", "kernel", "sigma", "train", "intercept", "weights", "references", "version",
    "decision"}`` with the references built (``Path``, tuple of features,
    ``LabelledGraph``); ``"decision"`` is :func:`check_decision`'s dict (None before
    version 3).

    Raises
    ------
    ExtractorFormatError
        One line naming ``source`` and the field.

    Examples
    --------
    >>> check_extractor_document({"format": "x"}, "m.json")
    Traceback (most recent call last):
    ...
    structkernels.extraction.files.ExtractorFormatError: m.json: not a relation-extractor file ...
    """
    return _Checked(doc, source).check()


def check_decision(decision: Any, source: str = "the extractor") -> dict[str, Any]:
    """The ``"decision"`` object of a version 3 or 4 extractor document, checked:
    ``{"threshold", "rule", "calibration", "inner_f1", "folds", "fallback"}``
    (``calibration`` None, ``{"kind": "platt", "a", "b"}`` or ``{"kind": "isotonic", "x",
    "y"}``); anything else is an :class:`ExtractorFormatError`, one line naming ``source``
    and the field.

    Examples
    --------
    >>> check_decision({"threshold": 0.4, "rule": "inner-cv", "calibration": None,
    ...                 "inner_f1": 0.8, "folds": 3, "fallback": None})["threshold"]
    0.4
    >>> check_decision({"threshold": "x"}, "m.json")
    Traceback (most recent call last):
    ...
    structkernels.extraction.files.ExtractorFormatError: m.json: 'decision' lacks 'rule', ...
    """
    return _Checked({"decision": decision}, source).decision()


def check_reference_limits(refs: Any, fail: Any) -> None:
    """The limits on the references of a document (:data:`MAX_REFERENCES`,
    :data:`MAX_REFERENCE_SIZE`, :data:`MAX_GRAPH_CELLS`), counted before anything is built;
    ``fail(reason)`` is called with the first one broken.

    Examples
    --------
    >>> check_reference_limits([{"path": [[None, "A"]], "context": []}], print)
    """
    if len(refs) > MAX_REFERENCES:
        fail(f"{len(refs)} references; a model holds at most MAX_REFERENCES = "
             f"{MAX_REFERENCES} (structkernels.extraction.MAX_REFERENCES)")
    size, cells = MAX_REFERENCE_SIZE, 0
    for i, r in enumerate(refs):
        if not isinstance(r, dict):
            continue
        g = r.get("apg") if isinstance(r.get("apg"), dict) else {}
        for where, v in [(f"[{k!r}]", r.get(k)) for k in ("path", "context")] + [
                (f"['apg'][{k!r}]", g.get(k)) for k in ("labels", "edges")]:
            if isinstance(v, list) and len(v) > size:
                fail(f"references[{i}]{where} holds {len(v)} items; at most "
                     f"MAX_REFERENCE_SIZE = {size}")
        labels = g.get("labels")
        if isinstance(labels, list):
            n_labels = sum(len(x) for x in labels if isinstance(x, list))
            if n_labels > size:
                fail(f"references[{i}]['apg'] holds {n_labels} vertex labels; at most "
                     f"MAX_REFERENCE_SIZE = {size}")
            cells += len(labels) ** 2
    if cells > MAX_GRAPH_CELLS:
        fail(f"the reference graphs hold {cells} vertex pairs (the sum of their squared sizes); "
             f"at most MAX_GRAPH_CELLS = {MAX_GRAPH_CELLS}")


def unpack_references(raw: Any, views: tuple[str, ...], count: int, fail: Any
                      ) -> list[dict[str, Any]]:
    """The ``count`` reference pairs of a version 4 ``"references"`` object (arrays), every
    field checked, within :data:`MAX_REFERENCE_SIZE` and :data:`MAX_GRAPH_CELLS`;
    ``fail(reason)`` is called with the first problem.

    Examples
    --------
    >>> def fail(reason):
    ...     raise ValueError(reason)
    >>> unpack_references({"count": 1}, ("context",), 1, fail)
    Traceback (most recent call last):
    ...
    ValueError: 'references' must be an object with exactly count, strings, context
    """
    return unpack(raw, views, count, fail, (MAX_REFERENCE_SIZE, MAX_GRAPH_CELLS))


class _Checked:
    """The checks of a decoded extractor document; :meth:`check` gives its parts."""

    def __init__(self, doc: Any, source: str):
        self.doc, self.source = doc, source
        self.model = MODEL  # the model of the file's version, once its header is read

    def fail(self, reason: str) -> NoReturn:
        raise ExtractorFormatError(f"{self.source}: {one_line(reason, 400)}")

    def obj(self, parent: dict, key: str, where: str, keys: tuple[str, ...] | None = None,
            required: tuple[str, ...] = ()) -> dict:
        value = parent.get(key)
        if not isinstance(value, dict):
            self.fail(f"{where} must be an object, got {type(value).__name__}")
        if keys is not None:
            unknown = sorted(set(value) - set(keys))
            if unknown:
                self.fail(f"{where} holds unknown field(s) {', '.join(map(repr, unknown))} "
                          f"(known: {', '.join(keys)})")
        missing = [k for k in required if k not in value]
        if missing:
            self.fail(f"{where} lacks {', '.join(map(repr, missing))}")
        return value

    def number(self, value: Any, where: str) -> float:
        problem = _number_problem(value)
        if problem is not None:
            self.fail(f"{where} {problem}")
        return float(value)

    def check(self) -> dict[str, Any]:
        doc, fail = self.doc, self.fail
        version = check_header(doc, name=self.source, format=EXTRACTOR_FORMAT,
                               versions=tuple(MODELS), what="relation-extractor",
                               error=ExtractorFormatError)
        self.model = MODELS[version]
        unknown = sorted(set(doc) - set(_TOP_KEYS + (("decision",) if version >= 3 else ())))
        if unknown:
            fail(f"unknown field(s) {', '.join(map(repr, unknown))} in a version "
                 f"{version} relation-extractor file")
        params = self.params()
        pipeline = self.obj(doc, "pipeline", "'pipeline'", ("name", "package", "version", "spacy"),
                            ("name", "package", "version"))
        for k, v in pipeline.items():
            if not isinstance(v, str):
                fail(f"pipeline[{k!r}] must be a string, got {_shown(v)}")
        sigma = doc.get("sigma")
        if not isinstance(sigma, dict):
            fail(f"'sigma' must be an object of edge label -> σ, got {type(sigma).__name__}")
        problem = sigma_problem("sigma", sigma)
        if problem:
            fail(problem)
        above = next((k for k, v in sigma.items() if v > 1), None)
        if above is not None:  # learned σ are 0 or 1: more would only scale values up
            fail(f"sigma[{_shown(above)}] is {sigma[above]!r}; the σ of an "
                 "extractor is a learned weight in [0, 1]")
        kernel = self.kernel(sigma)
        train = self.obj(doc, "train", "'train'", ("pairs", "positives", "route"),
                         ("pairs", "positives", "route"))
        if not is_int(train["pairs"]) or train["pairs"] < 2:
            fail(f"train['pairs'] must be an int >= 2, got {_shown(train['pairs'])}")
        if not is_int(train["positives"]) or not 0 < train["positives"] < train["pairs"]:
            fail(f"train['positives'] must be an int between 1 and train['pairs'] - 1, got "
                 f"{_shown(train['positives'])}")
        if not isinstance(train["route"], str) or train["route"] not in ("exact", "nystroem"):
            fail(f"train['route'] must be 'exact' or 'nystroem', got {_shown(train['route'])}")
        svm = self.obj(doc, "svm", "'svm'", ("intercept", "weights"), ("intercept", "weights"))
        intercept = self.number(svm["intercept"], "svm['intercept']")
        weights = svm["weights"]
        if not isinstance(weights, list) or not weights:
            fail("svm['weights'] must be a non-empty list of numbers")
        weights = [self.number(w, f"svm['weights'][{i}]") for i, w in enumerate(weights)]
        # a float sum: an overflow is inf, refused like any bound above the limit
        bound = abs(intercept) + len(self.model.views) * sum(abs(w) for w in weights)
        if not bound <= MAX_SCORE_BOUND:
            fail(f"svm['weights'] and svm['intercept'] allow scores up to {bound:.3g} "
                 f"(|intercept| + views x sum of |weights|); at most MAX_SCORE_BOUND = "
                 f"{MAX_SCORE_BOUND:g}, so that every score is finite")
        raw = doc.get("references")
        if version < 4 and (not isinstance(raw, list) or not raw):
            fail("'references' must be a non-empty list of pair views")
        if version < 4 and len(raw) != len(weights):
            fail(f"{len(raw)} references but {len(weights)} weights in svm['weights']")
        if len(weights) > train["pairs"]:
            fail(f"{len(weights)} references but only {train['pairs']} training pairs")
        if version < 4:
            check_reference_limits(raw, fail)
        elif len(weights) > MAX_REFERENCES:
            check_reference_limits(weights, fail)
        decision = self.decision() if version >= 3 else None
        refs = (self.references(raw) if version < 4 else
                unpack_references(raw, self.model.views, len(weights), fail))
        return {"params": params, "pipeline": dict(pipeline), "model": self.model, "kernel": kernel,
                "sigma": {k: float(v) for k, v in sigma.items()}, "train": dict(train),
                "intercept": intercept, "weights": weights, "references": refs,
                "version": version, "decision": decision}

    def decision(self) -> dict[str, Any]:
        fail = self.fail
        d = self.obj(self.doc, "decision", "'decision'", _DECISION_KEYS, _DECISION_KEYS)
        threshold = self.number(d["threshold"], "decision['threshold']")
        rule = d["rule"]
        if not isinstance(rule, str) or rule not in _DECISION_RULES:
            fail(f"decision['rule'] must be one of {', '.join(_DECISION_RULES)}, got "
                 f"{_shown(rule)}")
        if rule == "zero" and threshold != 0:
            fail(f"decision['threshold'] is {threshold!r} under the rule 'zero'")
        f1 = d["inner_f1"]
        if f1 is not None and not 0 <= self.number(f1, "decision['inner_f1']") <= 1:
            fail(f"decision['inner_f1'] must be in [0, 1] or null, got {f1!r}")
        folds = d["folds"]
        if not is_int(folds) or not 0 <= folds <= _MAX_FOLDS:
            fail(f"decision['folds'] must be an int from 0 to {_MAX_FOLDS}, got {_shown(folds)}")
        why = d["fallback"]
        if why is not None and (not isinstance(why, str) or len(why) > 400):
            fail("decision['fallback'] must be a string of at most 400 characters or null")
        return {"threshold": threshold, "rule": rule, "calibration": self.calibration(d),
                "inner_f1": None if f1 is None else float(f1), "folds": folds, "fallback": why}

    def calibration(self, d: dict) -> dict[str, Any] | None:
        fail = self.fail
        if d["calibration"] is None:
            return None
        c = self.obj(d, "calibration", "decision['calibration']", ("kind", "a", "b", "x", "y"),
                     ("kind",))
        kind = c["kind"]
        if kind == "platt":
            if set(c) != {"kind", "a", "b"}:
                fail("decision['calibration'] of kind 'platt' holds exactly 'kind', 'a', 'b'")
            a = self.number(c["a"], "decision['calibration']['a']")
            b = self.number(c["b"], "decision['calibration']['b']")
            if a < 0:
                fail(f"decision['calibration']['a'] is {a!r}: a probability falling as the "
                     "score rises")
            return {"kind": "platt", "a": a, "b": b}
        if kind != "isotonic":
            fail(f"decision['calibration']['kind'] must be 'platt' or 'isotonic', got "
                 f"{_shown(kind)}")
        if set(c) != {"kind", "x", "y"}:
            fail("decision['calibration'] of kind 'isotonic' holds exactly 'kind', 'x', 'y'")
        xs, ys = c["x"], c["y"]
        for key, v in (("x", xs), ("y", ys)):
            if not isinstance(v, list) or not v:
                fail(f"decision['calibration'][{key!r}] must be a non-empty list of numbers")
            if len(v) > MAX_CALIBRATION_POINTS:
                fail(f"decision['calibration'][{key!r}] holds {len(v)} points; at most "
                     f"MAX_CALIBRATION_POINTS = {MAX_CALIBRATION_POINTS}")
        if len(xs) != len(ys):
            fail(f"decision['calibration'] holds {len(xs)} x but {len(ys)} y")
        x = [self.number(v, f"decision['calibration']['x'][{i}]") for i, v in enumerate(xs)]
        y = [self.number(v, f"decision['calibration']['y'][{i}]") for i, v in enumerate(ys)]
        if any(x[i + 1] < x[i] or y[i + 1] < y[i] for i in range(len(x) - 1)):
            fail("decision['calibration']'s isotonic x and y must both be non-decreasing")
        if y[0] < 0 or y[-1] > 1:
            fail("decision['calibration']['y'] must hold probabilities in [0, 1]")
        return {"kind": "isotonic", "x": x, "y": y}

    def params(self) -> dict[str, Any]:
        fail = self.fail
        p = self.obj(self.doc, "params", "'params'", _PARAM_KEYS, _PARAM_KEYS)
        if not isinstance(p["pipeline"], str) or not p["pipeline"]:
            fail(f"params['pipeline'] must be a pipeline name, got {_shown(p['pipeline'])}")
        try:  # before anything can hand the name to spacy.load
            check_pipeline(p["pipeline"], "params['pipeline']", allow_default=True)
        except ValueError as exc:
            fail(str(exc))
        if not isinstance(p["blind"], bool):
            fail(f"params['blind'] must be true or false, got {_shown(p['blind'])}")
        if self.number(p["C"], "params['C']") <= 0:
            fail(f"params['C'] must be a finite number > 0, got {p['C']!r}")
        rs = p["random_state"]
        if rs is not None and (not is_int(rs) or not 0 <= rs <= _MAX_SEED):
            fail(f"params['random_state'] must be an int from 0 to 2**32 - 1 or null, got "
                 f"{_shown(rs)}")
        if not is_int(p["max_exact"]) or p["max_exact"] < 1:
            fail(f"params['max_exact'] must be an int >= 1, got {_shown(p['max_exact'])}")
        try:
            sigma_params = check_sigma_params(p["sigma_params"], "params")
        except ValueError as exc:
            fail(str(exc))
        for key, value in sigma_params.items():
            if not (value is None or isinstance(value, (bool, str)) or is_finite_number(value)
                    or (isinstance(value, list) and all(isinstance(x, str) for x in value))):
                fail(f"params['sigma_params'][{key!r}] must be a number, a string, true/false, "
                     f"null or a list of strings, got {_shown(value)}")
        return dict(p)

    def kernel(self, sigma: dict[str, Any]) -> dict[str, dict[str, Any]]:
        views = self.model.views
        k = self.obj(self.doc, "kernel", "'kernel'", views, views)
        out = {}
        for view in views:
            params = self.obj(k, view, f"kernel[{view!r}]", _KERNEL_KEYS[view])
            for key, value in params.items():
                if not (is_finite_number(value) or isinstance(value, bool) or value is None):
                    self.fail(f"kernel[{view!r}][{key!r}] must be a number, true/false or null, "
                              f"got {one_line(repr(value), 60)}")
            out[view] = dict(params)
        try:
            self.model.kernel(sigma, out).validate_params()
        except (TypeError, ValueError, OverflowError) as exc:
            self.fail(f"bad kernel parameters: {exc}")
        return out

    def references(self, refs: list) -> list[dict[str, Any]]:
        views = self.model.views
        out = []
        for i, r in enumerate(refs):
            if not isinstance(r, dict) or set(r) != set(views):
                self.fail(f"references[{i}] must be an object with exactly {', '.join(views)}")
            if not isinstance(r["path"], list):
                self.fail(f"references[{i}]['path'] must be a list of [edge, node] pairs")
            try:
                path = Path.from_json(r["path"])
            except (StructureError, TypeError, ValueError) as exc:
                self.fail(f"references[{i}]['path'] is malformed: {exc}")
            if len(path) == 0:
                self.fail(f"references[{i}]['path'] is empty")
            context = r["context"]
            if not isinstance(context, list) or not all(isinstance(f, str) for f in context):
                self.fail(f"references[{i}]['context'] must be a list of strings")
            ref = {"path": path, "context": tuple(context)}
            if "apg" in views:
                if not isinstance(r["apg"], dict):
                    self.fail(f"references[{i}]['apg'] must be an object with 'labels' and "
                              "'edges'")
                try:
                    ref["apg"] = LabelledGraph.from_json(r["apg"])
                except (StructureError, TypeError, ValueError) as exc:
                    self.fail(f"references[{i}]['apg'] is malformed: {exc}")
                except OverflowError:
                    self.fail(f"{oversized_int(r['apg']) or 'a value'} of references[{i}]['apg'] "
                              "is an integer too large for a float")
            out.append({v: ref[v] for v in views})
        return out
