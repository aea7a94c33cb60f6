"""Pairwise k-wildcard string re-writing kernel, pw-SRK (Bu, Li & Zhu, ACL 2012, Example 2).

``K^pw_k((s1, t1), (s2, t2)) = K^wc_(k,k)(s1, s2) * K^wc_(k,k)(t1, t2)``, ``K^wc_(k,k)``
the (k, m)-wildcard kernel of Leslie & Kuang (2004) at ``m = k``: each k-gram counts
towards its ``2^k`` wildcard patterns with weight ``lam ** (number of wildcards)``.
"""

from __future__ import annotations

from structkernels.kernels.srk.common import PairwiseSRK

__all__ = ["PwSRK"]


class PwSRK(PairwiseSRK):
    """Pairwise (k, k)-wildcard SRK (Bu, Li & Zhu, 2012, Example 2); parameters as
    :class:`~structkernels.kernels.srk.common.SRKBase` (``lam``: weight of each wildcard).


    Examples
    --------
    >>> from structkernels import kernel
    >>> x = (("a", "b"), ("c",))
    >>> y = (("a", "c"), ("c",))
    >>> kernel("pw-srk", k=2, lam=1.0).value(x, y)   # (2 * 1) * 0: no 2-grams in ("c",)
    0.0
    >>> kernel("pw-srk", k=1, lam=0.5).value(x, y)   # (1.25 + 0.25 + 0.25 + 0.25) * 1.25
    2.5
    """

    name = "pw-srk"
    wildcards = True
