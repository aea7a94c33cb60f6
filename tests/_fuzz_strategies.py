"""Hypothesis strategies for hostile inputs: PENMAN text, JSON Lines records, model files,
kernel parameters.  Shared by ``tests/test_fuzz_*.py``.

Budget: every fuzz test runs under :data:`FUZZ`, so the whole fuzz set adds well under a
minute to the suite; set ``STRUCTKERNELS_FUZZ_LONG=1`` for a longer local run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

settings.register_profile(
    "fuzz", max_examples=120, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz-long", max_examples=5000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("fuzz-long" if os.environ.get("STRUCTKERNELS_FUZZ_LONG") else "fuzz")

CONCEPTS = ["bind-01", "protein", "enzyme", "and", "activate-01", "name", "small-molecule"]
ROLES = ["ARG0", "ARG1", "ARG2", "op1", "op2", "mod", "consist-of", "purpose", "domain"]
labels = st.sampled_from(["a", "b", "x", "bind", "ARG0", "é", "δ", "\u2028", "\"q\"", "(", ":"])


@st.composite
def penman_graphs(draw, max_nodes: int = 12) -> str:
    """A well-formed AMR in PENMAN: nested nodes, inverted roles, re-entrancies, constants."""
    n = draw(st.integers(1, max_nodes))
    variables = [f"v{i}" for i in range(n)]
    parent = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    children: dict[int, list[int]] = {i: [] for i in range(n)}
    for i in range(1, n):
        children[parent[i]].append(i)

    def role() -> str:
        r = draw(st.sampled_from(ROLES))
        return f":{r}-of" if draw(st.booleans()) and r not in ("consist-of", "domain") else f":{r}"

    out: list[str] = []
    stack: list[tuple[int, bool]] = [(0, False)]
    while stack:
        i, closing = stack.pop()
        if closing:
            extras = []
            for _ in range(draw(st.integers(0, 2))):
                if draw(st.booleans()):
                    extras.append(f"{role()} {draw(st.sampled_from(variables))}")  # re-entrancy
                else:
                    value = draw(st.sampled_from(['"Ras"', "-", "2", '"a b"', "+"]))
                    extras.append(f":{draw(st.sampled_from(['polarity', 'op1', 'quant']))} {value}")
            out.append((" " + " ".join(extras) if extras else "") + ")")
            continue
        if i != 0:
            out.append(f" {role()} ")
        out.append(f"({variables[i]} / {draw(st.sampled_from(CONCEPTS))}")
        stack.append((i, True))
        stack.extend((c, False) for c in reversed(children[i]))
    return "".join(out)


@st.composite
def damaged(draw, text: str) -> bytes:
    """``text`` as UTF-8 with a few random edits: deletions, insertions of PENMAN
    punctuation, Latin-1 bytes, newlines, truncation."""
    data = bytearray(text.encode("utf-8"))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["del", "ins", "latin1", "nl", "cut"]))
        if op == "del" and data:
            del data[min(pos, len(data) - 1)]
        elif op == "ins":
            data[pos:pos] = draw(st.sampled_from([b"(", b")", b"/", b":", b'"', b"~", b"#", b" "]))
        elif op == "latin1":
            data[pos:pos] = bytes([draw(st.integers(0x80, 0xFF))])
        elif op == "nl":
            data[pos:pos] = b"\n"
        else:
            del data[pos:]
    return bytes(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | labels,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["label", "children", "path", "tree", "vector", "pair", "id"]), inner,
        max_size=3),
    max_leaves=12,
)


# ---------------------------------------------------------------- hostile lines and files
#: Lines no reader can take as a record: each must cost that line only.
HOSTILE_LINES = [
    b"[" * 200_000 + b"]" * 200_000,             # nested 200,000 deep
    b'{"a": ' * 5_000 + b"1" + b"}" * 5_000,     # deep objects
    b'{"label": NaN, "path": [[null, "a"]]}',     # non-finite
    b'{"vector": [1e999]}',                       # overflows to infinity
    b"9" * 5_000,                                 # an integer of more digits than Python takes
    b'{"id": "caf\xe9", "label": 1}',             # a Latin-1 byte
    b"\xff\xfe{\x00",                             # UTF-16 junk
    b'{"id": "a\\nb\\u2028c", "label": 7}',       # an id holding line breaks
    b"not json at all",
    b'{"unterminated": "',
]
hostile_lines = st.sampled_from(HOSTILE_LINES) | st.binary(min_size=1, max_size=40).filter(
    lambda b: b.strip() and b"\n" not in b and b"\r" not in b)


@st.composite
def dot_graphs(draw) -> str:
    """A small well-formed AMR graph in DOT (the NPK authors' layout)."""
    n = draw(st.integers(1, 5))
    lines = [f'"v{i}" [label="{draw(st.sampled_from(CONCEPTS))}"];' for i in range(n)]
    lines.append('TOP -> "v0" [label=TOP];')
    for i in range(1, n):
        lines.append(f'"v{draw(st.integers(0, i - 1))}" -> "v{i}" [label="{draw(st.sampled_from(ROLES))}"];')
    return "digraph {\n" + "\n".join(lines) + "\n}\n"


@st.composite
def conllu_sentences(draw, sent_id: str) -> str:
    """A well-formed CoNLL-U sentence with ``# sent_id``: 1-5 words, word 1 the root, each
    other word headed by an earlier one."""
    n = draw(st.integers(1, 5))
    rows = []
    for i in range(1, n + 1):
        head = 0 if i == 1 else draw(st.integers(1, i - 1))
        rel = "root" if i == 1 else draw(st.sampled_from(["nsubj", "obj", "nmod:poss", "dep"]))
        rows.append(f"{i}\tw{i}\tw{i}\tNOUN\t_\t_\t{head}\t{rel}\t_\t_")
    return f"# sent_id = {sent_id}\n# text = s\n" + "\n".join(rows) + "\n"
