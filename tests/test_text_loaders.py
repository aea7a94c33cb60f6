"""MSRP / RTE / GLUE loaders: real files, malformed records, lenient mode."""

from __future__ import annotations

import pytest

from structkernels.datasets.rewriting import (
    CorpusFormatError,
    load_glue_rte,
    load_msrp,
    load_rewritings,
    load_rte,
)

MSRP_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def test_msrp_bom_crlf_quotes(tmp_path):
    p = write(tmp_path / "m.txt", MSRP_HEADER
              + '1\t1\t2\tHe called him "the witness".\t"The witness", he said.\r\n'
              + "0\t3\t4\tA b.\tC d.\r\n")
    c = load_msrp(p)
    assert len(c) == 2 and c.labels.tolist() == [1, 0]
    assert c.sources[0] == 'He called him "the witness".'
    assert c.targets[0] == '"The witness", he said.'
    assert c.ids == ["1-2", "3-4"]
    assert load_rewritings(p).sources == c.sources


def test_msrp_malformed_strict_and_lenient(tmp_path):
    p = write(tmp_path / "m.txt", MSRP_HEADER + "1\t1\t2\tA.\tB.\r\n" + "x\t1\t2\tA.\tB.\r\n"
              + "1\t1\t2\tonly four\r\n")
    with pytest.raises(CorpusFormatError, match=r"m\.txt:3: Quality must be 0 or 1"):
        load_msrp(p)
    with pytest.warns(UserWarning, match="skipped 2"):
        c = load_msrp(p, strict=False)
    assert len(c) == 1
    assert [(line, reason.split(",")[0]) for _, line, reason in c.skipped] == [
        (3, "Quality must be 0 or 1"), (4, "expected 5 tab-separated fields")]


def test_msrp_bad_header(tmp_path):
    p = write(tmp_path / "m.txt", "a\tb\n1\t2\n")
    with pytest.raises(CorpusFormatError, match=":1: unexpected header"):
        load_msrp(p)


RTE1 = """<?xml version="1.0" encoding="UTF-8"?>
<entailment-corpus>
<pair id="8" value="FALSE" task="IR">
  <t>Crude oil  traded at $37.80 a barrel</t>
  <h>Oil prices rose</h>
</pair>
<pair id="13" value="TRUE" task="IR">
  <t>iTunes software has seen strong sales &amp; more.</t>
  <h>Strong sales for iTunes.</h>
</pair>
</entailment-corpus>
"""

RTE3 = """<?xml version="1.0" encoding="UTF-8" ?>
<entailment-corpus challenge="3">
  <pair id="1" entailment="YES" task="IE" length="short" >
    <t>A b c.</t>
    <h>A b.</h>
  </pair>
  <pair id="2" entailment="MAYBE" task="IE" length="short" >
    <t>A b c.</t>
    <h>A b.</h>
  </pair>
  <pair id="3" entailment="NO" task="IE" length="short" >
    <t>A b c.</t>
  </pair>
</entailment-corpus>
"""


def test_rte_value_and_entailment_attributes(tmp_path):
    c = load_rte(write(tmp_path / "r1.xml", RTE1))
    assert c.labels.tolist() == [0, 1] and c.ids == ["8", "13"]
    assert c.sources[0] == "Crude oil traded at $37.80 a barrel"
    assert c.sources[1].endswith("& more.")
    with pytest.raises(CorpusFormatError, match=r"r3\.xml:7: pair id='2'"):
        load_rte(write(tmp_path / "r3.xml", RTE3))
    with pytest.warns(UserWarning):
        c3 = load_rte(tmp_path / "r3.xml", strict=False)
    assert c3.labels.tolist() == [1]
    assert [line for _, line, _ in c3.skipped] == [7, 11]


def test_rte_broken_xml(tmp_path):
    p = write(tmp_path / "bad.xml", RTE1[:200])
    with pytest.raises(CorpusFormatError, match="XML parse error"):
        load_rte(p)


def test_glue_and_unknown_format(tmp_path):
    p = write(tmp_path / "g.tsv", "index\tsentence1\tsentence2\tlabel\n0\tA b.\tA.\tentailment\n"
              "1\tC \"d\".\tE.\tnot_entailment\n")
    c = load_glue_rte(p)
    assert c.labels.tolist() == [1, 0] and c.sources[1] == 'C "d".'
    u = write(tmp_path / "u.tsv", "index\tsentence1\tsentence2\n0\tA.\tB.\n")
    assert load_rewritings(u).labels.tolist() == [-1]
    with pytest.raises(CorpusFormatError, match="unknown corpus format"):
        load_rewritings(write(tmp_path / "x.tsv", "foo\tbar\n"))
    with pytest.raises(FileNotFoundError):
        load_rewritings(tmp_path / "missing.tsv")


def test_real_corpora_sizes(shared_data):
    msrp = shared_data / "msrp"
    tr = load_msrp(msrp / "msr_paraphrase_train.txt")
    te = load_msrp(msrp / "msr_paraphrase_test.txt")
    assert (len(tr), len(te)) == (4076, 1725)
    assert round(tr.labels.mean(), 3) == 0.675 and round(te.labels.mean(), 3) == 0.665
    rte = shared_data / "rte" / "nltk_rte"
    sizes = {f: len(load_rte(rte / f"{f}.xml")) for f in
             ("rte1_dev", "rte1_test", "rte2_dev", "rte2_test", "rte3_dev", "rte3_test")}
    assert sizes == {"rte1_dev": 567, "rte1_test": 800, "rte2_dev": 400, "rte2_test": 800,
                     "rte3_dev": 800, "rte3_test": 800}
    assert sum(v for k, v in sizes.items() if k != "rte3_test") == 3367
    glue = load_glue_rte(shared_data / "rte" / "glue_rte" / "train.tsv")
    assert len(glue) == 2490
