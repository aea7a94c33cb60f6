"""Fuzzing the caches (issue 37, item 6): random damage to a parse, Gram or σ entry
(truncation, byte flips, appended bytes, the content's JSON types changed) never changes a
result and never raises: the run gives the clean run's result, with one warning naming the
entry when the damage is seen."""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path as FilePath

import numpy as np
import pytest
from _fuzz_strategies import FUZZ, json_values
from hypothesis import given
from hypothesis import strategies as st

from structkernels import Path
from structkernels.experiments._gram_files import RelationGrams
from structkernels.relations import Entity, Sentence
from structkernels.relations.models import NPK, PK
from structkernels.relations.parse import DependencyParser, load_pipeline


@st.composite
def damage(draw, blob: bytes) -> bytes:
    """``blob`` truncated, with bytes flipped, or with bytes appended."""
    how = draw(st.sampled_from(["truncate", "flip", "append", "replace"]))
    if how == "truncate":
        return blob[: draw(st.integers(0, max(len(blob) - 1, 0)))]
    if how == "append":
        return blob + draw(st.binary(min_size=1, max_size=16))
    if how == "replace":
        return draw(st.binary(max_size=64))
    out = bytearray(blob)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(out) - 1))
        out[i] ^= draw(st.integers(1, 255))
    return bytes(out)


@st.composite
def retyped(draw, blob: bytes) -> bytes:
    """The entry's content (the JSON after its header line) with one value replaced by
    arbitrary JSON, the header kept."""
    head, _, body = blob.partition(b"\n")
    doc = json.loads(body)
    if isinstance(doc, dict) and doc:
        key = draw(st.sampled_from(sorted(doc)))
        value = doc[key]
        if isinstance(value, list) and value and draw(st.booleans()):
            value = list(value)
            value[draw(st.integers(0, len(value) - 1))] = draw(json_values)
        else:
            value = draw(json_values)
        doc = {**doc, key: value}
    else:
        doc = draw(json_values)
    return head + b"\n" + json.dumps(doc).encode()


def _cache_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "cache" in str(w.message)]


# ------------------------------------------------------------------ parses
@pytest.fixture(scope="module")
def parse_case():
    pytest.importorskip("spacy", reason="spaCy (extra 'parse') is not installed")
    try:
        nlp = load_pipeline()
    except ValueError as exc:
        pytest.skip(f"no English spaCy pipeline (extra 'parse'): {exc}")
    text = "KinC and KinD activate the transcription of Spo0A in cells."
    s = Sentence("s1", text, "d1", (Entity("e0", ((0, 4),), "KinC"),
                                    Entity("e1", ((44, 49),), "Spo0A")))
    folder = FilePath(tempfile.mkdtemp(prefix="fuzz-parse-"))
    parser = DependencyParser(cache_dir=folder, progress=False)
    parser._nlp = nlp
    [clean] = parser.parse([s])
    [entry] = (folder / "parses").rglob("*.json")
    yield nlp, s, folder, entry, entry.read_bytes(), clean
    shutil.rmtree(folder, ignore_errors=True)


def _same_parse(a, b) -> bool:
    return (sorted(a.graph.graph.edges(data="role")) == sorted(b.graph.graph.edges(data="role"))
            and a.entities == b.entities and a.token_spans == b.token_spans)


def _check_parse(case, blob: bytes) -> None:
    nlp, s, folder, entry, good, clean = case
    entry.write_bytes(blob)
    parser = DependencyParser(cache_dir=folder, progress=False)
    parser._nlp = nlp
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [again] = parser.parse([s])
    assert _same_parse(again, clean)
    _one_warning_and_rewritten(caught, entry, blob, good)


def _one_warning_and_rewritten(caught, entry: FilePath, blob: bytes, good: bytes) -> None:
    """One warning naming the entry and the entry rewritten, unless the damage left an
    equivalent entry (white space in the header): then it was read as it is."""
    said = _cache_warnings(caught)
    assert len(said) <= 1 and all(entry.name in m and "\n" not in m for m in said), said
    if blob == good:
        assert not said
    if said:
        assert entry.read_bytes() == good  # rewritten


@FUZZ
@given(st.data())
def test_a_damaged_parse_entry_gives_the_clean_parse(parse_case, data):
    _check_parse(parse_case, data.draw(damage(parse_case[4])))


@FUZZ
@given(st.data())
def test_a_retyped_parse_entry_gives_the_clean_parse(parse_case, data):
    _check_parse(parse_case, data.draw(retyped(parse_case[4])))


# ------------------------------------------------------------------ Grams and σ
def _items() -> list[dict]:
    edges = ["nsubj-of", "conj", "dobj", "amod"]
    return [{"path": Path([(None, "PROT1"), (edges[i % 4], ["bind", "see"][i % 2]),
                           ("dobj", "PROT2")])} for i in range(8)]


@pytest.fixture(scope="module")
def gram_case():
    folder = FilePath(tempfile.mkdtemp(prefix="fuzz-gram-"))
    items = _items()
    clean = RelationGrams(items, 1, folder).get("path", PK.normalized())
    [entry] = (folder / "grams").glob("*.npy")
    yield items, folder, entry, entry.read_bytes(), clean
    shutil.rmtree(folder, ignore_errors=True)


@FUZZ
@given(st.data())
def test_a_damaged_gram_entry_gives_the_clean_gram(gram_case, data):
    items, folder, entry, good, clean = gram_case
    if data.draw(st.booleans()):
        blob = data.draw(damage(good))
    else:  # another finite matrix of the same shape
        n = len(items)
        other = np.asarray(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=n * n,
                                              max_size=n * n))).reshape(n, n)
        with tempfile.TemporaryFile() as fh:
            np.save(fh, other)
            fh.seek(0)
            blob = fh.read()
    entry.write_bytes(blob)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        K = RelationGrams(items, 1, folder).get("path", PK.normalized())
    assert np.array_equal(K, clean)
    _one_warning_and_rewritten(caught, entry, blob, good)


@pytest.fixture(scope="module")
def sigma_case():
    folder = FilePath(tempfile.mkdtemp(prefix="fuzz-sigma-"))
    items = _items()
    part = NPK
    train, y = np.arange(6), np.array([1, 0, 1, 0, 1, 0, 0, 0])
    learned = {"sigma": {"conj": 0.0, "dobj": 0.25}, "lam": 0.7}
    grams = RelationGrams(items, 1, folder)
    assert grams.sigma(part, train, y, {"random_state": 0}, lambda: dict(learned)) == learned
    [entry] = (folder / "grams").glob("sigma-*.json")
    yield items, folder, entry, entry.read_bytes(), (part, train, y, learned)
    shutil.rmtree(folder, ignore_errors=True)


@FUZZ
@given(st.data())
def test_a_damaged_sigma_entry_gives_the_learned_sigma(sigma_case, data):
    items, folder, entry, good, (part, train, y, learned) = sigma_case
    blob = data.draw(damage(good) | retyped(good))
    entry.write_bytes(blob)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sigma = RelationGrams(items, 1, folder).sigma(part, train, y, {"random_state": 0},
                                               lambda: dict(learned))
    assert sigma == learned
    _one_warning_and_rewritten(caught, entry, blob, good)
