"""Issue 52, case 5 and the finite-number promise: interrupts stop a command with exit 130
and its old outputs intact, even when the ``KeyboardInterrupt`` is swallowed by a finaliser;
a model that cannot give finite scores is refused when loaded, in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "datasets" / "ppi" / "LLL-train.xml"
OLD = b'{"old": "model"}\n'

pytest.importorskip("spacy")


def _env() -> dict:
    return {**os.environ, "STRUCTKERNELS_PROGRESS": "0"}


def _train_argv(out: Path) -> list[str]:
    return ["train-extractor", os.fspath(TRAIN), "-o", os.fspath(out), "--no-cache"]


# ------------------------------------------------------------------ case 5: interrupts
#: a finaliser that receives the SIGINT: Python reports the KeyboardInterrupt raised in it as
#: unraisable and goes on, as it did in numba's finalisers during ``--no-cache`` compilation
SWALLOWED = textwrap.dedent(
    """
    import os, signal, sys, time
    from structkernels.extraction import RelationExtractor

    class Finaliser:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)  # the handler runs here, inside __del__

    real = RelationExtractor.fit

    def fit(self, *args, **kwargs):
        Finaliser()
        return real(self, *args, **kwargs)

    RelationExtractor.fit = fit
    from structkernels.cli import main
    sys.argv = ["structkernels"] + sys.argv[1:]
    sys.exit(main())
    """
)


def test_interrupt_swallowed_by_a_finaliser_still_stops_train_extractor(tmp_path):
    out = tmp_path / "m.json"
    out.write_bytes(OLD)
    proc = subprocess.run([sys.executable, "-c", SWALLOWED, *_train_argv(out)], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "interrupted" in proc.stderr
    assert out.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary left


@pytest.mark.parametrize("delay", [0.0, 4.0])
def test_ctrl_c_stops_train_extractor_no_cache(tmp_path, delay):
    """Ctrl-C (SIGINT to the process group) as the training starts (spaCy loading, parsing)
    and in the middle of it (σ learning, numba compiling without its cache)."""
    out = tmp_path / "m.json"
    out.write_bytes(OLD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "structkernels", *_train_argv(out)], cwd=tmp_path, env=_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        seen = [proc.stderr.readline()]
        while seen[-1] and not seen[-1].startswith("training the"):
            seen.append(proc.stderr.readline())
        assert seen[-1], "".join(seen)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err
    assert out.read_bytes() == OLD


def test_main_in_process_restores_the_sigint_handler(tmp_path):
    from structkernels.cli import main

    before = signal.getsignal(signal.SIGINT)
    assert main(["train-extractor", os.fspath(tmp_path / "missing.xml"), "-o",
                 os.fspath(tmp_path / "m.json")]) == 2
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_inside_a_compiled_call_is_an_interruption(monkeypatch, capsys):
    """numba's dispatcher turns a KeyboardInterrupt raised as it returns into a SystemError
    caused by it: the command still stops as interrupted (130); other SystemErrors propagate."""
    import structkernels.cli as cli

    def compiled_call_interrupted(argv, own_process):
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the guard's handler records it and raises
            time.sleep(5)
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") \
                from exc

    monkeypatch.setattr(cli, "_main", compiled_call_interrupted)
    assert cli.main(["predict"]) == 130
    assert "interrupted" in capsys.readouterr().err

    def broken(argv, own_process):
        raise SystemError("something else")

    monkeypatch.setattr(cli, "_main", broken)
    with pytest.raises(SystemError, match="something else"):
        cli.main(["predict"])


# ------------------------------------------------------------------ finite scores
def _extractor_doc(calibration: dict | None = None) -> dict:
    from test_fuzz_extractor_file import valid_doc

    doc = valid_doc()
    doc["version"] = 3
    doc["decision"] = {"threshold": 0.1, "rule": "fixed", "folds": 0, "fallback": None,
                       "inner_f1": 0.8,
                       "calibration": calibration or {"kind": "platt", "a": 2.0, "b": -0.5}}
    return doc


ISOTONIC = {"kind": "isotonic", "x": [-1.0, 0.0, 1.0], "y": [0.1, 0.5, 0.9]}


def _numeric_places(doc, keys=()) -> list[tuple]:
    """The key paths of every number of ``doc`` (bools excluded)."""
    if isinstance(doc, dict):
        items = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return [keys] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []
    return [p for k, v in items for p in _numeric_places(v, (*keys, k))]


def _set(doc, keys: tuple, value) -> None:
    for k in keys[:-1]:
        doc = doc[k]
    doc[keys[-1]] = value


@pytest.fixture(scope="module")
def lll_test():
    """LLL-test's pairs, parsed once, and a scorer of a model file over them."""
    import warnings

    import numpy as np

    from structkernels.extraction import RelationExtractor
    from structkernels.relations import read_relations

    corpus = read_relations([os.fspath(ROOT / "datasets" / "ppi" / "LLL-test.xml")])
    base = RelationExtractor.from_json(_extractor_doc())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = base.parser().parse([s for s in corpus.sentences if len(s.entities) > 1])

    def score(path: Path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the pipeline's version; not a score
            ex = RelationExtractor.load(path)
            with np.errstate(over="raise", invalid="raise"):  # an overflow on the way too
                scores = ex.decision_function(corpus, parsed=parsed)
                proba = ex.decision_.probability(scores)
        return scores, proba

    return score


def _assert_finite_or_one_line(score, path: Path) -> None:
    import numpy as np

    try:
        scores, proba = score(path)
    except ValueError as exc:  # the loader's refusal: one line naming the file
        message = str(exc)
        assert "\n" not in message and path.name in message, message
        return
    assert len(scores) and np.isfinite(scores).all(), scores
    assert np.isfinite(proba).all() and ((proba >= 0) & (proba <= 1)).all(), proba


@pytest.mark.parametrize("place, value", [
    (("svm", "weights", 0), 1.7e308), (("svm", "weights", 1), -1e308),
    (("svm", "intercept", ), 1.7e308), (("svm", "weights", 2), 1e200),
])
def test_weights_that_overflow_a_score_are_refused_naming_the_field(tmp_path, place, value):
    from structkernels.extraction import ExtractorFormatError, RelationExtractor

    doc = _extractor_doc()
    _set(doc, place, value)
    if place[1] == "intercept":  # alone a finite score; with large weights an infinite one
        doc["svm"]["weights"] = [1e307, 1e307, 1e307]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ExtractorFormatError, match=r"m\.json: svm\['weights'\] and "
                       r"svm\['intercept'\] allow scores up to .*MAX_SCORE_BOUND"):
        RelationExtractor.load(path)


def test_the_score_bound_leaves_a_trained_model_alone():
    from structkernels.extraction.files import MAX_SCORE_BOUND, check_extractor_document

    doc = _extractor_doc()
    doc["svm"]["weights"] = [1e6, -1e6, 1e6]
    assert check_extractor_document(doc, "m.json")["weights"][0] == 1e6
    assert MAX_SCORE_BOUND >= 1e100


SPECIAL = [float("nan"), float("inf"), float("-inf"), 1.7976931348623157e308, -1e308, 1e200,
           -1e200, 1e150, 1e149, -1.0, -1e-300, 0.0, 5e-324, 10**400, -(10**400), 2**63]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(calibration=st.sampled_from([None, ISOTONIC]), data=st.data())
def test_fuzz_model_values_give_finite_scores_or_one_line(lll_test, tmp_path, calibration, data):
    """Numbers of a saved model changed (NaN, inf, huge, negative, tiny): it loads and gives
    finite scores and probabilities on LLL-test, or is refused in one ValueError line."""
    doc = _extractor_doc(calibration)
    places = _numeric_places(doc)
    value = st.one_of(st.sampled_from(SPECIAL), st.floats(), st.integers())
    for place, v in data.draw(st.lists(st.tuples(st.sampled_from(places), value),
                                       min_size=1, max_size=3)):
        _set(doc, place, v)
    if data.draw(st.booleans()):  # every weight at once: sums that overflow
        doc["svm"]["weights"] = [data.draw(st.sampled_from(SPECIAL))] * 3
    path = tmp_path / "fuzzed.json"
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python writes them
    _assert_finite_or_one_line(lll_test, path)


KERNEL, CLASSIFIER = ("the model's kernel_params do not suit kernel 'path': ",
                      "the model's classifier settings ")


@pytest.mark.parametrize("place, value, field", [
    (("kernel_params", "lam"), float("nan"), KERNEL + "PathKernel.lam"),
    (("kernel_params", "node_mismatch"), 1e300, KERNEL + "PathKernel.node_mismatch"),
    (("classifier", "threshold"), float("inf"), CLASSIFIER + "do not suit the classifier: "
     "KernelKNNClassifier.threshold"),
    (("classifier", "n_neighbors"), -1.0, CLASSIFIER + "do not suit the classifier: "
     "KernelKNNClassifier.n_neighbors"),
    (("classifier", "p"), 2, CLASSIFIER + "hold unknown keys 'p'"),
])
def test_npk_model_that_cannot_score_is_refused_when_loaded(tmp_path, place, value, field):
    """A train-npk model's kernel and classifier settings are checked when it is read, not
    when it first scores (then a TypeError, or an error naming no file)."""
    from test_extractor_file_safety import _npk_doc

    from structkernels.npk.files import ModelFormatError
    from structkernels.npk.model import load_model

    doc = _npk_doc()
    _set(doc, place, value)
    path = tmp_path / "npk.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError) as info:
        load_model(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: {field}"), message


def test_pair_writers_refuse_non_finite_numbers(tmp_path):
    """A NaN or infinite score is never written as ``NaN``/``Infinity`` (not JSON) or ``nan``."""
    from structkernels.formats.pairs import _number, pair_line

    with pytest.raises(ValueError, match="s1.p0 is not finite"):
        pair_line({"pair": "s1.p0", "score": float("nan"), "label": 0})
    with pytest.raises(ValueError, match="not finite"):
        pair_line({"pair": "s1.p0", "score": 0.5, "probability": float("inf"), "label": 1})
    with pytest.raises(ValueError, match="not finite"):
        _number(float("-inf"))
    assert pair_line({"pair": "s1.p0", "score": 0.1234567, "label": 1}) == \
        '{"pair": "s1.p0", "score": 0.123457, "label": 1}'
