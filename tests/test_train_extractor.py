"""The extractor's decision threshold and calibration (model file version 3), the
``train-extractor`` command, ``predict --threshold`` and probabilities, and ``evaluate
--save-model`` saying what it saved."""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pytest

from structkernels.cli import commands, main
from structkernels.cli.train_extractor_cmd import add_parser
from structkernels.extraction import EXTRACTOR_VERSION, ExtractorFormatError, RelationExtractor
from structkernels.relations import read_relations

POSITIVE = "{a} directly activates {b} in sporulating cells."
NEGATIVE = "The levels of {a} and of {b} were measured in separate strains."
# the same interaction in another wording: harder to learn from the first form alone
OTHER = "{a} was shown to bind {b} in vitro."
NAMES = ["KinA", "KinB", "KinC", "SigE", "SigF", "Spo0A", "GerE", "CotD", "RsbV", "RsbW",
         "YfhP", "PhrC", "SinR", "AbrB", "ComK", "DegU"]


@pytest.fixture(autouse=True, scope="module")
def _command():
    """The command in this process (an install made before it was added lacks its entry point)."""
    commands.register("train-extractor", add_parser, overwrite=True)
    yield
    commands.unregister("train-extractor")


def _record(template: str, a: str, b: str, sid: str, positive: bool) -> dict:
    text = template.format(a=a, b=b)
    sa, sb = text.index(a), text.index(b)
    return {"id": sid, "text": text,
            "entities": [{"id": "e0", "start": sa, "end": sa + len(a)},
                         {"id": "e1", "start": sb, "end": sb + len(b)}],
            "interactions": [{"e1": "e0", "e2": "e1"}] if positive else []}


def _write(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _records(offset: int, n: int, prefix: str) -> list[dict]:
    out = []
    for i in range(n):
        a, b = NAMES[(i + offset) % len(NAMES)], NAMES[(i + offset + 5) % len(NAMES)]
        out.append(_record(POSITIVE, a, b, f"{prefix}p{i}", True))
        out.append(_record(NEGATIVE, b, a, f"{prefix}n{i}", False))
        out.append(_record(NEGATIVE, a, b, f"{prefix}m{i}", False))
        if i % 3 == 0:
            out.append(_record(OTHER, a, b, f"{prefix}o{i}", True))
    return out


@pytest.fixture(scope="module")
def spacy_pipeline():
    pytest.importorskip("spacy", reason="training an extractor needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    d = tmp_path_factory.mktemp("train-extractor")
    return d, _write(d / "train.jsonl", _records(0, 12, "tr")), \
        _write(d / "test.jsonl", _records(7, 6, "te"))


def _fit(train: str, **params) -> RelationExtractor:
    ex = RelationExtractor(cache_dir=False, progress=False, n_jobs=1,
                           sigma_params={"objective": "loss1", "max_evaluations": None},
                           **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ex.fit(read_relations(train))


@pytest.fixture(scope="module")
def platt(spacy_pipeline, corpora):
    return _fit(corpora[1], calibration="platt")


# ------------------------------------------------------------------ the extractor
def test_fit_chooses_the_threshold_and_calibration(platt, corpora):
    rule = platt.decision_
    assert rule.rule == "inner-cv" and rule.n_folds == 3 and rule.fallback is None
    assert platt.threshold_ == rule.threshold and platt.calibration_["kind"] == "platt"
    test = read_relations(corpora[2])
    scores = platt.decision_function(test)
    assert platt.predict(test).tolist() == (scores > platt.threshold_).astype(int).tolist()
    proba = platt.predict_proba(test)
    assert proba.shape == scores.shape and np.all((proba >= 0) & (proba <= 1))
    order = np.argsort(scores)
    assert np.all(np.diff(proba[order]) >= 0)  # monotone in the score
    rows = platt.predict_pairs(test)
    assert list(rows[0]) == ["sentence", "pair", "e1", "e2", "e1_text", "e2_text", "score",
                             "probability", "label"]
    assert [r["probability"] for r in rows] == proba.tolist()
    high = platt.predict_pairs(test, threshold=1e9)
    assert {r["label"] for r in high} == {0}
    with pytest.raises(ValueError, match="finite number"):
        platt.predict_pairs(test, threshold="zero")


def test_bad_threshold_or_calibration_is_refused_by_fit(corpora):
    train = read_relations(corpora[1])
    with pytest.raises(ValueError, match="threshold must be one of 'inner-cv', 'prevalence', "
                       "'zero' or a finite"):
        RelationExtractor(threshold="best").fit(train)
    with pytest.raises(ValueError, match="calibration must be"):
        RelationExtractor(calibration="sigmoid").fit(train)


@pytest.mark.parametrize("calibration", ["platt", "isotonic", None])
def test_round_trip_keeps_scores_thresholds_and_probabilities(spacy_pipeline, corpora, tmp_path,
                                                               calibration, platt):
    ex = platt if calibration == "platt" else _fit(corpora[1], calibration=calibration,
                                                    threshold=0.25 if calibration else "zero")
    f = tmp_path / "m.json.gz"
    ex.save(f)
    loaded = RelationExtractor.load(f, cache_dir=False, progress=False)
    test = read_relations(corpora[2])
    doc = ex.to_json()
    assert doc["version"] == EXTRACTOR_VERSION == 4 and loaded.to_json() == doc
    assert loaded.decision_ == ex.decision_ and loaded.threshold_ == ex.threshold_
    assert np.array_equal(loaded.decision_function(test), ex.decision_function(test))
    assert loaded.predict_pairs(test) == ex.predict_pairs(test)
    assert loaded.get_params()["threshold"] == ex.get_params()["threshold"]
    assert loaded.get_params()["calibration"] == calibration
    if calibration is None:
        assert doc["decision"]["calibration"] is None and loaded.predict_proba(test) is None
        assert "probability" not in loaded.predict_pairs(test)[0]
    else:
        assert np.array_equal(loaded.predict_proba(test), ex.predict_proba(test))


# -------------------------------------------------------- version 3 files, checked
def _hand_v2() -> dict:
    apg = {"labels": [["PROT1", "NN"], ["activate", "VB"], ["PROT2", "NN"]],
           "edges": [[0, 1, 0.9], [1, 2, 0.9]]}
    return {
        "format": "structkernels-relation-extractor", "version": 2,
        "params": {"pipeline": "en_core_web_sm", "blind": True, "C": 1.0,
                   "sigma_params": None, "random_state": 0, "max_exact": 20000},
        "pipeline": {"name": "en_core_web_sm", "package": "en_core_web_sm", "version": "3.8.0",
                     "spacy": "3.8.2"},
        "kernel": {"path": {"lam": 0.8, "node_mismatch": 0.9}, "context": {"binary": True},
                   "apg": {}},
        "sigma": {"conj": 0.0},
        "train": {"pairs": 4, "positives": 2, "route": "exact"},
        "svm": {"intercept": -0.1, "weights": [0.5, -0.5]},
        "references": [
            {"path": [[None, "PROT1"], ["nsubj-of", "activate"], ["dobj", "PROT2"]],
             "context": ["m:activate"], "apg": apg},
            {"path": [[None, "PROT1"], ["conj", "PROT2"]], "context": ["m:and"],
             "apg": {"labels": [["PROT1"], ["PROT2"]], "edges": [[0, 1, 0.9]]}},
        ],
    }


def _hand_v3(calibration=None) -> dict:
    doc = _hand_v2()
    doc["version"] = 3
    doc["decision"] = {"threshold": 0.2, "rule": "inner-cv",
                       "calibration": calibration or {"kind": "platt", "a": 1.5, "b": -0.3},
                       "inner_f1": 0.8, "folds": 3, "fallback": None}
    return doc


def test_version_2_files_load_with_threshold_0_and_save_as_version_2(tmp_path):
    f = tmp_path / "v2.json"
    f.write_text(json.dumps(_hand_v2()), encoding="utf-8")
    ex = RelationExtractor.load(f)
    assert ex.decision_ is None and ex.threshold_ == 0.0 and ex.calibration_ is None
    assert ex.to_json() == _hand_v2()


def test_a_hand_written_version_3_file_loads(tmp_path):
    for calibration in (None, {"kind": "isotonic", "x": [-1.0, 0.0, 1.0], "y": [0.1, 0.5, 0.9]}):
        doc = _hand_v3(calibration)
        f = tmp_path / "v3.json"
        f.write_text(json.dumps(doc), encoding="utf-8")
        ex = RelationExtractor.load(f)
        assert ex.threshold_ == 0.2 and ex.to_json()["decision"] == doc["decision"]
        again = RelationExtractor.from_json(ex.to_json())  # saved again as version 4
        assert ex.to_json()["version"] == 4 and again.references_ == ex.references_
        assert again.to_json() == ex.to_json()
    assert ex.decision_.probability([-2.0, 0.5, 3.0]).tolist() == [0.1, 0.7, 0.9]


def _set(*keys, value):
    def change(doc):
        target = doc
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return change


DAMAGED = {
    "no decision": (lambda d: d.pop("decision"), "'decision' must be an object"),
    "NaN threshold": (_set("decision", "threshold", value=float("nan")),
                      "decision['threshold'] must be a finite number"),
    "string threshold": (_set("decision", "threshold", value="0.2"),
                         "decision['threshold'] must be a finite number"),
    "unknown rule": (_set("decision", "rule", value="best"), "decision['rule'] must be one of"),
    "zero rule, other threshold": (_set("decision", "rule", value="zero"),
                                   "under the rule 'zero'"),
    "inner F1 above 1": (_set("decision", "inner_f1", value=3), "decision['inner_f1'] must be in"),
    "folds negative": (_set("decision", "folds", value=-1), "decision['folds'] must be an int"),
    "extra field": (_set("decision", "code", value="x"), "unknown field(s) 'code'"),
    "decreasing Platt": (_set("decision", "calibration", "a", value=-1.0),
                         "a probability falling"),
    "unknown kind": (_set("decision", "calibration", "kind", value="beta"),
                     "must be 'platt' or 'isotonic'"),
    "isotonic lengths": (_set("decision", "calibration",
                              value={"kind": "isotonic", "x": [0.0, 1.0], "y": [0.5]}),
                         "holds 2 x but 1 y"),
    "isotonic decreasing": (_set("decision", "calibration",
                                 value={"kind": "isotonic", "x": [0.0, 1.0], "y": [0.9, 0.1]}),
                            "non-decreasing"),
    "isotonic above 1": (_set("decision", "calibration",
                              value={"kind": "isotonic", "x": [0.0, 1.0], "y": [0.5, 2.0]}),
                         "probabilities in [0, 1]"),
    "isotonic too long": (_set("decision", "calibration",
                               value={"kind": "isotonic", "x": [0.0] * 100_001,
                                      "y": [0.5] * 100_001}),
                          "MAX_CALIBRATION_POINTS"),
    "decision in a version 2 file": (_set("version", value=2), "unknown field(s) 'decision'"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_decision_is_one_line(case, tmp_path):
    change, reason = DAMAGED[case]
    doc = copy.deepcopy(_hand_v3())
    change(doc)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    message = str(info.value)
    assert message.startswith(f"{f}: ") and "\n" not in message and reason in message
    assert main(["predict", "--model", str(f), str(f)]) == 2  # and predict says the same


# ---------------------------------------------------------------------- commands
def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_train_extractor_then_predict(spacy_pipeline, corpora, tmp_path, capsys):
    _, train, test = corpora
    model = tmp_path / "m.json.gz"
    assert main(["train-extractor", train, "-o", str(model), "--no-cache", "--n-jobs", "1",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "saved the NPK SVM model (path + context + all-paths graph)" in err
    assert "threshold" in err and "inner CV" in err and "inner-CV F1 " in err
    assert "learned σ (lowest first): " in err  # what was learned, then what to run next
    assert f"next: structkernels predict {model} CORPUS... -o pairs.jsonl" in err
    ex = RelationExtractor.load(model, cache_dir=False, progress=False)
    assert ex.decision_.rule == "inner-cv" and ex.calibration_["kind"] == "platt"
    out = tmp_path / "pairs.jsonl"
    assert main(["predict", str(model), test, "-o", str(out), "--no-cache", "--quiet"]) == 0
    rows = _lines(out.read_text(encoding="utf-8"))
    assert all(0 <= r["probability"] <= 1 for r in rows)
    assert [r["label"] for r in rows] == [int(r["score"] > ex.threshold_) for r in rows]
    err = capsys.readouterr().err
    gold = sum(p.label for p in read_relations([test]).pairs())
    assert "F1" in err and f"predicted positive: {sum(r['label'] for r in rows)} of " \
        f"{len(rows)} (" in err and f"gold positive: {gold} (" in err
    assert main(["predict", str(model), test, "-o", str(out), "--no-cache", "--quiet",
                 "--threshold", "1e9"]) == 0
    assert {r["label"] for r in _lines(out.read_text(encoding="utf-8"))} == {0}
    assert "threshold 1e+09" in capsys.readouterr().err
    # threshold zero, no calibration: no probability in the rows
    assert main(["train-extractor", train, "-o", str(model), "--no-cache", "--quiet",
                 "--threshold", "zero", "--calibration", "none"]) == 0
    assert main(["predict", str(model), test, "-o", str(out), "--no-cache", "--quiet"]) == 0
    rows = _lines(out.read_text(encoding="utf-8"))
    assert "probability" not in rows[0] and "threshold 0 (the SVM's sign)" in \
        capsys.readouterr().err


def test_train_extractor_prepares_the_references_for_predict(spacy_pipeline, corpora,
                                                             tmp_path, monkeypatch):
    """The saved model's references are prepared into the cache folder, so that the first
    predict reads them instead of computing them."""
    from structkernels.kernels.bag import BagKernel

    _, train, test = corpora
    model, cache = tmp_path / "m.json.gz", tmp_path / "cache"
    assert main(["train-extractor", train, "-o", str(model), "--cache-dir", str(cache),
                 "--n-jobs", "1", "--quiet"]) == 0
    assert len(list((cache / "prepared").glob("*.npz"))) == 1

    def refused(*args, **kwargs):
        raise AssertionError("the references were prepared again")

    monkeypatch.setattr(BagKernel, "weighted_sum", refused)
    out = tmp_path / "pairs.jsonl"
    assert main(["predict", str(model), test, "-o", str(out), "--cache-dir", str(cache),
                 "--quiet", "--parse-ahead", "off"]) == 0
    assert _lines(out.read_text(encoding="utf-8"))


def test_train_extractor_errors_are_one_line(corpora, tmp_path, capsys):
    _, train, _ = corpora
    assert main(["train-extractor", train, "-o", train]) == 2
    assert "is the input file" in capsys.readouterr().err
    for bad in ("best", "nan"):
        with pytest.raises(SystemExit) as info:
            main(["train-extractor", train, "-o", str(tmp_path / "m.json"), "--threshold", bad])
        assert info.value.code == 2
        assert "expected inner-cv, prevalence, zero or a finite number" in \
            capsys.readouterr().err
    assert main(["train-extractor", str(tmp_path / "absent.jsonl"), "-o",
                 str(tmp_path / "m.json")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    unlabelled = tmp_path / "u.jsonl"
    unlabelled.write_text('{"text": "KinA binds KinB.", "entities": [{"id": "e0", "start": 0, '
                          '"end": 4}, {"id": "e1", "start": 10, "end": 14}]}\n', encoding="utf-8")
    assert main(["train-extractor", str(unlabelled), "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "labelled" in err
    assert not (tmp_path / "m.json").exists()


def test_predict_threshold_refused_for_a_train_npk_model(tmp_path, capsys):
    model = {"format": "structkernels.npk-model"}
    f = tmp_path / "npk.json"
    f.write_text(json.dumps(model), encoding="utf-8")
    data = tmp_path / "d.jsonl"
    data.write_text("", encoding="utf-8")
    assert main(["predict", str(f), str(data), "--threshold", "0.5"]) == 2
    assert "--threshold applies to relation extractors" in capsys.readouterr().err


def test_evaluate_and_train_extractor_agree(spacy_pipeline, corpora, tmp_path, capsys):
    """``predict`` with the model ``train-extractor`` saves gives ``evaluate --train --test``'s
    NPK SVM figure, and ``evaluate --save-model`` says what it saved."""
    _, train, test = corpora
    saved = tmp_path / "saved.json"
    argv = ["--train", train, "--test", test, "--models", "NPK SVM", "--json", "--no-cache",
            "--n-jobs", "1", "--quiet"]
    assert main(["evaluate", *argv, "--save-model", str(saved)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    row = result["models"]["NPK SVM"]
    assert "saved the NPK SVM model (path + context + all-paths graph)" in captured.err
    model = tmp_path / "m.json"
    assert main(["train-extractor", train, "-o", str(model), "--no-cache", "--n-jobs", "1",
                 "--quiet"]) == 0
    assert json.loads(model.read_text())["decision"] == json.loads(saved.read_text())["decision"]
    ex = RelationExtractor.load(model, cache_dir=False, progress=False)
    assert result["thresholds"] == {"NPK SVM": [round(ex.threshold_, 6)]}
    capsys.readouterr()
    assert main(["predict", str(model), test, "-o", str(tmp_path / "p.jsonl"), "--no-cache",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"F1 {row['f1']:.1f} (precision {row['precision']:.1f}" in err


def test_scoring_shows_progress_unless_quiet(platt, corpora, monkeypatch, capsys):
    import structkernels.extraction._trained as module

    monkeypatch.setattr(module, "SCORE_BATCH", 4)  # several batches on a small corpus
    monkeypatch.setenv("STRUCTKERNELS_PROGRESS_INTERVAL", "0")
    monkeypatch.delenv("STRUCTKERNELS_PROGRESS", raising=False)  # the caller's quiet switch
    test = read_relations(corpora[2])
    quiet = platt.decision_function(test)
    assert "scoring pairs" not in capsys.readouterr().err  # progress=False
    platt.set_params(progress=True)
    try:
        loud = platt.decision_function(test)
    finally:
        platt.set_params(progress=False)
    err = capsys.readouterr().err
    assert "scoring pairs" in err and f"{len(quiet)}/{len(quiet)}" in err
    assert np.array_equal(quiet, loud)
