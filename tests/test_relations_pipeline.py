"""From annotated sentences to parses, pair structures, document-level folds and the
``evaluate`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Path, Tree
from structkernels.cli import main
from structkernels.experiments.relations import (
    document_folds,
    evaluate_relations,
    needed_views,
    pooled_scores,
)
from structkernels.graphs.model import Graph, add_node, new_graph
from structkernels.relations import Entity, Interaction, Sentence, read_relations
from structkernels.relations.parse import (
    DependencyParser,
    ParsedSentence,
    _sorted_entity_tokens,
    entity_tokens,
    load_pipeline,
    split_at,
)
from structkernels.relations.structures import entity_head, pair_structures


def _pipeline_or_skip():
    pytest.importorskip("spacy", reason="spaCy (extra 'parse') is not installed")
    try:
        load_pipeline()
    except ValueError as exc:
        pytest.skip(f"no English spaCy pipeline (extra 'parse'): {exc}")


# ------------------------------------------------------------ spans to tokens
def test_split_at_cuts_tokens_inside_only():
    assert split_at([(0, 9), (10, 15)], [0, 5, 9, 10, 12]) == [(0, 5), (5, 9), (10, 12), (12, 15)]
    assert split_at([(0, 3)], []) == [(0, 3)]


def test_entity_tokens_inside_across_and_discontinuous():
    toks = [(0, 5), (5, 9), (10, 15), (16, 20)]
    assert entity_tokens(toks, [(1, 3)]) == (0,)          # inside one token
    assert entity_tokens(toks, [(5, 15)]) == (1, 2)       # across tokens
    assert entity_tokens(toks, [(0, 5), (16, 20)]) == (0, 3)  # discontinuous
    assert entity_tokens(toks, [(9, 10)]) == ()           # whitespace only


@given(st.lists(st.integers(0, 30), max_size=8), st.lists(st.integers(1, 6), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_split_at_partitions_each_token(cuts, lengths):
    spans, pos = [], 0
    for n in lengths:
        spans.append((pos, pos + n))
        pos += n + 1
    out = split_at(spans, cuts)
    assert sum(b - a for a, b in out) == sum(b - a for a, b in spans)
    inner = {c for c in cuts if any(a < c < b for a, b in spans)}
    starts = {a for a, _ in out}
    assert inner <= starts


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5)), min_size=1, max_size=10),
       st.lists(st.tuples(st.integers(0, 40), st.integers(-2, 12)), min_size=1, max_size=3))
@settings(max_examples=200, deadline=None)
def test_entity_tokens_by_bisection_are_entity_tokens(tokens, entity):
    """What the parser runs (tokens in text order, bisected) gives entity_tokens' tokens,
    empty and reversed spans included."""
    spans, pos = [], 0
    for gap, n in tokens:
        spans.append((pos + gap, pos + gap + n))
        pos += gap + n
    wanted = [(s, s + d) for s, d in entity]
    got = _sorted_entity_tokens([a for a, _ in spans], [b for _, b in spans], wanted)
    assert got == entity_tokens(spans, wanted)


# ------------------------------------------------------------ the real parser
def test_parses_read_as_arrays_are_those_of_the_tokens(ppi_corpora):
    """The parser reads the token attributes as arrays (``Doc.to_array``) and sets one
    sentence at the Doc's construction: the same words, heads, labels, tags, parts of
    speech and lemmas as reading spaCy's tokens one by one after setting each token's
    sentence start."""
    _pipeline_or_skip()
    from spacy.tokens import Doc

    parser = DependencyParser(cache_dir=False, progress=False)
    sentences = [s for s in read_relations(ppi_corpora / "LLL-test.xml")][:25]
    got = parser.parse(sentences)
    nlp = parser.nlp
    for s, parsed in zip(sentences, got, strict=True):
        cuts = sorted({o for e in s.entities for span in e.spans for o in span})
        words, spaces, _ = parser._tokens(s.text, cuts)
        doc = Doc(nlp.vocab, words=words, spaces=spaces)
        for t in doc:
            t.is_sent_start = t.i == 0
        doc = nlp(doc)
        G = parsed.graph.graph
        for t in doc:
            data = G.nodes[str(t.i + 1)]
            assert (data["concept"], data["lemma"], data["pos"], data["tag"]) == (
                t.text, t.lemma_ or None, t.pos_ or None, t.tag_ or None)
            if t.head.i == t.i:
                assert G.graph["root"] == str(t.i + 1)
            else:
                assert [r for _, _, r in G.in_edges(str(t.i + 1), data="role")] == [
                    t.dep_ or "dep"]
                assert list(G.predecessors(str(t.i + 1))) == [str(t.head.i + 1)]


def test_parser_splits_entity_boundaries_and_caches(tmp_path, monkeypatch):
    _pipeline_or_skip()
    text = "alpha-catenin binds the beta-catenin*T-cell factor complex."
    ents = (
        Entity("e1", ((0, 13),), "alpha-catenin"),
        Entity("e2", ((24, 36),), "beta-catenin"),
        Entity("e3", ((37, 50),), "T-cell factor"),
        Entity("e4", ((24, 50),), "beta-catenin*T-cell factor"),  # overlaps e2 and e3
    )
    s = Sentence("s1", text, "d1", ents, (Interaction("e1", "e3"),))
    parser = DependencyParser(cache_dir=tmp_path, progress=False)
    [p] = parser.parse([s])
    words = {n: d["concept"] for n, d in p.graph.graph.nodes(data=True)}
    assert "".join(words[t] for t in p.entities["e2"]) == "beta-catenin"
    assert "".join(words[t] for t in p.entities["e3"]).replace(" ", "") == "T-cellfactor"
    assert set(p.entities["e2"]) | set(p.entities["e3"]) <= set(p.entities["e4"])
    roots = [n for n in p.graph.graph if p.graph.graph.in_degree(n) == 0]
    assert roots == [p.graph.graph.graph["root"]]  # one sentence, one tree
    # a second parse reads the cache: the pipeline is never run
    again = DependencyParser(cache_dir=tmp_path, progress=False)
    monkeypatch.setattr(again, "_run", lambda todo: pytest.fail("parsed again"))
    [q] = again.parse([s])
    assert sorted(q.graph.graph.edges(data="role")) == sorted(p.graph.graph.edges(data="role"))
    # a damaged cache entry is parsed again, not trusted
    for f in tmp_path.rglob("*.json"):
        f.write_text('{"words": ["x"]}')
    monkeypatch.undo()
    [r] = DependencyParser(cache_dir=tmp_path, progress=False).parse([s])
    assert r.entities == p.entities


# ------------------------------------------------------------ pair structures
def _hand_parsed():
    # "Ras does not bind Raf in cells"
    words = ["Ras", "does", "not", "bind", "Raf", "in", "cells"]
    G = new_graph("s1", "dependency", root="4")
    for k, w in enumerate(words, 1):
        add_node(G, str(k), w, lemma=w.lower(), pos="X", index=k)
    for h, d, r in [("4", "1", "nsubj"), ("4", "2", "aux"), ("4", "3", "neg"),
                    ("4", "5", "dobj"), ("4", "6", "prep"), ("6", "7", "pobj")]:
        G.add_edge(h, d, role=r)
    text = " ".join(words)
    ents = (Entity("e2", ((18, 21),), "Raf"), Entity("e1", ((0, 3),), "Ras"),
            Entity("e3", ((25, 30),), "cells"))
    s = Sentence("s1", text, "d1", ents, (Interaction("e1", "e2"),))
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    parsed = ParsedSentence("s1", Graph("s1", text, G), tuple(spans),
                            {"e1": ("1",), "e2": ("5",), "e3": ("7",)})
    return s, parsed


def test_pair_structures_path_tree_context_blinding():
    s, parsed = _hand_parsed()
    pair = next(p for p in s.pairs() if {p.e1.id, p.e2.id} == {"e1", "e2"})
    assert pair.label is True
    v = pair_structures(parsed, pair, views=["path", "tree", "context"])
    # text order: Ras (PROT1) first although e2 is listed first
    assert v["path"] == Path([(None, "PROT1"), ("nsubj-of", "bind"), ("dobj", "PROT2")])
    t = v["tree"]
    assert t.label == "bind"
    assert [(e, c.label) for e, c in t.children] == [
        ("nsubj", "PROT1"), ("aux", "does"), ("neg", "not"), ("dobj", "PROT2"), ("prep", "in")]
    assert isinstance(t, Tree)
    ctx = set(v["context"])
    assert {"m:does", "m:not", "m:bind"} <= ctx and "a:in" in ctx and "a:PROT" in ctx
    assert "p:PROT1|nsubj-of|bind" in ctx
    unblinded = pair_structures(parsed, pair, views=["path"], blind=False)["path"]
    assert unblinded[0] == (None, "ras")


def test_pair_structures_bad_input():
    s, parsed = _hand_parsed()
    with pytest.raises(ValueError, match="unknown view"):
        pair_structures(parsed, s.pairs()[0], views=["nope"])
    other = ParsedSentence("s2", parsed.graph, parsed.token_spans, parsed.entities)
    with pytest.raises(ValueError, match="not of sentence"):
        pair_structures(other, s.pairs()[0])
    empty = ParsedSentence("s1", parsed.graph, parsed.token_spans, {**parsed.entities, "e1": ()})
    with pytest.raises(ValueError, match="covers no token"):
        pair_structures(empty, s.pairs()[0])


def test_entity_head_is_the_token_governed_from_outside():
    _, parsed = _hand_parsed()
    assert entity_head(parsed.graph.graph, ["6", "7"]) == "6"


# ------------------------------------------------------------ folds and scores
@given(st.lists(st.integers(0, 14), min_size=30, max_size=80), st.integers(2, 5),
       st.integers(0, 10))
@settings(max_examples=40, deadline=None)
def test_document_folds_keep_documents_whole(docs, k, seed):
    groups = [f"d{d}" for d in docs]
    if len(set(groups)) < k:
        with pytest.raises(ValueError, match="documents cannot fill"):
            document_folds(groups, [i % 2 for i in range(len(docs))], k, seed)
        return
    folds = document_folds(groups, [i % 2 for i in range(len(docs))], k, seed)
    seen: dict[str, int] = {}
    tested = np.concatenate([te for _, te in folds])
    assert sorted(tested.tolist()) == list(range(len(docs)))  # every pair tested once
    for f, (tr, te) in enumerate(folds):
        assert not set(tr) & set(te)
        for i in te:
            assert seen.setdefault(groups[i], f) == f  # a document in one fold only


def test_pooled_scores_by_hand():
    y = np.array([1, 1, 0, 0, 1, 0])
    pred = np.array([1, 0, 0, 1, 1, 0])
    score = np.array([0.9, 0.2, 0.1, 0.8, 0.7, 0.3])
    splits = [(np.array([3, 4, 5]), np.array([0, 1, 2])), (np.array([0, 1, 2]), np.array([3, 4, 5]))]
    s = pooled_scores(y, pred, score, splits)
    assert (s["precision"], s["recall"]) == (66.67, 66.67)
    assert s["f1"] == 66.67
    assert s["f1_sd"] == round(100 * np.std([2 / 3, 2 / 3]), 2)
    assert s["roc_auc"] == round(100 * 6 / 9, 2)  # 6 of 9 (positive, negative) pairs ordered
    assert (s["predicted_rate"], s["gold_rate"]) == (50.0, 50.0)


def test_evaluate_relations_learns_on_training_folds_only():
    # the label is carried by the path's edge; a document per pair
    rng = np.random.default_rng(0)
    items, y = [], []
    for i in range(80):
        lab = int(rng.random() < 0.4)
        edge = "nsubj-of" if lab else "conj"
        path = Path([(None, "PROT1"), (edge, rng.choice(["bind", "see", "use"])), ("dobj", "PROT2")])
        items.append({"path": path, "context": (f"m:{edge}", f"w:{i % 7}")})
        y.append(lab)
    folds = document_folds([f"d{i}" for i in range(80)], y, 4, 0)
    r = evaluate_relations(items, y, folds, models=["PK path SVM", "n-gram SVM", "NPK path SVM"],
                           n_jobs=1, progress=False)
    assert r["pairs"] == 80 and r["folds"] == 4
    for m in ("PK path SVM", "n-gram SVM", "NPK path SVM"):
        assert r["models"][m]["f1"] > 90
    assert len(r["sigma_zeroed"]) == 4
    with pytest.raises(ValueError, match="unknown model"):
        needed_views(["NPK magic"])


# ------------------------------------------------------------ the command
def test_evaluate_command_cv_json(ppi_corpora, tmp_path, capsys):
    _pipeline_or_skip()
    ppi = ppi_corpora
    rc = main(["evaluate", str(ppi / "LLL-train.xml"), str(ppi / "LLL-test.xml"), "--cv", "3",
               "--models", "PK path SVM,n-gram SVM,APG SVM,NPK SVM,NPK chosen", "--json", "--cache-dir",
               str(tmp_path), "-q"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["pairs"], out["positives"], out["folds"]) == (330, 164, 3)
    assert set(out["models"]) == {"PK path SVM", "n-gram SVM", "APG SVM", "NPK SVM", "NPK chosen"}
    assert len(out["chosen"]) == 3 and set(out["chosen"]) <= {"SVM", "k-NN", "hash-RF"}
    assert len(out["sigma_zeroed"]) == 3
    for s in out["models"].values():
        assert set(s) == {"precision", "recall", "f1", "roc_auc", "f1_sd", "f1_folds",
                          "predicted_rate", "gold_rate"}
        assert 50 < s["f1"] <= 100 and 50 < s["roc_auc"] <= 100


def test_evaluate_command_train_test_and_document_overlap(ppi_corpora, tmp_path, capsys):
    _pipeline_or_skip()
    ppi = ppi_corpora
    rc = main(["evaluate", "--train", str(ppi / "LLL-train.xml"), "--test",
               str(ppi / "LLL-test.xml"), "--models", "n-gram SVM", "--json",
               "--cache-dir", str(tmp_path), "-q"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["folds"] == 1 and out["models"]["n-gram SVM"]["f1_sd"] is None
    corpus = read_relations([ppi / "LLL-test.xml"])
    assert out["pairs"] == 330 and len(corpus.pairs()) < 330
    rc = main(["evaluate", "--train", str(ppi / "LLL-test.xml"), "--test",
               str(ppi / "LLL-test.xml"), "--models", "n-gram SVM", "-q",
               "--cache-dir", str(tmp_path)])
    assert rc == 2
    assert "in both the training and the test corpus" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["evaluate"], "no corpus"),
    (["evaluate", "--train", "a.xml"], "--train and --test go together"),
    (["evaluate", "a.xml", "--models", "NPK magic"], "unknown model"),
    (["evaluate", "a.xml", "--cv", "1"], "--cv must be at least 2"),
])
def test_evaluate_command_user_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_evaluate_saves_an_extractor_that_predict_uses(ppi_corpora, tmp_path, capsys):
    _pipeline_or_skip()
    ppi = ppi_corpora
    model = tmp_path / "lll.json"
    rc = main(["evaluate", "--train", str(ppi / "LLL-train.xml"), "--test",
               str(ppi / "LLL-test.xml"), "--models", "n-gram SVM", "--save-model", str(model),
               "--cache-dir", str(tmp_path), "-q"])
    assert rc == 0 and model.is_file()
    capsys.readouterr()
    out = tmp_path / "scored.jsonl"
    rc = main(["predict", "--model", str(model), str(ppi / "LLL-test.xml"), "-o", str(out),
               "--cache-dir", str(tmp_path)])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    test_pairs = read_relations([ppi / "LLL-test.xml"]).pairs()
    assert [r["pair"] for r in rows] == [p.id for p in test_pairs]
    assert all(isinstance(r["score"], float) and r["label"] in (0, 1) for r in rows)


def test_evaluate_save_model_refuses_a_missing_folder(tmp_path, capsys):
    rc = main(["evaluate", "a.xml", "--save-model", str(tmp_path / "no" / "m.json")])
    assert rc == 2
    assert "--save-model" in capsys.readouterr().err


def _toy_items(n=80, seed=0):
    rng = np.random.default_rng(seed)
    items, y = [], []
    for i in range(n):
        lab = int(rng.random() < 0.4)
        edge = "nsubj-of" if lab else "conj"
        path = Path([(None, "PROT1"), (edge, str(rng.choice(["bind", "see"]))), ("dobj", "PROT2")])
        items.append({"path": path, "context": (f"m:{edge}", f"w:{i % 7}")})
        y.append(lab)
    return items, y


def test_evaluate_relations_cache_gives_the_same_result_without_recomputing(tmp_path, monkeypatch):
    from structkernels.npk.learner import NonstationaryLearner

    items, y = _toy_items()
    folds = document_folds([f"d{i}" for i in range(80)], y, 4, 0)
    models = ["PK path SVM", "n-gram SVM", "NPK path SVM"]
    first = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                               cache_dir=tmp_path)
    assert any(tmp_path.rglob("*.npy")) and any(tmp_path.rglob("sigma-*.json"))
    monkeypatch.setattr(NonstationaryLearner, "fit",
                        lambda *a, **k: pytest.fail("σ learned again"))
    again = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                               cache_dir=tmp_path)
    assert again["models"] == first["models"] and again["sigma_zeroed"] == first["sigma_zeroed"]
    # a damaged Gram file is computed again, not trusted
    for f in tmp_path.rglob("*.npy"):
        f.write_bytes(b"not an array")
    monkeypatch.undo()
    third = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                               cache_dir=tmp_path)
    assert third["models"] == first["models"]
