"""LabelledGraph's whole-graph checks of the common case against its one-edge-at-a-time
checks, its topological order against Kahn's algorithm as first written, and the relation
views' shortest path against networkx's on graphs with cycles and ties."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest

from structkernels.relations.structures import _shortest
from structkernels.structures import GraphFrame, LabelledGraph, StructureError


def kahn(n, edges):
    """Kahn's algorithm, smallest ready vertex first, as LabelledGraph first computed it."""
    indegree = [0] * n
    succ = [[] for _ in range(n)]
    for u, v, _ in sorted(edges):
        succ[u].append(v)
        indegree[v] += 1
    ready = [v for v in range(n) if indegree[v] == 0]
    ready.reverse()
    order = []
    while ready:
        u = ready.pop()
        order.append(u)
        for v in reversed(succ[u]):
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    return tuple(order) if len(order) == n else None


def random_graph(rng, n, acyclic):
    pairs = {(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 3 * n))}
    if acyclic:
        pairs = {(u, v) for u, v in pairs if u < v}
    labels = [tuple(f"l{rng.randrange(6)}{j}" for j in range(rng.randint(0, 3))) for _ in range(n)]
    edges = [(u, v, rng.choice([0.01, 0.03, 0.05])) for u, v in pairs]  # row sums < 1
    rng.shuffle(edges)
    return labels, edges


def test_topological_order_is_kahns_smallest_first():
    rng = random.Random(7)
    for trial in range(600):
        n = rng.randint(0, 14)
        labels, edges = random_graph(rng, n, acyclic=trial % 3 != 0) if n else ([], [])
        g = LabelledGraph(labels, edges)
        assert g.topological_order == kahn(n, edges)
        # the same ends with other weights, then one vertex more: the order follows them
        heavier = [(u, v, 0.06) for u, v, _ in edges]
        assert LabelledGraph(labels, heavier).topological_order == kahn(n, heavier)
        more = LabelledGraph([*labels, ("x",)], edges)
        assert more.topological_order == kahn(n + 1, edges)


def test_whole_graph_checks_give_the_graph_of_the_full_checks():
    rng = random.Random(11)
    for _ in range(200):
        labels, edges = random_graph(rng, rng.randint(1, 12), acyclic=True)
        fast = LabelledGraph(labels, edges)
        # lists, numpy numbers and a generator take the one-at-a-time checks
        full = LabelledGraph((list(labs) for labs in labels),
                             [[np.int64(u), v, np.float64(w)] for u, v, w in edges])
        assert fast == full and hash(fast) == hash(full)
        assert fast.labels == full.labels and fast.edges == full.edges
        assert fast.topological_order == full.topological_order
        assert all(type(w) is float for _, _, w in full.edges)


@pytest.mark.parametrize("labels, edges, message", [
    ([("a",), ("b", "b")], [], "vertex 1 carries the label 'b' twice"),
    ([("a",), ("b", "")], [], "label 1 of vertex 1 must be a non-empty string"),
    ([("a",), ("b", 3)], [], "label 1 of vertex 1 must be a str"),
    ([("a",), ("b",)], [(0, 1, 0.5), (0, 1, 0.5)], "edges 0 and 1 both join 0 -> 1"),
    ([("a",), ("b",)], [(0, 2, 0.5)], "the target of edge 0 = 2 is out of range for 2 vertices"),
    ([("a",), ("b",)], [(0, 1, 0.5), (-1, 1, 0.5)], "the source of edge 1 = -1 is out of range"),
    ([("a",), ("b",)], [(0, 1, float("nan"))], "must be finite and lie in (0, 1]"),
    ([("a",), ("b",)], [(0, 1, 0.5), (1, 0, 1.0), (0, 0, 1.0)], "spectral radius"),
])
def test_errors_name_the_first_bad_item_whichever_checks_run(labels, edges, message):
    for labs, edg in [(labels, edges), ([list(x) for x in labels], [list(e) for e in edges])]:
        with pytest.raises(StructureError) as exc:
            LabelledGraph(labs, edg)
        assert message in str(exc.value)


def test_labels_seen_before_do_not_vouch_for_new_ones():
    good = LabelledGraph([("a", "b"), ("c",)], [(0, 1, 0.9)])
    reused = list(good.labels)
    assert LabelledGraph(reused, [(0, 1, 0.9)]) == good
    with pytest.raises(StructureError, match="vertex 2 carries the label 'd' twice"):
        LabelledGraph([*reused, ("d", "d")], [])
    with pytest.raises(StructureError, match="label 0 of vertex 2 must be a non-empty"):
        LabelledGraph([*reused, ("",)], [])


def test_a_frames_graphs_are_the_graphs_of_their_edges():
    rng = random.Random(5)
    for trial in range(400):
        n = rng.randint(0, 12)
        labels, edges = random_graph(rng, n, acyclic=trial % 4 != 0) if n else ([], [])
        frame = GraphFrame(n, [(u, v) for u, v, _ in edges])
        assert len(frame) == len(edges)
        for _ in range(3):  # one frame, graphs of other weights and labels
            weights = [rng.choice([0.01, 0.02, 0.05]) for _ in edges]
            labs = [tuple(reversed(x)) for x in labels] if rng.random() < 0.5 else labels
            got = frame.graph(labs, weights)
            want = LabelledGraph(labs, [(u, v, w) for (u, v, _), w in zip(edges, weights, strict=True)])
            assert got == want and hash(got) == hash(want)
            assert got.edges == want.edges and got.labels == want.labels
            assert got.topological_order == want.topological_order == kahn(n, want.edges)
            assert frame.graph(labs, weights, check_labels=False) == want  # well formed


@pytest.mark.parametrize("labels, weights, message", [
    ([("a",), ("b", "b"), ()], [0.5, 0.5], "vertex 1 carries the label 'b' twice"),
    ([("a",), ("b", ""), ()], [0.5, 0.5], "label 1 of vertex 1 must be a non-empty string"),
    ([("a",), ("b",)], [0.5, 0.5], "2 vertices' labels for a frame of 3 vertices"),
    ([("a",), ("b",), ()], [0.5], "1 weights for a frame of 2 edges"),
    ([("a",), ("b",), ()], [0.5, float("nan")], "the weight of edge 1 (0 -> 1) must be finite"),
    ([("a",), ("b",), ()], [1.5, 0.5], "the weight of edge 0 (1 -> 2) must be finite"),
    ([("a",), ("b",), ()], [0.5, 0.0], "the weight of edge 1 (0 -> 1) must be finite"),
    ([("a",), ("b",), ()], [0.5, "x"], "the weight of edge 1 (0 -> 1) must be a number"),
])
def test_a_frames_graph_refuses_what_labelled_graph_refuses(labels, weights, message):
    with pytest.raises(StructureError) as exc:
        GraphFrame(3, [(1, 2), (0, 1)]).graph(labels, weights)
    assert message in str(exc.value)


@pytest.mark.parametrize("n, ends, message", [
    (2, [(0, 1), (0, 1)], "edges 0 and 1 both join 0 -> 1"),
    (2, [(0, 2)], "the target of edge 0 = 2 is out of range for 2 vertices"),
    (2, [(0, 1, 0.5)], "edge 0 must be a (u, v) pair"),
    (-1, [], "n_vertices must be an int >= 0"),
    (True, [], "n_vertices must be an int >= 0"),
])
def test_a_frame_refuses_bad_ends(n, ends, message):
    with pytest.raises(StructureError) as exc:
        GraphFrame(n, ends)
    assert message in str(exc.value)


def test_a_frame_with_a_cycle_checks_each_graphs_spectral_radius():
    frame = GraphFrame(2, [(0, 1), (1, 0)])
    assert frame.graph([(), ()], [0.5, 0.5]).topological_order is None
    with pytest.raises(StructureError, match="spectral radius"):
        frame.graph([(), ()], [1.0, 1.0])


def test_hash_and_equality_of_graphs_built_apart():
    a = LabelledGraph([("x",), ("y",)], [(0, 1, 0.9)])
    b = LabelledGraph([["x"], ["y"]], [[0, 1, 0.9]])
    c = LabelledGraph([("x",), ("y",)], [(0, 1, 0.3)])
    assert a == b and hash(a) == hash(b) and a != c and len({a, b, c}) == 2


# ------------------------------------------------------------ the relation views' path
def random_multigraph(rng, n):
    G = nx.MultiDiGraph()
    G.add_nodes_from(str(k) for k in rng.sample(range(1, n + 1), n))
    for _ in range(rng.randint(0, 2 * n)):
        G.add_edge(str(rng.randint(1, n)), str(rng.randint(1, n)), role="r")
    return G


def test_shortest_path_is_networkx_path_with_its_ties():
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 12)
        G = random_multigraph(rng, n)
        kept: dict = {}
        for _ in range(6):  # the neighbours kept from one pair serve the next
            a, b = str(rng.randint(1, n)), str(rng.randint(1, n))
            try:
                want = [a] if a == b else nx.shortest_path(G.to_undirected(as_view=True), a, b)
            except nx.NetworkXNoPath:
                want = []
            assert _shortest(G, a, b, kept) == want
            assert _shortest(G, a, b, {}) == want
    with pytest.raises(nx.NodeNotFound):
        _shortest(nx.MultiDiGraph([("1", "2")]), "1", "9", {})
