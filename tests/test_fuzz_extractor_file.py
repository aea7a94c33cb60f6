"""Fuzzing the relation-extractor file: a valid model with fields changed (types, integers
too large for a float, NaN, deep nesting, fields removed or added) either loads as a usable
model or is refused with one :class:`ExtractorFormatError` line naming the file; never
another exception.  The train-npk model, read by the same decoder, likewise.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import numpy as np
from _fuzz_strategies import FUZZ, json_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.cli import main
from structkernels.extraction import ExtractorFormatError, RelationExtractor

HUGE = 10**400
_LONG = FUZZ.max_examples > 1000  # STRUCTKERNELS_FUZZ_LONG=1
FILES = settings(FUZZ, max_examples=1000 if _LONG else 60, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CLI = settings(FILES, max_examples=200 if _LONG else 15)


def valid_doc() -> dict:
    apg = {"labels": [["PROT1", "NN"], ["activate", "VB"], ["PROT2", "NN"]],
           "edges": [[0, 1, 0.9], [1, 2, 0.9]]}
    return {
        "format": "structkernels-relation-extractor", "version": 2,
        "params": {"pipeline": "en_core_web_sm", "blind": True, "C": 1.0,
                   "sigma_params": {"top_fraction": 0.3}, "random_state": 0, "max_exact": 20000},
        "pipeline": {"name": "en_core_web_sm", "package": "en_core_web_sm", "version": "3.8.0",
                     "spacy": "3.8.2"},
        "kernel": {"path": {"lam": 0.8, "node_mismatch": 0.9, "max_len": None},
                   "context": {"binary": True}, "apg": {}},
        "sigma": {"conj": 0.0, "nsubj-of": 0.5},
        "train": {"pairs": 4, "positives": 2, "route": "exact"},
        "svm": {"intercept": -0.1, "weights": [0.5, -0.5, 0.25]},
        "references": [
            {"path": [[None, "PROT1"], ["nsubj-of", "activate"], ["dobj", "PROT2"]],
             "context": ["m:activate", "b:the"], "apg": apg},
            {"path": [[None, "PROT1"], ["conj", "PROT2"]], "context": ["m:and"],
             "apg": {"labels": [["PROT1"], ["PROT2"]], "edges": [[0, 1, 0.9]]}},
            {"path": [[None, "PROT1"], ["appos", "PROT2"]], "context": [],
             "apg": {"labels": [["PROT1"], ["PROT2"], ["x"]],
                     "edges": [[0, 1, 0.5], [1, 2, 0.5], [2, 0, 0.5]]}},
        ],
    }


def _places(doc) -> list[tuple]:
    """Every key path of the document (the root excluded)."""
    out, stack = [], [((), doc)]
    while stack:
        keys, value = stack.pop()
        children = (value.items() if isinstance(value, dict)
                    else enumerate(value) if isinstance(value, list) else ())
        for k, v in children:
            out.append((*keys, k))
            stack.append(((*keys, k), v))
    return sorted(out, key=repr)


PLACES = _places(valid_doc())
# the model's own fields, and the parts of one reference (the rest: structure labels)
FIELDS = [p for p in PLACES if p[0] != "references" or len(p) <= 4 and p[1:2] == (0,)]


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


odd_values = st.one_of(
    st.sampled_from([HUGE, -HUGE, 2**64, 2**1023, float("nan"), float("inf"), -float("inf"),
                     1e308, -0.0, "", "pip", "matplotlib", "../x", True, False, None,
                     [], {}, "1.0", [HUGE], {"x": HUGE}, 2**40, -1, 0]),
    json_values,
    st.integers(0, 300).map(_nested),
    st.text(max_size=8),
)


def _mutate(draw, doc: dict, fields: list, places: list) -> dict:
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(st.sampled_from(fields) | st.sampled_from(places))
        parent = doc
        try:
            for k in keys[:-1]:
                parent = parent[k]
            parent[keys[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the place
        op = draw(st.sampled_from(["replace", "replace", "replace", "remove", "add"]))
        if op == "replace":
            parent[keys[-1]] = draw(odd_values)
        elif op == "remove":
            del parent[keys[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["code", "module", "x", "__class__"]))] = draw(odd_values)
        else:
            parent.append(draw(odd_values))
    return doc


@st.composite
def mutated_docs(draw) -> dict:
    return _mutate(draw, valid_doc(), FIELDS, PLACES)


def npk_doc() -> dict:
    """A train-npk model (the file ``predict`` reads through the same decoder)."""
    learner = {
        "format": "structkernels.nonstationary-sigma", "version": 1, "kernel": "path",
        "params": {"kernel_params": {"lam": 0.8}}, "random_state": 0,
        "sigma": {"ARG0": 1.0, "mod": 0.0}, "fixed_sigma": {}, "normalize": True,
        "labels": ["ARG0", "mod"], "label_counts": {"ARG0": 3, "mod": 2},
        "ignored_labels": ["mod"], "losses": {}, "log": [], "n_train": 4, "n_evaluations": 10,
    }
    return {
        "format": "structkernels.npk-model", "version": 2, "learner": learner, "kernel": "path",
        "kernel_params": {"lam": 0.8, "sigma": {"ARG0": 1.0, "mod": 0.0}},
        "classifier": {"n_neighbors": 1},
        "train": {"ids": ["a", "b"], "paths": [[[None, "x"], ["ARG0", "y"]],
                                               [[None, "x"], ["mod", "z"]]], "labels": [1, 0]},
    }


NPK_PLACES = _places(npk_doc())
NPK_FIELDS = [p for p in NPK_PLACES if p[0] != "train" or len(p) <= 3]


@st.composite
def mutated_npk_docs(draw) -> dict:
    return _mutate(draw, npk_doc(), NPK_FIELDS, NPK_PLACES)


def _items() -> list[dict]:
    return RelationExtractor.from_json(valid_doc()).references_


ITEMS = _items()


@FILES
@given(doc=mutated_docs())
def test_a_mutated_extractor_file_loads_usable_or_is_one_error_naming_it(doc):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "M.json"
        f.write_text(json.dumps(doc), encoding="utf-8")  # NaN, Infinity as Python writes them
        try:
            ex = RelationExtractor.load(f, progress=False, n_jobs=1)
        except ExtractorFormatError as exc:
            message = str(exc)
            assert message.startswith(f"{f}: ") and "\n" not in message, message
            return
    # loaded: it scores pairs with finite numbers, and saves and loads again as it was
    K = np.asarray(ex.kernel_(ITEMS, ex.references_), dtype=np.float64)
    scores = K @ ex.weights_ + ex.intercept_
    assert scores.shape == (len(ITEMS),) and np.isfinite(scores).all()
    assert all(math.isfinite(v) for v in ex.sigma_.values())
    again = RelationExtractor.from_json(json.loads(json.dumps(ex.to_json())))
    assert again.to_json() == ex.to_json()


@CLI
@given(doc=mutated_docs())
def test_cli_predict_on_a_mutated_extractor_file_is_never_a_traceback(doc):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "M.json"
        f.write_text(json.dumps(doc), encoding="utf-8")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            # an absent corpus: the model is read and checked first, nothing is parsed
            rc = main(["predict", "--model", str(f), str(Path(d) / "absent.jsonl")])
    err = stderr.getvalue().strip()
    assert rc == 2 and "\n" not in err and "Traceback" not in err, err
    assert str(f) in err or "no such file or folder" in err, err


@CLI
@given(doc=mutated_npk_docs())
def test_a_mutated_npk_model_predicts_or_is_one_line_naming_it(doc):
    from structkernels.npk.files import ModelFormatError
    from structkernels.npk.learner import NonstationaryLearner
    from structkernels.npk.model import load_model

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "m.json"
        f.write_text(json.dumps(doc), encoding="utf-8")
        data = Path(d) / "c.jsonl"
        data.write_text('{"id": "c", "path": [[null, "x"], ["ARG0", "y"]]}\n', encoding="utf-8")
        for load in (load_model, NonstationaryLearner.load):
            try:
                load(f)
            except ModelFormatError as exc:
                assert str(f) in str(exc) and "\n" not in str(exc), str(exc)
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            rc = main(["predict", str(f), str(data)])
    err = stderr.getvalue().strip()
    assert rc in (0, 2) and "Traceback" not in err, err
    if rc == 2:
        assert "\n" not in err, err
