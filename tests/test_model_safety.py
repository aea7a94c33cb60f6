"""Reading a model or σ file never runs code; writing one is atomic; plugins cannot end the CLI.

Issue 23, items 1, 4 (gzip bomb as a model), 5 (negative ``fixed_sigma``), 6 (plugins that
call ``sys.exit``, entry-point names with ``:``).
"""

from __future__ import annotations

import gzip
import json
import sys
import tracemalloc
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_registry import fake_distribution

import structkernels as sk
from structkernels.cli import kernels_cmd, main
from structkernels.kernels.names import _check_kernel_class, kernels
from structkernels.npk.files import MODEL_FORMAT, save_model
from structkernels.npk.learner import NonstationaryLearner
from structkernels.npk.model import ModelFormatError, load_model, read_model
from structkernels.registry import PluginWarning, Registry, UnknownNameError

# ------------------------------------------------------------------ documents


def sigma_doc(**changes):
    """A σ-only learner file (format structkernels.nonstationary-sigma), as ``save`` writes it."""
    doc = {
        "format": "structkernels.nonstationary-sigma", "version": 1, "kernel": "path",
        "params": {"kernel_params": {"lam": 0.8}}, "random_state": 0,
        "sigma": {"ARG0": 1.0, "mod": 0.0}, "fixed_sigma": {}, "normalize": True,
        "labels": ["ARG0", "mod"], "label_counts": {"ARG0": 3, "mod": 2},
        "ignored_labels": ["mod"], "losses": {}, "log": [], "n_train": 4, "n_evaluations": 10,
    }
    doc.update(changes)
    return doc


def npk_doc(learner=None, **changes):
    """A train-npk model with two training paths."""
    doc = {
        "format": MODEL_FORMAT, "version": 2, "learner": learner or sigma_doc(),
        "kernel": "path", "kernel_params": {"lam": 0.8, "sigma": {"ARG0": 1.0, "mod": 0.0}},
        "classifier": {"n_neighbors": 1},
        "train": {"ids": ["a", "b"], "paths": [[[None, "x"], ["ARG0", "y"]], [[None, "x"], ["mod", "z"]]],
                  "labels": [1, 0]},
    }
    doc.update(changes)
    return doc


def write_json(path, doc, gz=False):
    raw = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(raw, mtime=0) if gz else raw)
    return path


PWNED_SPEC = {"kernel": "subprocess:getoutput", "params": {"kernel_params": {"cmd": "touch PWNED"}}}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def trap_module(tmp_path, monkeypatch):
    """A module that writes a file when imported: importing it by a name read from data shows."""
    (tmp_path / "trap_module_sk.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(tmp_path / 'IMPORTED')!r}).write_text('imported')\n"
        "from structkernels.kernels.vector import LinearKernel as Trap\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "IMPORTED"
    sys.modules.pop("trap_module_sk", None)


# --------------------------------------------------------- item 1: no code run


def test_sigma_file_naming_a_shell_function_runs_nothing(in_tmp):
    """The exact reproduction: the old reader imported subprocess and ran `touch PWNED`."""
    f = write_json(in_tmp / "model.json", sigma_doc(**PWNED_SPEC))
    with pytest.raises(ModelFormatError) as info:
        NonstationaryLearner.load(f)
    message = str(info.value)
    assert message.startswith(f"{f}: kernel 'subprocess:getoutput' is not a registered kernel;")
    assert "\n" not in message and "structkernels.register" in message
    with pytest.raises(UnknownNameError, match="'subprocess:getoutput' is not a registered"):
        NonstationaryLearner.from_json(sigma_doc(**PWNED_SPEC))
    with pytest.raises(ValueError, match="not a registered kernel"):
        NonstationaryLearner.from_json(json.dumps(sigma_doc(**PWNED_SPEC)))
    assert not (in_tmp / "PWNED").exists()


@pytest.mark.parametrize("where", ["kernel", "learner"])
def test_train_npk_model_naming_a_shell_function_runs_nothing(in_tmp, capsys, where):
    doc = (npk_doc(kernel="subprocess:getoutput") if where == "kernel"
           else npk_doc(learner=sigma_doc(**PWNED_SPEC)))
    f = write_json(in_tmp / "model.npk.json.gz", doc, gz=True)
    for read in (load_model, read_model, NonstationaryLearner.load, sk.load_model):
        with pytest.raises(ModelFormatError, match="'subprocess:getoutput' is not a registered kernel") as info:
            read(f)
        assert str(info.value).startswith(f"{f}: ")
    data = write_json(in_tmp / "data.jsonl", {"path": [[None, "x"], ["ARG0", "y"]]})
    assert main(["predict", str(f), str(data)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and "not a registered kernel" in err
    assert not (in_tmp / "PWNED").exists()


def test_module_named_in_a_file_is_never_imported(tmp_path, trap_module):
    spec = "trap_module_sk:Trap"
    f = write_json(tmp_path / "m.json", sigma_doc(kernel=spec))
    with pytest.raises(ModelFormatError, match=f"{spec!r} is not a registered kernel"):
        NonstationaryLearner.load(f)
    g = write_json(tmp_path / "m.npk.json", npk_doc(kernel=spec))
    with pytest.raises(ModelFormatError, match="is not a registered kernel"):
        load_model(g)
    assert not trap_module.exists() and "trap_module_sk" not in sys.modules


def test_old_module_class_spec_of_a_registered_kernel_reads_under_its_name(tmp_path):
    """Files of older releases could hold module:Class; a registered target maps by lookup."""
    f = write_json(tmp_path / "old.json", sigma_doc(kernel="structkernels.kernels.path:PathKernel"))
    learner = NonstationaryLearner.load(f)
    assert learner.kernel == "path"
    assert learner.get_kernel(normalize=False).get_params()["lam"] == 0.8
    g = write_json(tmp_path / "old.npk.json", npk_doc(kernel="structkernels.kernels.path:PathKernel"))
    assert load_model(g).kernel == "path"


def test_in_process_registration_maps_an_old_module_class_spec(tmp_path):
    from test_learning import TupleBagKernel

    spec = f"{TupleBagKernel.__module__}:{TupleBagKernel.__qualname__}"
    f = write_json(tmp_path / "old.json", sigma_doc(kernel=spec, params={}))
    with pytest.raises(ModelFormatError, match="is not a registered kernel"):
        NonstationaryLearner.load(f)
    kernels.register("tuple-bag-safety", TupleBagKernel)
    try:
        assert NonstationaryLearner.load(f).kernel == "tuple-bag-safety"
    finally:
        kernels.unregister("tuple-bag-safety")


@pytest.mark.parametrize("kernel", [None, 3, ["path"], "", "no-such-kernel"])
def test_kernel_that_is_not_a_registered_name_is_refused(tmp_path, kernel):
    f = write_json(tmp_path / "m.json", sigma_doc(kernel=kernel))
    with pytest.raises(ModelFormatError) as info:
        NonstationaryLearner.load(f)
    assert str(info.value).startswith(f"{f}: ") and "registered" in str(info.value)


# ------------------------------------------------------ saving: registry names


def _fitted_learner(kernel):
    from test_learning import planted_problem

    paths, y, _, _ = planted_problem(n=40, seed=3)
    return NonstationaryLearner(
        kernel=kernel, top_fraction=1.0, alpha=1, beta=6, hashing=None, random_state=0,
        progress=False,
    ).fit(paths, y)


def test_unregistered_kernel_class_is_refused_at_save_time(tmp_path):
    from test_learning import TupleBagKernel

    learner = _fitted_learner(TupleBagKernel())
    out = tmp_path / "m.json"
    out.write_text("old content")
    with pytest.raises(ValueError, match=r"TupleBagKernel is not registered.*structkernels.register"):
        learner.save(out)
    assert out.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary file left
    kernels.register("tuple-bag-safety", TupleBagKernel)
    try:
        learner.save(out)
        doc = json.loads(out.read_text())
        assert doc["kernel"] == "tuple-bag-safety"
        assert NonstationaryLearner.load(out).sigma_ == learner.sigma_
    finally:
        kernels.unregister("tuple-bag-safety")


def test_registered_kernel_is_saved_by_name_never_module_class(tmp_path):
    learner = NonstationaryLearner.from_json(sigma_doc())
    learner.set_params(kernel=sk.kernel("path", lam=0.7), kernel_params=None)
    learner.save(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["kernel"] == "path" and doc["params"]["kernel_params"]["lam"] == 0.7
    assert NonstationaryLearner.load(tmp_path / "m.json").get_kernel().kernel.lam == 0.7


def test_save_refuses_non_finite_values_naming_the_field(tmp_path):
    learner = NonstationaryLearner.from_json(sigma_doc())
    learner.losses_ = {"ARG0": {"0": float("nan")}}
    out = tmp_path / "m.json"
    with pytest.raises(ValueError, match=r"m.json: the σ model is not finite: \['losses'\]\['ARG0'\]"):
        learner.save(out)
    assert not out.exists()
    model = read_model(write_json(tmp_path / "ok.npk.json", npk_doc()))
    model["evaluation"] = {"f1": float("inf")}
    with pytest.raises(ValueError, match=r"\['evaluation'\]\['f1'\] is inf"):
        save_model(tmp_path / "bad.npk.json.gz", model)
    assert not (tmp_path / "bad.npk.json.gz").exists()


def test_save_model_is_atomic_when_interrupted(tmp_path, monkeypatch):
    out = tmp_path / "m.npk.json.gz"
    save_model(out, read_model(write_json(tmp_path / "a.json", npk_doc())))
    before = out.read_bytes()

    class Boom(gzip.GzipFile):
        def write(self, data):
            super().write(data[: len(data) // 2])
            raise KeyboardInterrupt

    monkeypatch.setattr(gzip, "GzipFile", Boom)
    doc = read_model(out)
    doc["classifier"] = {"n_neighbors": 3}
    with pytest.raises(KeyboardInterrupt):
        save_model(out, doc)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "m.npk.json.gz"]


# ------------------------------------------------- item 5: σ and fixed σ >= 0


@pytest.mark.parametrize("key", ["fixed_sigma", "sigma"])
@pytest.mark.parametrize("value", [-1.0, -1e-300, "NaN", "Infinity", "1", None, True])
def test_negative_or_non_finite_sigma_is_refused_naming_file_and_label(tmp_path, key, value):
    doc = sigma_doc(**{key: {"ARG1": 0.5, "time": value}})
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc).replace('"NaN"', "NaN").replace('"Infinity"', "Infinity"))
    with pytest.raises(ModelFormatError, match=rf"{key}\['time'\] is .*σ must be a finite number >= 0") as info:
        NonstationaryLearner.load(f)
    assert str(info.value).startswith(f"{f}: ") and "\n" not in str(info.value)
    g = write_json(tmp_path / "m.npk.json", npk_doc(learner=json.loads(f.read_text())))
    with pytest.raises(ModelFormatError, match=rf"learner\['{key}'\]\['time'\]"):
        load_model(g)
    with pytest.raises(ValueError, match=rf"{key}\['time'\]"):
        NonstationaryLearner.from_json(json.loads(f.read_text()))


@pytest.mark.parametrize("key, value", [("sigma", None), ("fixed_sigma", [1]), ("label_counts", 3),
                                        ("labels", {"a": 1}), ("params", [])])
def test_fields_of_the_wrong_kind_are_refused_naming_the_file(tmp_path, key, value):
    f = write_json(tmp_path / "m.json", sigma_doc(**{key: value}))
    with pytest.raises(ModelFormatError, match=key) as info:
        NonstationaryLearner.load(f)
    assert str(info.value).startswith(f"{f}: ")


def test_unknown_learner_parameter_is_refused(tmp_path):
    f = write_json(tmp_path / "m.json", sigma_doc(params={"kernel_params": {}, "exec": "x"}))
    with pytest.raises(ModelFormatError, match="unknown learner parameter.*'exec'"):
        NonstationaryLearner.load(f)


# ---------------------------------------------------- item 4: size and depth


def test_gzip_bomb_model_is_refused_in_bounded_memory(tmp_path, monkeypatch):
    f = tmp_path / "bomb.npk.json.gz"
    with gzip.open(f, "wb", compresslevel=9) as gz:
        chunk = b" " * (1 << 20)
        for _ in range(64):  # 64 MiB of blanks, about 64 KiB on disk
            gz.write(chunk)
    assert f.stat().st_size < 1 << 18
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError) as info:
            load_model(f, max_bytes=4 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(info.value).startswith(f"{f}: the model file holds more than {4 << 20} bytes")
    assert peak < 16 << 20, peak  # the limit plus a chunk, never the 64 MiB
    import structkernels.npk.files as model_io

    monkeypatch.setattr(model_io, "MAX_MODEL_BYTES", 1 << 20)
    for read in (load_model, NonstationaryLearner.load, read_model):
        with pytest.raises(ModelFormatError, match="more than 1048576 bytes"):
            read(f)


def test_large_plain_model_is_refused_too(tmp_path):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * 5000 + json.dumps(sigma_doc()).encode())
    with pytest.raises(ModelFormatError, match="more than 4096 bytes"):
        NonstationaryLearner.load(f, max_bytes=4096)
    assert NonstationaryLearner.load(f, max_bytes=10_000).sigma_ == {"ARG0": 1.0, "mod": 0.0}


@pytest.mark.parametrize("content, message", [
    (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    (gzip.compress(b'{"a": 1}')[:-6], "corrupt gzip"),
    (gzip.compress(b'{"a": 1}') + b"trailing", "corrupt gzip"),
    (b"\x80\x04\x95" + b"\x00" * 20, "pickle files are never read"),
    (b"1" * 5000, "not a"),
])
def test_malformed_containers_give_one_line(tmp_path, content, message):
    f = tmp_path / "m.bin"
    f.write_bytes(content)
    for read in (load_model, NonstationaryLearner.load):
        with pytest.raises(ModelFormatError, match=message) as info:
            read(f)
        assert str(info.value).startswith(f"{f}: ") and "\n" not in str(info.value)


def test_pickle_model_is_not_unpickled(tmp_path):
    import pickle

    class Payload:
        def __reduce__(self):
            return (open, (str(tmp_path / "PWNED"), "w"))

    f = tmp_path / "m.pkl"
    f.write_bytes(pickle.dumps(Payload()))
    with pytest.raises(ModelFormatError, match="pickle files are never read"):
        NonstationaryLearner.load(f)
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------- item 6: plugin registry


def test_plugin_calling_sys_exit_is_reported_broken(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "exit-plugin", {"exit-kernel": "exit_plugin:K"},
                      module_source="import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    with pytest.warns(PluginWarning, match=r"'exit-kernel'.*failed to load: SystemExit: 3"):
        loaded = reg.load_all()
    assert "exit-kernel" not in loaded and "rbf" in loaded
    with pytest.raises(ImportError, match="SystemExit"):
        reg.get("exit-kernel")


@pytest.mark.parametrize("load", [False, True])
def test_kernels_command_lists_a_plugin_that_exits_as_broken(tmp_path, monkeypatch, capsys, load):
    fake_distribution(tmp_path, "exit-plugin", {"exit-kernel": "exit_plugin:K"},
                      module_source="import sys\nsys.exit(3)\n")
    # a dotted target: the static listing's find_spec imports the package, which exits
    pkg = tmp_path / "exit_pkg_sk"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import sys\nsys.exit('bye')\n")
    (pkg / "mod.py").write_text("K = 1\n")
    fake_distribution(tmp_path, "pkgexit-plugin", {"exit-pkg-kernel": "exit_pkg_sk.mod:K"})
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    monkeypatch.setattr(kernels_cmd, "kernels", reg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        assert main(["kernels", *(["--load"] if load else [])]) == 0
    out = capsys.readouterr().out
    assert "rbf" in out
    assert "exit-kernel" in out and "BROKEN" in out and "SystemExit: 3" in out
    assert "exit-pkg-kernel" in out and "SystemExit: bye" in out
    sys.modules.pop("exit_pkg_sk", None)


def test_entry_point_name_with_a_colon_is_refused(tmp_path, monkeypatch):
    """'aaa-shadow:rbf' offered by a plugin would shadow the qualified name of a real entry point."""
    fake_distribution(tmp_path, "aaa-other", {"rbf": "aaa_other:Other"},
                      module_source="from structkernels.kernels.vector import LinearKernel as Other\n")
    fake_distribution(tmp_path, "zzz-shadow", {"aaa-other:rbf": "zzz_shadow:Evil"},
                      module_source="raise AssertionError('never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    with pytest.warns(PluginWarning) as caught:
        names = reg.names()
    assert any("'aaa-other:rbf'" in str(w.message) and "may not contain ':'" in str(w.message)
               for w in caught)
    assert "aaa-other:rbf" not in names
    from structkernels.kernels.vector import LinearKernel

    assert reg.get("aaa-other:rbf") is LinearKernel  # the qualified name keeps its meaning
    assert "zzz-shadow:aaa-other:rbf" in reg.errors and "zzz_shadow" not in sys.modules
    with pytest.raises(ValueError, match="without ':'"):
        reg.register("x:y", LinearKernel)


def test_name_of_and_resolve_name():
    from structkernels.kernels.path import PathKernel
    from structkernels.kernels.vector import RBFKernel

    assert kernels.name_of(PathKernel) == "path" and kernels.name_of(RBFKernel) == "rbf"
    assert kernels.resolve_name("structkernels.kernels.vector:RBFKernel") == "rbf"
    assert kernels.resolve_name("rbf") == "rbf"

    class Local(RBFKernel):
        pass

    assert kernels.name_of(Local) is None
    for bad in ("os:system", "structkernels.kernels.vector:RBFKernel.__init__", "builtins:eval"):
        with pytest.raises(UnknownNameError, match="not a registered kernel"):
            kernels.resolve_name(bad)


# ------------------------------------------------------------------ property


_specs = (
    st.from_regex(r"\A[a-z_][a-z_.]{0,15}:[A-Za-z_][A-Za-z_.]{0,15}\Z")
    | st.sampled_from(["os:system", "subprocess:getoutput", "builtins:eval", "structkernels:Kernel",
                       "structkernels.kernels.path:PathKernel", "path", "rbf", "structkernels:rbf"])
    | st.text(max_size=20)
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(spec=_specs, nested=st.booleans())
def test_no_kernel_spec_in_a_file_imports_anything(tmp_path_factory, spec, nested):
    """Whatever a file names as its kernel: a registered name loads, anything else is refused,
    and no module is imported either way."""
    f = tmp_path_factory.mktemp("spec") / "m.json"
    doc = npk_doc(learner=sigma_doc(kernel=spec)) if nested else sigma_doc(kernel=spec)
    write_json(f, doc)
    before = set(sys.modules)
    try:
        learner = NonstationaryLearner.load(f)
    except ModelFormatError as exc:
        assert str(exc).startswith(f"{f}: ") and "\n" not in str(exc)
    else:
        assert learner.kernel in kernels.names() or learner.kernel.count(":") == 1
        assert kernels.resolve_name(learner.kernel) == learner.kernel
    assert set(sys.modules) == before
