"""structkernels' own DOT parser (``structkernels.formats._dot_parser``) against pydot's.

The reading through pydot is rebuilt here as the reader had it: pydot's grammar parses,
each node name, edge endpoint and attribute value is unquoted as before, and the same
model builders of :mod:`structkernels.formats.dot` make the graph.  Every DOT file of the
repository, the DOT that ``write_dot`` writes for shipped Bio AMR graphs, generated DOT
texts and malformed ones must give the same graphs (nodes, attributes, edges, roles,
root, ids, order) or be refused by both.  Tests needing pydot skip without it.
"""

from __future__ import annotations

import re
import sys
import time
import warnings
from pathlib import Path

import pytest
from _fuzz_strategies import FUZZ
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structkernels.amr import read_amr
from structkernels.formats import dot as dotmod
from structkernels.formats._dot_parser import (
    DotError,
    DotGraph,
    DotNestingError,
    parse_graphs,
    tokenize,
    unquote,
)
from structkernels.graphs import GraphFormatError, parse_dot, read_dot, write_dot

ROOT = Path(__file__).resolve().parents[1]
BIO_TEST = ROOT / "datasets" / "bio-amr-interactions" / "raw" / "amr-release-test-bio.txt"
RESERVED = {"node", "edge", "graph"}
_LONG = FUZZ.max_examples > 1000  # STRUCTKERNELS_FUZZ_LONG=1
PROPERTY = settings(
    FUZZ, max_examples=600 if _LONG else 60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ----------------------------------------------------------------------------- pydot's reading
def _pydot_parser():
    pytest.importorskip("pydot", reason="pydot (extra 'graphs') is the reference reading")
    with warnings.catch_warnings():  # pydot's grammar uses pyparsing's deprecated names
        warnings.simplefilter("ignore", DeprecationWarning)
        from pydot.dot_parser import GraphParser
    return GraphParser.parser


def pydot_graphs(text: str) -> list[DotGraph] | None:
    """pydot's graphs of ``text`` as :class:`DotGraph` (names and values unquoted as the
    reader did it with pydot), or None when pydot refuses the text."""
    from pyparsing import ParseException

    parser = _pydot_parser()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            dots = list(parser.parse_string(text, parse_all=True))
    except (ParseException, TypeError):  # TypeError: pydot cannot build Node(name=...)
        return None
    return [_from_pydot(d, top=True) for d in dots]


def _from_pydot(d, top: bool = False) -> DotGraph:
    g = DotGraph(d.get_name(), top and d.get_type() == "digraph",
                 top and bool(d.obj_dict.get("strict")))
    g.attrs = {k: unquote(v) for k, v in d.get_attributes().items()}
    for n in d.get_nodes():
        g.nodes.setdefault(n.get_name(), []).append(
            (unquote(n.get_name()), {k: unquote(v) for k, v in n.get_attributes().items()}))
    for e in d.get_edges():
        src, dst = e.get_source(), e.get_destination()
        key = tuple(p if isinstance(p, str) else "<subgraph>" for p in (src, dst))
        s = unquote(src) if isinstance(src, str) else None
        t = unquote(dst) if isinstance(dst, str) else None
        attrs = {k: unquote(v) for k, v in e.get_attributes().items()}
        g.edges.setdefault(key, []).append((s, t, attrs))
    for sub in d.get_subgraphs():
        g.subgraphs.setdefault(sub.get_name(), []).append(_from_pydot(sub))
    return g


def shape(g: DotGraph) -> tuple:
    """A graph's statements in order, comparable between the two readings: nodes called
    ``node``/``edge``/``graph`` (pydot's default statements, skipped by the reader) left
    out; edges touching a subgraph (refused by the reader) reduced to a mark."""
    nodes = []
    for key, group in g.nodes.items():
        kept = [(n, list(a.items())) for n, a in group if n not in RESERVED]
        if kept:
            nodes.append((key, kept))
    edges = [(key, [(s, d, list(a.items())) for s, d, a in group])
             for key, group in g.edges.items()]
    if any(s is None or d is None for _, group in edges for s, d, _ in group):
        edges = ["an edge touches a subgraph"]
    subs = [(name, [shape(s) for s in group]) for name, group in g.subgraphs.items()]
    return (g.name, g.directed, g.strict, list(g.attrs.items()), nodes, edges, subs)


def ours(text: str) -> list[DotGraph] | None:
    try:
        return parse_graphs(text)
    except DotError:
        return None


def signature(g) -> tuple:
    """Everything a read graph holds, in order."""
    G = g.graph
    return (g.id, g.sentence, list(g.metadata.items()), dict(G.graph),
            list(G.nodes(data=True)), list(G.edges(keys=True, data=True)))


def outcomes(dots: list[DotGraph] | None, text: str, file: str, gid: str, kind: str = "auto"):
    """Each graph's signature, or its error (reason and line), as the reader makes them."""
    if dots is None:
        return None
    out = []
    for i, d in enumerate(dots):
        try:
            out.append(signature(dotmod._to_graph(d, f"{gid}#{i}", file, kind, text)))
        except GraphFormatError as exc:
            out.append(("refused", exc.reason, exc.line))
    return out


def assert_same_reading(text: str, file: str = "g.dot") -> tuple[list | None, list | None]:
    """Both parsers accept ``text`` with the same statements and graphs, or both refuse it
    (ours with one line naming the file and line).  Returns both readings."""
    theirs, mine = pydot_graphs(text), ours(text)
    assert (theirs is None) == (mine is None), (text, theirs, mine)
    if mine is None:
        with pytest.raises(GraphFormatError) as err:
            dotmod._parse_text(text, file, "g", None)
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith(f"{file}, line "), msg
        return None, None
    assert [shape(g) for g in mine] == [shape(g) for g in theirs], text
    for kind in ("auto", "amr", "dependency"):
        assert outcomes(mine, text, file, "g", kind) == outcomes(theirs, text, file, "g", kind)
    return mine, theirs


# ----------------------------------------------------------------------------- the files
def _repository_dot_texts() -> list[tuple[str, str]]:
    texts = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))
             for p in sorted(ROOT.glob("tests/**/*.dot"))]
    for doc in sorted((ROOT / "docs").glob("*.md")):
        blocks = re.findall(r"```dot\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
        for i, block in enumerate(blocks):
            texts.append((f"{doc.relative_to(ROOT).as_posix()}#{i + 1}", block))
    texts.append(("parse_dot example", 'digraph { b [label="bind-01"]; "p Ras" [label=Ras]; '
                  'b -> "p Ras" [label=ARG1]; }'))
    return texts


REPO_TEXTS = _repository_dot_texts()


def test_the_repository_has_dot_files():
    names = [n for n, _ in REPO_TEXTS]
    assert "tests/data/graphs/amr/s1.dot" in names and "tests/data/graphs/sdg/s2.dot" in names
    assert any(n.startswith("docs/graphs.md#") for n in names)


@pytest.mark.parametrize("name,text", REPO_TEXTS, ids=[n for n, _ in REPO_TEXTS])
def test_repository_dot_files_read_as_with_pydot(name, text):
    if not text.strip():  # empty.dot: refused before parsing, by both readings
        assert ours(text) is None
        return
    assert_same_reading(text, name)


@pytest.mark.parametrize("path", sorted(ROOT.glob("tests/**/*.dot")), ids=lambda p: p.name)
def test_read_dot_equals_the_pydot_reading_of_each_file(path):
    """read_dot (the default route) against pydot's reading of the same file."""
    text = path.read_text(encoding="utf-8")
    theirs = pydot_graphs(text) if text.strip() else None
    try:
        corpus = read_dot(path, on_error="skip", progress=False)
        got = [signature(g) for g in corpus]
        skipped = [(s.line, s.reason) for s in corpus.skipped]
    except GraphFormatError as exc:  # nothing read
        got, skipped = [], [str(exc)]
    if theirs is None:
        assert not got and skipped
        return
    want = []
    for i, d in enumerate(theirs):
        gid = path.stem if i == 0 else f"{path.stem}#{i + 1}"
        try:
            want.append(signature(dotmod._to_graph(d, gid, str(path), "auto", text)))
        except GraphFormatError:
            pass
    assert got == want


@pytest.fixture(scope="module")
def bio_graphs():
    corpus = read_amr(BIO_TEST)
    assert len(corpus) > 400
    return corpus.graphs


@pytest.mark.parametrize("collapse", [False, True], ids=["full", "collapsed"])
def test_written_bio_amr_reads_as_with_pydot(bio_graphs, tmp_path, collapse):
    """DOT written by write_dot for shipped Bio AMR graphs, read both ways: a dozen (pydot
    takes tens of milliseconds a graph), those whose sentence holds a quote, a backslash,
    braces or angle brackets first."""
    _pydot_parser()
    odd = [g for g in bio_graphs if any(c in g.sentence for c in '"\\{}<>')]
    some = (odd[:6] + [g for g in bio_graphs[::40] if g not in odd])[:12]
    files = write_dot(some, tmp_path, collapse_names=collapse)
    mine = read_dot(tmp_path, progress=False)
    assert len(mine) == len(some) and not mine.skipped
    by_id = {g.id: g for g in mine}
    for f in files:
        text = Path(f).read_text(encoding="utf-8")
        _, (theirs,) = assert_same_reading(text, f)
        stem = Path(f).stem
        assert signature(by_id[stem]) == signature(dotmod._to_graph(theirs, stem, f, "auto", text))


def test_written_bio_amr_graphs_read_back_equal(bio_graphs, tmp_path):
    """Without pydot's parser: 200 graphs of the shipped test release written as DOT read
    back as their PENMAN graphs (nodes with their attributes, edges, root)."""
    pytest.importorskip("pydot", reason="write_dot writes through pydot")
    bio_graphs = bio_graphs[:200]
    write_dot(bio_graphs, tmp_path / "full")
    back = {g.id: g for g in read_dot(tmp_path / "full", progress=False)}
    for g in bio_graphs:
        h = back[re.sub(r"[^\w.-]", "_", g.id)]
        assert h.sentence == g.sentence
        assert list(h.graph.nodes) == list(g.graph.nodes)
        for v, data in g.graph.nodes(data=True):
            for k in ("concept", "name", "wiki"):
                assert h.graph.nodes[v].get(k) == data.get(k)
        assert sorted(h.graph.edges(data="role")) == sorted(g.graph.edges(data="role"))
        assert h.graph.graph["root"] == g.graph.graph["root"]
    write_dot(bio_graphs, tmp_path / "collapsed", collapse_names=True)
    assert len(read_dot(tmp_path / "collapsed", progress=False)) == len(bio_graphs)


def test_reading_needs_no_pydot(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pydot", None)  # import pydot fails
    f = tmp_path / "s1.dot"
    f.write_text((ROOT / "tests" / "data" / "graphs" / "amr" / "s1.dot").read_text())
    g = read_dot(f)[0]
    assert g.graph.graph["root"] == "b" and g.graph.nodes["p HER3"]["name"] == "HER3"
    assert parse_dot('digraph { a [label=x] }').graph.number_of_nodes() == 1


# ----------------------------------------------------------------------------- the language
CASES = [
    # ids: words (letters, digits, _ and .), quoted, concatenated, HTML
    'digraph { a; _x.1; 1.5; é数; "a b"; "q\\"x"; "b\\\\s"; "l\\nm"; "c" + "d"; <<b>h</b>>; }',
    'digraph { a [label="x\\\ny"]; b [label="x\\\\\ny"]; c [label="\\l\\N"] }',
    'graph G { a -- b -- c [label=r]; b -> d }',                       # either operator
    'strict digraph "G" { a -> b; a -> b }',                          # strict: edges kept
    'strictdigraph{a}  digraphG{b} graph{c};',                          # keyword prefixes
    'digraph { subgraphX { a } subgraph { b } subgraph "s" { c }; { d }; }',
    'digraph { subgraph; subgraph -> x; subgraph a b { c } }',          # "subgraph": a node
    'digraph { node [shape=box]; edge [color=red] graph [label=g]; Node [x=1]; a }',
    'digraph { "node" [label=x]; a -> node; NODE [label=y] }',
    'digraph { a [label=1abc]; b [w=-1.5, h=.5 x=3.]; k=1x; c }',     # numbers as values
    'digraph { a:p -> "b":"c"; "x":y; <a:b>; a:p:q; a:n -> b:s:e }',  # ports
    'digraph { a;; b -> c; d [x=1][y=2]; e [x=1,]; f [x, y=2] }',
    'digraph { a -> b -> c [label="x"]; a -> b [label="y"]; c -> a }',  # pydot's edge order
    'digraph { b; a; b [x=1]; "b" [y=2]; c }',                          # pydot's node order
    'digraph { a # comment\n -> b // comment {\n /* { c } */ }\n# end\n',
    'digraph { label="s"; kind=dependency; "label"=x; a [label=w1] a -> a [label=root] }',
    'digraph { a -> {b c}; }',                                          # an edge to a subgraph
    'digraph { a [obj_dict]; b -> c [obj_dict] }',                      # dropped, as pydot does
    'digraph { <a "q" {> [label=<x<b>"y</b>>]; }',
    "digraph{a\t->\tb\r\n}",
]
MALFORMED = [
    "", "   ", "// only a comment\n", "digraph", "digraph {", "digraph { a -> b",
    "digraph { a -> ; }", "digraph { -> b }", "digraph { a [label=] }", "digraph { a [label=x }",
    'digraph { a [label="x] }', 'digraph { "a }', "digraph { a } }", "digraph { { a }",
    "digraph { a; b;;; }", "digraph { ; }", "digraph { a [,] }", "digraph { a [x=1,,y=2] }",
    "digraph { a [x=1; y=2] }", "digraph { a:b:c:d }", "digraph { a: }", 'digraph { "a" + b }',
    "digraph { a = }", "digraph { a = b = c }", "digraph { a -> -5 }", "digraph { <a }",
    "digraph { a /* b }", "digraph { a @ b }", "digraph { a\u00a0b }", "digraph { ½ }",
    "digraph { a } garbage", "graf { a }", "strict { a }", "digraph a b { }",
    "digraph { a [name=x] }", "digraph { node [name=x] }", "digraph { a -> b [src=1] }",
    "digraph { a [obj_dict=1] }", "digraph { subgraph s { a }", "{ a }", "digraph { a [x=1] ] }",
    "\x00", "digraph { a\x0cb }", "digraph { 𝐀 }",
]


@pytest.mark.parametrize("text", CASES)
def test_language_cases_read_as_with_pydot(text):
    assert assert_same_reading(text)[0] is not None


@pytest.mark.parametrize("text", MALFORMED, ids=[repr(t)[:40] for t in MALFORMED])
def test_malformed_texts_refused_by_both(text):
    with pytest.raises(DotError):
        parse_graphs(text)
    with pytest.raises(GraphFormatError) as err:
        parse_dot(text)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("<string>, line "), msg
    assert pydot_graphs(text) is None


def test_syntax_errors_name_line_and_column(tmp_path):
    f = tmp_path / "bad.dot"
    f.write_text('digraph {\n  a [label="x"];\n  b -> ;\n}\n')
    with pytest.raises(GraphFormatError) as err:
        read_dot(f)
    assert str(err.value) == (f"{f}, line 3: graph 'bad': not a well-formed DOT graph: expected a "
                              "node id after '->', found ';' (column 8)")
    f.write_text('digraph {\n  a [label="x];\n}\n')
    with pytest.raises(GraphFormatError, match=r"line 2: .*string never closed \(column 12\)"):
        read_dot(f)
    f.write_text("digraph {\n  a -> b;\n  subgraph s {\n    c\n")
    with pytest.raises(GraphFormatError,
                       match=r"line 4: .*ends inside braces\); the '\{' of line 3 is not "):
        read_dot(f)
    f.write_text("digraph {\n a [label=1abc, x=@] }")
    with pytest.raises(GraphFormatError, match=r"line 2: .*found '@' \(column 19\)"):
        read_dot(f)
    f.write_text('digraph {\n a [name="x"] }')
    with pytest.raises(GraphFormatError,
                       match=r"bad\.dot, line 2: graph 'bad': a node attribute called 'name'"):
        read_dot(f)


def test_nesting_limit_kept():
    deep = "digraph {\n" + "subgraph {\n" * 7 + "a;\n" + "}\n" * 8
    with pytest.raises(GraphFormatError, match=r"line 8: graph 'dot': subgraphs nested 8 levels "
                       r"deep \(braces\); at most max_depth=6 are parsed"):
        parse_dot(deep)
    assert parse_dot(deep, max_depth=8).graph.number_of_nodes() == 1
    with pytest.raises(DotNestingError) as err:
        parse_graphs(deep, max_depth=3)
    assert (err.value.depth, err.value.line) == (8, 8)
    assert len(parse_graphs("digraph {" + "{" * 200 + "a" + "}" * 201)) == 1  # no limit asked


@pytest.mark.parametrize("unit", ['"\\', "/* ", "<", '"a\\"', "{", "a -> ", "[x=", "\u00e9\u00bd"])
def test_hostile_texts_take_linear_time(unit):
    """Strings and comments never closed, unbalanced HTML and braces: refused at once
    (a scan that restarted at each quote would take minutes on 100 kB)."""
    text = "digraph { " + unit * (100_000 // len(unit))
    t0 = time.perf_counter()
    with pytest.raises(DotError):
        parse_graphs(text, max_depth=6)
    with pytest.raises(DotError):
        parse_graphs(text)
    assert time.perf_counter() - t0 < 10


def test_tokens_and_unquote():
    assert tokenize('a->b--c /* x */ "q\\"" <x<y>> # c\n-1.5') == [
        "a", "->", "b", "--", "c", '"q\\""', "<x<y>>", "-1.5", ""]
    assert unquote('"a\\"b\\\\c\\nd"') == 'a"b\\c\\nd' and unquote("plain") == "plain"
    assert unquote(None) is None


# ----------------------------------------------------------------------------- generated texts
WORDS = st.sampled_from(["a", "b", "c", "x1", "_", "n.2", "1.5", "A_b", "é", "数", "node", "Node",
                         "edge", "graph", "subgraph", "subgraphS", "digraph", "strict", "ARG0",
                         "label", "root", "TOP", "p3"])
PIECES = st.sampled_from(["a", "b", " ", "é", '\\"', "\\\\", "\\n", "\\\n", "{", "}", "#", "//",
                          "/*", "*/", "->", ";", "<", ">", ":", "\n", "+", "'", "=", ",", "[", "]",
                          "\\l", "ARG1"])
QUOTED = st.lists(PIECES, max_size=6).map(lambda p: '"' + "".join(p) + '"')
HTML = st.sampled_from(["<x>", "<<b>bold</b>>", '<a "q" {>', "<>", "<a:b>", "<<i>x</i> -> y>"])
IDS = st.one_of(WORDS, WORDS, QUOTED, QUOTED,
                st.lists(QUOTED, min_size=2, max_size=3).map(" + ".join), HTML)
VALUES = IDS | st.sampled_from(["1", "-1.5", ".5", "-.5", "1abc", "2_x", "3.", "0"])
KEYS = st.sampled_from(["label", "label", "color", "gold_label", "kind", "concept", "wiki",
                        "entity_name", '"label"', "lemma", "pos", "collapsed"]) | WORDS
GAPS = st.sampled_from([" ", " ", " ", "", "\n", "\t", " /* c { */ ", " // c {\n", "\n# c }\n",
                        "\r\n"])


@st.composite
def attr_lists(draw) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(1, 2))):
        out.append("[")
        n = draw(st.integers(0, 3))
        for k in range(n):
            out.append(draw(KEYS))
            if draw(st.integers(0, 4)):
                out += ["=", draw(VALUES)]
            if k < n - 1 or draw(st.booleans()):
                if draw(st.booleans()):
                    out.append(",")
        out.append("]")
    return out


@st.composite
def node_ids(draw) -> list[str]:
    out = [draw(IDS)]
    if not draw(st.integers(0, 8)):
        out += [":", draw(IDS)]
    return out


@st.composite
def statements(draw, depth: int) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["node", "node", "edge", "edge", "edge", "default", "assign",
                                     "subgraph"] if depth < 3 else ["node", "edge", "assign"]))
        if kind == "node":
            out += draw(node_ids())
            if draw(st.booleans()):
                out += draw(attr_lists())
        elif kind == "edge":
            out += draw(node_ids())
            for _ in range(draw(st.integers(1, 3))):
                out.append(draw(st.sampled_from(["->", "->", "--"])))
                if depth < 3 and not draw(st.integers(0, 12)):
                    out += ["{", *draw(statements(depth + 1)), "}"]
                else:
                    out += draw(node_ids())
            if draw(st.booleans()):
                out += draw(attr_lists())
        elif kind == "default":
            out += [draw(st.sampled_from(["node", "edge", "graph", "Node"]))] + draw(attr_lists())
        elif kind == "assign":
            out += [draw(KEYS), "=", draw(VALUES)]
        else:
            out += draw(st.sampled_from([[], ["subgraph"], ["subgraph", "s"], ["subgraph", '"t u"'],
                                         ["subgraphX"]]))
            out += ["{", *draw(statements(depth + 1)), "}"]
        out += draw(st.sampled_from([[], [";"], [";"], [";", ";"]]))
    return out


@st.composite
def dot_texts(draw) -> str:
    toks: list[str] = []
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.integers(0, 4)) == 0:
            toks.append(draw(st.sampled_from(["strict", "STRICT"])))
        toks.append(draw(st.sampled_from(["digraph", "digraph", "graph", "DiGraph"])))
        if draw(st.booleans()):
            toks.append(draw(IDS))
        toks += ["{", *draw(statements(1)), "}"]
    text = draw(GAPS)
    for i, t in enumerate(toks):
        if i:
            gap = draw(GAPS)
            if not gap and re.match(r"[\w.]", t) and re.search(r"[\w.]$", toks[i - 1]):
                gap = " "  # keep two words apart
            text += gap
        text += t
    return text + draw(GAPS)


@PROPERTY
@given(dot_texts())
def test_generated_dot_reads_as_with_pydot(text):
    assert_same_reading(text)


@st.composite
def damaged_texts(draw) -> str:
    text = draw(dot_texts())
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["del", "ins", "cut", "swap"]))
        if op == "del" and text:
            pos = min(pos, len(text) - 1)
            text = text[:pos] + text[pos + 1:]
        elif op == "ins":
            text = text[:pos] + draw(st.sampled_from(
                ["{", "}", '"', "[", "]", "=", "->", ";", ",", "<", ">", "/*", "#", "@", ":", "+",
                 "subgraph", "-", "\u00a0", "\\"])) + text[pos:]
        elif op == "cut":
            text = text[:pos]
        else:
            text = text[pos:] + text[:pos]
    return text


@PROPERTY
@given(damaged_texts())
def test_damaged_dot_refused_by_both_or_read_the_same(text):
    assert_same_reading(text)
