"""All-paths graph kernel (Airola et al. 2008): walk-enumeration oracle, hand-checked values,
properties, the graph builder, the structure's checks and the engine."""

from __future__ import annotations

import json
import pickle
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import structkernels
from structkernels import Normalized, gram, kernel
from structkernels.graphs.allpaths import allpaths_graph, shortest_dependency_path
from structkernels.graphs.model import add_node, new_graph
from structkernels.kernels import allpaths_features
from structkernels.kernels.allpaths import AllPathsGraphKernel
from structkernels.kernels.allpaths_features import (
    AllPathsFeatures,
    label_pair_features,
    walk_sums,
)
from structkernels.structures import LabelledGraph, StructureError, take
from structkernels.utils import NonFiniteError

LABELS = ["a", "b", "c", "d", "NN", "IP_a"]


# ------------------------------------------------------------------ the oracles
def walk_features(g: LabelledGraph) -> dict[tuple[str, str], float]:
    """G[l, l'] by enumerating every walk (length >= 1) of a graph without cycles."""
    succ = defaultdict(list)
    for u, v, w in g.edges:
        succ[u].append((v, w))
    feats: dict[tuple[str, str], float] = defaultdict(float)

    def walk(start: int, here: int, weight: float) -> None:
        for v, w in succ[here]:
            for a in g.labels[start]:
                for b in g.labels[v]:
                    feats[(a, b)] += weight * w
            walk(start, v, weight * w)

    for s in range(len(g)):
        walk(s, s, 1.0)
    return dict(feats)


def series_features(g: LabelledGraph, terms: int = 400) -> dict[tuple[str, str], float]:
    """G[l, l'] from the truncated series Σ_{k=1}^{terms} A^k (graphs with cycles)."""
    A = g.adjacency()
    W, P = np.zeros_like(A), np.eye(len(g))
    for _ in range(terms):
        P = P @ A
        W += P
    feats: dict[tuple[str, str], float] = defaultdict(float)
    for u in range(len(g)):
        for v in range(len(g)):
            if W[u, v]:
                for a in g.labels[u]:
                    for b in g.labels[v]:
                        feats[(a, b)] += W[u, v]
    return dict(feats)


def frobenius(f: dict, h: dict) -> float:
    return sum(v * h[key] for key, v in f.items() if key in h)


def random_graph(rng: random.Random, n_max: int = 7, cyclic: bool = False) -> LabelledGraph:
    n = rng.randint(1, n_max)
    labels = [tuple(rng.sample(LABELS, rng.randint(0, 3))) for _ in range(n)]
    perm = list(range(n))
    rng.shuffle(perm)  # vertex numbers out of topological order
    edges = {}
    for u in range(n):
        for v in range(n):
            if (u < v or (cyclic and u != v)) and rng.random() < 0.45:
                w = rng.uniform(0.01, 0.15) if cyclic else rng.choice([rng.uniform(0.05, 1.0), 1.0])
                edges[(perm[u], perm[v])] = w
    return LabelledGraph(labels, [(u, v, w) for (u, v), w in edges.items()])


def chain(*labels: str, w: float = 0.5) -> LabelledGraph:
    return LabelledGraph([(lab,) for lab in labels],
                         [(i, i + 1, w) for i in range(len(labels) - 1)])


# ------------------------------------------------------------------ by definition
def test_equals_walk_enumeration_on_random_dags():
    rng = random.Random(0)
    graphs = [random_graph(rng) for _ in range(60)]
    k = kernel("all-paths-graph")
    K = k(graphs)
    feats = [walk_features(g) for g in graphs]
    expected = np.array([[frobenius(f, h) for h in feats] for f in feats])
    np.testing.assert_allclose(K, expected, rtol=1e-10, atol=1e-12)
    for g, f in zip(graphs, feats, strict=True):
        got = label_pair_features(g)
        assert got.keys() == f.keys()
        np.testing.assert_allclose([got[key] for key in f], list(f.values()), rtol=1e-12)


def test_equals_truncated_series_with_cycles():
    rng = random.Random(1)
    graphs = [random_graph(rng, n_max=6, cyclic=True) for _ in range(30)]
    assert any(g.topological_order is None for g in graphs)
    K = kernel("all-paths-graph")(graphs)
    feats = [series_features(g) for g in graphs]
    expected = np.array([[frobenius(f, h) for h in feats] for f in feats])
    np.testing.assert_allclose(K, expected, rtol=1e-9, atol=1e-14)
    for g in graphs:
        A = g.adjacency()
        np.testing.assert_allclose(walk_sums(g), np.linalg.inv(np.eye(len(g)) - A) - np.eye(len(g)),
                                   atol=1e-12)


def test_hand_checked_values():
    g = chain("a", "b", "c")                       # (a,b) .5, (b,c) .5, (a,c) .25
    h = LabelledGraph([("a",), ("b",)], [(0, 1, 0.9)])
    k = kernel("all-paths-graph")
    assert k.value(g, h) == pytest.approx(0.45)
    assert k.value(g, g) == pytest.approx(0.25 + 0.25 + 0.0625)
    assert k.value(h, h) == pytest.approx(0.81)
    assert Normalized(k).value(g, h) == pytest.approx(0.45 / (0.75 * 0.9))
    # two labels on a vertex, a walk through an unlabelled vertex, and a diamond of two
    # walks a -> d summing: 0.5*0.5 + 0.4*1.0
    d = LabelledGraph([("a",), (), ("x", "y"), ("d",)],
                      [(0, 1, 0.5), (1, 3, 0.5), (0, 2, 0.4), (2, 3, 1.0)])
    assert label_pair_features(d) == pytest.approx(
        {("a", "d"): 0.65, ("a", "x"): 0.4, ("a", "y"): 0.4, ("x", "d"): 1.0, ("y", "d"): 1.0})
    assert k.value(d, d) == pytest.approx(0.65**2 + 2 * 0.4**2 + 2 * 1.0)
    # no edges, or no labels: nothing in common with anything
    empty = LabelledGraph([("a",), ("b",)])
    assert k.value(empty, g) == 0.0 and k.value(LabelledGraph([]), g) == 0.0


# ------------------------------------------------------------------ properties
@st.composite
def labelled_graphs(draw):
    n = draw(st.integers(1, 6))
    labels = [tuple(draw(st.lists(st.sampled_from(LABELS), max_size=3, unique=True)))
              for _ in range(n)]
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=10)) if pairs else []
    cyclic = draw(st.booleans())
    top = 0.15 if cyclic else 1.0
    edges = [(u, v, draw(st.floats(0.01, top))) for u, v in chosen if cyclic or u < v]
    return LabelledGraph(labels, edges)


@pytest.mark.filterwarnings("ignore::structkernels.engine.checks.ZeroSelfSimilarityWarning")
@settings(max_examples=30, deadline=None)
@given(st.lists(labelled_graphs(), min_size=1, max_size=8))
def test_symmetric_psd_and_normalised_diagonal(graphs):
    k = kernel("all-paths-graph")
    K = k(graphs)
    assert np.isfinite(K).all()
    np.testing.assert_array_equal(K, K.T)
    scale = max(1.0, float(np.abs(K).max()))
    assert np.linalg.eigvalsh(K).min() >= -1e-9 * scale
    np.testing.assert_allclose(np.diag(K), k.diag(graphs), rtol=1e-12, atol=1e-15)
    N = gram(Normalized(k), graphs)
    d = np.diag(N)
    nonzero = k.diag(graphs) > 0
    np.testing.assert_allclose(d[nonzero], 1.0, rtol=1e-12)
    assert (d[~nonzero] == 0).all()


@settings(max_examples=20, deadline=None)
@given(labelled_graphs(), labelled_graphs())
def test_pair_matches_gram_both_ways(x, y):
    k = kernel("all-paths-graph")
    K = k([x, y])
    assert k.value(x, y) == pytest.approx(K[0, 1], rel=1e-12, abs=1e-15)
    assert k.value(y, x) == pytest.approx(K[1, 0], rel=1e-12, abs=1e-15)


def encoded_arrays(graphs, chunk):
    """Every array of the encoding of ``graphs``, interned ``chunk`` entries at a time."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(allpaths_features, "_CHUNK_ENTRIES", chunk)
        X = AllPathsFeatures.encode(graphs)
    return (X.dense, X.indptr, X.indices, X.data, X.single, X.rows, X.layout.keys,
            np.array([X.layout.n_dense, X.layout.n_shared]), X.layout.names)


@settings(max_examples=40, deadline=None)
@given(st.lists(labelled_graphs(), max_size=20), st.integers(0, 40), st.integers(0, 2**32 - 1),
       st.integers(1, 60))
def test_chunked_encoding_equals_one_shot(drawn, n_random, seed, chunk):
    # random DAGs over few labels besides: pairs that many graphs share (the dense part)
    rng = random.Random(seed)
    graphs = drawn + [random_graph(rng) for _ in range(n_random)]
    rng.shuffle(graphs)
    whole = encoded_arrays(graphs, 1 << 40)
    for got, want in zip(encoded_arrays(graphs, chunk), whole, strict=True):
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()
        else:
            assert got == want


def test_overflow_names_the_entry_whatever_the_chunks():
    # 2^1030 walks of weight 1 between the ends of a ladder: the sum overflows
    layers = 1030
    big = LabelledGraph([("x",)] * (2 * layers),
                        [(2 * i + a, 2 * i + 2 + b, 1.0)
                         for i in range(layers - 1) for a in (0, 1) for b in (0, 1)])
    graphs = [chain("a", "b", "c"), chain("b", "c"), big, chain("a", "c")]
    messages = set()
    for chunk in (1, 2, 1 << 20):
        with pytest.raises(NonFiniteError, match="all-paths graph features") as info:
            encoded_arrays(graphs, chunk)
        messages.add(str(info.value))
    assert len(messages) == 1, messages
    assert "entry 4 is inf" in messages.pop()


# ------------------------------------------------------------------ the structure
def test_labelled_graph_round_trips_and_is_a_value():
    g = LabelledGraph([("binds", "VBZ"), ("nsubj",), ("PROT1", "NN"), ()],
                      [(1, 2, 0.9), (0, 1, 0.9), (0, 3, 0.3)])
    assert len(g) == 4 and g.edges[0] == (0, 1, 0.9)  # edges kept sorted
    assert LabelledGraph.from_json(g.to_json()) == g
    assert LabelledGraph.from_json(json.dumps(g.to_json())) == g
    assert pickle.loads(pickle.dumps(g)) == g
    same = LabelledGraph([list(labs) for labs in g.labels], list(reversed(g.edges)))
    assert same == g and hash(same) == hash(g) and len({g, same}) == 1
    assert g != LabelledGraph(g.labels, [(0, 1, 0.9)])
    with pytest.raises(AttributeError):
        g.x = 1
    assert g.topological_order == (0, 1, 2, 3)
    cyc = LabelledGraph([("a",), ("b",)], [(0, 1, 0.5), (1, 0, 0.5)])
    assert cyc.topological_order is None and cyc.spectral_radius() == pytest.approx(0.5)


@pytest.mark.parametrize("labels, edges, message", [
    ([("a",)], [(0, 1, 0.5)], "out of range"),
    ([("a",), ("b",)], [(0, -1, 0.5)], "out of range"),
    ([("a",), ("b",)], [(0, 1.0, 0.5)], "int vertex index"),
    ([("a",), ("b",)], [(0, 1, 0.0)], r"\(0, 1\]"),
    ([("a",), ("b",)], [(0, 1, 1.5)], r"\(0, 1\]"),
    ([("a",), ("b",)], [(0, 1, float("nan"))], "finite"),
    ([("a",), ("b",)], [(0, 1, float("inf"))], "finite"),
    ([("a",), ("b",)], [(0, 1, True)], "number"),
    ([("a",), ("b",)], [(0, 1)], "triple"),
    ([("a",), ("b",)], [(0, 1, 0.5), (0, 1, 0.4)], "both join"),
    ([("a",), ("b",)], [(0, 1, 1.0), (1, 0, 1.0)], "spectral radius"),
    ([("a",)], [(0, 0, 1.0)], "spectral radius"),
    ([("a",), ("b",), ("c",)], [(0, 1, 0.9), (1, 2, 0.9), (2, 0, 0.9), (1, 0, 0.9)],
     "spectral radius"),
    (["ab"], [], "bare string"),
    ([("a", "a")], [], "twice"),
    ([("a", "")], [], "non-empty"),
    ([("a", 3)], [], "must be a str"),
])
def test_labelled_graph_refuses_bad_input(labels, edges, message):
    with pytest.raises(StructureError, match=message):
        LabelledGraph(labels, edges)


def test_from_json_refuses_bad_records():
    with pytest.raises(StructureError, match="not valid JSON"):
        LabelledGraph.from_json("{")
    with pytest.raises(StructureError, match="unknown keys"):
        LabelledGraph.from_json({"labels": [], "edges": [], "weights": []})
    with pytest.raises(StructureError, match="'labels'"):
        LabelledGraph.from_json([["a"]])


def test_kernel_refuses_other_structures():
    with pytest.raises(TypeError, match="item 1 is a Path"):
        kernel("all-paths-graph")([chain("a", "b"), structkernels.Path([(None, "a")])])
    with pytest.raises(TypeError, match="value"):
        kernel("all-paths-graph")("abc")
    with pytest.raises(TypeError, match="single one"):
        kernel("all-paths-graph")(chain("a", "b"))


# ------------------------------------------------------------------ the builder
def sentence(words, heads, deps, pos=None):
    """A dependency graph as from_spacy makes it (heads 1-based, 0 for the root)."""
    G = new_graph("s", "dependency", root=str(heads.index(0) + 1))
    for i, w in enumerate(words, 1):
        add_node(G, str(i), w, pos=None if pos is None else pos[i - 1], index=i)
    for i, (h, d) in enumerate(zip(heads, deps, strict=True), 1):
        if h:
            G.add_edge(str(h), str(i), role=d)
    return G


RAS = sentence(["Ras", "binds", "Raf", "and", "Rap", "."], [2, 0, 2, 3, 3, 2],
               ["nsubj", "ROOT", "dobj", "cc", "conj", "punct"],
               ["NN", "VBZ", "NN", "CC", "NN", "."])


def test_builder_labels_weights_and_blinding():
    g = allpaths_graph(RAS, ["1"], ["3"], entities=[["5"]])
    T, D = 6, 5
    assert len(g) == 2 * T + D
    # dependency subgraph: tokens in order, the path Ras - binds - Raf marked IP_
    assert g.labels[:T] == (
        ("PROT1", "NN", "IP_PROT1", "IP_NN"), ("binds", "VBZ", "IP_binds", "IP_VBZ"),
        ("PROT2", "NN", "IP_PROT2", "IP_NN"), ("and", "CC"), ("PROT", "NN"), (".",))
    # dependencies ordered by (head, dependent): binds->Ras, binds->Raf, binds->., Raf->and, Raf->Rap
    assert g.labels[T:T + D] == (("nsubj", "IP_nsubj"), ("dobj", "IP_dobj"), ("punct",),
                                 ("cc",), ("conj",))
    weights = {(u, v): w for u, v, w in g.edges}
    assert weights[(1, T)] == weights[(T, 0)] == 0.9          # binds -> nsubj -> Ras
    assert weights[(1, T + 1)] == weights[(T + 1, 2)] == 0.9  # binds -> dobj -> Raf
    assert weights[(1, T + 2)] == weights[(T + 2, 5)] == 0.3  # binds -> punct -> .
    assert weights[(2, T + 4)] == weights[(T + 4, 4)] == 0.3  # Raf -> conj -> Rap
    # a word equal to its part of speech is one label (L is a 0/1 matrix)
    # linear subgraph: Ras .. Raf is the middle, the rest after
    assert g.labels[T + D:] == (("M_PROT1", "M_NN"), ("M_binds", "M_VBZ"), ("M_PROT2", "M_NN"),
                                ("A_and", "A_CC"), ("A_PROT", "A_NN"), ("A_.",))
    linear = sorted((u, v, w) for u, v, w in g.edges if u >= T + D)
    assert linear == [(T + D + i, T + D + i + 1, 0.9) for i in range(T - 1)]
    assert len(g.edges) == 2 * D + T - 1


def test_builder_before_prefix_unblinded_and_weights():
    g = allpaths_graph(RAS, "3", ["5"], blind=False, shortest_path_weight=1.0,
                       other_weight=0.1, linear_weight=0.5)
    T, D = 6, 5
    assert g.labels[T + D:T + D + 3] == (("B_Ras", "B_NN"), ("B_binds", "B_VBZ"),
                                         ("M_Raf", "M_NN"))
    assert g.labels[4] == ("Rap", "NN", "IP_Rap", "IP_NN") and g.labels[0] == ("Ras", "NN")
    weights = {(u, v): w for u, v, w in g.edges}
    assert weights[(2, T + 4)] == 1.0 and weights[(1, T)] == 0.1
    assert weights[(T + D, T + D + 1)] == 0.5


def test_builder_shared_token_multi_token_entities_and_no_pos():
    G = sentence(["the", "Ras", "protein", "binds"], [3, 3, 4, 0], ["det", "nn", "nsubj", "ROOT"])
    g = allpaths_graph(G, ["2", "3"], ["3", "4"])
    # the entities share token 3: the path is that token alone; it reads PROT1 and PROT2
    assert g.labels[2] == ("PROT1", "PROT2", "IP_PROT1", "IP_PROT2")
    assert g.labels[1] == ("PROT1",) and g.labels[3] == ("PROT2",)
    assert all(w == 0.3 for u, v, w in g.edges if u < 7)
    assert shortest_dependency_path(G, ["2", "3"], ["3", "4"]) == ["3"]


def test_shortest_path_and_ties():
    assert shortest_dependency_path(RAS, "1", "5") == ["1", "2", "3", "5"]
    # two tokens of e2 at the same distance: the first found from e1's first token
    assert shortest_dependency_path(RAS, ["3"], ["1", "6"]) == ["3", "2", "1"]
    G = sentence(["a", "b", "c"], [0, 1, 1], ["ROOT", "x", "y"])
    G.add_node("9", concept="z", index=9)  # an unconnected token
    with pytest.raises(ValueError, match="no dependency path"):
        shortest_dependency_path(G, "2", "9")
    with pytest.raises(ValueError, match="not a node"):
        allpaths_graph(RAS, ["1"], ["42"])
    with pytest.raises(ValueError, match="names no token"):
        allpaths_graph(RAS, [], ["1"])
    with pytest.raises(ValueError, match="shortest_path_weight"):
        allpaths_graph(RAS, "1", "3", shortest_path_weight=0.0)
    H = new_graph("amr", "amr")
    add_node(H, "b", "bind-01")
    with pytest.raises(ValueError, match="index"):
        allpaths_graph(H, "b", "b")


def test_builder_reads_spacy_graphs():
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc

    from structkernels.graphs import from_spacy

    doc = Doc(spacy.vocab.Vocab(), words=["Ras", "binds", "Raf"], heads=[1, 1, 1],
              deps=["nsubj", "ROOT", "dobj"], pos=["PROPN", "VERB", "PROPN"])
    g = allpaths_graph(from_spacy(doc), ["1"], ["3"])
    assert g.labels[1] == ("binds", "VERB", "IP_binds", "IP_VERB")
    assert g == allpaths_graph(from_spacy(doc).graph, "1", "3")


def test_builder_graphs_compare():
    k = Normalized(kernel("all-paths-graph"))
    a = allpaths_graph(RAS, "1", "3")
    b = allpaths_graph(RAS, "1", "5")
    c = allpaths_graph(RAS, "3", "5")
    K = gram(k, [a, b, c])
    assert np.allclose(np.diag(K), 1.0) and (K > 0).all() and (K < 1 + 1e-12).all()


# ------------------------------------------------------------------ registry and engine
def test_registered_name():
    assert "all-paths-graph" in structkernels.list_kernels()
    k = structkernels.kernel("all-paths-graph")
    assert isinstance(k, AllPathsGraphKernel) and k.grows_with_size
    assert pickle.loads(pickle.dumps(k)).get_params() == {}


@pytest.mark.filterwarnings("ignore::structkernels.engine.checks.ZeroSelfSimilarityWarning")
def test_engine_parallel_blocks_and_encodings_agree():
    rng = random.Random(2)
    graphs = [random_graph(rng, n_max=9) for _ in range(150)]
    graphs += [allpaths_graph(RAS, e1, e2) for e1, e2 in [("1", "3"), ("1", "5"), ("3", "5")]]
    k = kernel("all-paths-graph")
    K = gram(k, graphs)
    np.testing.assert_array_equal(K, K.T)
    np.testing.assert_array_equal(gram(k, graphs, n_jobs=2, block_size=16), gram(k, graphs, block_size=16))
    np.testing.assert_array_equal(gram(k, graphs, n_jobs=2), K)
    np.testing.assert_allclose(gram(k, graphs, block_size=7), K, rtol=1e-12, atol=1e-14)
    # apart-encoded X and Y (the columns mapped between the two encodings)
    np.testing.assert_allclose(k(graphs[:40], graphs), K[:40], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k(graphs, graphs), K, rtol=1e-12, atol=1e-14)
    # encoded once, then cut: slices, index arrays, repeats, pickled copies
    Xe = k.check_input(graphs)
    assert isinstance(Xe, AllPathsFeatures) and list(Xe) == graphs
    idx = np.array([5, 3, 3, 120, 0])
    np.testing.assert_allclose(k.gram_block(take(Xe, idx), Xe[100:]), K[np.ix_(idx, range(100, len(graphs)))],
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.gram_block_symmetric(take(Xe, idx)), K[np.ix_(idx, idx)],
                               rtol=1e-12, atol=1e-14)
    copy = pickle.loads(pickle.dumps(Xe[10:60]))
    np.testing.assert_allclose(k.gram_block(copy, Xe), K[10:60], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.diag(copy.arrays_only()), np.diag(K)[10:60], rtol=1e-12)
    Kn = gram(Normalized(k), Xe, n_jobs=2)
    np.testing.assert_allclose(np.diag(Kn)[np.diag(K) > 0], 1.0, rtol=1e-12)
    assert k.value(graphs[3], graphs[7]) == pytest.approx(K[3, 7], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("edges, message", [
    ([(0, 1, 0.9), (0, 1, 0.3)], "edges 0 and 1 both join 0 -> 1"),
    ([(0, 1, 0.9), [0, 1, 0.3]], "edges 0 and 1 both join 0 -> 1"),
    ([(0, 5, 0.9)], "the target of edge 0 = 5 is out of range for 3 vertices"),
    ([(0, 1, float("nan"))], "must be finite and lie in (0, 1]"),
    ([(0, 1, 1.5)], "must be finite and lie in (0, 1]"),
    ([(True, 1, 0.5)], "the source of edge 0 must be an int vertex index"),
    ([(0, 1, True)], "the weight of edge 0 (0 -> 1) must be a number"),
])
def test_edges_are_checked_alike_on_the_fast_and_the_full_path(edges, message):
    with pytest.raises(StructureError) as exc:
        LabelledGraph([("a",), ("b",), ("c",)], edges)
    assert message in str(exc.value)


def test_edges_of_other_number_types_give_the_same_graph():
    a = LabelledGraph([("a",), ("b",), ("c",)], [(0, 1, 0.9), (1, 2, 0.3)])
    b = LabelledGraph([["a"], ("b",), ("c",)], [(np.int64(0), 1, np.float64(0.9)),
                                                [1, np.int32(2), 0.3]])
    assert a == b and a.edges == b.edges and all(type(w) is float for _, _, w in b.edges)
