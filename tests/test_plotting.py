"""The σ plot states the rule that chose σ; the evaluation plot draws the confusion matrix
and the precision-recall curve."""

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is the optional [plot] extra")

from structkernels.experiments.plotting import plot_evaluation, plot_sigma_losses  # noqa: E402

#: knn-ap keeps -AP as the loss: ARG1's σ = 0 is higher (0.62 > 0.61) but kept at 1
KNN_AP = {"ARG0": {"0": -0.40, "1": -0.60, "chosen": 1.0},
          "ARG1": {"0": -0.62, "1": -0.61, "chosen": 1.0},
          "mod": {"0": -0.70, "1": -0.60, "chosen": 0.0}}


def test_knn_ap_plot_shows_average_precision_and_its_rule(tmp_path):
    fig = plot_sigma_losses(KNN_AP, tmp_path / "s.png", objective="knn-ap", min_gain=0.005)
    ax = fig.axes[0]
    assert "higher is better" in ax.get_ylabel()
    title = " ".join(ax.get_title().split())
    assert "on both halves" in title and "0.005" in title
    heights = [round(b.get_height(), 2) for b in ax.patches]
    assert heights == [0.40, 0.62, 0.70, 0.60, 0.61, 0.60]  # AP, not the negated loss
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_loss1_plot_keeps_lower_is_better():
    fig = plot_sigma_losses({"ARG0": {"0": -3.0, "1": -1.0, "chosen": 0.0}})
    ax = fig.axes[0]
    assert "lower is better" in ax.get_ylabel() and "tie keeps" in " ".join(ax.get_title().split())


def test_the_learners_objective_is_read_from_it():
    class Fitted:
        losses_ = KNN_AP
        objective = "knn-ap"
        min_gain = 0.01

    assert "0.01" in plot_sigma_losses(Fitted()).axes[0].get_title()


def test_evaluation_plot_has_confusion_matrix_and_precision_recall(tmp_path):
    y = [0, 1, 1, 0, 1, 0]
    fig = plot_evaluation(y, [0, 1, 0, 0, 1, 1], [0.1, 0.9, 0.4, 0.2, 0.8, 0.6],
                          tmp_path / "e.png")
    cm, pr = fig.axes[:2]
    assert cm.get_title().startswith("confusion matrix (F1 ")
    assert pr.get_title().startswith("precision-recall (AP ")
    assert (tmp_path / "e.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="one length"):
        plot_evaluation([0, 1], [0])
