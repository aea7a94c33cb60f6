"""Fuzzing kernel parameters and model files: a parameter is refused with a ValueError or
gives a finite symmetric Gram at the cost the input allows; a damaged model file is
refused with its path in the message."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path as FilePath

import numpy as np
import pytest
from _fuzz_strategies import FUZZ
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import kernel
from structkernels.npk.learner import NonstationaryLearner

tokens = st.lists(st.sampled_from("abcd"), min_size=0, max_size=6).map(tuple)
rewritings = st.lists(st.tuples(tokens, tokens), min_size=1, max_size=5)
sizes = st.integers(-2, 8) | st.sampled_from([10**6, 10**9, 2**62]) | st.none() | st.just(2.5)
lams = st.floats(-1, 2) | st.sampled_from([0.5, 1.0, 1, True, float("nan")])


@FUZZ
@given(st.sampled_from(["kb-srk", "ps-srk", "pw-srk"]), sizes, sizes, lams, rewritings)
def test_srk_parameters_are_refused_or_bounded(name, k, kmax, lam, X):
    try:
        kern = kernel(name, k=k, kmax=kmax, lam=lam)
        G = kern.gram(X)
    except ValueError as exc:
        assert name.replace("-", "").lower()[:2] in str(exc).lower() or "must" in str(exc)
        return
    assert G.shape == (len(X), len(X)) and np.isfinite(G).all()
    np.testing.assert_allclose(G, G.T, rtol=1e-12, atol=1e-12)
    longest = max(min(len(s), len(t)) for s, t in X)
    if kmax is not None and kmax > longest >= k:  # the windows beyond the input are 0
        np.testing.assert_allclose(G, kernel(name, k=k, kmax=longest, lam=lam).gram(X))


@pytest.fixture(scope="module")
def model_json():
    from test_learning import TupleBagKernel, planted_problem

    from structkernels.kernels.names import kernels

    kernels.register("tuple-bag-test", TupleBagKernel, overwrite=True)  # files name registered kernels
    paths, y, _, _ = planted_problem(n=60, seed=1)
    learner = NonstationaryLearner(
        kernel=TupleBagKernel(), top_fraction=1.0, alpha=2, beta=10, hashing=None,
        random_state=0, progress=False,
    ).fit(paths, y)
    yield learner.to_json()
    kernels.unregister("tuple-bag-test")


junk = st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=5) | st.lists(
    st.integers(), max_size=2) | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


@settings(FUZZ, report_multiple_bugs=False)
@given(st.data())
def test_damaged_model_files_are_refused_with_their_path(model_json, data):
    obj = json.loads(json.dumps(model_json))
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(obj)))
        if data.draw(st.booleans()):
            obj[key] = data.draw(junk)
        else:
            del obj[key]
    with tempfile.TemporaryDirectory() as tmp:
        f = FilePath(tmp) / "model.json"
        f.write_text(json.dumps(obj))
        try:
            NonstationaryLearner.load(f)
        except ValueError as exc:
            assert str(f) in str(exc)
