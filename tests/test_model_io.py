"""One model format: train-npk writes it, load_model / NonstationaryLearner.load / predict read it.

Every bad model file gives one error line naming the file (issue 16, row 9).
"""

from __future__ import annotations

import gzip
import json

import pytest
from test_train_npk_cli import planted_records

import structkernels as sk
from structkernels.cli import main
from structkernels.npk.model import MODEL_VERSION, ModelFormatError, read_model


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("model")
    data = tmp / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in planted_records(n=120)))
    model = tmp / "model.npk.json.gz"
    argv = ["--quiet", "train-npk", str(data), "--out", str(model), "--alpha", "2", "--beta", "10",
            "--hashing", "none", "--no-progress", "--json"]
    assert main(argv) == 0
    return model, data


def test_train_npk_writes_a_compact_versioned_file(trained):
    model, _ = trained
    raw = model.read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # gzip
    doc = json.loads(gzip.decompress(raw))
    assert doc["format"] == "structkernels.npk-model" and doc["version"] == MODEL_VERSION
    assert len(raw) < len(gzip.decompress(raw)) / 3


def test_load_model_and_learner_load_read_the_train_npk_file(trained):
    model, _ = trained
    m = sk.load_model(model)
    assert m.version == MODEL_VERSION and m.kernel == "path"
    assert len(m.train_paths) == len(m.train_labels) > 0
    learner = sk.NonstationaryLearner.load(model)
    assert learner.sigma_ == m.learner.sigma_
    pred = m.predict(m.train_paths[:5])
    assert set(pred.tolist()) <= {0, 1}


def test_learner_load_still_reads_the_sigma_file(trained, tmp_path):
    learner = sk.load_model(trained[0]).learner
    f = tmp_path / "sigma.json"
    learner.save(f)
    assert sk.NonstationaryLearner.load(f).sigma_ == learner.sigma_


def test_version_1_plain_json_is_read(trained, tmp_path):
    doc = read_model(trained[0])
    doc["version"] = 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert sk.load_model(old).version == 1


def test_a_file_without_a_classifier_setting_keeps_the_old_default(trained, tmp_path):
    """Defaults now follow the main job; a file naming no vote rule was trained with majority."""
    from structkernels.neighbors.classifier import PREVIOUS_DEFAULTS

    doc = read_model(trained[0])
    for key in PREVIOUS_DEFAULTS:
        doc["classifier"].pop(key, None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    m = sk.load_model(old)
    for key, value in PREVIOUS_DEFAULTS.items():
        assert m.classifier_params[key] == value
    assert m.classifier().get_params()["weights"] == "uniform"


def _corrupt(trained, tmp_path, change):
    doc = read_model(trained[0])
    change(doc)
    f = tmp_path / "bad.npk.json.gz"
    # written by hand: save_model refuses what these files hold (NaN, a bad σ...)
    raw = json.dumps(doc).encode()
    f.write_bytes(gzip.compress(raw, mtime=0) if doc.get("version") == MODEL_VERSION else raw)
    return f


def _set_sigma(value):
    def change(doc):
        label = next(iter(doc["kernel_params"]["sigma"]), "ARG0")
        doc["kernel_params"]["sigma"][label] = value
    return change


def _set_label(value):
    def change(doc):
        doc["train"]["labels"][0] = value
    return change


def _set_version(doc):
    doc["version"] = 99


def _drop_learner(doc):
    del doc["learner"]


def _short_labels(doc):
    doc["train"]["labels"].pop()


def _bad_path(doc):
    doc["train"]["paths"][0] = [["ARG0"]]


@pytest.mark.parametrize(
    "change, message",
    [
        (_set_sigma("abc"), r"σ must be a finite number >= 0"),
        (_set_sigma(-5), r"is -5; σ must be a finite number >= 0"),
        (_set_sigma(float("nan")), r"σ must be a finite number"),
        (_set_version, r"model version 99 is not supported"),
        (_set_label(2), r"training label 0 is 2; labels must be 0 or 1"),
        (_set_label("1"), r"training label 0 is '1'"),
        (_drop_learner, r"no 'learner' object"),
        (_short_labels, r"training paths but .* labels"),
        (_bad_path, r"training path 0 is malformed"),
    ],
)
def test_bad_model_files_are_refused_naming_the_file(trained, tmp_path, change, message):
    f = _corrupt(trained, tmp_path, change)
    with pytest.raises(ModelFormatError, match=message) as info:
        sk.load_model(f)
    assert str(info.value).startswith(f"{f}: ")
    with pytest.raises(ModelFormatError, match=message):
        sk.NonstationaryLearner.load(f) if change is not _drop_learner else read_model(f)


@pytest.mark.parametrize(
    "content, message",
    [
        (bytes(range(256)) * 4, "binary data"),
        (b"\x1f\x8b\x08\x00junk", "corrupt gzip"),
        (b'{"format": "something-else"}', "not a train-npk model"),
        (b"[1, 2", "not valid JSON"),
    ],
)
def test_foreign_or_corrupt_files(tmp_path, content, message):
    f = tmp_path / "m.bin"
    f.write_bytes(content)
    with pytest.raises(ModelFormatError, match=message) as info:
        sk.load_model(f)
    assert str(info.value).startswith(str(f)) and "\n" not in str(info.value)


def test_predict_refuses_a_bad_model_in_one_line_with_the_file_name(trained, tmp_path, capsys):
    _, data = trained
    f = _corrupt(trained, tmp_path, _set_sigma(-5))
    assert main(["predict", str(f), str(data)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and "σ must be" in err


def test_predict_fits_the_classifier_once_per_use(trained, monkeypatch):
    """The model keeps its fitted classifier: a second predict does not fit again."""
    import numpy as np

    from structkernels.neighbors.classifier import KernelKNNClassifier

    calls = []
    fit = KernelKNNClassifier.fit

    def counting_fit(self, X, y):
        calls.append(len(X))
        return fit(self, X, y)

    monkeypatch.setattr(KernelKNNClassifier, "fit", counting_fit)
    m = sk.load_model(trained[0])
    X = m.train_paths[:6]
    first = m.predict(X)
    second = m.predict(X)
    assert calls == [len(m.train_paths)]
    np.testing.assert_array_equal(first, second)
    assert m.classifier() is m.classifier()
    # another n_jobs keeps the fitted classifier
    assert m.classifier(n_jobs=2).n_jobs == 2 and len(calls) == 1
    assert m.classifier(n_jobs=1).n_jobs == 1 and len(calls) == 1
    # "pk" (no learned σ) is a classifier of its own, fitted once too
    m.predict(X, use="pk")
    m.predict(X, use="pk")
    assert len(calls) == 2 and m.classifier("pk") is not m.classifier("npk")
    # new training data is fitted anew
    m.train_labels = list(m.train_labels)
    m.predict(X)
    assert len(calls) == 3


def test_scores_of_the_model_agree_with_its_predictions(trained):
    import numpy as np

    m = sk.load_model(trained[0])
    X = m.train_paths[:20]
    clf = m.classifier()
    proba = m.predict_proba(X)
    scores = m.decision_function(X)
    assert proba.shape == (len(X), len(clf.classes_)) and scores.shape == (len(X),)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(scores, proba[:, list(clf.classes_).index(1)])
    pred = m.predict(X)
    if clf.threshold_ is not None:
        np.testing.assert_array_equal(pred, clf.classes_[(scores >= clf.threshold_).astype(int)])
    else:
        np.testing.assert_array_equal(pred, clf.classes_[np.argmax(proba, axis=1)])
