"""Kernels the scikit-learn way, plugin precedence, record readers, start-up and layering."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import laplacian_kernel, polynomial_kernel, rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC
from test_registry import fake_distribution

import structkernels as sk
from structkernels import GramTransformer, Path
from structkernels.cli import main
from structkernels.kernels.names import _check_kernel_class
from structkernels.registry import PluginWarning, Registry


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    return X, y


# ------------------------------------------------------------ kernel protocol
def test_call_on_two_arrays_is_the_gram(data):
    X, _ = data
    k = sk.kernel("rbf", bandwidth=1.5)
    K = k(X[:5], X[5:9])
    assert K.shape == (5, 4)
    assert np.allclose(K, rbf_kernel(X[:5], X[5:9], gamma=1 / (2 * 1.5**2)), atol=1e-12)
    assert np.allclose(k(X[:5]), k(X[:5], X[:5]))
    assert isinstance(k.value(X[0], X[1]), float)
    assert k.value(X[0], X[1]) == pytest.approx(k(X[:1], X[1:2])[0, 0])


def test_vector_kernels_delegate_to_sklearn_pairwise(data):
    X, _ = data
    assert np.allclose(sk.kernel("laplacian", bandwidth=2.0)(X), laplacian_kernel(X, gamma=0.5))
    assert np.allclose(
        sk.kernel("polynomial", degree=2, coef0=1.0)(X), polynomial_kernel(X, degree=2, coef0=1.0)
    )


def test_svc_and_kernel_ridge_take_a_kernel_object(data):
    X, y = data
    k = sk.kernel("rbf", bandwidth=1.0)
    svc = SVC(kernel=k).fit(X, y)
    ref = SVC(kernel="precomputed").fit(k(X), y)
    assert np.array_equal(svc.predict(X), ref.predict(k(X, X)))
    kr = KernelRidge(kernel=k, alpha=0.1).fit(X, y)
    ref = KernelRidge(kernel="precomputed", alpha=0.1).fit(k(X), y)
    assert np.allclose(kr.predict(X[:5]), ref.predict(k(X[:5], X)))


def test_pairwise_kernels_estimators_get_the_gram_in_one_call(data, monkeypatch):
    """KernelRidge and KernelPCA go through pairwise_kernels, which calls a plain callable once
    per pair of rows; a structkernels kernel gets the whole arrays once (the GP-kernel route)."""
    from sklearn.decomposition import KernelPCA
    from sklearn.gaussian_process.kernels import Kernel as GPKernel

    from structkernels.kernels.vector import VectorKernel

    X, y = data
    k = sk.kernel("rbf", bandwidth=1.0)
    assert isinstance(k, GPKernel)

    def per_pair(*args):
        raise AssertionError("called once per pair")

    monkeypatch.setattr(VectorKernel, "_vector_value", per_pair)
    kr = KernelRidge(kernel=k, alpha=0.1).fit(X, y)
    ref = KernelRidge(kernel="precomputed", alpha=0.1).fit(k(X), y)
    assert np.allclose(kr.predict(X[:5]), ref.predict(k(X[:5], X)))
    a = KernelPCA(2, kernel=k).fit_transform(X)
    b = KernelPCA(2, kernel="precomputed").fit_transform(k(X))
    assert np.allclose(np.abs(a), np.abs(b))


def test_a_single_structure_points_to_value():
    p = Path([(None, "bind-01"), ("ARG1", "protein")])
    k = sk.kernel("path")
    with pytest.raises(TypeError, match=r"PathKernel\.value\(x, y\) for one pair"):
        k(p, p)
    assert k([p], [p]).shape == (1, 1)
    assert k.value(p, p) == pytest.approx(k([p])[0, 0])


def test_gridsearch_over_a_kernel_parameter_given_by_name(data):
    X, y = data
    pipe = make_pipeline(GramTransformer("rbf"), SVC(kernel="precomputed"))
    gs = GridSearchCV(pipe, {"gramtransformer__kernel__bandwidth": [0.3, 3.0]}, cv=3).fit(X, y)
    best = gs.best_estimator_[0]
    assert best.get_params(deep=False)["kernel"] == "rbf"  # verbatim: still the name
    chosen = gs.best_params_["gramtransformer__kernel__bandwidth"]
    assert best.kernel_params == {"bandwidth": chosen}
    assert best.kernel_.bandwidth == gs.best_params_["gramtransformer__kernel__bandwidth"]
    # the same search with the kernel given as an object
    pipe = make_pipeline(GramTransformer(sk.kernel("rbf")), SVC(kernel="precomputed"))
    gs2 = GridSearchCV(pipe, {"gramtransformer__kernel__bandwidth": [0.3, 3.0]}, cv=3).fit(X, y)
    assert gs2.best_params_ == gs.best_params_


def test_dimension_mismatch_names_the_kernel():
    k = sk.kernel("rbf")
    with pytest.raises(ValueError, match=r"RBFKernel: vectors of different dimensions, 3 and 2"):
        k(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="LinearKernel"):
        sk.kernel("linear").value(np.ones(3), np.ones(2))


# ------------------------------------------------------------ plugin precedence
def test_plugin_cannot_replace_a_builtin_name(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "aaa-shadow-plugin", {"rbf": "aaa_shadow_plugin:Other"},
                      module_source="from structkernels.kernels.vector import LinearKernel as Other\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("structkernels.kernels", "kernel", _check_kernel_class)
    with pytest.warns(PluginWarning, match="aaa-shadow-plugin:rbf"):
        cls = reg.get("rbf")
    assert cls.__name__ == "RBFKernel"  # "aaa" sorts before "structkernels": still the built-in
    assert reg.get("aaa-shadow-plugin:rbf").__name__ == "LinearKernel"
    assert "(structkernels)" in reg.describe("rbf")
    assert "aaa-shadow-plugin" in reg.describe("aaa-shadow-plugin:rbf")


def test_gram_cli_says_which_kernel_it_used(tmp_path, capsys):
    f = tmp_path / "v.jsonl"
    f.write_text("[1, 0]\n[0, 1]\n")
    assert main(["gram", str(f), "--kernel", "rbf", "-o", str(tmp_path / "K.npy")]) == 0
    out = capsys.readouterr().out
    assert "kernel rbf = structkernels.kernels.vector:RBFKernel (structkernels)" in out


# ------------------------------------------------------------ record readers
def test_text_records_through_the_example_plugins_reader(tmp_path, capsys):
    f = tmp_path / "t.jsonl"
    f.write_text('{"text": "Ras binds Raf."}\n{"text": "Raf binds Raf"}\n')
    out = tmp_path / "K.npy"
    assert main(["gram", str(f), "--kernel", "bag-of-words", "-o", str(out)]) == 0
    assert np.load(out).tolist() == [[4.0, 3.0], [3.0, 5.0]]


def test_kernel_read_record_method_reads_every_record(tmp_path):
    from structkernels.formats.structures import read_structures
    from structkernels.kernels.vector import LinearKernel

    class Lengths(LinearKernel):
        def read_record(self, record):
            return [float(len(record["word"]))]

    f = tmp_path / "w.jsonl"
    f.write_text('{"word": "abc"}\n{"word": "de"}\n')
    assert read_structures(f, kernel=Lengths()).structures == [[3.0], [2.0]]
    with pytest.raises(ValueError, match="line 1.*'text'"):
        read_structures(f)  # without the method: the known kinds are listed


# ------------------------------------------------------------ start-up and layering
def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()[-1]
    return set(json.loads(out))


HEAVY = ("sklearn", "numba", "joblib", "penman", "scipy")


@pytest.mark.parametrize(
    "code",
    [
        "import structkernels",
        "from structkernels.cli import build_parser; build_parser('gram')",
        "from structkernels.cli import build_parser; build_parser().format_help()",
    ],
)
def test_start_up_does_not_import_heavy_libraries(code):
    loaded = _modules_after("import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    "
                            + code.replace("; ", "\n    "))
    assert not [m for m in HEAVY if m in loaded]


def test_kernels_listing_static_equals_loaded(capsys):
    assert main(["kernels"]) == 0
    static = capsys.readouterr().out
    assert main(["kernels", "--load"]) == 0
    loaded = capsys.readouterr().out
    rbf = "rbf              structkernels.kernels.vector.RBFKernel(bandwidth=1.0, sigma=None)"
    assert rbf in static
    assert rbf in loaded
    names = lambda text: [line.split()[0] for line in text.splitlines() if not line.startswith(" ")]  # noqa: E731
    assert names(static) == names(loaded)


def test_layering_registry_below_engine_below_kernels():
    loaded = _modules_after("import structkernels.registry")
    assert not [m for m in loaded if m.startswith(("structkernels.kernels", "structkernels.engine"))]
    loaded = _modules_after("import structkernels.engine.gram")
    assert not [m for m in loaded if m.startswith(("structkernels.kernels", "structkernels.neighbors"))]
    # the kernel registry resolves names without loading the kernels or the engine
    loaded = _modules_after("import structkernels.kernels.names")
    assert "structkernels.kernels.base" not in loaded and "structkernels.engine.gram" not in loaded


def test_package_attributes_are_functions_not_modules():
    import structkernels.engine.gram
    import structkernels.kernels.base  # noqa: F401

    assert callable(sk.gram) and sk.gram.__name__ == "gram"
    assert sk.kernel.__name__ == "kernel"


# ------------------------------------------------------------ hashers as estimators
@pytest.mark.parametrize("name", ["RandomKNNHash", "KernelLSH"])
def test_hashers_pass_the_sklearn_estimator_checks(name):
    from sklearn.utils.estimator_checks import check_estimator

    est = getattr(sk, name)("rbf", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert len(results) > 30 and failed == []


def _public_estimators():
    from structkernels.npk.learner import NonstationaryLearner

    return {
        "KernelKNNClassifier": sk.KernelKNNClassifier,
        "RandomKNNHash": sk.RandomKNNHash,
        "KernelLSH": sk.KernelLSH,
        "NonstationaryLearner": NonstationaryLearner,
        "GramTransformer": sk.GramTransformer,
    }


#: Whether each estimator's default kernel reads 2-D float arrays ("linear") or structures
#: ("path": scikit-learn skips every check that needs numeric arrays, by the tag).
DEFAULT_TAKES_ARRAYS = {"KernelKNNClassifier": False, "RandomKNNHash": False, "KernelLSH": False,
                        "NonstationaryLearner": False, "GramTransformer": True}


@pytest.mark.parametrize("name", sorted(DEFAULT_TAKES_ARRAYS))
def test_every_public_estimator_passes_check_estimator_with_its_default_kernel(name):
    from sklearn.utils import get_tags
    from sklearn.utils.estimator_checks import check_estimator

    est = _public_estimators()[name]()
    takes_arrays = get_tags(est).input_tags.two_d_array
    assert takes_arrays is DEFAULT_TAKES_ARRAYS[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
    if takes_arrays:
        assert len(results) > 30
    else:
        # scikit-learn's own skip: only cloning is checked, the rest needs numeric arrays
        assert [r["check_name"] for r in results] == ["check_estimator_cloneable"]
        assert any("Can't test estimator" in str(w.message) for w in caught)


def _toy_paths(n=24):
    labels = ("kinase", "gene", "cell")
    paths = [Path([(None, "bind"), ("ARG0", labels[i % 3]), ("ARG1", f"p{i % 4}")])
             for i in range(n)]
    return paths, np.array([int(i % 3 == 0) for i in range(n)])


@pytest.mark.parametrize("name", ["KernelKNNClassifier", "RandomKNNHash", "KernelLSH",
                                  "NonstationaryLearner", "GramTransformer"])
def test_the_api_checks_scikit_learn_skips_hold_on_paths(name):
    """What check_estimator cannot test on structures: clone, fit returns self, not fitted,
    pickling, no n_features_in_, the same answer after refitting."""
    import pickle

    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    paths, y = _toy_paths()
    kw = {"kernel": "path"} if name == "GramTransformer" else {}
    if name in ("RandomKNNHash", "KernelLSH", "KernelKNNClassifier"):
        kw["random_state"] = 0
    if name == "NonstationaryLearner":
        kw.update(hashing=None, alpha=2, beta=6, top_fraction=1.0, random_state=0, progress=False)
    est = _public_estimators()[name](**kw)
    answer = {
        "KernelKNNClassifier": lambda e: e.predict_proba(paths),
        "RandomKNNHash": lambda e: e.hash(paths),
        "KernelLSH": lambda e: e.hash(paths),
        "NonstationaryLearner": lambda e: e.transform(paths),
        "GramTransformer": lambda e: e.transform(paths),
    }[name]
    with pytest.raises(NotFittedError):
        answer(est)
    assert clone(est).get_params() == est.get_params()
    assert est.fit(paths, y) is est
    assert not hasattr(est, "n_features_in_")
    first = answer(est)
    assert np.all(np.isfinite(first))
    np.testing.assert_array_equal(answer(pickle.loads(pickle.dumps(est))), first)
    np.testing.assert_array_equal(answer(clone(est).fit(paths, y)), first)


def test_hasher_messages():
    X = np.random.default_rng(0).normal(size=(10, 3))
    h = sk.RandomKNNHash("rbf", random_state=0).fit(X)
    assert h.n_features_in_ == 3
    with pytest.raises(ValueError, match="X has 2 features, but RandomKNNHash is expecting 3"):
        h.hash(X[:, :2])
    with pytest.raises(ValueError, match="n_samples=1"):
        sk.KernelLSH("rbf").fit(X[:1])
    import scipy.sparse

    with pytest.raises(TypeError, match="sparse input is not supported"):
        sk.KernelLSH("rbf").fit(scipy.sparse.csr_matrix(X))


# ------------------------------------------------------------ progress in logs
@pytest.mark.parametrize("setting, expect_lines", [("", True), ("0", False)])
def test_progress_in_a_log_file_is_plain_lines(tmp_path, setting, expect_lines):
    import os

    code = ("from structkernels.utils import tqdm\n"
            "with tqdm(total=5, desc='stage', disable=None) as bar:\n"
            "    for _ in range(5):\n"
            "        bar.update(1)\n")
    log = tmp_path / "log.txt"
    env = {**os.environ, "STRUCTKERNELS_PROGRESS_INTERVAL": "0", "STRUCTKERNELS_PROGRESS": setting}
    with open(log, "w") as fh:
        subprocess.run([sys.executable, "-c", code], stderr=fh, env=env, check=True)
    text = log.read_text()
    assert "\r" not in text
    if expect_lines:
        lines = text.splitlines()
        assert lines and all(line.startswith("stage") for line in lines)
        assert "5/5" in lines[-1]
    else:
        assert text == ""


def test_a_kernel_made_before_scikit_learn_loads_is_one_of_its_gp_kernels():
    """Kernels do not import scikit-learn; its Gaussian-process family (whose members
    ``pairwise_kernels`` calls once with the whole arrays) takes them in when it loads."""
    code = ("import sys\nimport structkernels as sk\nk = sk.kernel('path')\n"
            "assert 'sklearn' not in sys.modules\n"
            "from sklearn.gaussian_process.kernels import Kernel\n"
            "print(isinstance(k, Kernel), isinstance(sk.kernel('rbf'), Kernel))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr


def test_parameters_repr_and_clone_follow_scikit_learn():
    from sklearn.base import clone

    k = sk.Normalized(sk.kernel("path", lam=0.5) + sk.kernel("bag"))
    assert repr(sk.kernel("path")) == "PathKernel()"
    assert repr(sk.kernel("path", lam=0.5)) == "PathKernel(lam=0.5)"
    params = k.get_params()
    assert params["kernel__k1__lam"] == 0.5 and "kernel__k2__binary" in params
    assert list(k.get_params(deep=False)) == ["kernel"]
    c = clone(k)
    assert c is not k and c.kernel is not k.kernel and repr(c) == repr(k)
    k.set_params(kernel__k1__lam=0.25)
    assert k.kernel.k1.lam == 0.25 and c.kernel.k1.lam == 0.5
    with pytest.raises(ValueError, match=r"Invalid parameter 'lamb' for estimator PathKernel\(\)"):
        sk.kernel("path").set_params(lamb=1.0)
