"""Caches that cannot change a result (issue 37, item 4, and its cache tracebacks).

Every entry of the parse, Gram and σ caches carries the hash of its key and content and is
checked when read: a damaged or replaced entry is discarded with one warning naming it,
computed again and rewritten, and the figures are those of a clean run.  A cache folder
that cannot be written is one warning; ``--no-cache`` writes nothing, compiled kernels
included; ``--cache-dir ""`` is refused; a sentence beyond the parser's length limit is
refused naming its file and line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path as FilePath

import numpy as np
import pytest

import structkernels
from structkernels.cli import main
from structkernels.experiments.relations import document_folds, evaluate_relations
from structkernels.relations import Entity, Interaction, Sentence
from structkernels.relations.parse import DependencyParser, load_pipeline

#: the package under test (run from another checkout, that checkout's)
ROOT = FilePath(structkernels.__file__).resolve().parents[1]


def _pipeline_or_skip():
    pytest.importorskip("spacy", reason="spaCy (extra 'parse') is not installed")
    try:
        load_pipeline()
    except ValueError as exc:
        pytest.skip(f"no English spaCy pipeline (extra 'parse'): {exc}")


def _sentences() -> list[Sentence]:
    texts = ["KinC and KinD activate the transcription of Spo0A in sporulating cells.",
             "GerE binds near the sigK promoter and represses its transcription strongly."]
    out = []
    for k, text in enumerate(texts):
        words = text.split()
        ents, pos = [], 0
        for w in words:
            start = text.index(w, pos)
            pos = start + len(w)
            if w[0].isupper() or w.startswith("sig"):
                ents.append(Entity(f"e{len(ents)}", ((start, pos),), w))
        out.append(Sentence(f"s{k}", text, f"d{k}", tuple(ents),
                            (Interaction(ents[0].id, ents[-1].id),)))
    return out


def _edit_entry(file: FilePath, edit) -> None:
    """Change the content of a JSON cache entry in place, its check header (if any) kept:
    the entry is ``edit(content)``'s result; this works on entries with or without one."""
    lines = file.read_bytes().split(b"\n", 1)
    if len(lines) == 2 and lines[0].startswith(b"{") and lines[1].strip():
        head, body = lines[0] + b"\n", lines[1]
    else:
        head, body = b"", file.read_bytes()
    file.write_bytes(head + json.dumps(edit(json.loads(body))).encode())


def _graphs(parsed) -> list:
    return [(p.id, sorted(p.graph.graph.edges(data="role")), p.entities) for p in parsed]


def _swap_labels(parse):
    deps = parse["deps"]
    i = next(i for i in range(len(deps)) if deps[i] != deps[0])
    deps[0], deps[i] = deps[i], deps[0]
    return parse


def _non_roots(parse):
    return [i for i, h in enumerate(parse["heads"]) if h != i]


def _cycle(parse):
    a, b = [i for i in _non_roots(parse) if parse["heads"][i] not in (i,)][:2]
    parse["heads"][a], parse["heads"][b] = b, a
    return parse


def _two_roots(parse):
    i = _non_roots(parse)[0]
    parse["heads"][i] = i
    return parse


def _labels_as_ints(parse):
    parse["deps"] = list(range(len(parse["deps"])))
    return parse


def _heads_as_strings(parse):
    parse["heads"] = [str(h) for h in parse["heads"]]
    return parse


def _lemmas_as_lists(parse):
    parse["lemmas"] = [[w] for w in parse["lemmas"]]
    return parse


def _a_list(parse):
    return [parse]


# ------------------------------------------------------------------ the parse cache
@pytest.mark.parametrize("damage", [_swap_labels, _cycle, _two_roots, _labels_as_ints,
                                    _heads_as_strings, _lemmas_as_lists, _a_list],
                         ids=["swapped-labels", "cyclic-heads", "two-roots", "labels-ints",
                              "heads-strings", "lemmas-lists", "not-a-dict"])
def test_a_damaged_parse_entry_is_discarded_recomputed_and_rewritten(damage, tmp_path,
                                                                    monkeypatch):
    _pipeline_or_skip()
    sents = _sentences()
    clean = _graphs(DependencyParser(cache_dir=tmp_path, progress=False).parse(sents))
    files = sorted((tmp_path / "parses").rglob("*.json"))
    assert len(files) == 2
    _edit_entry(files[0], damage)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _graphs(DependencyParser(cache_dir=tmp_path, progress=False).parse(sents))
    assert again == clean
    said = [str(w.message) for w in caught if "cache" in str(w.message)]
    assert len(said) == 1 and files[0].name in said[0] and "\n" not in said[0], said
    # rewritten: a third run reads both entries, without a warning and without spaCy
    third = DependencyParser(cache_dir=tmp_path, progress=False)
    monkeypatch.setattr(third, "_run", lambda todo: pytest.fail("parsed again"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _graphs(third.parse(sents)) == clean


def test_swapped_labels_in_the_parse_cache_leave_the_figures_of_a_clean_run(ppi_corpora,
                                                                          tmp_path, capsys):
    _pipeline_or_skip()
    ppi = ppi_corpora
    argv = ["evaluate", "--train", str(ppi / "LLL-train.xml"), "--test", str(ppi / "LLL-test.xml"),
            "--models", "n-gram SVM", "--json", "-q", "--cache-dir", str(tmp_path)]
    assert main(argv) == 0
    clean = json.loads(capsys.readouterr().out)["models"]
    files = sorted((tmp_path / "parses").rglob("*.json"))
    for f in files:
        _edit_entry(f, _swap_labels)
    for f in (tmp_path / "grams").iterdir():
        f.unlink()  # the Grams are computed from the parses again
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["models"] == clean
    lines = err.strip().splitlines()
    assert len(lines) == len(files) and all("warning" in line for line in lines)
    assert all(err.count(f.name) == 1 for f in files)


# ------------------------------------------------------------------ Grams and σ
def _toy(n=60, seed=0):
    from structkernels import Path

    rng = np.random.default_rng(seed)
    items, y = [], []
    for i in range(n):
        lab = int(rng.random() < 0.4)
        edge = "nsubj-of" if lab else "conj"
        path = Path([(None, "PROT1"), (edge, str(rng.choice(["bind", "see"]))),
                     ("dobj", "PROT2")])
        items.append({"path": path, "context": (f"m:{edge}", f"w:{i % 7}")})
        y.append(lab)
    return items, y, document_folds([f"d{i}" for i in range(n)], y, 3, 0)


def test_a_gram_replaced_by_another_finite_matrix_is_detected_and_recomputed(tmp_path):
    items, y, folds = _toy()
    models = ["PK path SVM", "n-gram SVM"]
    clean = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                               cache_dir=tmp_path)
    grams = sorted((tmp_path / "grams").glob("*.npy"))
    assert len(grams) == 2
    n = len(items)
    other = np.random.default_rng(1).random((n, n))
    for f in grams:
        with open(f, "wb") as fh:
            np.save(fh, (other + other.T) / 2)  # finite, symmetric, the same shape
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                                   cache_dir=tmp_path)
    assert again["models"] == clean["models"]
    said = sorted(str(w.message) for w in caught if "cache" in str(w.message))
    assert len(said) == 2 and all(f.name in m for f, m in zip(grams, said, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten
        evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                           cache_dir=tmp_path)


def test_a_replaced_sigma_file_is_detected_and_learned_again(tmp_path):
    items, y, folds = _toy()
    models = ["NPK path SVM"]
    clean = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                               cache_dir=tmp_path)
    files = sorted((tmp_path / "grams").glob("sigma-*.json"))
    assert len(files) == 3
    _edit_entry(files[0], lambda sigma: {**{k: 0.0 for k in sigma}, "conj": 7.5, "bind": 0.0})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = evaluate_relations(items, y, folds, models=models, n_jobs=1, progress=False,
                                   cache_dir=tmp_path)
    assert again["sigma_zeroed"] == clean["sigma_zeroed"]
    assert again["models"] == clean["models"]
    said = [str(w.message) for w in caught if "cache" in str(w.message)]
    assert len(said) == 1 and files[0].name in said[0]


# ------------------------------------------------------------------ unwritable folders
def _unwritable(tmp_path: FilePath) -> FilePath:
    """A cache folder this process cannot write: read-only, or (as root, who writes into
    read-only folders) a file where the folder should be."""
    if os.geteuid() == 0:
        blocker = tmp_path / "cache"
        blocker.write_text("a file, not a folder\n")
        return blocker
    folder = tmp_path / "cache"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def test_a_read_only_cache_folder_is_one_warning_and_the_right_result(ppi_corpora, tmp_path,
                                                                    capsys):
    _pipeline_or_skip()
    ppi = ppi_corpora
    argv = ["evaluate", "--train", str(ppi / "LLL-train.xml"), "--test", str(ppi / "LLL-test.xml"),
            "--models", "n-gram SVM", "--json", "-q"]
    assert main([*argv, "--no-cache"]) == 0
    clean = json.loads(capsys.readouterr().out)["models"]
    cache = _unwritable(tmp_path)
    try:
        rc = main([*argv, "--cache-dir", str(cache)])
    finally:
        if cache.is_dir():
            cache.chmod(0o755)
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out)["models"] == clean
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "warning" in lines[0] and str(cache) in lines[0], lines


def test_an_unwritable_gram_cache_is_one_warning_in_the_library(tmp_path):
    items, y, folds = _toy()
    cache = _unwritable(tmp_path)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = evaluate_relations(items, y, folds, models=["PK path SVM", "NPK path SVM"],
                                   n_jobs=1, progress=False, cache_dir=cache)
    finally:
        if cache.is_dir():
            cache.chmod(0o755)
    said = [str(w.message) for w in caught if "cache" in str(w.message)]
    assert len(said) == 1 and "cannot be written" in said[0], said
    clean = evaluate_relations(items, y, folds, models=["PK path SVM", "NPK path SVM"], n_jobs=1,
                               progress=False)
    assert r["models"] == clean["models"]


def test_a_full_disk_while_numba_saves_its_cache_costs_only_the_cache(tmp_path):
    (tmp_path / "mod_jit.py").write_text(textwrap.dedent("""
        from structkernels.utils import njit

        @njit(cache=True)
        def plus_one(x):
            return x + 1
        """))
    script = textwrap.dedent("""
        import resource, signal, sys
        sys.path.insert(0, sys.argv[1])
        import mod_jit
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))
        print(mod_jit.plus_one(41), mod_jit.plus_one(1.5))
        """)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.fspath(ROOT)}
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["42", "2.5"]


# ------------------------------------------------------------------ --no-cache, --cache-dir ""
def test_no_cache_writes_nothing_anywhere(ppi_corpora, tmp_path):
    _pipeline_or_skip()
    ppi = ppi_corpora
    places = {name: tmp_path / name for name in ("home", "xdg", "cache", "numba", "cwd")}
    for p in places.values():
        p.mkdir()
    env = {**os.environ, "HOME": str(places["home"]), "XDG_CACHE_HOME": str(places["xdg"]),
           "STRUCTKERNELS_CACHE": str(places["cache"]), "NUMBA_CACHE_DIR": str(places["numba"]),
           "PYTHONPATH": os.fspath(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("STRUCTKERNELS_NO_CACHE", None)
    before = {f for f in ROOT.rglob("*.nb[ic]")}
    code = "import sys; from structkernels.cli import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run(
        [sys.executable, "-c", code, "evaluate", "--train", str(ppi / "LLL-train.xml"),
         "--test", str(ppi / "LLL-test.xml"), "--models", "PK path SVM", "--no-cache", "-q"],
        capture_output=True, text=True, env=env, cwd=places["cwd"], timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "PK path SVM" in r.stdout
    for name, p in places.items():
        assert not any(p.iterdir()), (name, sorted(map(str, p.rglob("*")))[:5])
    assert {f for f in ROOT.rglob("*.nb[ic]")} == before  # nothing beside the sources


@pytest.mark.parametrize("argv", [
    ["evaluate", "a.xml", "--cache-dir", ""],
    ["evaluate", "--train", "a.xml", "--test", "b.xml", "--cache-dir", "  "],
    ["predict", "--model", "m.json", "a.xml", "--cache-dir", ""],
])
def test_an_empty_cache_dir_is_refused_in_one_line(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--cache-dir is empty" in err, err
    assert not any(tmp_path.iterdir())


def test_an_empty_cache_dir_is_refused_by_the_library():
    with pytest.raises(ValueError, match="cache_dir is empty"):
        DependencyParser(cache_dir="")
    items, y, folds = _toy(12)
    with pytest.raises(ValueError, match="cache_dir is empty"):
        evaluate_relations(items, y, folds, models=["PK path SVM"], n_jobs=1, progress=False,
                           cache_dir="")


# ------------------------------------------------------------------ sentence length
def test_a_sentence_beyond_the_length_limit_is_refused_naming_file_and_line(tmp_path,
                                                                          capsys):
    _pipeline_or_skip()
    from structkernels.relations.parse import MAX_SENTENCE_CHARS

    text = "KinC activates SigE but not GerE. " + "x" * MAX_SENTENCE_CHARS
    corpus = tmp_path / "long.jsonl"
    # each document holds a positive and a negative pair: every fold can be trained
    short = {"id": "s1", "text": "KinC activates SigE but not GerE", "document": "d1",
             "entities": [{"id": "e0", "start": 0, "end": 4},
                          {"id": "e1", "start": 15, "end": 19},
                          {"id": "e2", "start": 28, "end": 32}],
             "interactions": [{"e1": "e0", "e2": "e1"}]}
    long = dict(short, id="s2", text=text, document="d2")
    corpus.write_text(json.dumps(short) + "\n" + json.dumps(long) + "\n")
    rc = main(["evaluate", str(corpus), "--cv", "2", "--models", "n-gram SVM", "--no-cache",
               "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and f"{corpus}:2" in err and "s2" in err, err
    assert f"at most {MAX_SENTENCE_CHARS:,}" in err
    parser = DependencyParser(cache_dir=False, progress=False, max_chars=10)
    s = Sentence("s9", "KinC activates SigE", "d1", (), file="f.xml", line=7)
    with pytest.raises(ValueError, match=r"f\.xml:7: record s9: sentence of 19 characters"):
        parser.parse([s])
