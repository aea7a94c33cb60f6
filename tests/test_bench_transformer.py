"""The transformer benchmark's entity markers (``benchmarks/bench_transformer.py``): the
text a candidate pair becomes must mark exactly its two entities, well nested, whatever
their order, nesting or overlap (the script itself needs PyTorch and is not run here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from structkernels.relations.corpus import Entity, Sentence

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("bench_transformer",
                                                      BENCHMARKS / "bench_transformer.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def _pair(text, spans_a, spans_b):
    def entity(eid, spans):
        return Entity(eid, spans, " ".join(text[a:b] for a, b in sorted(spans)))

    s = Sentence("s", text, "d", (entity("a", spans_a), entity("b", spans_b)))
    (pair,) = s.pairs()
    return pair


def test_markers_follow_the_text_order(bench):
    # the entity given first comes later in the text: it is E2
    pair = _pair("KinC binds Spo0A", ((11, 16),), ((0, 4),))
    assert bench.marked(pair) == "[E1] KinC [/E1] binds [E2] Spo0A [/E2]"


def test_nested_entities_are_well_nested(bench):
    # "IL-2 receptor" holds "IL-2": the outer opens first and closes last
    pair = _pair("IL-2 receptor binds", ((0, 13),), ((0, 4),))
    assert bench.marked(pair) == "[E1] [E2] IL-2 [/E2] receptor [/E1] binds"


def test_entities_ending_together_close_inner_first(bench):
    pair = _pair("the IL-2 receptor", ((4, 17),), ((9, 17),))
    assert bench.marked(pair) == "the [E1] IL-2 [E2] receptor [/E2] [/E1]"


def test_a_discontinuous_entity_is_marked_from_its_start_to_its_end(bench):
    pair = _pair("muscle and brain actin bind X", ((0, 6), (17, 22)), ((28, 29),))
    assert bench.marked(pair) == "[E1] muscle and brain actin [/E1] bind [E2] X [/E2]"
