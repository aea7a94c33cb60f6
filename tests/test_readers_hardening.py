"""Regression tests for issue 23, items 9-11 and the reader cases of "also seen": lenient modes
cost only the bad record, errors are one line naming the file and the line, ids never collide
silently, input limits hold (depth, size, gzip, byte-order mark, bytes that are not UTF-8)."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest

from structkernels.cli import main
from structkernels.formats.structures import InputError, read_structures
from structkernels.registry import PluginWarning, readers
from structkernels.structures import Path
from structkernels.utils import BadLine, RecordError, iter_lines, loads_record

DEEP = 200_000


# ------------------------------------------------------------------ the record decoder
def test_loads_record_refuses_deep_nesting_without_recursion():
    with pytest.raises(RecordError, match=r"^f, line 2: record nested 200000 levels deep"):
        loads_record("[" * DEEP + "]" * DEEP, where="f, line 2")
    with pytest.raises(RecordError, match="nested 200000 levels"):
        loads_record('{"a":' * DEEP + "1" + "}" * DEEP)
    # brackets inside strings do not count
    assert loads_record('{"a": "' + "[" * 5000 + '"}') == {"a": "[" * 5000}


def test_loads_record_refuses_size_non_finite_and_huge_integers():
    with pytest.raises(RecordError, match="max_bytes=10"):
        loads_record('"' + "x" * 20 + '"', max_bytes=10)
    for text in ("NaN", "[Infinity]", "[-Infinity]", "[1e400]"):
        with pytest.raises(RecordError, match="non-finite|overflows"):
            loads_record(text)
    with pytest.raises(RecordError, match="not a usable JSON record"):
        loads_record("1" * 5000)
    with pytest.raises(RecordError, match=r"not valid JSON \(Expecting value, column 1\)"):
        loads_record("")


def test_iter_lines_bom_crlf_u2028_latin1_and_long_lines(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_bytes(b'\xef\xbb\xbf"a"\r\n"b\xe2\x80\xa8c"\n"caf\xe9"\n' + b"x" * 100 + b"\n\n  \n\"z\"")
    got = list(iter_lines(f, max_bytes=50))
    assert got[:2] == [(1, '"a"'), (2, '"b\u2028c"')]  # U+2028 is not a line end
    assert got[2][0] == 3 and isinstance(got[2][1], BadLine) and "0xe9" in got[2][1].reason
    assert got[3][0] == 4 and "line of 101 bytes" in got[3][1].reason
    assert got[4] == (7, '"z"')


def test_iter_lines_truncated_gzip_keeps_the_lines_before(tmp_path):
    f = tmp_path / "x.jsonl.gz"
    data = gzip.compress(b"".join(b'{"n": %d}\n' % i for i in range(2000)))
    f.write_bytes(data[: len(data) // 2])
    got = list(iter_lines(f))
    good = [t for _, t in got if isinstance(t, str)]
    assert len(good) > 100 and good == [json.dumps({"n": i}) for i in range(len(good))]
    assert isinstance(got[-1][1], BadLine) and "truncated" in got[-1][1].reason
    assert got[-1][0] == len(good) + 1 or got[-1][0] == len(good) + 2


# ------------------------------------------------------------------ read_structures
def test_read_structures_deep_record_is_one_line_naming_file_and_line(tmp_path):
    f = tmp_path / "deep.jsonl"
    f.write_text('{"vector": [1, 2]}\n' + '{"tree": ' * DEEP + "1" + "}" * DEEP + "\n")
    with pytest.raises(InputError) as err:
        read_structures(f)
    msg = str(err.value)
    assert msg.startswith(f"{f}, line 2: record nested") and "\n" not in msg


def test_read_structures_bom_gzip_and_bools(tmp_path):
    f = tmp_path / "v.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"vector": [1, 2]}\r\n[3, 4]\n')
    assert read_structures(f).structures.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    g = tmp_path / "v.jsonl.gz"
    g.write_bytes(gzip.compress(f.read_bytes()))
    assert read_structures(g).structures.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    for bad in ("[true, false]", '{"vector": [1, true]}'):
        f.write_text(bad + "\n")
        with pytest.raises(InputError, match=r"line 1: .*(list of numbers|true/false)"):
            read_structures(f)


def test_read_structures_refuses_nan_naming_the_line(tmp_path):
    f = tmp_path / "v.jsonl"
    f.write_text('[1, 2]\n[NaN, 2]\n')
    with pytest.raises(InputError, match=r"v\.jsonl, line 2: non-finite number NaN"):
        read_structures(f)


# ------------------------------------------------------------------ reader plugins
def _reader_plugin(root, dist: str, names: list[str]) -> None:
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = ["[structkernels.readers]"] + [f"{n} = {dist.replace('-', '_')}:read" for n in names]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    (root / f"{dist.replace('-', '_')}.py").write_text("def read(value):\n    return [9.0, 9.0]\n")


@pytest.fixture
def plugin_readers(tmp_path, monkeypatch):
    def install(names):
        _reader_plugin(tmp_path / "site", "structkernels-shadow", names)
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
        readers.refresh()

    yield install
    monkeypatch.undo()
    readers.refresh()


def test_reader_plugin_named_like_a_builtin_key_does_not_break_builtins(tmp_path, plugin_readers):
    (tmp_path / "site").mkdir()
    plugin_readers(["path", "id"])
    f = tmp_path / "p.jsonl"
    f.write_text('{"id": 1, "path": [[null, "bind"], ["ARG0", "Ras"]]}\n'
                 '{"id": 2, "path": [[null, "bind"]]}\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sf = read_structures(f)
    assert sf.kind == "path" and len(sf.structures) == 2  # old: "found ['path', 'id']"
    assert any(
        issubclass(w.category, PluginWarning) and "structkernels-shadow:path" in str(w.message)
        for w in caught
    )
    # the shadowed plugin stays reachable under its qualified key
    f.write_text('{"structkernels-shadow:path": "x"}\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        assert read_structures(f).structures == [[9.0, 9.0]]


# ------------------------------------------------------------------ load_interactions
def _record(i: int, **extra) -> dict:
    return {"id": f"r{i}", "path": [[None, "bind"], ["ARG0", f"p{i}"]],
            "tree": {"label": "bind", "children": [["ARG0", {"label": f"p{i}"}]]},
            "label": i % 2, **extra}


def _compact(rec: dict) -> str:
    return json.dumps(rec, separators=(",", ":"))


def test_load_interactions_split_keeps_records_with_a_nested_split_key(tmp_path):
    from structkernels.datasets import load_interactions

    f = tmp_path / "d.jsonl"
    recs = [_record(0, meta={"split": "test"}, split="train"),
            _record(1, interaction={"node": "b", "split": "test"}),
            _record(2, split="test")]
    f.write_text("".join(_compact(r) + "\n" for r in recs))
    train = load_interactions(f, split="train")
    full = load_interactions(f)
    expected = [r["id"] for r in full.records if r["split"] == "train"]
    assert "r0" in expected
    assert [r["id"] for r in train.records] == expected  # old: r0 (nested "split") dropped
    assert [r["id"] for r in load_interactions(f, split="test").records] == [
        r["id"] for r in full.records if r["split"] == "test"]


def test_load_interactions_bad_split_value_is_an_error_with_split_given(tmp_path):
    from structkernels.datasets import InteractionFormatError, load_interactions

    f = tmp_path / "d.jsonl"
    f.write_text(_compact(_record(0, split="train")) + "\n" + _compact(_record(1, split="dev")) + "\n")
    with pytest.raises(InteractionFormatError, match=r"line 2 \(record r1\): split must be"):
        load_interactions(f, split="train")


def test_load_interactions_lenient_keeps_every_good_record_around_bad_lines(tmp_path):
    from structkernels.datasets import InteractionFormatError, load_interactions

    f = tmp_path / "d.jsonl"
    lines = [b"\xef\xbb\xbf" + _compact(_record(0)).encode(),      # byte-order mark
             ("[" * DEEP + "]" * DEEP).encode(),                   # 200,000 deep
             _compact(_record(2)).encode()[:-2] + b"\xe9\"}",        # a Latin-1 byte
             _compact(_record(3)).encode(),
             b'{"id": "a\\nb", "path": [[null, "a"]], "tree": {"label": "a"}, '
             b'"label": 7}',                                        # an id with a newline
             _compact(_record(5, sentence="x\u2028y")).encode(),     # U+2028 inside a record
             b'{"id": "n", "label": NaN}']
    f.write_bytes(b"\n".join(lines) + b"\n")
    data = load_interactions(f, on_error="skip")
    assert [r["id"] for r in data.records] == ["r0", "r3", "r5"]
    assert [(s.line, s.record_id) for s in data.skipped] == [
        (2, None), (3, None), (5, "a\nb"), (7, None)]
    assert "nested 200000 levels" in data.skipped[0].reason
    assert "not UTF-8" in data.skipped[1].reason and "NaN" in data.skipped[3].reason
    for s in data.skipped:
        assert "\n" not in str(s) and str(s).startswith(f"{f}, line {s.line}")
    with pytest.raises(InteractionFormatError) as err:
        load_interactions(f)
    assert str(err.value).startswith(f"{f}, line 2: record nested 200000") and "\n" not in str(err.value)
    f.write_bytes(lines[4] + b"\n")
    with pytest.raises(InteractionFormatError, match=r"line 1 \(record a b\): label must be"):
        load_interactions(f)


def test_load_interactions_truncated_gzip_costs_only_the_end(tmp_path):
    from structkernels.datasets import InteractionFormatError, load_interactions

    f = tmp_path / "d.jsonl.gz"
    data = gzip.compress("".join(_compact(_record(i)) + "\n" for i in range(3000)).encode())
    f.write_bytes(data[: int(len(data) * 0.6)])
    got = load_interactions(f, on_error="skip")
    assert len(got) > 100 and [r["id"] for r in got.records] == [f"r{i}" for i in range(len(got))]
    assert "truncated" in got.skipped[-1].reason
    with pytest.raises(InteractionFormatError, match=r"d\.jsonl\.gz, line \d+: .*truncated"):
        load_interactions(f)


# ------------------------------------------------------------------ MSRP / GLUE / RTE
MSRP_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"


def test_msrp_and_glue_keep_u2028_inside_a_sentence(tmp_path):
    from structkernels.datasets.rewriting import load_glue_rte, load_msrp, load_rewritings

    f = tmp_path / "msr.txt"
    f.write_text(MSRP_HEADER + "1\t1\t2\tRas binds\u2028Raf.\tRaf\u0085binds Ras.\r\n"
                 "0\t3\t4\tA b.\tC d.\r\n", encoding="utf-8")
    c = load_msrp(f)  # old: the U+2028 line break made a row of 4 fields and a row of 2
    assert c.sources == ["Ras binds\u2028Raf.", "A b."] and c.targets[0] == "Raf\u0085binds Ras."
    assert load_rewritings(f).ids == ["1-2", "3-4"]
    g = tmp_path / "glue.tsv"
    g.write_text("index\tsentence1\tsentence2\tlabel\n0\ta\u2028b\tc\tentailment\n", encoding="utf-8")
    assert load_glue_rte(g).sources == ["a\u2028b"]


def test_msrp_latin1_line_costs_only_that_line(tmp_path):
    from structkernels.datasets.rewriting import CorpusFormatError, load_msrp

    f = tmp_path / "msr.txt"
    f.write_bytes(MSRP_HEADER.encode() + b"1\t1\t2\tcaf\xe9 binds.\tx y.\r\n0\t3\t4\tA b.\tC d.\r\n")
    with pytest.warns(UserWarning, match="skipped 1"):
        c = load_msrp(f, strict=False)
    assert c.ids == ["3-4"] and c.skipped[0][1] == 2 and "not UTF-8" in c.skipped[0][2]
    with pytest.raises(CorpusFormatError, match=r"msr\.txt:2: not UTF-8 text \(.*0xe9"):
        load_msrp(f)


# ------------------------------------------------------------------ SRK memory budget
def test_memory_budget_takes_the_smallest_limit(monkeypatch):
    from structkernels.utils import _memory as srk

    monkeypatch.delenv(srk.MEMORY_BUDGET_ENV, raising=False)
    readings = {"_pages_bytes": 64 << 30, "_available_bytes": 32 << 30,
                "_rlimit_room": None, "_cgroup_room": None}
    for name, value in readings.items():
        monkeypatch.setattr(srk, name, lambda *_, v=value: v)  # physical memory: 64G
    assert srk.memory_budget() == 16 << 30
    monkeypatch.setattr(srk, "_rlimit_room", lambda: 3 << 30)  # ulimit -v: old budget ignored it
    assert srk.memory_budget() == (3 << 30) // 2
    monkeypatch.setattr(srk, "_cgroup_room", lambda: 1 << 30)  # a container's memory.max
    assert srk.memory_budget() == 512 << 20
    for name in readings:
        monkeypatch.setattr(srk, name, lambda *_: None)
    assert srk.memory_budget() == 8 << 30
    monkeypatch.setenv(srk.MEMORY_BUDGET_ENV, "64M")  # explicit wins
    assert srk.memory_budget() == 64 << 20


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_cgroup_limit_files_are_read(tmp_path, monkeypatch, version):
    from structkernels.utils import _memory as srk

    proc = tmp_path / "cgroup"
    if version == "v2":
        proc.write_text("0::/job/42\n")
        own = tmp_path / "job" / "42"
        own.mkdir(parents=True)
        (own / "memory.max").write_text("4294967296\n")
        (own / "memory.current").write_text("1073741824\n")
    else:
        proc.write_text("4:memory:/job\n1:cpu:/\n")
        (tmp_path / "memory").mkdir()
        (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        (tmp_path / "memory" / "job").mkdir()
        (tmp_path / "memory" / "job" / "memory.limit_in_bytes").write_text("4294967296\n")
        (tmp_path / "memory" / "job" / "memory.usage_in_bytes").write_text("1073741824\n")
    monkeypatch.setattr(srk, "_CGROUP_ROOT", str(tmp_path))
    monkeypatch.setattr(srk, "_PROC_CGROUP", str(proc))
    assert srk._cgroup_room() == 3 << 30
    monkeypatch.delenv(srk.MEMORY_BUDGET_ENV, raising=False)
    assert srk.memory_budget() <= (3 << 30) // 2
    (tmp_path / "job" / "42" / "memory.max" if version == "v2"
     else tmp_path / "memory" / "job" / "memory.limit_in_bytes").write_text("max\n")
    assert srk._cgroup_room() is None


# ------------------------------------------------------------------ PENMAN: ids, files
def test_penman_duplicate_id_strict_names_both_places_lenient_lists_it(tmp_path):
    from structkernels.amr import AMRFormatError, read_amr

    a, b = tmp_path / "a.amr", tmp_path / "b.amr"
    a.write_text("# ::id x\n(p / protein)\n")
    b.write_text("# ::id y\n(g / gene)\n\n# ::id x\n(e / enzyme)\n")
    with pytest.raises(AMRFormatError) as err:  # old: the second 'x' was dropped silently
        read_amr([a, b])
    assert str(err.value) == (
        f"{b}, line 4: graph 'x': duplicate id: the graph at {a}, line 1 has it too")
    c = read_amr([a, b], on_error="skip")
    assert [g.id for g in c] == ["x", "y"]
    assert [(s.file, s.line, s.graph_id) for s in c.skipped] == [(str(b), 4, "x")]
    assert str(a) in c.skipped[0].reason
    kept = read_amr([a, b], deduplicate=False)
    assert [g.id for g in kept] == ["x", "y", "x#2"] and kept.get("x#2").sentence == ""
    assert kept.get("x#2").graph.graph["id"] == "x#2" and len(kept.duplicates) == 1


def test_penman_fallback_ids_never_collide(tmp_path):
    from structkernels.amr import read_amr

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    a, b = tmp_path / "one" / "s.amr", tmp_path / "two" / "s.amr"
    a.write_text("(p / protein)\n")
    b.write_text("(g / gene)\n\n# ::id s.amr:1\n(e / enzyme)\n")
    c = read_amr([a, b])  # old: both graphs got 's.amr:1'
    assert [g.id for g in c] == [f"{a}:1", f"{b}:1", "s.amr:1"]
    assert all(not g.id_given for g in c.graphs[:2]) and c.graphs[2].id_given
    c2 = read_amr([b, a])  # a derived id taken by a given one gets a suffix
    assert [g.id for g in c2][:1] == [f"{b}:1"]
    single = tmp_path / "s.amr"
    single.write_text("# ::id s.amr:4\n(p / protein)\n\n(g / gene)\n")
    assert [g.id for g in read_amr(single)] == ["s.amr:4", "s.amr:4#2"]


def test_penman_truncated_gzip_and_unreadable_file_cost_only_themselves(tmp_path):
    from structkernels.amr import AMRFormatError, read_amr

    f = tmp_path / "c.amr.gz"
    text = "".join(f"# ::id g{i}\n(p{i} / protein :name (n / name :op1 \"P{i}\"))\n\n"
                   for i in range(400))
    data = gzip.compress(text.encode())
    f.write_bytes(data[: len(data) // 2])
    c = read_amr(f, on_error="skip")
    assert len(c) > 20 and [g.id for g in c] == [f"g{i}" for i in range(len(c))]
    assert "truncated" in c.skipped[-1].reason
    with pytest.raises(AMRFormatError, match=r"c\.amr\.gz, line \d+"):
        read_amr(f)
    good = tmp_path / "good.amr"
    good.write_text("# ::id z\n(p / protein)\n")
    gone = tmp_path / "gone.amr"
    c = read_amr([gone, good], on_error="skip")  # e.g. removed between listing and reading
    assert [g.id for g in c] == ["z"] and c.skipped[0].file == str(gone)
    assert str(c.skipped[0]) == f"{gone}: cannot read the file (No such file or directory)"
    with pytest.raises(FileNotFoundError):
        read_amr([gone, good])


# ------------------------------------------------------------------ read_graphs: folders
DOT_GRAPH = 'digraph { b [label="bind-01"]; "p Ras" [label=Ras]; b -> "p Ras" [label=ARG1]; }\n'
CONLLU = ("# sent_id = {sid}\n# text = Ras binds Raf\n"
          "1\tRas\tRas\tPROPN\t_\t_\t2\tnsubj\t_\t_\n"
          "2\tbinds\tbind\tVERB\t_\t_\t0\troot\t_\t_\n"
          "3\tRaf\tRaf\tPROPN\t_\t_\t2\tobj\t_\t_\n\n")


def test_read_graphs_folder_of_dot_with_a_readme_reads_the_graphs(tmp_path):
    pytest.importorskip("pydot")
    from structkernels.graphs import read_graphs

    for name in ("s1", "s2"):
        (tmp_path / f"{name}.dot").write_text(DOT_GRAPH)
    (tmp_path / "README.txt").write_text("DOT graphs of two sentences.\nSee the paper.\n")
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / ".hidden.txt").write_text("x\n")
    for mode in ("raise", "skip"):  # old: the README was read as PENMAN and ended the read
        c = read_graphs(tmp_path, on_error=mode)
        assert [g.id for g in c] == ["s1", "s2"]
        assert [(s.file, s.line) for s in c.skipped] == [
            (str(tmp_path / "README.txt"), 0), (str(tmp_path / "notes.md"), 0)]
        assert str(c.skipped[0]).startswith(f"{tmp_path / 'README.txt'}: not a graph file")
    # a .txt that opens a PENMAN graph (the Bio AMR releases) is read
    (tmp_path / "bio.txt").write_text("# AMR release (header)\n\n# ::id a1\n(p / protein)\n")
    assert [g.id for g in read_graphs(tmp_path)] == ["s1", "s2", "a1"]


def test_read_graphs_file_removed_while_reading_costs_only_that_file(tmp_path, monkeypatch):
    import structkernels.formats.graphs as gio

    (tmp_path / "a.amr").write_text("# ::id a\n(p / protein)\n")
    (tmp_path / "b.amr").write_text("# ::id b\n(g / gene)\n")
    (tmp_path / "c.conllu").write_text(CONLLU.format(sid="c"))
    (tmp_path / "d.conllu").write_text(CONLLU.format(sid="d"))
    listing = gio._folder_files

    def listed_then_removed(folder, fmt):
        out = listing(folder, fmt)
        (tmp_path / "b.amr").unlink()
        (tmp_path / "d.conllu").unlink()
        return out

    monkeypatch.setattr(gio, "_folder_files", listed_then_removed)
    c = gio.read_graphs(tmp_path, on_error="skip")
    assert [g.id for g in c] == ["c", "a"] or [g.id for g in c] == ["a", "c"]
    assert sorted(s.file for s in c.skipped) == [str(tmp_path / "b.amr"), str(tmp_path / "d.conllu")]
    assert all("cannot read the file" in s.reason for s in c.skipped)
    (tmp_path / "b.amr").write_text("# ::id b\n(g / gene)\n")
    (tmp_path / "d.conllu").write_text(CONLLU.format(sid="d"))
    with pytest.raises(OSError, match="No such file"):
        gio.read_graphs(tmp_path)


def test_read_graphs_ids_unique_across_files_and_formats(tmp_path):
    from structkernels.graphs import GraphFormatError, read_graphs

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "x.amr").write_text("(p / protein)\n")
    (tmp_path / "two" / "x.amr").write_text("(g / gene)\n")
    c = read_graphs(tmp_path)  # old: both 'x.amr:1'
    assert len({g.id for g in c}) == 2 == len(c)
    (tmp_path / "s.conllu").write_text(CONLLU.format(sid="dup"))
    (tmp_path / "one" / "d.amr").write_text("# ::id dup\n(e / enzyme)\n")
    with pytest.raises(GraphFormatError) as err:
        read_graphs(tmp_path)
    msg = str(err.value)
    assert "duplicate id" in msg and "s.conllu" in msg and "d.amr" in msg
    c = read_graphs(tmp_path, on_error="skip")
    assert sorted(g.id for g in c).count("dup") == 1 and len(c) == 3
    assert [s.graph_id for s in c.skipped] == ["dup"]


# ------------------------------------------------------------------ CoNLL-U
def test_conllu_latin1_byte_costs_only_its_sentence(tmp_path):
    from structkernels.graphs import GraphFormatError, read_conllu

    f = tmp_path / "p.conllu"
    bad = CONLLU.format(sid="s2").replace("Raf\tRaf", "Raf\tR\u00e9f").encode("latin-1")
    f.write_bytes(CONLLU.format(sid="s1").encode() + bad + CONLLU.format(sid="s3").encode())
    c = read_conllu(f, on_error="skip")  # old: the whole file failed ("not UTF-8 text")
    assert [g.id for g in c] == ["s1", "s3"]
    assert [(s.line, s.graph_id) for s in c.skipped] == [(11, "s2")]
    assert "0xe9" in c.skipped[0].reason
    with pytest.raises(GraphFormatError, match=r"p\.conllu, line 11: graph 's2': not UTF-8 text"):
        read_conllu(f)


def test_conllu_bom_and_duplicate_sent_id(tmp_path):
    from structkernels.graphs import GraphFormatError, read_conllu

    f = tmp_path / "p.conllu"
    f.write_bytes(b"\xef\xbb\xbf" + CONLLU.format(sid="s1").encode())
    assert [g.id for g in read_conllu(f)] == ["s1"]  # old: the BOM broke the first sentence
    f.write_text(CONLLU.format(sid="s1") + CONLLU.format(sid="s2") + CONLLU.format(sid="s1"))
    with pytest.raises(GraphFormatError) as err:  # old: two graphs 's1', get() found one
        read_conllu(f)
    assert str(err.value) == (
        f"{f}, line 13: graph 's1': duplicate id: the graph at {f}, line 1 has it too")
    c = read_conllu(f, on_error="skip")
    assert [g.id for g in c] == ["s1", "s2"] and [s.line for s in c.skipped] == [13]


def test_conllu_truncated_gzip(tmp_path):
    from structkernels.graphs import read_conllu

    f = tmp_path / "p.conllu.gz"
    data = gzip.compress("".join(CONLLU.format(sid=f"s{i}") for i in range(500)).encode())
    f.write_bytes(data[: len(data) // 2])
    c = read_conllu(f, on_error="skip")
    assert len(c) > 10 and [g.id for g in c] == [f"s{i}" for i in range(len(c))]
    assert "truncated" in c.skipped[-1].reason


# ------------------------------------------------------------------ DOT
def test_dot_bom_latin1_deep_subgraphs_and_ids_across_folders(tmp_path):
    pytest.importorskip("pydot")
    from structkernels.graphs import GraphFormatError, read_dot

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "s1.dot").write_bytes(b"\xef\xbb\xbf" + DOT_GRAPH.encode())  # old: a syntax error
    (b / "s1.dot").write_text(DOT_GRAPH)
    (a / "lat.dot").write_bytes(DOT_GRAPH.replace("Ras", "R\u00e9s").encode("latin-1"))
    deep = a / "deep.dot"
    deep.write_text("digraph {\n" + "subgraph {\n" * 50 + "a;\n" + "}\n" * 51)
    c = read_dot([a, b], on_error="skip")
    assert [g.id for g in c] == ["s1", "s1#2"]  # old: two graphs called 's1'
    assert [(s.graph_id, s.line) for s in c.skipped] == [("deep", 51), ("lat", 1)]
    assert "nested 51 levels" in c.skipped[0].reason and "0xe9" in c.skipped[1].reason
    with pytest.raises(GraphFormatError) as err:  # old: pydot ran for ever (exponential)
        read_dot(deep)
    assert str(err.value).startswith(f"{deep}, line 51: graph 'deep': subgraphs nested 51")
    shallow = a / "sub.dot"
    shallow.write_text('digraph { subgraph s { b [label="bind-01"]; } b -> c [label=ARG1]; }\n')
    assert read_dot(shallow).graphs[0].graph.number_of_nodes() == 2


# ------------------------------------------------------------------ PubMed45 labels
def test_pubmed45_labels_with_bom_deep_record_and_nan(tmp_path):
    pytest.importorskip("pydot")
    from structkernels.datasets import InteractionFormatError, load_pubmed45
    from structkernels.datasets.pubmed45 import read_label_records

    (tmp_path / "g.dot").write_text(DOT_GRAPH)
    good = {"path": "g.dot", "interaction_tuple": ["bind", None, "Ras"], "label": 1}
    f = tmp_path / "labels.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(good).encode() + b"\n"
                  + b"[" * DEEP + b"]" * DEEP + b"\n"
                  + json.dumps({**good, "label": 0}).encode().replace(b"0}", b"NaN}") + b"\n"
                  + json.dumps({**good, "id": "last"}).encode() + b"\n")
    data = load_pubmed45(f, on_error="skip")  # old: the BOM cost record 1, the deep one crashed
    assert len(data) == 2 and [r["id"] for r in data.records] == ["labels:1", "last"]
    assert [s.line for s in data.skipped] == [2, 3]
    with pytest.raises(InteractionFormatError, match=r"labels\.jsonl, line 2: record nested"):
        load_pubmed45(f)
    arr = tmp_path / "labels.json"
    arr.write_bytes(b"\xef\xbb\xbf[" + json.dumps(good).encode() + b"]")
    assert [w for w, _ in read_label_records(arr)] == ["line 1"]
    arr.write_text("[" * DEEP + "]" * DEEP)
    with pytest.raises(InteractionFormatError, match=r"labels\.json: record nested 200000"):
        read_label_records(arr)


def test_spacy_docs_with_one_user_id(tmp_path):
    pytest.importorskip("spacy", reason="spaCy (extra 'spacy') is not installed")
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    from structkernels.graphs import GraphFormatError, read_spacy

    def doc(user_id):
        d = Doc(Vocab(), words=["Ras", "binds", "."], heads=[1, 1, 1],
                deps=["nsubj", "ROOT", "punct"])
        if user_id is not None:
            d.user_data["id"] = user_id
        return d

    with pytest.raises(GraphFormatError, match=r"graph 'p:0': duplicate id: sentence 0 of Doc 0"):
        read_spacy([doc("p"), doc("p")])  # old: two graphs 'p:0'
    c = read_spacy([doc("p"), doc("p"), doc(None)], on_error="skip")
    assert [g.id for g in c] == ["p:0", "2:0"] and [s.graph_id for s in c.skipped] == ["p:0"]


# ------------------------------------------------------------------ the command line
def test_cli_deep_jsonl_record_is_one_line_exit_2(tmp_path, capsys):
    from structkernels.cli import main

    f = tmp_path / "deep.jsonl"
    f.write_text("[1, 2]\n" + "[" * DEEP + "]" * DEEP + "\n")
    assert main(["gram", str(f), "--kernel", "linear", "-o", str(tmp_path / "K.npy")]) == 2
    err = capsys.readouterr().err
    assert err == f"structkernels gram: error: {f}, line 2: record nested 200000 levels deep; " \
                  "at most max_depth=1000 are read\n"  # old: a RecursionError traceback


def test_read_npy_checks_the_header_before_allocating(tmp_path):
    """A .npy header claiming 745 GiB in a tiny file, an object array or a pickle is one line
    naming the file (the hsic command read such a header into a MemoryError)."""
    import numpy as np

    from structkernels.utils import NpyFormatError, read_npy

    huge = tmp_path / "huge.npy"
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }"
    huge.write_bytes(b"\x93NUMPY\x01\x00" + len(header + b" " * 49).to_bytes(2, "little")
                     + header + b" " * 48 + b"\n")
    with pytest.raises(NpyFormatError, match=r"huge.npy: the header claims shape \(99999999999,\)"):
        read_npy(huge)
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(NpyFormatError, match="only numeric arrays"):
        read_npy(obj)
    pkl = tmp_path / "p.npy"
    pkl.write_bytes(b"\x80\x04\x95\x00")
    with pytest.raises(NpyFormatError, match="not a .npy array file"):
        read_npy(pkl)
    ok = tmp_path / "ok.npy"
    np.save(ok, np.arange(6, dtype=np.int32).reshape(3, 2))
    assert read_npy(ok).tolist() == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.parametrize("record, reason", [
    ({"id": "r1", "path": "notalist"}, "'path' must be a list of [edge, node] pairs, got 'notalist'"),
    ({"id": "r1", "path": 5}, "'path' must be a list of [edge, node] pairs, got 5"),
    ({"id": "r1", "tree": "nota"}, "'tree' must be an object with a 'label', got 'nota'"),
], ids=["path-str", "path-int", "tree-str"])
def test_read_structures_names_a_path_or_tree_of_the_wrong_form(tmp_path, record, reason):
    """Not a JSON syntax error: the record is valid JSON, its structure is of the wrong form."""
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"path": [[None, "a"]]} if "path" in record else {"tree": {"label": "a"}})
                 + "\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError) as info:
        read_structures(f)
    assert str(info.value) == f"{f}, line 2 (record r1): {reason}"


def test_read_structures_still_reads_a_path_given_as_json_text(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"path": json.dumps([[None, "a"], ["ARG0", "b"]])}) + "\n")
    assert read_structures(f).structures[0] == Path([(None, "a"), ("ARG0", "b")])


def test_cli_gram_names_a_path_that_is_not_a_list(tmp_path, capsys):
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"id": "r1", "path": "notalist"}) + "\n")
    assert main(["gram", str(f), "--kernel", "path", "-o", str(tmp_path / "K")]) == 2
    err = capsys.readouterr().err
    assert err == (f"structkernels gram: error: {f}, line 1 (record r1): 'path' must be a list "
                   "of [edge, node] pairs, got 'notalist'\n")
