"""DOT text into plain structures: the parser behind :mod:`structkernels.formats.dot`, which
reads DOT as pydot's grammar reads it (docs/graphs.md), in time linear in the text."""

from __future__ import annotations

import re
from itertools import pairwise

from structkernels.utils import StructkernelsError

#: One token per match after white space and comments: a quoted string, a word, an edge
#: operator, a negative number, a comment never closed, or one character; the end of the
#: text is the empty token.  Every position matches and an unclosed string or comment runs
#: to the end, so no text is scanned more than twice (linear time on any input).
_TOKENS = re.compile(
    r"""(?:[ \t\r\n]+|//[^\n]*|\#[^\n]*|/\*.*?\*/)*
    ( "(?:[^"\\]|\\.?)*(?:"|\Z)
    | [\w.]+
    | ->|--
    | -[0-9.]+
    | /\*.*
    | .
    | \Z )""",
    re.S | re.X,
)
_CLOSED = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_ANGLES = re.compile(r"[<>]")
_ESCAPE = re.compile(r"\\([\\\"\n])")
_NUMBER = re.compile(r"[0-9.]+")
_EDGE_OPS = frozenset(("->", "--"))
_NUMBER_START = frozenset("0123456789.")
_DEFAULTS = frozenset(("graph", "node", "edge"))
_PAD = 4  # empty tokens after the end, so that lookahead never runs off the list


class DotError(StructkernelsError, ValueError):
    """DOT text that is not read: what is wrong, and where (1-based line and column);
    ``syntax`` is False for well-formed text refused (an attribute pydot cannot build)."""

    def __init__(self, what: str, line: int, column: int, syntax: bool = True):
        super().__init__(f"line {line}, column {column}: {what}")
        self.what, self.line, self.column, self.syntax = what, line, column, syntax


class DotNestingError(DotError):
    """Braces nested deeper than the caller allows; ``depth`` is the deepest nesting and
    ``line``/``column`` the first brace that reaches it."""

    def __init__(self, depth: int, max_depth: int, line: int, column: int):
        super().__init__(
            f"subgraphs nested {depth} levels deep (braces); at most max_depth={max_depth} are "
            "parsed (sentence graphs nest 1 or 2)", line, column, syntax=False,
        )
        self.depth, self.max_depth = depth, max_depth


class DotGraph:
    """A graph or subgraph as pydot holds it: ``name`` as written (``""``: none), ``attrs``
    its ``key=value`` statements, and ``nodes`` ``{id: [(name, attrs)]}``, ``edges``
    ``{(source, target): [(source, target, attrs)]}`` (a subgraph endpoint is None),
    ``subgraphs`` ``{name: [DotGraph]}``, each grouped by id as written in order of the
    id's first statement (pydot's order)."""

    __slots__ = ("name", "directed", "strict", "attrs", "nodes", "edges", "subgraphs")

    def __init__(self, name: str = "", directed: bool = False, strict: bool = False):
        self.name, self.directed, self.strict = name, directed, strict
        self.attrs: dict[str, str] = {}
        self.nodes: dict[str, list[tuple[str, dict[str, str | None]]]] = {}
        self.edges: dict[tuple, list[tuple[str | None, str | None, dict[str, str | None]]]] = {}
        self.subgraphs: dict[str, list[DotGraph]] = {}


def unquote(raw: str | None) -> str | None:
    """An id as written, without its quotes: ``\\"`` and ``\\\\`` unescaped, a
    backslash-newline dropped (other escapes such as ``\\n`` are kept as written)."""
    if raw is None or len(raw) < 2 or raw[0] != '"' or raw[-1] != '"':
        return raw
    inner = raw[1:-1]
    if "\\" in inner:
        inner = _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), inner)
    return inner


def _joined(raw: str) -> str:
    """A quoted token with its backslash-newlines removed (pydot removes them first)."""
    if "\\" in raw:
        return raw.replace("\\\r\n", "").replace("\\\n", "")
    return raw


def _html_end(text: str, start: int) -> int | None:
    """The end of the HTML id opened at ``start`` (angle brackets balanced), or None."""
    depth = 0
    for m in _ANGLES.finditer(text, start):
        depth += 1 if m.group() == "<" else -1
        if depth == 0:
            return m.end()
    return None


def _scan(text: str) -> tuple[list[str], list[int]]:
    """Tokens and their offsets (HTML ids read whole; an HTML id that is never closed is
    a lone ``"<"`` followed by the end)."""
    toks: list[str] = []
    starts: list[int] = []
    match = _TOKENS.match
    pos = 0
    while True:
        m = match(text, pos)
        tok, start = m.group(1), m.start(1)
        pos = m.end()
        if tok == "<":
            end = _html_end(text, start)
            if end is None:
                toks += ["<", ""]
                starts += [start, len(text)]
                break
            tok, pos = text[start:end], end
        toks.append(tok)
        starts.append(start)
        if not tok:
            break
    return toks, starts


def _word_ok(ch: str) -> bool:
    return ch in "_." or (ch <= "\uffff" and (ch.isalpha() or ch.isdigit()))


def tokenize(text: str) -> list[str]:
    """The tokens of a DOT text, ending with ``""`` (the end).

    Examples
    --------
    >>> tokenize('digraph { "a b" -> c [label=x]; } // done')
    ['digraph', '{', '"a b"', '->', 'c', '[', 'label', '=', 'x', ']', ';', '}', '']
    """
    toks = _TOKENS.findall(text)
    if "<" in toks:
        return _scan(text)[0]
    # up to the first end token: after a trailing comment or blank, findall matches the
    # end a second time
    return toks[: toks.index("") + 1]


def _position(text: str, index: int, shift: dict[int, int]) -> tuple[int, int]:
    """(line, column) of token ``index``; the end of the text is placed after its last
    token."""
    toks, starts = _scan(text)
    if index >= len(toks) or not toks[index]:
        pos = len(text.rstrip())
    else:
        pos = starts[index] + shift.get(index, 0)
    return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)


def _describe(tok: str) -> str:
    if not tok:
        return "the end of the text"
    if tok[:1] == '"' and not _CLOSED.fullmatch(tok):
        return 'a \'"\' that opens a string never closed'
    if tok[:2] == "/*":
        return "a '/*' that opens a comment never closed"
    if tok == "<":
        return "a '<' that opens an HTML id never closed"
    if len(tok) > 30:
        tok = tok[:27] + "..."
    return repr(" ".join(tok.split()) if any(c in tok for c in "\r\n") else tok)


class _Fail(StructkernelsError):
    """A parse failure at a token, turned into :class:`DotError` with its position."""

    def __init__(self, index: int, what: str, syntax: bool = True, opened: int | None = None):
        super().__init__(what)
        self.index, self.what, self.syntax, self.opened = index, what, syntax, opened


def _refuse(attrs: dict, index: int, what: str, keys: tuple[str, ...]) -> None:
    """pydot builds ``Node(name, **attrs)`` and ``Edge(src, dst, **attrs)``: it cannot take
    ``keys`` as attributes, nor a non-empty ``obj_dict`` (an empty one it drops)."""
    for key in keys:
        if key in attrs and (key != "obj_dict" or attrs[key] is not None):
            why = (" (Node() has an argument 'name'; to_dot writes the entity name as "
                   "'entity_name')" if key == "name" else "")
            raise _Fail(index, f"{what} attribute called {key!r} is refused: pydot cannot "
                        f"build this graph{why}", syntax=False)
    attrs.pop("obj_dict", None)


_NODE_KEYS = ("name", "obj_dict")
_EDGE_KEYS = ("src", "dst", "obj_dict")


class _Parser:
    """Recursive descent over a token list; ``i`` is the next token."""

    __slots__ = ("toks", "i", "shift")

    def __init__(self, toks: list[str]):
        self.toks = toks
        self.i = 0
        self.shift: dict[int, int] = {}  # token index -> characters already read of it

    # ------------------------------------------------------------------ ids and values
    def ident(self, i: int) -> tuple[str, str | None, int] | None:
        """``(as written, unquoted, next index)`` of the id at ``i``, or None."""
        toks = self.toks
        t = toks[i]
        if not t:
            return None
        c = t[0]
        if c == '"':
            nxt = toks[i + 1]
            if not nxt:  # a string never closed runs to the end (a closed one there ends
                return None  # a text that is not DOT: a graph ends with "}" or ";")
            if nxt != "+" and "\\" not in t:  # the common case
                return t, t[1:-1], i + 1
            raw = _joined(t)
            if nxt == "+" and toks[i + 2][:1] == '"' and toks[i + 3]:
                inner = [raw[1:-1]]
                j = i + 1
                while toks[j] == "+" and toks[j + 1][:1] == '"' and toks[j + 2]:
                    inner.append(_joined(toks[j + 1])[1:-1])
                    j += 2
                raw = '"' + "".join(inner) + '"'
                return raw, unquote(raw), j
            return raw, unquote(raw), i + 1
        if c == "<":
            return (t, t, i + 1) if len(t) > 1 else None
        if c.isalnum() or c == "_" or c == ".":
            return t, t, i + 1
        return None

    def node_id(self, raw: str, value: str | None, j: int) -> tuple[str, str | None, int]:
        """An id extended by up to two ports ``:p``."""
        toks = self.toks
        if toks[j] != ":":
            return raw, value, j
        parts = [raw]
        while toks[j] == ":" and len(parts) < 3:
            nxt = self.ident(j + 1)
            if nxt is None:
                break
            parts.append(nxt[0])
            j = nxt[2]
        if len(parts) == 1:
            return raw, value, j
        raw = ":".join(parts)
        return raw, unquote(raw), j

    def value(self, i: int) -> tuple[str | None, int]:
        """The value after ``=``: a number or an id."""
        toks = self.toks
        t = toks[i]
        c = t[:1]
        if c == "-" and len(t) > 1 and t not in _EDGE_OPS:
            return t, i + 1
        if c in _NUMBER_START:
            n = _NUMBER.match(t).end()
            if n < len(t):  # "1abc": the number 1, then "abc" is read on its own
                self.toks[i] = t[n:]
                self.shift[i] = self.shift.get(i, 0) + n
                return t[:n], i
            return t, i + 1
        nxt = self.ident(i)
        if nxt is None:
            raise _Fail(i, f"expected a value after '=', found {_describe(t)}")
        return nxt[1], nxt[2]

    def attr_lists(self, j: int) -> dict[str, str | None]:
        """``[k=v, ...] [...]`` from ``j`` (a ``"["``); leaves ``i`` after the last ``]``."""
        toks = self.toks
        attrs: dict[str, str | None] = {}
        while toks[j] == "[":
            j += 1
            while toks[j] != "]":
                key = self.ident(j)
                if key is None:
                    raise _Fail(j, f"expected an attribute or ']', found {_describe(toks[j])}")
                j = key[2]
                if toks[j] == "=":
                    val, j = self.value(j + 1)
                else:
                    val = None
                attrs[key[0]] = val
                if toks[j] == ",":
                    j += 1
            j += 1
        self.i = j
        return attrs

    def graphs(self) -> list[DotGraph]:
        out: list[DotGraph] = []
        while True:
            if not self.toks[self.i] and out:
                return out
            out.append(self.top())

    def top(self) -> DotGraph:
        toks = self.toks
        i = self.i
        t = toks[i]
        low = t.lower()
        strict = low.startswith("strict")
        if strict:
            t = t[6:]
            if not t:
                i += 1
                t = toks[i]
            low = t.lower()
        if t[:1] == '"' or not (low.startswith("digraph") or low.startswith("graph")):
            raise _Fail(i, f"expected 'graph' or 'digraph', found {_describe(toks[i])}")
        directed = low.startswith("digraph")
        name = t[7:] if directed else t[5:]
        name, i = self.named(name, i + 1)
        if toks[i] != "{":
            raise _Fail(i, f"expected '{{' to open the graph, found {_describe(toks[i])}")
        g = DotGraph(name, directed, strict)
        self.i = i
        self.body(g)
        return g

    def body(self, g: DotGraph) -> None:
        """``{ statements }`` and an optional ``;``, from ``i`` (a ``"{"``)."""
        toks = self.toks
        opened = self.i
        i = opened + 1
        while toks[i] != "}":
            if not toks[i]:
                raise _Fail(i, "expected '}' (the text ends inside braces)", opened=opened)
            self.i = i
            self.statement(g)
            i = self.i
            if toks[i] == ";":
                i += 1
        i += 1
        if toks[i] == ";":
            i += 1
        self.i = i

    def named(self, name: str, j: int) -> tuple[str, int]:
        """A keyword's id: the rest of its word, else the id at ``j`` unless ``{`` is there."""
        if not name and self.toks[j] != "{":
            nxt = self.ident(j)
            if nxt is not None:
                name, _, j = nxt
        return name, j

    def subgraph(self, i: int) -> DotGraph | None:
        """The subgraph ``{ ... }`` or ``subgraph [id] { ... }`` at ``i``, or None (a word
        starting with "subgraph" and no ``{`` is a node id)."""
        toks = self.toks
        t = toks[i]
        if t == "{":
            name, j = "", i
        elif t[:8].lower() == "subgraph" and t[0] not in '"<':
            name, j = self.named(t[8:], i + 1)
            if toks[j] != "{":
                return None
        else:
            return None
        sub = DotGraph(name)
        self.i = j
        self.body(sub)
        return sub

    def statement(self, g: DotGraph) -> None:
        toks = self.toks
        i = self.i
        t = toks[i]
        sub = self.subgraph(i)
        if sub is not None:
            if toks[self.i] in _EDGE_OPS:
                self.edges(g, sub, None, self.i, i)
            else:
                g.subgraphs.setdefault(sub.name, []).append(sub)
            return
        first = self.ident(i)
        if first is None:
            raise _Fail(i, f"expected a statement or '}}', found {_describe(t)}")
        raw, value, j = first
        if toks[j] == "=":  # key=value: a graph attribute
            val, self.i = self.value(j + 1)
            g.attrs[raw] = val
            return
        word = t[0] not in '"<'
        raw, value, j = self.node_id(raw, value, j)
        nxt = toks[j]
        if nxt in _EDGE_OPS:
            self.edges(g, raw, value, j, i)
            return
        attrs: dict[str, str | None] = {}
        if nxt == "[":
            attrs = self.attr_lists(j)
            _refuse(attrs, i, "a node", _NODE_KEYS)
            if j == i + 1 and word and t.lower() in _DEFAULTS:
                return  # a default statement: checked, dropped
            j = self.i
        if toks[j] == ";":
            j += 1
        self.i = j
        if raw[0] != '"' and ":" in raw:  # pydot's Node drops a port: "a:p" declares a
            k = raw.find(":")
            if 0 < k < len(raw) - 1:
                raw = value = raw[:k]
        g.nodes.setdefault(raw, []).append((value, attrs))

    def edges(self, g: DotGraph, raw, value: str | None, j: int, start: int) -> None:
        """An edge chain from the endpoint ``raw`` (a subgraph or an id), ``j`` at the
        first edge operator."""
        toks = self.toks
        points = [(raw, value)]
        while toks[j] in _EDGE_OPS:
            k = j + 1
            sub = self.subgraph(k)
            if sub is not None:
                points.append((sub, None))
                j = self.i
                continue
            nxt = self.ident(k)
            if nxt is None:
                raise _Fail(k, f"expected a node id after {toks[j]!r}, found {_describe(toks[k])}")
            r, v, j = self.node_id(*nxt)
            points.append((r, v))
        if toks[j] == "[":
            attrs = self.attr_lists(j)
            _refuse(attrs, start, "an edge", _EDGE_KEYS)
        else:
            attrs = {}
            self.i = j
        for (r0, v0), (r1, v1) in pairwise(points):
            g.edges.setdefault((r0, r1), []).append((v0, v1, attrs))


def _deepest(toks: list[str]) -> tuple[int, int]:
    """(deepest nesting of braces, index of the first ``{`` reaching it)."""
    depth = deepest = at = 0
    for k, t in enumerate(toks):
        if t == "{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, k
        elif t == "}":
            depth = max(depth - 1, 0)
    return deepest, at


def parse_graphs(text: str, max_depth: int | None = None) -> list[DotGraph]:
    """The graphs of a DOT text; text outside the language read here raises :class:`DotError`
    naming the line and column, and one nested deeper than ``max_depth`` braces (a graph's
    own count: a subgraph in it is depth 2) :class:`DotNestingError`, before it is parsed.

    Examples
    --------
    >>> (g,) = parse_graphs('digraph { a [label="x \\\\"y\\\\""]; a -> b -> c [label=r]; }')
    >>> g.nodes, [(s, d) for (s, d, _), in g.edges.values()]
    ({'a': [('a', {'label': 'x "y"'})]}, [('a', 'b'), ('b', 'c')])
    """
    toks = tokenize(text)
    if not text.isascii():
        for k, t in enumerate(toks):
            if t and (t[0].isalnum() or t[0] in "_.") and not t.isascii():
                bad = next((ch for ch in t if not _word_ok(ch)), None)
                if bad is not None:
                    line, col = _position(text, k, {})
                    col += t.index(bad)
                    raise DotError(f"character {bad!r} (U+{ord(bad):04X}) is not read in an id",
                                   line, col)
    if max_depth is not None and toks.count("{") > max_depth:
        depth, at = _deepest(toks)
        if depth > max_depth:
            line, col = _position(text, at, {})
            raise DotNestingError(depth, max_depth, line, col)
    toks.extend([""] * _PAD)
    parser = _Parser(toks)
    try:
        return parser.graphs()
    except _Fail as exc:
        line, col = _position(text, exc.index, parser.shift)
        what = exc.what
        if exc.opened is not None:
            what += f"; the '{{' of line {_position(text, exc.opened, {})[0]} is not closed"
        raise DotError(what, line, col, exc.syntax) from None
    except RecursionError:
        raise DotError("nested too deep to parse", 1, 1) from None
