"""PHSIC model files are data only: saved as a .npz archive, read without pickle (issue 23, item 2).

Also: HSIC/PHSIC command outputs are written atomically, and the ``hsic`` command never
prints NaN or infinity as JSON (issue 23, item 7).
"""

from __future__ import annotations

import io
import json
import pickle
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structkernels_hsic import HSIC, PHSIC
from structkernels_hsic.phsic import MODEL_FORMAT, MODEL_VERSION, PHSICModelError

import structkernels as sk
from structkernels.cli import main
from structkernels.kernels.base import Normalized
from structkernels.kernels.vector import RBFKernel
from structkernels.structures import Path


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    Y = np.tanh(X @ rng.normal(size=(4, 3))) + 0.2 * rng.normal(size=(60, 3))
    return X, Y, rng.normal(size=(12, 4)), rng.normal(size=(12, 3))


CASES = [
    dict(kernel_x="linear", kernel_y="cosine"),
    dict(kernel_x="linear", kernel_y="linear", dtype=np.float32),
    dict(kernel_x="rbf", kernel_y="rbf", estimator="icd", max_rank=(10, 5), tol=0),
    dict(kernel_x="rbf", kernel_y="laplacian", estimator="icd", dtype=np.float32),
    dict(kernel_x=RBFKernel(sigma=2.0), kernel_y=Normalized(sk.kernel("polynomial")), estimator="icd"),
    dict(kernel_x="rbf", kernel_y="rbf", estimator="naive", kernel_x_params={"bandwidth": "median"}),
    dict(kernel_x=Normalized(sk.kernel("polynomial")), kernel_y="rbf", estimator="naive"),
]


@pytest.mark.parametrize("params", CASES, ids=lambda c: f"{c.get('estimator', 'feature')}")
def test_round_trip_gives_equal_scores(tmp_path, data, params):
    X, Y, Xn, Yn = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of a fixed-rank ICD
        model = PHSIC(**params).fit(X, Y)
    f = tmp_path / "model.npz"
    model.save(f, encoder="none")
    assert zipfile.is_zipfile(f)
    loaded = PHSIC.load(f)
    assert loaded.encoder_ == "none" and loaded.n_samples_ == model.n_samples_
    assert loaded.n_kernel_evaluations_ == model.n_kernel_evaluations_
    np.testing.assert_array_equal(loaded.score(Xn, Yn), model.score(Xn, Yn))
    # copies: a kernel may take a faster path when given its own training array (same object)
    Xc, Yc = X.copy(), Y.copy()
    np.testing.assert_array_equal(loaded.score(Xc, Yc), model.score(Xc, Yc))
    assert loaded.n_kernel_evaluations_ == model.n_kernel_evaluations_  # counting goes on alike
    if model.estimator == "icd":
        np.testing.assert_array_equal(loaded.score_training(), model.score_training())
        assert loaded.rank_ == model.rank_


@pytest.mark.parametrize("estimator", ["icd", "naive"])
def test_round_trip_of_precomputed_and_structured_models(tmp_path, data, estimator):
    X, Y, Xn, Yn = data
    K, L = sk.gram("rbf", X), sk.gram("rbf", Y)
    model = PHSIC("precomputed", "precomputed", estimator=estimator).fit(K, L)
    model.save(tmp_path / "pre.npz")
    Kn, Ln = sk.gram("rbf", Xn, X), sk.gram("rbf", Yn, Y)
    np.testing.assert_array_equal(PHSIC.load(tmp_path / "pre.npz").score(Kn, Ln), model.score(Kn, Ln))
    rng = np.random.default_rng(1)
    P = [Path([(None, "a"), ("ARG0", str(rng.choice(["b", "c", "d"]))), ("mod", str(rng.choice(["x", "y"])))])
         for _ in range(30)]
    Q = [Path([(None, "q"), ("ARG1", str(rng.choice(["b", "c"])))]) for _ in range(30)]
    model = PHSIC("path", "path", estimator=estimator).fit(P, Q)
    model.save(tmp_path / "paths.npz")
    loaded = PHSIC.load(tmp_path / "paths.npz")
    np.testing.assert_array_equal(loaded.score(P[:7], Q[:7]), model.score(P[:7], Q[:7]))


def test_unregistered_kernel_is_refused_at_save_time(tmp_path, data):
    X, Y, _, _ = data

    class Private(RBFKernel):
        pass

    model = PHSIC(Private(), "rbf", estimator="naive").fit(X, Y)
    f = tmp_path / "m.npz"
    f.write_bytes(b"old")
    with pytest.raises(ValueError, match=r"Private is not registered.*structkernels.register"):
        model.save(f)
    assert f.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary file left
    with pytest.raises(ValueError, match="not fitted"):
        PHSIC().save(tmp_path / "unfitted.npz")


# --------------------------------------------------------------- hostile files


class _Payload:
    """Unpickling this creates ``target``: a stand-in for os.system."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_pickle_and_joblib_files_are_never_read(tmp_path, data):
    import joblib

    target = tmp_path / "PWNED"
    pkl = tmp_path / "m.pkl"
    pkl.write_bytes(pickle.dumps({"model": _Payload(target), "encoder": "none"}))
    jl = tmp_path / "m.joblib"
    joblib.dump({"model": _Payload(target), "encoder": "none"}, jl)
    jz = tmp_path / "m.joblib.gz"
    joblib.dump({"model": _Payload(target), "encoder": "none"}, jz, compress=3)
    assert not target.exists()
    for f in (pkl, jl, jz):
        with pytest.raises(PHSICModelError) as info:
            PHSIC.load(f)
        message = str(info.value)
        assert message.startswith(f"{f}: not a PHSIC model file (pickle files are never read")
        assert "\n" not in message
    assert not target.exists()


def test_cli_score_refuses_a_crafted_pickle_without_running_it(tmp_path, data, capsys):
    X, Y, _, _ = data
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    target = tmp_path / "PWNED"
    model = tmp_path / "model.joblib"
    model.write_bytes(pickle.dumps({"model": _Payload(target), "encoder": "none"}))
    out = tmp_path / "s.npy"
    assert main(["phsic", "score", str(model), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(model) in err and "pickle files are never read" in err
    assert not target.exists() and not out.exists()


def _rewrite(src, dst, change_meta=None, extra=None):
    """Copy a model archive, changing its meta JSON and adding entries."""
    with np.load(src, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays["meta"].tobytes())
    if change_meta:
        change_meta(meta)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    arrays.update(extra or {})
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)
    return dst


@pytest.fixture
def saved(tmp_path, data):
    X, Y, _, _ = data
    f = tmp_path / "good.npz"
    PHSIC("rbf", "rbf", estimator="naive").fit(X, Y).save(f)
    return f


def _set(path, value):
    def change(meta):
        node = meta
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


@pytest.mark.parametrize("change, message", [
    (_set(["version"], 99), "PHSIC model version 99 is not supported"),
    (_set(["format"], "other"), "not a PHSIC model file .format"),
    (_set(["estimator_class"], "os:system"), "unknown estimator class 'os:system'"),
    (_set(["state", "source_x", "kernel"], "subprocess:getoutput"),
     "kernel 'subprocess:getoutput' is not a registered kernel"),
    (_set(["params", "kernel_x"], {"name": "subprocess:getoutput", "params": {"cmd": "touch PWNED"}}),
     "kernel 'subprocess:getoutput' is not a registered kernel"),
    (_set(["params", "evil"], 1), "unknown PHSIC parameter"),
    (_set(["state", "source_x", "data"], "missing"), "array 'missing' is missing"),
    (_set(["state", "n_samples"], -1), "n_samples must be an int >= 0"),
    (_set(["params", "estimator"], "nope"), "estimator must be one of"),
])
def test_damaged_model_files_give_one_line_naming_the_file(tmp_path, saved, change, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = _rewrite(saved, tmp_path / "bad.npz", change)
    with pytest.raises(PHSICModelError, match=message) as info:
        PHSIC.load(f)
    assert str(info.value).startswith(f"{f}: ") and "\n" not in str(info.value)
    assert not (tmp_path / "PWNED").exists()


def test_object_arrays_in_the_archive_are_never_unpickled(tmp_path, saved):
    target = tmp_path / "PWNED"
    evil = np.empty(1, dtype=object)
    evil[0] = _Payload(target)
    f = _rewrite(saved, tmp_path / "evil.npz", extra={"evil": evil})
    with pytest.raises(PHSICModelError, match="'evil.npy' is not a numeric array"):
        PHSIC.load(f)
    g = _rewrite(saved, tmp_path / "evil2.npz", _set(["state", "source_x", "data"], "evil"),
                 extra={"evil": evil})
    with pytest.raises(PHSICModelError):
        PHSIC.load(g)
    assert not target.exists()


def test_size_limits(tmp_path, saved):
    with pytest.raises(PHSICModelError, match="holds more than 1000 bytes"):
        PHSIC.load(saved, max_bytes=1000)
    # an entry whose header claims far more data than it holds (an allocation bomb)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                               "shape": (10**12,)})
    f = tmp_path / "claims.npz"
    with zipfile.ZipFile(saved) as src, zipfile.ZipFile(f, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info))
        dst.writestr("huge.npy", buf.getvalue() + b"\0" * 64)
    with pytest.raises(PHSICModelError, match="'huge.npy' claims 8000000000000 bytes"):
        PHSIC.load(f)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(PHSICModelError, match="damaged PHSIC model archive"):
        PHSIC.load(junk)
    with pytest.raises(PHSICModelError, match="cannot read"):
        PHSIC.load(tmp_path / "absent.npz")


def test_saved_meta_is_versioned_json(saved):
    with np.load(saved, allow_pickle=False) as npz:
        meta = json.loads(npz["meta"].tobytes())
        assert all(npz[k].dtype != object for k in npz.files)
    assert meta["format"] == MODEL_FORMAT and meta["version"] == MODEL_VERSION
    assert meta["estimator_class"] == "phsic" and meta["params"]["kernel_x"] == "rbf"


# ----------------------------------------------------------------- CLI outputs


def test_cli_fit_score_select_write_complete_files(tmp_path, data, capsys):
    X, Y, _, _ = data
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    x, y = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    model = tmp_path / "m.npz"
    assert main(["phsic", "fit", x, y, "--kernel-x", "linear", "--kernel-y", "linear", "-o", str(model)]) == 0
    assert zipfile.is_zipfile(model)
    want = PHSIC("linear", "linear").fit(X, Y).score(X, Y)
    assert main(["phsic", "score", str(model), x, y, "-o", str(tmp_path / "s.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), want)
    assert main(["phsic", "score", str(model), x, y, "-o", str(tmp_path / "s.txt")]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "s.txt"), want, rtol=1e-9)
    assert main(["phsic", "select", x, y, "--top", "5", "--kernel-x", "linear", "--kernel-y", "linear",
                 "-o", str(tmp_path / "k.txt"), "--scores", str(tmp_path / "all.npy")]) == 0
    assert len(np.loadtxt(tmp_path / "k.txt")) == 5
    np.testing.assert_array_equal(np.load(tmp_path / "all.npy"), want)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_hsic_never_prints_nan_as_json(tmp_path, data, capsys, monkeypatch):
    X, Y, _, _ = data
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    real_fit = HSIC.fit

    def nan_fit(self, *args, **kwargs):
        out = real_fit(self, *args, **kwargs)
        self.statistic_ = float("nan")
        return out

    monkeypatch.setattr(HSIC, "fit", nan_fit)
    assert main(["hsic", str(tmp_path / "x.npy"), str(tmp_path / "y.npy")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "['statistic'] is nan" in captured.err
    monkeypatch.setattr(HSIC, "fit", real_fit)
    assert main(["hsic", str(tmp_path / "x.npy"), str(tmp_path / "y.npy")]) == 0
    assert json.loads(capsys.readouterr().out)["statistic"] > 0


_junk = (st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
         | st.text(max_size=8) | st.sampled_from(["subprocess:getoutput", "os:system", "rbf", "meta"])
         | st.lists(st.integers(0, 3), max_size=3) | st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.data())
def test_mutated_model_files_load_or_give_one_line(tmp_path_factory, data):
    """Any value anywhere in the meta JSON: the model loads, or one PHSICModelError naming the file."""
    folder = tmp_path_factory.mktemp("mut")
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    estimator = data.draw(st.sampled_from(["feature", "icd", "naive"]))
    good = folder / "good.npz"
    PHSIC("linear" if estimator == "feature" else "rbf", "linear", estimator=estimator).fit(X, Y).save(good)
    with np.load(good, allow_pickle=False) as npz:
        meta = json.loads(npz["meta"].tobytes())
    where = data.draw(st.sampled_from([p for p in _paths(meta) if p]))
    value = data.draw(_junk)
    f = _rewrite(good, folder / "bad.npz", _set(list(where), value))
    try:
        model = PHSIC.load(f)
    except PHSICModelError as exc:
        assert str(exc).startswith(f"{f}: ") and "\n" not in str(exc)
    else:
        assert isinstance(model, PHSIC)
