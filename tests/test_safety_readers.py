"""Issue 52, the readers' cases.

Case 12: a BioC collection without documents is an empty corpus, in XML as in JSON.
Case 10: an input that can be read only once (a named pipe) is read once: its format is
told from the bytes already read.  Case 7: two entity ids on one span make no candidate
pair; the pair is reported.  Case 14 (PubTator): a file over the annotation limits is
refused while memory stays within a small multiple of the limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import structkernels
from structkernels.formats.batches import iter_relations
from structkernels.formats.relations import read_relations, relation_format

ROOT = Path(structkernels.__file__).resolve().parents[1]


# ------------------------------------------------------------ case 12: empty collections
@pytest.mark.parametrize("name, text", [
    ("e.bioc.xml", "<collection/>"),
    ("e.xml", "<?xml version='1.0'?>\n<collection><source>x</source><date/></collection>\n"),
    ("e.bioc.json", '{"documents": []}'),
    ("e.json", '{"source": "x", "documents": []}'),
    ("e2.bioc.json", "[]"),
])
def test_case12_a_collection_without_documents_is_an_empty_corpus(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert relation_format(path) in ("bioc-xml", "bioc-json")
    corpus = read_relations(path)
    assert len(corpus) == 0 and corpus.files == [str(path)]
    assert [len(b) for b in iter_relations(path)] == []
    assert len(read_relations(path, on_error="skip")) == 0
