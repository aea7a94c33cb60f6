"""The relation models are defined once (relations/models.py): the evaluation and the extractor
build the same kernels from them; the evaluation's Gram cache misses on any kernel change."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from structkernels import Path
from structkernels.experiments import relations as evaluation
from structkernels.experiments._gram_files import RelationGrams
from structkernels.extraction import ExtractorFormatError, RelationExtractor
from structkernels.extraction import extractor as extraction
from structkernels.relations.models import (
    NPK,
    PK,
    RELATION_MODELS,
    RelationModel,
    needed_views,
    relation_model,
)
from structkernels.structures import LabelledGraph


def _items() -> list[dict]:
    edges = ["nsubj-of", "conj", "dobj", "amod"]
    out = []
    for i in range(6):
        e = edges[i % 4]
        out.append({
            "path": Path([(None, "PROT1"), (e, ["bind", "see"][i % 2]), ("dobj", "PROT2")]),
            "context": (f"m:{e}", f"w:{i % 3}"),
            "apg": LabelledGraph([("PROT1",), (e,), ("bind",), ("PROT2",)],
                                 [(0, 1, 0.9), (1, 2, 0.9), (2, 3, 0.3 + 0.1 * i)]),
        })
    return out


def test_the_extractor_trains_the_evaluations_npk_svm():
    model = relation_model("NPK SVM")
    assert extraction.MODEL is model and model.views == ("path", "context", "apg")
    assert extraction.STRUCTURE_VIEWS == model.views and model.classifier == "SVM"
    assert evaluation.MODELS == tuple(RELATION_MODELS)
    assert "NPK chosen" in evaluation.MODELS and "NPK chosen" not in evaluation.DEFAULT_MODELS
    assert needed_views(["APG SVM", "PK path SVM"]) == ("apg", "path")
    with pytest.raises(ValueError, match="unknown model 'NPK magic'"):
        relation_model("NPK magic")


def test_the_model_kernel_is_the_sum_of_its_view_grams():
    items = _items()
    model = relation_model("NPK SVM")
    sigma = {"conj": 0.0}
    kernel = model.kernel(sigma)
    K = kernel.gram(items)
    parts = [k.gram([x[v] for x in items]) for v, k in kernel.views]
    assert np.array_equal(kernel.gram_by_view(items), parts[0] + parts[1] + parts[2])
    assert np.allclose(K, kernel.gram_by_view(items), atol=1e-12)
    assert np.allclose(np.diag(K), 3.0)  # three normalised views
    with pytest.raises(ValueError, match="one kernel per structure view"):
        RelationModel("twice", (NPK, PK))


def test_the_gram_cache_misses_on_any_change_of_sigma(tmp_path):
    items = _items()
    long_a = {f"label{i:03d}": 1.0 for i in range(300)} | {"conj": 0.0}
    long_b = dict(long_a, conj=0.5)  # differs past what a truncated repr would show
    grams = RelationGrams(items, 1, tmp_path)
    first = grams.get("path", NPK.normalized(long_a))
    assert len(list(tmp_path.rglob("*.npy"))) == 1
    second = grams.get("path", NPK.normalized(long_b))
    assert len(list(tmp_path.rglob("*.npy"))) == 2 and not np.array_equal(first, second)
    grams.get("path", PK.normalized())
    assert len(list(tmp_path.rglob("*.npy"))) == 3
    again = RelationGrams(items, 1, tmp_path).get("path", NPK.normalized(long_a))
    assert len(list(tmp_path.rglob("*.npy"))) == 3 and np.array_equal(again, first)
    RelationGrams(items, 1, tmp_path).get("path", NPK.normalized(long_a), keep=False)
    assert len(list(tmp_path.rglob("*.npy"))) == 3


def test_a_splits_gram_equal_to_a_kept_one_is_the_kept_file(tmp_path):
    # a split whose σ learner kept σ ≡ 1 reads its twin's Gram instead of computing it again
    items = _items()
    grams = RelationGrams(items, 1, None, tmp_path)
    kept = grams.file("path", PK.normalized())
    same = grams.file("path", NPK.normalized(), keep=False)
    assert same is kept and not same.temporary
    same.remove()  # what evaluate does after a split: the kept file stays
    assert kept.path.exists()
    other = grams.file("path", NPK.normalized({"conj": 0.5}), keep=False)
    assert other.temporary and other.path != kept.path
    assert not np.array_equal(other.to_array(), kept.to_array())
    other.remove()
    assert not other.path.exists() and kept.path.exists()
    grams.close()


def _v1_doc() -> dict:
    return {
        "format": extraction.EXTRACTOR_FORMAT, "version": 1,
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


def _v2_doc() -> dict:
    doc = _v1_doc()
    doc["version"] = 2
    doc["kernel"]["apg"] = {}
    for r in doc["references"]:
        r["apg"] = {"labels": [["PROT1"], ["activate"], ["PROT2"]],
                    "edges": [[0, 1, 0.9], [1, 2, 0.9]]}
    return doc


def test_a_version_1_file_is_the_two_view_model(tmp_path):
    f = tmp_path / "v1.json"
    f.write_text(json.dumps(_v1_doc()), encoding="utf-8")
    ex = RelationExtractor.load(f)
    assert list(ex.kernel_params_) == ["path", "context"]
    assert ex.to_json() == _v1_doc()  # saved again as version 1
    x = {"path": Path([(None, "PROT1"), ("conj", "PROT2")]), "context": ("m:and",)}
    K = ex.kernel_.gram([x], ex.references_)  # no all-paths graph needed
    assert K.shape == (1, 2) and np.isclose(K[0, 1], 2.0)


def test_a_version_2_file_has_the_three_views(tmp_path):
    f = tmp_path / "v2.json"
    f.write_text(json.dumps(_v2_doc()), encoding="utf-8")
    ex = RelationExtractor.load(f)
    assert list(ex.kernel_params_) == ["path", "context", "apg"]
    assert isinstance(ex.references_[0]["apg"], LabelledGraph)
    assert ex.to_json() == _v2_doc()
    x = {"path": Path([(None, "PROT1"), ("conj", "PROT2")]), "context": ("m:and",),
         "apg": LabelledGraph([("PROT1",), ("activate",), ("PROT2",)], [(0, 1, 0.9), (1, 2, 0.9)])}
    K = ex.kernel_.gram([x], ex.references_)  # the second reference: its very views
    assert K.shape == (1, 2) and np.isclose(K[0, 1], 3.0)


@pytest.mark.parametrize("change, reason", [
    (lambda d: d["kernel"].pop("apg"), "'kernel' lacks 'apg'"),
    (lambda d: d["references"][1].pop("apg"), "references[1] must be an object with exactly"),
    (lambda d: d["references"][0].update(apg={"labels": [["a"]], "edges": [[0, 3, 0.5]]}),
     "references[0]['apg'] is malformed"),
    (lambda d: d["kernel"]["apg"].update(gamma=1.0), "kernel['apg'] holds unknown field(s)"),
])
def test_a_bad_version_2_file_is_one_clear_error(change, reason, tmp_path):
    doc = copy.deepcopy(_v2_doc())
    change(doc)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ExtractorFormatError) as info:
        RelationExtractor.load(f)
    assert str(info.value).startswith(f"{f}: ") and reason in str(info.value)
