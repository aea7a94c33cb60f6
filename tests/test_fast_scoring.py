"""The extractor's scoring: linear views collapsed (exact), path references merged (exact),
the reduced-set fast route (its stated error), on hand-made and real (LLL) pairs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Normalized, Path, kernel
from structkernels.classifiers import ApproximationWarning
from structkernels.cli import main
from structkernels.extraction import RelationExtractor, scoring
from structkernels.extraction.scoring import ReferenceScorer, reduced_set
from structkernels.kernels.allpaths_features import AllPathsWeights
from structkernels.kernels.bag import BagWeights
from structkernels.relations import read_relations
from structkernels.relations.models import relation_model
from structkernels.structures import LabelledGraph

WORDS = ["bind", "see", "PROT", "a", "b"]


@st.composite
def graphs(draw, cycles=False, words=WORDS):
    n = draw(st.integers(1, 5))
    labels = [tuple(draw(st.lists(st.sampled_from(words), max_size=2, unique=True)))
              for _ in range(n)]
    edges = [(i, j, draw(st.sampled_from([0.3, 0.9])))
             for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    if cycles:  # light edges back (spectral radius below 0.76 at most): walks round cycles
        edges += [(j, i, 0.02) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    return LabelledGraph(labels, edges)


@settings(max_examples=40, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=6), st.lists(graphs(), min_size=1, max_size=6),
       st.integers(0, 2**31 - 1))
def test_all_paths_weights_equal_the_kernel(refs, items, seed):
    c = np.random.default_rng(seed).normal(size=len(refs))
    k = kernel("all-paths-graph")
    dots, sq = AllPathsWeights(refs, c).dots(items)
    assert np.allclose(dots, np.asarray(k.gram(items, refs)) @ c, rtol=0, atol=1e-12)
    assert np.allclose(sq, [k.value(g, g) for g in items], rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=6),
       st.lists(st.one_of(graphs(), graphs(cycles=True)), min_size=1, max_size=12),
       st.integers(0, 2**31 - 1))
def test_all_paths_weights_batch_with_cycles_and_repeats(refs, items, seed):
    # graphs without cycles are scored in one compiled call over the batch laid out flat,
    # those with cycles one by one: each graph's values are those of the kernel, in any mix,
    # a graph given twice (its label tuples shared) the same both times
    c = np.random.default_rng(seed).normal(size=len(refs))
    k = kernel("all-paths-graph")
    batch = items + items[::-1]
    dots, sq = AllPathsWeights(refs, c).dots(batch)
    assert np.allclose(dots, np.asarray(k.gram(batch, refs)) @ c, rtol=0, atol=1e-12)
    assert np.allclose(sq, [k.value(g, g) for g in batch], rtol=0, atol=1e-12)
    assert np.array_equal(dots[:len(items)], dots[len(items):][::-1])


@settings(max_examples=40, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=6),
       st.lists(st.one_of(graphs(words=WORDS + ["n1", "n2", "n3"]),
                          graphs(cycles=True, words=WORDS + ["n1", "n2", "n3"])),
                min_size=1, max_size=10),
       st.integers(0, 2**31 - 1))
def test_all_paths_weights_of_a_graph_are_the_same_in_any_batch(refs, items, seed):
    # labels of no reference ("n1" ...) met in another order in another batch: a graph's
    # sums still run in one order, so its values are the same to the bit
    w = AllPathsWeights(refs, np.random.default_rng(seed).normal(size=len(refs)))
    dots, sq = w.dots(items)
    alone = [w.dots([g]) for g in items]
    assert np.array_equal(dots, [d[0] for d, _ in alone])
    assert np.array_equal(sq, [q[0] for _, q in alone])
    back_dots, back_sq = w.dots(items[::-1])
    assert np.array_equal(back_dots[::-1], dots) and np.array_equal(back_sq[::-1], sq)


def test_bag_weights_dots_are_the_same_bits_in_every_process():
    # a binary bag's features summed in the order of first sight: a set's order follows the
    # strings' hashes, which change with PYTHONHASHSEED, and so did the sums' last bits
    code = (
        "import numpy as np\n"
        "from structkernels.kernels.bag import BagWeights\n"
        "rng = np.random.default_rng(0)\n"
        "feats = [f'f{i}' for i in range(300)]\n"
        "refs = [tuple(rng.choice(feats, 40)) for _ in range(50)]\n"
        "w = BagWeights(refs, rng.normal(size=50), binary=True)\n"
        "items = [tuple(rng.choice(feats, 60)) for _ in range(50)]\n"
        "print(w.dots(items)[0].tobytes().hex())\n"
    )
    out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
           for seed in ("1", "2", "3")}
    assert len(out) == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), max_size=4), min_size=1, max_size=6),
       st.lists(st.lists(st.sampled_from(WORDS + ["new"]), max_size=4), min_size=1, max_size=6),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_bag_weights_equal_the_kernel(refs, items, binary, seed):
    refs, items = [tuple(b) for b in refs], [tuple(b) for b in items]
    c = np.random.default_rng(seed).normal(size=len(refs))
    k = kernel("bag", binary=binary)
    dots, sq = BagWeights(refs, c, binary=binary).dots(items)
    assert np.allclose(dots, np.asarray(k.gram(items, refs)) @ c, rtol=0, atol=1e-12)
    assert np.allclose(sq, [k.value(b, b) for b in items], rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:normalisation met")  # graphs without edges: k(x, x) = 0
@settings(max_examples=30, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=6), st.lists(graphs(), min_size=1, max_size=4),
       st.integers(0, 2**31 - 1))
def test_all_paths_weights_from_graphs_or_features_normalised(refs, items, seed):
    c = np.random.default_rng(seed).normal(size=len(refs))
    k = kernel("all-paths-graph")
    a = AllPathsWeights(refs, c, normalized=True)
    b = AllPathsWeights(k.check_input(refs), c, normalized=True)
    assert np.allclose(a.reference_squared_norms, b.reference_squared_norms, rtol=0, atol=1e-12)
    want = np.asarray(Normalized(k).gram(items, refs)) @ c
    sq = np.asarray([k.value(g, g) for g in items])
    scale = np.where(sq > 0, 1 / np.sqrt(np.where(sq > 0, sq, 1)), 0)
    for w in (a, b):
        dots, _ = w.dots(items)
        assert np.allclose(dots * scale, want, rtol=0, atol=1e-12)


def test_bad_items_are_refused_as_by_the_kernels():
    with pytest.raises(TypeError, match="bag: item 1 is a str"):
        BagWeights([("a",)], [1.0]).dots([("a",), "ab"])
    with pytest.raises(TypeError, match="bag: item 0 holds a non-string"):
        BagWeights([("a",)], [1.0]).dots([("a", 1)])
    with pytest.raises(TypeError, match="item 0 is a tuple"):
        AllPathsWeights([LabelledGraph([("a",)])], [1.0]).dots([("a",)])


def test_a_weight_per_structure():
    with pytest.raises(ValueError, match="1 weights for 2 bags"):
        BagWeights([("a",), ("b",)], [1.0])
    with pytest.raises(ValueError, match="1 weights for 2 graphs"):
        AllPathsWeights([LabelledGraph([("a",)]), LabelledGraph([("b",)])], [1.0])


# ------------------------------------------------------------------- reduced set
def _paths(n, seed):
    rng = np.random.default_rng(seed)
    edges, nodes = ["nsubj", "dobj", "conj", "prep"], ["bind", "see", "PROT", "cell", "act"]
    return [Path([(None, "PROT1")] + [(str(rng.choice(edges)), str(rng.choice(nodes)))
                                      for _ in range(int(rng.integers(1, 5)))]
                 + [("dobj", "PROT2")]) for _ in range(n)]


def test_reduced_set_states_its_error():
    k = Normalized(kernel("path", node_mismatch=0.9))
    refs, new = _paths(40, 0), _paths(30, 1)
    w = np.random.default_rng(2).normal(size=len(refs))
    K = np.asarray(k.gram(refs))
    exact_refs = K @ w
    B = np.asarray(k.gram(new, refs))
    for tol in (0.05, 0.3, 1.0):
        keep, beta, error, bound = reduced_set(K, w, tol)
        assert len(keep) <= len(refs) and error <= tol + 1e-9
        assert np.max(np.abs(K[:, keep] @ beta - exact_refs)) == pytest.approx(error)
        # the bound holds for every pair, not only the references
        assert np.max(np.abs(B[:, keep] @ beta - B @ w)) <= bound + 1e-9
    assert len(reduced_set(K, w, 1.0)[0]) < len(reduced_set(K, w, 0.05)[0])


def test_scorer_tolerance_zero_is_exact_and_states_nothing():
    model = relation_model("NPK path SVM")
    refs = [{"path": p} for p in _paths(20, 3)]
    w = np.random.default_rng(4).normal(size=20)
    scorer = ReferenceScorer(model.kernel({"conj": 0.0}), refs, w, 0.1)
    assert scorer.approximation is None
    with pytest.raises(ValueError, match="tolerance must be a finite number >= 0"):
        ReferenceScorer(model.kernel({}), refs, w, 0.1, tolerance=-1.0)


def test_scorer_fast_route_within_its_bound(monkeypatch):
    monkeypatch.setattr(scoring, "CHECK_EVERY", 1)
    model = relation_model("NPK path SVM")
    sigma = {"conj": 0.0}
    refs = [{"path": p} for p in _paths(60, 5)]
    items = [{"path": p} for p in _paths(40, 6)]
    w = np.random.default_rng(7).normal(size=60)
    exact = ReferenceScorer(model.kernel(sigma), refs, w, 0.1).scores(items)
    fast = ReferenceScorer(model.kernel(sigma), refs, w, 0.1, tolerance=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximationWarning)
        got = fast.scores(items)
    a = fast.approximation
    path = a["views"]["path"]
    assert a["tolerance"] == 0.2 and path["error_on_references"] <= 0.2
    assert path["references"] < path["of"] <= 60
    assert np.max(np.abs(got - exact)) <= path["bound"] + 1e-9
    # every distinct path (σ = 0 tuples written alike) was checked (CHECK_EVERY = 1)
    assert 0 < a["checked"] <= len({x["path"] for x in items})
    assert a["observed_error"] == pytest.approx(np.max(np.abs(got - exact)))


def test_scorer_pickles():
    import pickle

    model = relation_model("NPK SVM")
    refs = [{"path": p, "context": ("m:x",), "apg": LabelledGraph([("a",), ("b",)], [(0, 1, 0.5)])}
            for p in _paths(20, 11)]
    w = np.random.default_rng(12).normal(size=20)
    scorer = ReferenceScorer(model.kernel({"conj": 0.0}), refs, w, 0.1, tolerance=0.3)
    again = pickle.loads(pickle.dumps(scorer))
    assert np.array_equal(again.scores(refs), scorer.scores(refs))


def test_scorer_warns_when_the_checked_pairs_exceed_the_tolerance(monkeypatch):
    monkeypatch.setattr(scoring, "CHECK_EVERY", 1)
    model = relation_model("NPK path SVM")
    refs = [{"path": p} for p in _paths(60, 8)]
    w = np.random.default_rng(9).normal(size=60)
    fast = ReferenceScorer(model.kernel({}), refs, w, 0.0, tolerance=0.5)
    assert fast.approximation["views"]["path"]["references"] < 60
    fast.tolerance = 1e-12  # nothing reduced meets it on new pairs
    with pytest.warns(ApproximationWarning, match="above the tolerance"):
        fast.scores([{"path": p} for p in _paths(30, 10)])


# ------------------------------------------------------------------- real pairs
@pytest.fixture(scope="module")
def lll_views(ppi_corpora):
    pytest.importorskip("spacy", reason="parsing needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")
    corpus = read_relations(ppi_corpora / "LLL-train.xml")
    return RelationExtractor(cache_dir=False, progress=False, n_jobs=1).views(corpus)


def test_scores_equal_the_composite_kernel_on_lll(lll_views):
    refs, items = lll_views[:120], lll_views[120:]
    model = relation_model("NPK SVM")
    sigma = {"conj": 0.0, "nmod": 0.0, "prep": 0.5, "nsubj-of": 0.0}
    w = np.random.default_rng(0).normal(size=len(refs))
    scorer = ReferenceScorer(model.kernel(sigma), refs, w, -0.3)
    K = np.asarray(model.kernel(sigma).gram(items, refs), dtype=np.float64)
    assert np.allclose(scorer.scores_in_batches(items, batch=64), K @ w - 0.3,
                       rtol=0, atol=1e-10)
    assert np.allclose(model.kernel(sigma).gram_by_view(items[:20], refs), K[:20], rtol=0,
                       atol=1e-12)


# ------------------------------------------------------------------- the extractor
def _doc() -> dict:
    paths = [[[None, "PROT1"], ["nsubj-of", "activate"], ["dobj", "PROT2"]],
             [[None, "PROT1"], ["conj", "PROT2"]],
             [[None, "PROT1"], ["nsubj-of", "measure"], ["nmod", "PROT2"]],
             [[None, "PROT1"], ["nsubj-of", "activate"], ["prep", "in"], ["pobj", "PROT2"]]]
    return {
        "format": "structkernels-relation-extractor", "version": 1,
        "params": {"pipeline": "en_core_web_sm", "blind": True, "C": 1.0,
                   "sigma_params": None, "random_state": 0, "max_exact": 20000},
        "pipeline": {"name": "en_core_web_sm", "package": "en_core_web_sm", "version": "3.8.0",
                     "spacy": "3.8.2"},
        "kernel": {"path": {"lam": 0.8, "node_mismatch": 0.9}, "context": {"binary": True}},
        "sigma": {"conj": 0.0},
        "train": {"pairs": 8, "positives": 4, "route": "exact"},
        "svm": {"intercept": -0.1, "weights": [1.0, -0.7, -0.6, 0.4]},
        "references": [{"path": p, "context": ["m:x"]} for p in paths],
    }


def test_extractor_tolerance_is_checked_and_stated(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(_doc()), encoding="utf-8")
    ex = RelationExtractor.load(f)
    assert ex.tolerance == 0.0 and ex.approximation_ is None
    fast = RelationExtractor.load(f, tolerance=0.3)
    a = fast.approximation_
    assert a["tolerance"] == 0.3 and a["views"]["path"]["error_on_references"] <= 0.3
    bad = RelationExtractor.load(f, tolerance=-1.0)
    with pytest.raises(ValueError, match="tolerance must be a number >= 0"):
        bad.approximation_  # noqa: B018


def test_cli_tolerance(tmp_path, capsys):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(_doc()), encoding="utf-8")
    data = tmp_path / "d.jsonl"
    data.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        main(["predict", "--model", str(f), str(data), "--tolerance", "-1"])
    assert stop.value.code == 2
    assert "expected a number >= 0" in capsys.readouterr().err
    assert main(["predict", "--model", str(f), str(data), "--tolerance", "0.5",
                 "--dask", "local:1"]) == 2
    assert "--dask route scores exactly" in capsys.readouterr().err


def test_cli_fast_route_states_its_error(tmp_path, capsys):
    pytest.importorskip("spacy", reason="predict needs spaCy (the parse extra)")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except (ImportError, ValueError) as exc:
        pytest.skip(f"the English spaCy pipeline is not installed ({exc})")
    f = tmp_path / "m.json"
    f.write_text(json.dumps(_doc()), encoding="utf-8")
    data = tmp_path / "d.jsonl"
    text = "KinA activates KinB in cells."
    data.write_text(json.dumps({"id": "s1", "text": text, "entities": [
        {"id": "e0", "start": 0, "end": 4}, {"id": "e1", "start": 15, "end": 19}]}) + "\n",
        encoding="utf-8")
    out = tmp_path / "o.jsonl"
    argv = ["predict", "--model", str(f), str(data), "--no-cache", "-q", "-o", str(out)]
    assert main(argv) == 0
    exact = out.read_text(encoding="utf-8")
    assert "fast route" not in capsys.readouterr().err
    assert main([*argv, "--tolerance", "0"]) == 0
    assert out.read_text(encoding="utf-8") == exact
    assert main([*argv, "--tolerance", "0.3"]) == 0
    assert "fast route, tolerance 0.3: path:" in capsys.readouterr().err
