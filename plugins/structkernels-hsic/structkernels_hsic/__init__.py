"""HSIC, structured HSIC and pointwise HSIC over any registered structkernels kernel.

Registered in the entry-point group ``structkernels.measures`` as ``hsic``,
``phsic`` and ``structured-hsic``; CLI sub-commands ``structkernels hsic`` and
``structkernels phsic``.

With the ``[torch]`` extra: differentiable HSIC and normalised HSIC for PyTorch
(:mod:`structkernels_hsic.torch`) and HSIC-bottleneck training
(:class:`HSICBottleneckClassifier`); the package imports without PyTorch.

Examples
--------
>>> import numpy as np
>>> import structkernels as sk
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=(300, 2)); y = np.sin(x) + 0.1 * rng.normal(size=(300, 2))
>>> hsic = sk.measure("hsic", kernel_x="rbf", kernel_y="rbf", estimator="icd", max_rank=50, tol=0)
>>> hsic.fit(x, y).statistic_ > 0
True
"""

from structkernels_hsic._kernels import median_heuristic
from structkernels_hsic.applications import (
    make_choice_questions,
    ranking_auc,
    response_selection_metrics,
    score_choices,
    select_pairs,
)
from structkernels_hsic.bottleneck import HSICBottleneckClassifier
from structkernels_hsic.encoders import SumOfWordVectors, glove_tokens, load_glove
from structkernels_hsic.hsic import (
    HSIC,
    HSICTestResult,
    hsic_biased,
    hsic_icd,
    hsic_lowrank_bound,
    hsic_unbiased,
)
from structkernels_hsic.icd import IncompleteCholesky, nystrom_factor
from structkernels_hsic.phsic import PHSIC
from structkernels_hsic.structured import StructuredHSIC, td_sep

__all__ = [
    "HSIC",
    "HSICTestResult",
    "HSICBottleneckClassifier",
    "PHSIC",
    "StructuredHSIC",
    "IncompleteCholesky",
    "hsic_biased",
    "hsic_unbiased",
    "hsic_icd",
    "hsic_lowrank_bound",
    "nystrom_factor",
    "td_sep",
    "median_heuristic",
    "SumOfWordVectors",
    "load_glove",
    "glove_tokens",
    "make_choice_questions",
    "score_choices",
    "response_selection_metrics",
    "select_pairs",
    "ranking_auc",
]

__version__ = "0.1.0"
