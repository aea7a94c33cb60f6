"""Regression tests for issue 23, items 9-11 and the reader cases of "also seen": lenient modes
cost only the bad record, errors are one line naming the file and the line, ids never collide
silently, input limits hold (depth, size, gzip, byte-order mark, bytes that are not UTF-8)."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest

from structkernels.io import InputError, read_structures
from structkernels.registry import PluginWarning, readers
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
