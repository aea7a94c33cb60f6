"""evaluate's outputs: per-pair scores, PR/ROC curves, C by inner CV, a parser in a child."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from structkernels.cli import main
from structkernels.experiments.relations import C_GRID, document_folds, evaluate_relations
from structkernels.structures import Path


def _pipeline_or_skip():
    pytest.importorskip("spacy", reason="spaCy (extra 'parse') is not installed")
    from structkernels.relations.parse import load_pipeline

    try:
        load_pipeline()
    except ValueError as exc:
        pytest.skip(f"no English spaCy pipeline (extra 'parse'): {exc}")


def _toy(n=80, seed=0):
    rng = np.random.default_rng(seed)
    items, y = [], []
    for i in range(n):
        lab = int(rng.random() < 0.4)
        edge = "nsubj-of" if (lab or rng.random() < 0.15) else "conj"
        path = Path([(None, "PROT1"), (edge, str(rng.choice(["bind", "see"]))), ("dobj", "PROT2")])
        items.append({"path": path, "context": (f"m:{edge}", f"w:{i % 7}")})
        y.append(lab)
    return items, y, [f"d{i // 2}" for i in range(n)]


def test_c_auto_chooses_from_the_grid_on_training_folds_and_is_listed():
    items, y, docs = _toy()
    folds = document_folds(docs, y, 3, 0)
    r = evaluate_relations(items, y, folds, groups=docs, models=["PK path SVM", "n-gram SVM"],
                           C="auto", n_jobs=1, progress=False)
    assert len(r["chosen"]) == 2 * 3
    assert {c for c in r["chosen"]} <= {f"C={c:g}" for c in C_GRID}
    with pytest.raises(ValueError, match="C must be a finite number > 0 or 'auto'"):
        evaluate_relations(items, y, folds, models=["PK path SVM"], C=-1.0, progress=False)


def test_pair_scores_give_each_tested_pair_its_fold_and_every_model_score():
    items, y, docs = _toy()
    folds = document_folds(docs, y, 4, 0)
    r = evaluate_relations(items, y, folds, groups=docs, models=["PK path SVM", "n-gram SVM"],
                           n_jobs=1, progress=False, return_scores=True)
    ps = r["pair_scores"]
    for k, (_, te) in enumerate(folds):
        assert (ps["fold"][te] == k).all()
    assert set(ps) == {"fold", "PK path SVM", "n-gram SVM"}
    assert np.isfinite(ps["PK path SVM"]).all()


def test_small_slice_budget_gives_the_same_result():
    """Models fitted one Gram after another (a tiny slice budget) or all at once agree."""
    items, y, docs = _toy()
    folds = document_folds(docs, y, 3, 0)
    models = ["PK path SVM", "n-gram SVM", "NPK path SVM"]
    a = evaluate_relations(items, y, folds, groups=docs, models=models, n_jobs=2,
                           progress=False, slice_bytes=1)
    b = evaluate_relations(items, y, folds, groups=docs, models=models, n_jobs=2,
                           progress=False)
    assert a["models"] == b["models"]


def test_evaluate_command_writes_scores_and_curves(ppi_corpora, tmp_path, capsys):
    _pipeline_or_skip()
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    ppi = ppi_corpora
    scores, plots = tmp_path / "scores.tsv", tmp_path / "plots"
    rc = main(["evaluate", str(ppi / "LLL-train.xml"), str(ppi / "LLL-test.xml"), "--cv", "3",
               "--models", "PK path SVM,n-gram SVM", "--C", "auto", "--json", "--scores",
               str(scores), "--plot", str(plots), "--no-cache", "-q"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert "pair_scores" not in out and len(out["chosen"]) == 6
    with open(scores, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert len(rows) == 330 and {r["fold"] for r in rows} == {"0", "1", "2"}
    assert sum(int(r["label"]) for r in rows) == 164
    assert all(float(r["PK path SVM"]) == float(r["PK path SVM"]) for r in rows)
    assert (plots / "pr.png").stat().st_size > 1000 and (plots / "roc.png").exists()


@pytest.mark.parametrize("value", ["0", "-1", "inf", "big"])
def test_evaluate_command_refuses_a_bad_c(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "x.xml", "--C", value])
    assert exc.value.code == 2
    assert "expected a number > 0 or 'auto'" in capsys.readouterr().err


def test_evaluate_command_parses_in_a_child_process(ppi_corpora, tmp_path):
    """The spaCy pipeline (and PyTorch, which spaCy imports when installed) stays out of
    the evaluating process."""
    _pipeline_or_skip()
    code = (
        "import sys\n"
        "from structkernels.cli import main\n"
        f"rc = main(['evaluate', {str(ppi_corpora / 'LLL-train.xml')!r}, "
        f"{str(ppi_corpora / 'LLL-test.xml')!r}, '--cv', '2', '--models', 'n-gram SVM', "
        "'--no-cache', '-q'])\n"
        "print(rc, 'spacy' in sys.modules, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-3:] == ["0", "False", "False"]


def test_every_sigma_model_has_its_twin_compared_fold_by_fold():
    from structkernels.relations.models import DEFAULT_MODELS, twin_of

    for name in DEFAULT_MODELS:
        if name.startswith("NPK "):
            assert twin_of(name) in DEFAULT_MODELS
    items, y, docs = _toy()
    folds = document_folds(docs, y, 3, 0)
    r = evaluate_relations(items, y, folds, groups=docs, models=["NPK path SVM", "PK path SVM"],
                           n_jobs=1, progress=False)
    t = r["twins"]["NPK path SVM"]
    a, b = r["models"]["NPK path SVM"], r["models"]["PK path SVM"]
    assert t["twin"] == "PK path SVM" and len(t["f1_diff_folds"]) == 3
    pairs = zip(a["f1_folds"], b["f1_folds"], strict=True)
    assert t["f1_diff_folds"] == [round(x - z, 2) for x, z in pairs]
    assert t["better_folds"] + t["worse_folds"] <= 3
    # a model whose twin was not evaluated has no comparison
    r = evaluate_relations(items, y, folds, groups=docs, models=["NPK path SVM"], n_jobs=1,
                           progress=False)
    assert r["twins"] == {}
