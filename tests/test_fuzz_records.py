"""Fuzzing JSON Lines records, paths and trees: round trips hold at any depth, and bad
records give a clear error with the file and line, never a crash."""

from __future__ import annotations

import json
import pickle
import tempfile
from pathlib import Path as FilePath

from _fuzz_strategies import FUZZ, json_values, labels
from hypothesis import given
from hypothesis import strategies as st

from structkernels import Path, Tree
from structkernels.formats.structures import InputError, read_structures
from structkernels.structures import StructureError

edges = st.none() | labels
trees = st.recursive(
    st.builds(Tree, labels),
    lambda kids: st.builds(Tree, labels, st.lists(st.tuples(edges, kids), max_size=3)),
    max_leaves=20,
)


@st.composite
def deep_trees(draw) -> Tree:
    t = draw(trees)
    for _ in range(draw(st.integers(0, 600))):
        t = Tree(draw(labels), [(draw(edges), t)])
    return t


@FUZZ
@given(trees | deep_trees())
def test_tree_round_trips(t):
    assert Tree.from_json(t.to_json()) == t
    assert pickle.loads(pickle.dumps(t)) == t
    assert str(t) and repr(t)
    assert t.size == sum(1 for _ in t.preorder())


@FUZZ
@given(st.lists(st.tuples(edges, labels), min_size=1, max_size=50))
def test_path_round_trips(tuples):
    p = Path(tuples)
    assert Path.from_json(json.loads(json.dumps(p.to_json()))) == p


@FUZZ
@given(json_values)
def test_arbitrary_json_is_a_structure_or_a_structure_error(value):
    for cls in (Tree, Path):
        try:
            cls.from_json(value)
        except StructureError:
            pass


@FUZZ
@given(st.lists(json_values | st.text(max_size=20), min_size=1, max_size=5))
def test_jsonl_files_raise_only_input_errors_naming_file_and_line(records):
    with tempfile.TemporaryDirectory() as tmp:
        f = FilePath(tmp) / "x.jsonl"
        lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
        f.write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n")
        try:
            read_structures(f)
        except InputError as exc:
            assert str(f) in str(exc)
