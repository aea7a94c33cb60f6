"""Pairwise k-spectrum string re-writing kernel, ps-SRK (Bu, Li & Zhu, ACL 2012, Example 1).

``K^ps_k((s1, t1), (s2, t2)) = K^spec_k(s1, s2) * K^spec_k(t1, t2)``, ``K^spec_k`` the
k-spectrum kernel of Leslie et al. (2002).
"""

from __future__ import annotations

from structkernels.kernels.srk.common import PairwiseSRK

__all__ = ["PsSRK"]


class PsSRK(PairwiseSRK):
    """Pairwise k-spectrum SRK (Bu, Li & Zhu, 2012, Example 1); parameters as
    :class:`~structkernels.kernels.srk.common.SRKBase`.


    Examples
    --------
    >>> from structkernels import kernel
    >>> x = (("a", "b", "a"), ("b", "a"))
    >>> y = (("a", "b"), ("b", "a", "a"))
    >>> kernel("ps-srk", k=1).value(x, y)   # (2*1 + 1*1) * (1*1 + 1*2)
    9.0
    """

    name = "ps-srk"
    wildcards = False
