"""RelationExtractor: train on a corpus, save as checked JSON, load, predict; predict on text."""

from __future__ import annotations

import gzip
import json
import pickle
import warnings

import numpy as np
import pytest

from structkernels.cli import main
from structkernels.extraction import (
    EXTRACTOR_FORMAT,
    EXTRACTOR_VERSION,
    ExtractorFormatError,
    PipelineVersionWarning,
    RelationExtractor,
)
from structkernels.relations import RelationCorpus, read_relations

# ---------------------------------------------------------------- a learnable corpus
NAMES = ["KinA", "KinB", "KinC", "SigE", "SigF", "Spo0A", "GerE", "CotD", "RsbV", "RsbW",
         "YfhP", "PhrC", "SinR", "AbrB", "ComK", "DegU"]
NEW_NAMES = ["XylR", "LacI", "TetR", "AraC"]
# an interaction: the first entity acts on the second
POSITIVE = "{a} directly activates {b} in sporulating cells."
# no interaction: the two are only listed
NEGATIVE = "The levels of {a} and of {b} were measured in separate strains."


def _record(template: str, a: str, b: str, sid: str | None, labelled: bool) -> dict:
    text = template.format(a=a, b=b)
    sa, sb = text.index(a), text.index(b)
    rec: dict = {"text": text, "entities": [{"id": "e0", "start": sa, "end": sa + len(a)},
                                            {"id": "e1", "start": sb, "end": sb + len(b)}]}
    if sid is not None:
        rec["id"] = sid
    if labelled:
        rec["interactions"] = [{"e1": "e0", "e2": "e1"}] if template is POSITIVE else []
    return rec


def _write(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def train_records() -> list[dict]:
    out = []
    for i in range(15):
        a, b = NAMES[i % len(NAMES)], NAMES[(i + 5) % len(NAMES)]
        out.append(_record(POSITIVE, a, b, f"pos{i}", True))
        out.append(_record(NEGATIVE, b, a, f"neg{i}", True))
    return out


def new_records():
    """New sentences: the same two forms with names never seen, no ids, no interactions."""
    return [_record(POSITIVE, "XylR", "LacI", None, False),
            _record(NEGATIVE, "TetR", "AraC", None, False),
            _record(NEGATIVE, "XylR", "AraC", None, False),
            _record(POSITIVE, "TetR", "LacI", None, False)]


EXPECTED = [1, 0, 0, 1]


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
    d = tmp_path_factory.mktemp("extractor")
    train = _write(d / "train.jsonl", train_records())
    new = _write(d / "new.jsonl", new_records())
    return d, train, new


@pytest.fixture(scope="module")
def fitted(spacy_pipeline, corpora):
    d, train, new = corpora
    ex = RelationExtractor(cache_dir=False, progress=False, n_jobs=1)
    with warnings.catch_warnings():
        # on 30 pairs the learner's k-NN graph alone spends its evaluation budget
        warnings.filterwarnings("ignore", "NonstationaryLearner", RuntimeWarning)
        return ex.fit(read_relations(train))


@pytest.fixture(scope="module")
def model_file(fitted, corpora):
    path = corpora[0] / "extractor.json"
    fitted.save(path)
    return path


# ------------------------------------------------------------------ fit and predict
def test_fit_learns_the_two_forms(fitted, corpora):
    new = read_relations(corpora[2])
    assert fitted.predict(new).tolist() == EXPECTED
    scores = fitted.decision_function(new)
    assert scores.shape == (4,) and np.all(np.isfinite(scores))
    assert fitted.n_pairs_ == 30 and fitted.n_positives_ == 15
    assert fitted.route_ == "exact" and len(fitted.references_) == len(fitted.weights_) >= 2
    assert isinstance(fitted.sigma_, dict) and all(v != 1.0 for v in fitted.sigma_.values())
    assert set(fitted.pipeline_meta_) == {"name", "package", "version", "spacy"}
    assert fitted.pipeline_meta_["name"] == "en_core_web_sm"


def test_params_are_kept_verbatim():
    ex = RelationExtractor(C=2, sigma_params={"top_fraction": 0.3}, n_jobs=None)
    assert ex.get_params()["C"] == 2 and ex.get_params()["sigma_params"] == {"top_fraction": 0.3}
    assert ex.get_params()["pipeline"] == "en_core_web_sm" and ex.get_params()["blind"] is True


def test_predict_pairs_names_each_pair(fitted, corpora):
    rows = fitted.predict_pairs(read_relations(corpora[2]))
    assert [r["label"] for r in rows] == EXPECTED
    assert rows[0] == {"sentence": "new.1", "pair": "new.1.p0", "e1": "e0", "e2": "e1",
                       "e1_text": "XylR", "e2_text": "LacI", "score": rows[0]["score"],
                       "label": 1}
    assert isinstance(rows[0]["score"], float) and rows[0]["score"] > 0


def test_fit_refuses_an_unlabelled_or_one_class_corpus(spacy_pipeline, corpora):
    ex = RelationExtractor(cache_dir=False, progress=False)
    with pytest.raises(ValueError, match="labelled corpus"):
        ex.fit(read_relations(corpora[2]))
    one = _write(corpora[0] / "one.jsonl", [r for r in train_records() if r["interactions"]])
    with pytest.raises(ValueError, match="15 pairs, 15 interacting"):
        ex.fit(read_relations(one))
    with pytest.raises(ValueError, match="sigma_params holds 'bogus'"):
        RelationExtractor(sigma_params={"bogus": 1}).fit(read_relations(corpora[1]))


def test_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RelationExtractor().decision_function(RelationCorpus([]))


# ------------------------------------------------------------------------ save/load
def test_round_trip_gives_identical_scores(fitted, model_file, corpora):
    new = read_relations(corpora[2])
    doc = json.loads(model_file.read_text(encoding="utf-8"))
    assert doc["format"] == EXTRACTOR_FORMAT and doc["version"] == EXTRACTOR_VERSION
    assert "cache_dir" not in doc["params"] and "n_jobs" not in doc["params"]
    loaded = RelationExtractor.load(model_file, cache_dir=False, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same pipeline: no version warning
        assert np.array_equal(loaded.decision_function(new), fitted.decision_function(new))
    assert loaded.sigma_ == fitted.sigma_ and loaded.to_json() == fitted.to_json()
    gz = corpora[0] / "extractor.json.gz"
    fitted.save(gz)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    again = RelationExtractor.load(gz, cache_dir=False, progress=False)
    assert np.array_equal(again.decision_function(new), fitted.decision_function(new))


def test_loading_does_not_refit(model_file, corpora, monkeypatch):
    from structkernels.classifiers import KernelSVC
    from structkernels.npk.learner import NonstationaryLearner

    def refuse(*args, **kwargs):
        raise AssertionError("fitted again")

    monkeypatch.setattr(KernelSVC, "fit", refuse)
    monkeypatch.setattr(NonstationaryLearner, "fit", refuse)
    loaded = RelationExtractor.load(model_file, cache_dir=False, progress=False)
    assert loaded.predict(read_relations(corpora[2])).tolist() == EXPECTED


def test_nystroem_route_saves_and_loads(spacy_pipeline, corpora):
    ex = RelationExtractor(cache_dir=False, progress=False, max_exact=10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the approximation's error on 30 pairs
        ex.fit(read_relations(corpora[1]))
    assert ex.route_ == "nystroem"
    path = corpora[0] / "nystroem.json"
    ex.save(path)
    new = read_relations(corpora[2])
    loaded = RelationExtractor.load(path, cache_dir=False, progress=False)
    assert np.array_equal(loaded.decision_function(new), ex.decision_function(new))


def test_another_pipeline_version_warns_and_still_predicts(model_file, corpora, tmp_path):
    doc = json.loads(model_file.read_text(encoding="utf-8"))
    doc["pipeline"]["version"] = "0.0.1"
    f = tmp_path / "old.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    loaded = RelationExtractor.load(f, cache_dir=False, progress=False)
    with pytest.warns(PipelineVersionWarning, match="0.0.1"):
        assert loaded.predict(read_relations(corpora[2])).tolist() == EXPECTED


# ------------------------------------------------------------------ tampered files
def _valid_doc() -> dict:
    """A small valid document written by hand (no spaCy needed)."""
    return {
        "format": EXTRACTOR_FORMAT, "version": 1,
        "params": {"pipeline": "en_core_web_sm", "blind": True, "C": 1.0,
                   "sigma_params": None, "random_state": 0, "max_exact": 20000},
        "pipeline": {"name": "en_core_web_sm", "package": "en_core_web_sm", "version": "3.8.0",
                     "spacy": "3.8.2"},
        "kernel": {"path": {"lam": 0.8, "node_mismatch": 0.9}, "context": {"binary": True}},
        "sigma": {"conj": 0.0},
        "train": {"pairs": 4, "positives": 2, "route": "exact"},
        "svm": {"intercept": -0.1, "weights": [0.5, -0.5]},
        "references": [
            {"path": [[None, "PROT1"], ["nsubj-of", "activate"], ["dobj", "PROT2"]],
             "context": ["m:activate"]},
            {"path": [[None, "PROT1"], ["conj", "PROT2"]], "context": ["m:and"]},
        ],
    }


def test_a_hand_written_document_loads(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(_valid_doc()), encoding="utf-8")
    ex = RelationExtractor.load(f)
    assert ex.sigma_ == {"conj": 0.0} and ex.weights_.tolist() == [0.5, -0.5]
    assert ex.references_[0]["context"] == ("m:activate",)
    assert ex.to_json() == _valid_doc()


def _set(*keys, value):
    def change(doc):
        target = doc
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return change


TAMPERED = {
    "bad version": (_set("version", value=5), "relation-extractor version 5 is not supported"),
    "other format": (_set("format", value="structkernels.npk-model"),
                     "not a relation-extractor file"),
    "NaN intercept": (_set("svm", "intercept", value=float("nan")),
                      "svm['intercept'] must be a finite number, got nan"),
    "infinite weight": (_set("svm", "weights", 1, value=float("inf")),
                        "svm['weights'][1] must be a finite number"),
    "lengths disagree": (_set("svm", "weights", value=[0.5]), "2 references but 1 weights"),
    "unknown kernel param": (_set("kernel", "path", "gamma", value=1.0),
                             "kernel['path'] holds unknown field(s) 'gamma'"),
    "bad kernel param": (_set("kernel", "path", "lam", value=-3),
                         "bad kernel parameters"),
    "kernel object": (_set("kernel", "path", "lam", value={"module": "os:system"}),
                      "kernel['path']['lam'] must be a number"),
    "negative sigma": (_set("sigma", "conj", value=-1), "sigma['conj'] is -1"),
    "bad path": (_set("references", 0, "path", value=[["nsubj", 3]]),
                 "references[0]['path'] is malformed"),
    "bad context": (_set("references", 1, "context", value="m:and"),
                    "references[1]['context'] must be a list of strings"),
    "unknown learner keyword": (_set("params", "sigma_params", value={"exec": "x"}),
                                "sigma_params holds 'exec'"),
    "C not a number": (_set("params", "C", value="1"), "params['C'] must be a finite number"),
    "extra field": (_set("code", value="import os"), "unknown field(s) 'code'"),
    "missing svm": (lambda doc: doc.pop("svm"), "'svm' must be an object"),
    "positives out of range": (_set("train", "positives", value=9),
                               "train['positives'] must be an int between 1"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_file_is_one_clear_error(case, tmp_path):
    change, reason = TAMPERED[case]
    doc = _valid_doc()
    change(doc)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc), encoding="utf-8")  # NaN and Infinity as Python writes them
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    message = str(info.value)
    assert message.startswith(f"{f}: ") and "\n" not in message
    assert reason in message


def test_pickle_junk_and_oversized_files_are_refused(tmp_path):
    f = tmp_path / "m.pkl"
    f.write_bytes(pickle.dumps({"format": EXTRACTOR_FORMAT}))
    with pytest.raises(ExtractorFormatError, match="pickle files are never read"):
        RelationExtractor.load(f)
    f = tmp_path / "junk.json"
    f.write_text("{not json", encoding="utf-8")
    with pytest.raises(ExtractorFormatError, match="not valid JSON"):
        RelationExtractor.load(f)
    f = tmp_path / "big.json.gz"
    f.write_bytes(gzip.compress(json.dumps(_valid_doc()).encode() + b" " * 100_000))
    with pytest.raises(ExtractorFormatError, match="more than 1000 bytes"):
        RelationExtractor.load(f, max_bytes=1000)


def test_saving_refuses_what_json_cannot_hold(tmp_path):
    ex = RelationExtractor.from_json(_valid_doc())
    ex.intercept_ = float("nan")
    with pytest.raises(ValueError, match="not finite"):
        ex.save(tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


# ----------------------------------------------------------------------------- CLI
def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_cli_predict_scores_the_pairs_of_text(model_file, corpora, tmp_path, capsys):
    _, train, new = corpora
    out = tmp_path / "pairs.jsonl"
    argv = ["predict", "--model", str(model_file), new, "-o", str(out),
            "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    rows = _lines(out.read_text(encoding="utf-8"))
    assert [r["label"] for r in rows] == EXPECTED
    assert set(rows[0]) == {"sentence", "pair", "e1", "e2", "e1_text", "e2_text", "score", "label"}
    assert rows[0]["e1_text"] == "XylR" and rows[0]["score"] > 0
    err = capsys.readouterr().err
    assert "scored 4 entity pairs of 4 sentences" in err and "F1" not in err
    # to standard output, the model given first; several inputs make one corpus
    assert main(["predict", str(model_file), new, train, "--cache-dir", str(tmp_path / "c")]) == 0
    captured = capsys.readouterr()
    assert len(_lines(captured.out)) == 4 + 30 and "F1" not in captured.err
    # labelled input: F1 on stderr
    assert main(["predict", "--model", str(model_file), train, "--cache-dir",
                 str(tmp_path / "c")]) == 0
    captured = capsys.readouterr()
    assert len(_lines(captured.out)) == 30 and "F1 100.0 (precision 100.0" in captured.err


def test_cli_predict_errors_are_one_line(model_file, corpora, tmp_path, capsys):
    new = corpora[2]
    assert main(["predict", "--model", str(model_file), new, "--kernel", "pk"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--kernel applies to train-npk models" in err
    assert main(["predict", "--model", str(model_file), str(tmp_path / "absent.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    doc = json.loads(model_file.read_text(encoding="utf-8"))
    doc["svm"]["weights"] = doc["svm"]["weights"][:-1]
    bad.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["predict", "--model", str(bad), new]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(bad) in err and "weights" in err
    assert main(["predict", str(model_file)]) == 2
    assert "give the model and the data" in capsys.readouterr().err


@pytest.fixture
def hand_model(tmp_path):
    f = tmp_path / "hand.json"
    f.write_text(json.dumps(_valid_doc()), encoding="utf-8")
    return f


def test_cli_with_an_extractor_model_refuses_bad_corpora_without_parsing(hand_model, tmp_path,
                                                                          capsys):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"text": "A B", "entities": [{"id": "e0", "start": 0, "end": 9}]}\n',
                 encoding="utf-8")
    assert main(["predict", "--model", str(hand_model), str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{f}:1" in err
    odd = tmp_path / "data.csv"
    odd.write_text("x\n", encoding="utf-8")
    assert main(["predict", "--model", str(hand_model), str(odd)]) == 2
    assert "unknown relation corpus format" in capsys.readouterr().err


# ------------------------------------------------------------- the shipped PPI data
def test_lll_train_then_test(spacy_pipeline, ppi_corpora):
    ppi = ppi_corpora
    ex = RelationExtractor(cache_dir=False, progress=False, n_jobs=1)
    ex.fit(read_relations(ppi / "LLL-train.xml"))
    test = read_relations(ppi / "LLL-test.xml")
    gold = np.array([int(p.label) for p in test.pairs()])
    pred = ex.predict(test)
    tp = int(np.sum((pred == 1) & (gold == 1)))
    f1 = 2 * tp / (pred.sum() + gold.sum())
    assert f1 > 0.5  # 0.675 measured (61 test pairs)
