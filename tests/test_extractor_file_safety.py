"""Issue 37, the extractor file: nothing named in it is imported, every field is checked for
type and range, and a small file cannot ask for unbounded work.

Hostile files are a small trained extractor (the corpus of ``test_extractor.py``) with one
field changed; the cases that need no parse also run on a hand-written model, so they hold
without spaCy's English pipeline.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
import warnings
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

import structkernels
from structkernels.cli import main
from structkernels.extraction import ExtractorFormatError, RelationExtractor
from structkernels.npk.files import ModelFormatError

# the checkout whose package this process imports (the subprocesses import the same)
ROOT = Path(structkernels.__file__).resolve().parent.parent
HUGE = 10**400  # an integer JSON holds and no float does
POSITIVE = "{a} directly activates {b} in sporulating cells."
NEGATIVE = "The levels of {a} and of {b} were measured in separate strains."
NAMES = ["KinA", "KinB", "KinC", "SigE", "SigF", "Spo0A", "GerE", "CotD", "RsbV", "RsbW"]


def _record(template: str, a: str, b: str, sid: str) -> dict:
    text = template.format(a=a, b=b)
    sa, sb = text.index(a), text.index(b)
    return {"id": sid, "text": text,
            "entities": [{"id": "e0", "start": sa, "end": sa + len(a)},
                         {"id": "e1", "start": sb, "end": sb + len(b)}],
            "interactions": [{"e1": "e0", "e2": "e1"}] if template is POSITIVE else []}


def _corpus(path: Path, n: int = 10) -> Path:
    records = []
    for i in range(n):
        a, b = NAMES[i % len(NAMES)], NAMES[(i + 3) % len(NAMES)]
        records += [_record(POSITIVE, a, b, f"pos{i}"), _record(NEGATIVE, b, a, f"neg{i}")]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def hand_doc() -> dict:
    """A valid version 2 extractor written by hand (no spaCy needed)."""
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


@pytest.fixture(scope="module")
def trained_doc(tmp_path_factory):
    """The document of an extractor trained on 20 pairs (skips without the pipeline)."""
    pytest.importorskip("spacy", reason="training an extractor needs spaCy (the parse extra)")
    from structkernels.relations import read_relations
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")
    d = tmp_path_factory.mktemp("safety")
    ex = RelationExtractor(cache_dir=False, progress=False, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ex.fit(read_relations(_corpus(d / "train.jsonl")))
    return as_version3(ex)


def as_version3(ex: RelationExtractor) -> dict:
    """The document of ``ex`` as a version 3 file holds it: references as lists of objects."""
    doc = ex.to_json()
    doc["version"] = 3
    doc["references"] = [{"path": r["path"].to_json(), "context": list(r["context"]),
                          "apg": r["apg"].to_json()} for r in ex.references_]
    return doc


@pytest.fixture(params=["hand", "trained"])
def base_doc(request):
    if request.param == "hand":
        return hand_doc()
    return json.loads(json.dumps(request.getfixturevalue("trained_doc")))


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _one_line_naming(message: str, f: Path, *parts: str) -> None:
    assert "\n" not in message.strip() and "Traceback" not in message, message
    assert str(f) in message, message
    for part in parts:
        assert part in message, (part, message)


def _installed() -> list[str]:
    return sorted({ep.name for ep in entry_points(group="spacy_models")})


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=cwd, env={"PYTHONPATH": str(ROOT), "STRUCTKERNELS_PROGRESS": "0",
                                        "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
                          timeout=300)


# --------------------------------------------------------- nothing named in a file is imported
@pytest.mark.parametrize("module", ["pip", "matplotlib"])
def test_pipeline_naming_a_module_is_refused_naming_file_field_and_installed(base_doc, module,
                                                                              tmp_path):
    base_doc["params"]["pipeline"] = module
    f = _write(tmp_path / "M.json", base_doc)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, "params['pipeline']", repr(module),
                     "not an installed spaCy pipeline", *_installed())


@pytest.mark.parametrize("module", ["pip", "matplotlib"])
def test_cli_predict_with_a_pipeline_naming_a_module_imports_nothing(module, tmp_path):
    doc = hand_doc()
    doc["params"]["pipeline"] = module
    f = _write(tmp_path / "M.json", doc)
    data = _corpus(tmp_path / "data.jsonl", 1)
    out = _run(f"import sys\nfrom structkernels.cli import main\n"
               f"rc = main(['predict', '--model', {str(f)!r}, {str(data)!r}, '--cache-dir', "
               f"{str(tmp_path / 'cache')!r}])\n"
               f"print(rc, {module!r} in sys.modules)", tmp_path)
    assert out.stdout.split() == ["2", "False"], out.stdout + out.stderr
    _one_line_naming(out.stderr, f, "params['pipeline']", "not an installed spaCy pipeline")


@pytest.mark.parametrize("module", ["pip", "matplotlib"])
def test_evaluate_pipeline_option_naming_a_module_imports_nothing(module, tmp_path):
    data = _corpus(tmp_path / "data.jsonl", 4)
    out = _run(f"import sys\nfrom structkernels.cli import main\n"
               f"rc = main(['evaluate', {str(data)!r}, '--cv', '2', '--pipeline', {module!r}, "
               f"'--no-cache', '-q', '--models', 'NPK SVM'])\n"
               f"print(rc, {module!r} in sys.modules)", tmp_path)
    assert out.stdout.split() == ["2", "False"], out.stdout + out.stderr
    err = out.stderr.strip()
    assert "\n" not in err and "--pipeline" in err and "not an installed spaCy pipeline" in err


def test_the_parser_loads_no_module_named_as_a_pipeline(tmp_path):
    out = _run("import sys\nfrom structkernels.relations.parse import DependencyParser\n"
               "try:\n    DependencyParser('pip', cache_dir=False).nlp\n"
               "except ValueError as exc:\n    print('refused', exc)\n"
               "print('pip' in sys.modules)", tmp_path)
    lines = out.stdout.strip().splitlines() or [""]
    assert lines[-1] == "False", out.stdout + out.stderr
    assert lines[0].startswith("refused") and "not an installed spaCy pipeline" in lines[0]


# ----------------------------------------------------------- every field: type and range
BIG_FIELDS = {
    "intercept": (("svm", "intercept"), "svm['intercept']"),
    "weight": (("svm", "weights", 1), "svm['weights'][1]"),
    "C": (("params", "C"), "params['C']"),
    "lam": (("kernel", "path", "lam"), "kernel['path']['lam']"),
    "node_mismatch": (("kernel", "path", "node_mismatch"), "kernel['path']['node_mismatch']"),
    "sigma": (("sigma", "conj"), "sigma['conj']"),
    "a sigma_params value": (("params", "sigma_params"),
                             "params['sigma_params']['top_fraction']"),
    "an edge weight": (("references", 0, "apg", "edges", 0, 2),
                       "references[0]['apg']['edges'][0][2]"),
}


def _set(doc: dict, keys: tuple, value) -> None:
    target = doc
    for k in keys[:-1]:
        target = target[k]
    target[keys[-1]] = value


@pytest.mark.parametrize("case", sorted(BIG_FIELDS))
def test_integer_too_large_for_a_float_is_one_line_naming_the_field(base_doc, case, tmp_path):
    keys, field = BIG_FIELDS[case]
    _set(base_doc, keys, {"top_fraction": HUGE} if case == "a sigma_params value" else HUGE)
    f = _write(tmp_path / "M.json", base_doc)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, f"{field} is an integer too large for a float")


def test_cli_predict_integer_too_large_for_a_float_exit_2(tmp_path, capsys):
    doc = hand_doc()
    doc["svm"]["intercept"] = HUGE
    f = _write(tmp_path / "M.json", doc)
    assert main(["predict", "--model", str(f), str(_corpus(tmp_path / "d.jsonl", 1))]) == 2
    _one_line_naming(capsys.readouterr().err, f, "svm['intercept'] is an integer too large")


def _npk_doc() -> dict:
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


NPK_BIG = {
    "model sigma": (("kernel_params", "sigma", "ARG0"), "kernel_params['sigma']['ARG0']"),
    "model lam": (("kernel_params", "lam"), "kernel_params['lam']"),
    "learner sigma": (("learner", "sigma", "mod"), "learner['sigma']['mod']"),
    "learner fixed sigma": (("learner", "fixed_sigma", "ARG0"), "['fixed_sigma']['ARG0']"),
    "learner lam": (("learner", "params", "kernel_params", "lam"), "['lam']"),
}


@pytest.mark.parametrize("case", sorted(NPK_BIG))
def test_npk_model_integer_too_large_for_a_float_is_one_line(case, tmp_path, capsys):
    from structkernels.npk.learner import NonstationaryLearner
    from structkernels.npk.model import load_model

    keys, field = NPK_BIG[case]
    doc = _npk_doc()
    _set(doc, keys, HUGE)
    f = _write(tmp_path / "m.json", doc)
    for load in (load_model, NonstationaryLearner.load):
        with pytest.raises(ModelFormatError) as info:
            load(f)
        _one_line_naming(str(info.value), f, field, "is an integer too large for a float")
    data = tmp_path / "cands.jsonl"
    data.write_text('{"id": "c", "path": [[null, "x"], ["ARG0", "y"]]}\n', encoding="utf-8")
    assert main(["predict", str(f), str(data)]) == 2
    _one_line_naming(capsys.readouterr().err, f, "is an integer too large for a float")


def test_sigma_file_integer_too_large_for_a_float_is_one_line(tmp_path):
    from structkernels import NonstationaryLearner

    doc = _npk_doc()["learner"]
    doc["fixed_sigma"] = {"conj": -HUGE}
    f = _write(tmp_path / "s.json", doc)
    with pytest.raises(ModelFormatError) as info:
        NonstationaryLearner.load(f)
    _one_line_naming(str(info.value), f, "fixed_sigma", "is an integer too large for a float")


TYPES = {
    "random_state below 0": (("params", "random_state"), -1, "params['random_state']"),
    "random_state beyond NumPy's seeds": (("params", "random_state"), 2**40,
                                          "params['random_state']"),
    "a path given as a JSON string": (("references", 0, "path"), '[[null, "PROT1"]]',
                                      "references[0]['path'] must be a list"),
    "a graph given as a JSON string": (("references", 0, "apg"), '{"labels": [["a"]]}',
                                       "references[0]['apg'] must be an object"),
    "a sigma_params value that is an object": (("params", "sigma_params"),
                                               {"top_fraction": {"x": 1}},
                                               "params['sigma_params']['top_fraction']"),
}


@pytest.mark.parametrize("case", sorted(TYPES))
def test_a_field_of_the_wrong_type_or_range_is_one_line(base_doc, case, tmp_path):
    keys, value, field = TYPES[case]
    _set(base_doc, keys, value)
    f = _write(tmp_path / "M.json", base_doc)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, field)


# ------------------------------------------------------------------------ bounded work
def _many_references(n: int) -> dict:
    doc = hand_doc()
    ref = doc["references"][1]
    doc["references"] = [ref] * n
    doc["svm"]["weights"] = [0.5, -0.5] * (n // 2) + [0.5] * (n % 2)
    doc["train"]["pairs"] = n
    return doc


def test_a_model_with_more_than_max_references_is_refused(tmp_path, capsys):
    n = 50_001
    f = _write(tmp_path / "M.json", _many_references(n))
    assert f.stat().st_size < 8 << 20
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, f"{n} references", "MAX_REFERENCES = 50000")
    assert main(["predict", "--model", str(f), str(_corpus(tmp_path / "d.jsonl", 1))]) == 2
    _one_line_naming(capsys.readouterr().err, f, "MAX_REFERENCES")


SIZES = {
    "path": (lambda r: r.update(path=[[None, "PROT1"]] + [["conj", "x"]] * 2000),
             "references[0]['path'] holds 2001 items"),
    "context": (lambda r: r.update(context=[f"f{i}" for i in range(2001)]),
                "references[0]['context'] holds 2001 items"),
    "graph vertices": (lambda r: r.update(apg={"labels": [["a"]] * 2001, "edges": []}),
                       "references[0]['apg']['labels'] holds 2001 items"),
    "graph labels": (lambda r: r.update(apg={"labels": [[f"l{i}" for i in range(2001)]],
                                             "edges": []}),
                     "references[0]['apg'] holds 2001 vertex labels"),
}


@pytest.mark.parametrize("case", sorted(SIZES))
def test_a_reference_beyond_max_reference_size_is_refused(case, tmp_path):
    change, reason = SIZES[case]
    doc = hand_doc()
    change(doc["references"][0])
    f = _write(tmp_path / "M.json", doc)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, reason, "MAX_REFERENCE_SIZE = 2000")


def test_reference_graphs_beyond_max_graph_cells_are_refused(tmp_path):
    doc = _many_references(300)
    big = {"path": [[None, "PROT1"], ["conj", "PROT2"]], "context": [],
           "apg": {"labels": [["a"]] * 1900, "edges": []}}
    doc["references"] = [big] * 300  # 300 * 1900**2 = 1.08e9 vertex pairs
    f = _write(tmp_path / "M.json", doc)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, "1083000000 vertex pairs", "MAX_GRAPH_CELLS")


def test_save_refuses_a_model_that_load_would_refuse(tmp_path):
    ex = RelationExtractor.from_json(hand_doc())
    ex.references_ = ex.references_ * 25_001
    ex.weights_ = ex.weights_.repeat(25_001)
    ex.n_pairs_ = 60_000
    with pytest.raises(ValueError, match="MAX_REFERENCES"):
        ex.save(tmp_path / "M.json")
    assert not (tmp_path / "M.json").exists()


def test_predict_reads_an_extractor_within_the_documented_limit(tmp_path, capsys):
    """256 MiB (docs/relations.md, docs/reliability.md), not train-npk's 1 GiB: a gzip'd file
    inflating past it is refused by ``predict`` as by ``load``, after 256 MiB at most."""
    text = json.dumps(hand_doc())
    f = tmp_path / "M.json.gz"
    with gzip.open(f, "wb", compresslevel=1) as gz:
        gz.write(text[:-1].encode())
        blank = b" " * (1 << 20)
        for _ in range(257):
            gz.write(blank)
        gz.write(b"}")
    assert f.stat().st_size < 2 << 20
    limit = 256 << 20
    assert main(["predict", "--model", str(f), str(tmp_path / "absent.jsonl")]) == 2
    _one_line_naming(capsys.readouterr().err, f, f"more than {limit} bytes",
                     "MAX_EXTRACTOR_BYTES")
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, f"more than {limit} bytes", "MAX_EXTRACTOR_BYTES")
    assert "`MAX_EXTRACTOR_BYTES` (256 MiB" in (ROOT / "docs" / "reliability.md").read_text(
        encoding="utf-8")


# ------------------------------------------------------------- version 4: arrays
def _v4_doc() -> dict:
    """The hand-written model saved again: version 4, its references as arrays."""
    doc = hand_doc()
    doc["version"] = 3
    doc["decision"] = {"threshold": 0.0, "rule": "zero", "calibration": None,
                       "inner_f1": None, "folds": 0, "fallback": None}
    return json.loads(json.dumps(RelationExtractor.from_json(doc).to_json()))


def test_version4_references_are_arrays_and_read_back_the_same(tmp_path):
    doc = _v4_doc()
    refs = doc["references"]
    assert doc["version"] == 4 and refs["count"] == 2 and isinstance(refs["strings"], list)
    assert all(isinstance(v, str) for view in ("path", "context", "apg")
               for v in refs[view].values())
    old = RelationExtractor.from_json(hand_doc())
    new = RelationExtractor.from_json(doc)
    assert new.references_ == old.references_
    f = tmp_path / "M.json.gz"
    new.save(f)
    assert RelationExtractor.load(f).to_json() == doc


def _b64(*values: int) -> str:
    return base64.b64encode(np.asarray(values, dtype="<i4").tobytes()).decode()


V4_BAD = {
    "not base64": (("path", "nodes"), "@@", "references['path']['nodes'] is not base64"),
    "a string index": (("context", "features"), _b64(1000, 0),
                       "references['context']['features'] holds a value out of"),
    "offsets": (("path", "offsets"), _b64(0, 3), "references['path']['offsets'] must be 3"),
    "a length": (("apg", "labels"), _b64(0), "references['apg']['labels'] holds 1 values"),
    "a frame": (("apg", "frame"), _b64(5, 0), "references['apg']['frame'] holds a value"),
    "a frame too large": (("apg", "vertices"), _b64(3, 2**31 - 1),
                          "references['apg'] frame 1 holds 2147483647 vertices"),
    "an edge twice": (("apg", "ends"), _b64(0, 1, 0, 1, 0, 1), "references['apg'] frame 0"),
    "a weight": (("apg", "weight_values"), "AAAAAAAA+H8=", "reference 0's graph"),
    "a field": (("apg",), {}, "references['apg'] must be an object with exactly"),
}


@pytest.mark.parametrize("case", sorted(V4_BAD))
def test_a_bad_version4_array_is_one_line_naming_the_field(case, tmp_path):
    keys, value, reason = V4_BAD[case]
    doc = _v4_doc()
    _set(doc["references"], keys, value)
    f = _write(tmp_path / "M.json", doc)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, reason)


def test_version4_references_beyond_the_limits_are_refused(tmp_path, monkeypatch):
    from structkernels.extraction import files

    f = _write(tmp_path / "M.json", _v4_doc())
    monkeypatch.setattr(files, "MAX_REFERENCE_SIZE", 2)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, "reference 0's path holds 3 items",
                     "MAX_REFERENCE_SIZE = 2")
    monkeypatch.setattr(files, "MAX_REFERENCE_SIZE", 2000)
    monkeypatch.setattr(files, "MAX_GRAPH_CELLS", 12)
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    _one_line_naming(str(info.value), f, "13 vertex pairs", "MAX_GRAPH_CELLS = 12")


# ------------------------------------------------------------------ what predicting loads
def test_predicting_does_not_load_scikit_learn(tmp_path):
    """Applying a trained extractor does not need it (its import dominated a one-sentence
    ``predict``): kernels carry scikit-learn's parameter protocol without importing it.
    spaCy parses in the child, so this process holds what scoring loads."""
    pytest.importorskip("spacy", reason="predict parses with spaCy (the parse extra)")
    f = _write(tmp_path / "M.json", hand_doc())
    data = _corpus(tmp_path / "data.jsonl", 1)
    out = _run(f"import sys\nfrom structkernels.cli import main\n"
               f"rc = main(['predict', '--model', {str(f)!r}, {str(data)!r}, '-o', "
               f"{str(tmp_path / 'out.jsonl')!r}, '--parse-ahead', 'on', '--cache-dir', "
               f"{str(tmp_path / 'cache')!r}, '-q'])\n"
               "print(rc, 'sklearn' in sys.modules)", tmp_path)
    if "not installed" in out.stderr:
        pytest.skip(f"the English spaCy pipeline is not installed: {out.stderr.strip()}")
    assert out.stdout.split() == ["0", "False"], out.stdout + out.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 2


# ------------------------------------------------------------------ prepared references
def test_a_read_model_prepares_its_references_once_per_cache(tmp_path, monkeypatch):
    """The references' collapsed views and self-similarities are cached by the document's
    digest, the weights and the kernel's code: the same scores to the bit from the entry,
    never an entry of other weights, a damaged entry computed again, nothing without cache."""
    from structkernels.kernels.bag import BagKernel
    from structkernels.utils import CacheWarning

    f = _write(tmp_path / "M.json", hand_doc())
    cache = tmp_path / "cache"
    calls = []
    real = BagKernel.weighted_sum
    monkeypatch.setattr(BagKernel, "weighted_sum",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))

    def scores(ex):
        return ex.prepare()._reference_scorer().scores(ex.references_)

    first = scores(RelationExtractor.load(f, cache_dir=cache, progress=False))
    entries = list((cache / "prepared").glob("*.npz"))
    assert len(entries) == 1 and len(calls) == 1
    again = scores(RelationExtractor.load(f, cache_dir=cache, progress=False))
    assert np.array_equal(again, first) and len(calls) == 1  # served from the entry
    other = RelationExtractor.load(f, cache_dir=cache, progress=False)
    other.weights_ = other.weights_ * 2
    assert np.allclose(scores(other) - other.intercept_, 2 * (first - other.intercept_))
    assert len(calls) == 2 and len(list((cache / "prepared").glob("*.npz"))) == 2
    raw = bytearray(entries[0].read_bytes())
    raw[-1] ^= 1
    entries[0].write_bytes(bytes(raw))
    with pytest.warns(CacheWarning):
        damaged = scores(RelationExtractor.load(f, cache_dir=cache, progress=False))
    assert np.array_equal(damaged, first) and len(calls) == 3
    scores(RelationExtractor.load(f, cache_dir=False, progress=False))
    assert len(calls) == 4 and len(list((cache / "prepared").glob("*.npz"))) == 2
