"""kb-SRK / ps-SRK / pw-SRK: Algorithm 2 vs Eq. 4, PSD, input checks, kmax sums, registry."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structkernels import Normalized
from structkernels.engine.checks import ZeroSelfSimilarityWarning
from structkernels.kernels.names import kernel
from structkernels.kernels.srk.common import srk_gram_stack, sum_normalized
from structkernels.kernels.srk.kb import KbSRK, kb_srk_diag, kb_srk_direct, kb_srk_stack
from structkernels.kernels.srk.ps import PsSRK
from structkernels.kernels.srk.pw import PwSRK

KERNELS = [KbSRK, PsSRK, PwSRK]

tokens = st.sampled_from(["a", "b", "c", "d"])
side = st.lists(tokens, min_size=0, max_size=7).map(tuple)
rewriting = st.tuples(side, side)


def msrp_pairs(shared_data, n):
    from structkernels.datasets.rewriting import load_msrp
    from structkernels.text.tokenize import TextPipeline

    corpus = load_msrp(shared_data / "msrp" / "msr_paraphrase_train.txt")
    return corpus.tokenized(TextPipeline())[:n]


def test_algorithm2_equals_eq4_direct_sum_on_sentences(shared_data):
    X = msrp_pairs(shared_data, 24)
    S = kb_srk_stack(X[:12], X[12:], 1, 4, 1.0)
    for i in (0, 7):
        for j in (1, 10):
            for k in (1, 2, 3, 4):
                d = kb_srk_direct(X[i], X[12 + j], k, 1.0)
                assert S[k - 1, i, j] == pytest.approx(d, rel=1e-12, abs=1e-12)
    # a paraphrase against itself, lam < 1
    for k in (1, 2, 3):
        assert KbSRK(k=k, lam=0.6).value(X[0], X[0]) == pytest.approx(
            kb_srk_direct(X[0], X[0], k, 0.6), rel=1e-12
        )


#: kb_srk.py before the single-grid-pass join (the ABBA baseline of benchmarks/bench_srk.py)
KB_BASELINE_REF = "9978cc000a3ca10e17da98e3ff28f2a77ca60d17"


def _kb_baseline(repo_root, tmp_path):
    import importlib.util
    import subprocess

    try:
        src = subprocess.run(
            ["git", "show", f"{KB_BASELINE_REF}:structkernels/kernels/kb_srk.py"],
            cwd=repo_root, capture_output=True, text=True, check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"baseline kb_srk.py at {KB_BASELINE_REF[:10]} not readable with git "
                    f"(no git, or a shallow clone): {exc}")
    # the baseline predates the package layout: point its imports at today's modules
    src = src.replace("structkernels.kernels._srk_common", "structkernels.kernels.srk.common")
    src = src.replace("from structkernels.kernel import", "from structkernels.kernels.base import")
    path = tmp_path / "kb_srk_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("kb_srk_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kb_equals_previous_implementation_on_msrp(shared_data, repo_root, tmp_path):
    """The restructured join gives the previous implementation's values on real pairs."""
    old = _kb_baseline(repo_root, tmp_path)
    X = msrp_pairs(shared_data, 300)
    for A, B, kmin, kmax, lam in ((X[:150], X[150:], 1, 4, 1.0),
                                  (X[:60], X[200:260], 2, 4, 0.6),
                                  (X[:80], None, 1, 3, 0.8)):
        S_new = kb_srk_stack(A, B, kmin, kmax, lam)
        S_old = old.kb_srk_stack(A, B, kmin, kmax, lam)
        assert S_new.shape == S_old.shape
        assert (S_old[-1] > 0).any()  # the largest window's join is exercised
        np.testing.assert_allclose(S_new, S_old, rtol=1e-12, atol=0.0)
        np.testing.assert_allclose(kb_srk_diag(A, kmin, kmax, lam),
                                   old.kb_srk_diag(A, kmin, kmax, lam), rtol=1e-12, atol=0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(rewriting, min_size=2, max_size=6), st.integers(1, 3),
       st.sampled_from([1.0, 0.5]))
def test_kb_algorithm2_equals_direct_property(X, k, lam):
    S = kb_srk_stack(X, None, k, k, lam)[0]
    for i in range(len(X)):
        for j in range(len(X)):
            assert S[i, j] == pytest.approx(kb_srk_direct(X[i], X[j], k, lam), abs=1e-9)


@pytest.mark.parametrize("cls", KERNELS)
@settings(max_examples=15, deadline=None)
@given(X=st.lists(rewriting, min_size=2, max_size=9), k=st.integers(1, 3))
def test_symmetric_and_psd(cls, X, k):
    G = cls(k=k, lam=0.7).gram(X)
    assert np.allclose(G, G.T)
    assert np.linalg.eigvalsh(G).min() >= -1e-8 * max(1.0, np.abs(G).max())


@pytest.mark.parametrize("cls", KERNELS)
def test_psd_random_sets_and_kmax_sum(cls):
    rng = random.Random(3)
    X = [(tuple(rng.choice("abcde") for _ in range(rng.randint(3, 9))),
          tuple(rng.choice("abcde") for _ in range(rng.randint(3, 9)))) for _ in range(25)]
    G = cls(k=1, kmax=3, lam=0.8).gram(X)
    assert np.linalg.eigvalsh(G).min() >= -1e-8
    # the kmax kernel is the sum of the normalised windows (kernel algebra)
    alg = Normalized(cls(k=1, lam=0.8)) + Normalized(cls(k=2, lam=0.8)) + Normalized(
        cls(k=3, lam=0.8)
    )
    assert np.allclose(G, alg.gram(X), atol=1e-12)
    np.testing.assert_allclose(np.diag(G), 3.0)


def test_kmax_rectangular_block_and_diag():
    rng = random.Random(5)
    X = [(tuple(rng.choice("abc") for _ in range(6)), tuple(rng.choice("abc") for _ in range(5)))
         for _ in range(8)]
    k = KbSRK(k=1, kmax=2, lam=0.9)
    full = k.gram(X)
    np.testing.assert_allclose(k.gram(X[:3], X[3:]), full[:3, 3:], atol=1e-12)
    np.testing.assert_allclose(k.diag(X), 2.0)


def test_srk_gram_stack_reuses_windows_and_caches(tmp_path):
    rng = random.Random(11)
    X = [(tuple(rng.choice("abc") for _ in range(6)), tuple(rng.choice("abc") for _ in range(6)))
         for _ in range(10)]
    S, dx, dy = srk_gram_stack(KbSRK(k=1, kmax=3), X, cache=tmp_path)
    for j in (1, 2, 3):
        np.testing.assert_allclose(S[j - 1], KbSRK(k=j).gram(X))
    np.testing.assert_allclose(sum_normalized(S, dx, dy), KbSRK(k=1, kmax=3).gram(X))
    S2, _, _ = srk_gram_stack(KbSRK(k=1, kmax=2), X)
    np.testing.assert_array_equal(S2, S[:2])
    R, rx, ry = srk_gram_stack(PwSRK(k=1, kmax=2), X[:4], X[4:], block_size=3, n_jobs=2)
    np.testing.assert_allclose(R[1], PwSRK(k=2).gram(X[:4], X[4:]))
    np.testing.assert_allclose(ry[0], PwSRK(k=1).diag(X[4:]))


def test_srk_gram_stack_cache_is_the_engines_checked_store(tmp_path, monkeypatch):
    import structkernels.kernels.srk.common as common

    X = [(("a", "b", "c"), ("c", "b")), (("a",), ("a", "b")), (("b", "c"), ("b",))]
    S, dx, _ = srk_gram_stack(KbSRK(k=1, kmax=2), X, cache=tmp_path)
    R = srk_gram_stack(PwSRK(k=1, kmax=2), X[:2], X[1:], cache=tmp_path)
    assert sorted(p.suffix for p in tmp_path.glob("srk-*")) == [".npy"] * 6 + [".sum"] * 6
    assert not list(tmp_path.rglob("*.pkl"))

    def no_work(*args, **kwargs):
        raise AssertionError("computed although cached")

    monkeypatch.setattr(common, "_stack_task", no_work)
    S2, dx2, _ = srk_gram_stack(KbSRK(k=1, kmax=2), X, cache=str(tmp_path), n_jobs=1)
    np.testing.assert_array_equal(S2, S)
    np.testing.assert_array_equal(dx2, dx)
    for a, b in zip(srk_gram_stack(PwSRK(k=1, kmax=2), X[:2], X[1:], cache=tmp_path), R,
                    strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(AssertionError, match="computed although cached"):
        srk_gram_stack(KbSRK(k=1, kmax=2, lam=0.5), X, cache=tmp_path)  # other parameters


class _Planted:
    """Unpickling it creates a file: proof that a pickle was loaded."""

    def __init__(self, flag):
        self.flag = flag

    def __reduce__(self):
        return (open, (self.flag, "w"))


def test_srk_cache_never_loads_a_pickle_and_refuses_an_edited_entry(tmp_path):
    from structkernels.utils import CacheFolder, CacheWarning

    cache, flag = tmp_path / "cache", tmp_path / "unpickled"
    X = [(("a", "b", "c"), ("c", "b")), (("a",), ("a", "b")), (("b", "c"), ("b",))]
    kern = KbSRK(k=1, kmax=2)
    expected = srk_gram_stack(kern, X, cache=cache)
    [entry] = cache.glob("srk-*-stack.npy")
    key = entry.name[len("srk-"):-len("-stack.npy")]
    # an edited value, the check file left as it was: refused, computed again
    K = np.load(entry)
    K[0, 0, 0] = 999.0
    np.save(entry, K)
    with pytest.warns(CacheWarning, match="failed its check"):
        again = srk_gram_stack(kern, X, cache=cache)
    np.testing.assert_array_equal(again[0], expected[0])
    # a pickle in place of the entry, with a check file that matches it, and one where
    # joblib.Memory kept its entries
    np.save(entry, np.array([_Planted(str(flag))], dtype=object), allow_pickle=True)
    CacheFolder(cache).write_file(entry.name, key, lambda p: p.write_bytes(entry.read_bytes()))
    (cache / "joblib").mkdir()
    (cache / "joblib" / "output.pkl").write_bytes(entry.read_bytes())
    with pytest.warns(CacheWarning, match="failed its check"):
        again = srk_gram_stack(kern, X, cache=cache)
    assert not flag.exists()
    for a, b in zip(again, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    hit = srk_gram_stack(kern, X, cache=cache)  # the entry was written again
    np.testing.assert_array_equal(hit[0], expected[0])
    assert not flag.exists()


def test_short_sequences_give_zero_and_warn_once():
    X = [(("a",), ("a",)), (("a", "b"), ("a", "b"))]
    G = KbSRK(k=2).gram(X)
    assert G[0, 0] == 0.0 and G[1, 1] > 0
    with pytest.warns(ZeroSelfSimilarityWarning):
        KbSRK(k=1, kmax=2).gram(X)


@pytest.mark.parametrize("name", ["kb-srk", "ps-srk", "pw-srk", "pr"])
def test_registered_and_refuse_bare_strings(name):
    k = kernel(name)
    with pytest.raises(TypeError, match="bare str"):
        k.gram("Shakespeare wrote Hamlet")
    with pytest.raises(TypeError, match="source is a bare str"):
        k.gram([("Shakespeare wrote Hamlet", "Hamlet was written by Shakespeare")])
    with pytest.raises(TypeError, match="target token 1"):
        k.gram([(("a",), ("b", 3))])
    with pytest.raises(TypeError, match="pair"):
        k.gram([(("a",), ("b",), ("c",))])


@pytest.mark.parametrize("cls", KERNELS)
@pytest.mark.parametrize("bad", [dict(k=0), dict(k=2, kmax=1), dict(lam=0.0), dict(lam=1.5),
                                 dict(k=1.5), dict(kmax="4")])
def test_bad_parameters(cls, bad):
    with pytest.raises(ValueError):
        cls(**bad).gram([(("a",), ("a",))])


def test_numpy_token_arrays_and_lists_accepted():
    x = (np.array(["a", "b"]), ["b", "a"])
    y = (("a", "b"), ("b", "a"))
    assert KbSRK(k=1).value(x, y) == KbSRK(k=1).value(y, y)


def test_ps_pw_relations():
    x = (("a", "b", "c"), ("c", "b"))
    y = (("a", "b", "d"), ("c", "b", "b"))
    # pw with lam tiny tends to ps (wildcard rules vanish)
    assert PwSRK(k=2, lam=1e-6).value(x, y) == pytest.approx(PsSRK(k=2).value(x, y), rel=1e-6)
    # kb-SRK with lam tiny keeps only wildcard-free rules: identical rules on both pairs
    assert KbSRK(k=2, lam=1e-6).value(x, y) == pytest.approx(PsSRK(k=2).value(x, y), rel=1e-6)


@pytest.mark.parametrize("name", ["kb-srk", "ps-srk", "pw-srk", "pr"])
def test_call_on_one_rewriting_points_to_value(name):
    x = (("shakespear", "wrote", "hamlet"), ("hamlet", "was", "written"))
    y = (("austen", "wrote", "emma"), ("emma", "was", "written"))
    k = kernel(name)
    with pytest.raises(TypeError, match=r"\.value\(x, y\)"):
        k(x, y)
    assert k([x], [y])[0, 0] == pytest.approx(k.value(x, y))
