"""kb-SRK, ps-SRK and pw-SRK against literal by-definition oracles (Bu, Li & Zhu, 2012)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from structkernels.kernels.srk.kb import KbSRK, kb_kbar, kb_srk_direct
from structkernels.kernels.srk.ps import PsSRK
from structkernels.kernels.srk.pw import PwSRK

WILD = None


def kgrams(s, k):
    return [tuple(s[i:i + k]) for i in range(len(s) - k + 1)]


def bijective_rules(alphabet, k):
    """Every kb-SRK rule: two length-k patterns over alphabet + wildcard, and a
    bijection between their wildcard positions (Sec. 5.1)."""
    symbols = list(alphabet) + [WILD]
    for ps in itertools.product(symbols, repeat=k):
        ws = [i for i, c in enumerate(ps) if c is WILD]
        for pt in itertools.product(symbols, repeat=k):
            wt = [j for j, c in enumerate(pt) if c is WILD]
            if len(ws) != len(wt):
                continue
            for perm in itertools.permutations(wt):
                yield ps, pt, tuple(zip(ws, perm, strict=True))


def rule_weight(rule, s, t, k, lam):
    """phi_r(s, t) of Eqs. 2-3: sum over k-gram pairs matched, lam per aligned pair."""
    ps, pt, beta = rule
    total = 0.0
    for a in kgrams(s, k):
        if any(c is not WILD and c != a[i] for i, c in enumerate(ps)):
            continue
        for b in kgrams(t, k):
            if any(c is not WILD and c != b[j] for j, c in enumerate(pt)):
                continue
            if all(a[i] == b[j] for i, j in beta):
                total += lam ** len(beta)
    return total


def kb_bruteforce(x, y, k, lam):
    alphabet = sorted(set(x[0]) | set(x[1]) | set(y[0]) | set(y[1]))
    return sum(
        rule_weight(r, *x, k, lam) * rule_weight(r, *y, k, lam)
        for r in bijective_rules(alphabet, k)
    )


def random_rewriting(rng, alphabet, maxlen):
    return (tuple(rng.choice(alphabet) for _ in range(rng.randint(0, maxlen))),
            tuple(rng.choice(alphabet) for _ in range(rng.randint(0, maxlen))))


def test_worked_example_figs_2_to_5():
    # Fig. 2: a_s1 = abbccbb, a_s2 = abcccdd, a_t1 = cbcbbcb, a_t2 = cbccdcd
    for lam in (1.0, 0.7, 0.3):
        expected = 12 * lam**12 + 24 * lam**10 + 14 * lam**8 + 2 * lam**6
        got = kb_kbar("abbccbb", "cbcbbcb", "abcccdd", "cbccdcd", lam=lam)
        assert got == pytest.approx(expected, rel=1e-12)


def test_worked_example_as_whole_kernel():
    # with the four 7-grams as whole sentences, K_7 is the single K-bar of the example
    x = (tuple("abbccbb"), tuple("cbcbbcb"))
    y = (tuple("abcccdd"), tuple("cbccdcd"))
    lam = 0.6
    expected = 12 * lam**12 + 24 * lam**10 + 14 * lam**8 + 2 * lam**6
    assert KbSRK(k=7, lam=lam).value(x, y) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_kb_equals_rule_enumeration(seed):
    rng = random.Random(seed)
    alphabet = "ab" if seed % 2 else "abc"
    k = 1 + seed % 3
    lam = rng.choice([1.0, 0.5, 0.83])
    x = random_rewriting(rng, alphabet, 5)
    y = random_rewriting(rng, alphabet, 5)
    want = kb_bruteforce(x, y, k, lam)
    assert KbSRK(k=k, lam=lam).value(x, y) == pytest.approx(want, rel=1e-10, abs=1e-10)
    assert kb_srk_direct(x, y, k, lam) == pytest.approx(want, rel=1e-10, abs=1e-10)


def spectrum(a, b, k):
    return sum(1 for u in kgrams(a, k) for v in kgrams(b, k) if u == v)


def wildcard_side(a, b, k, lam):
    """(k,k)-wildcard kernel by enumerating patterns (Leslie & Kuang, 2004)."""
    alphabet = sorted(set(a) | set(b))
    total = 0.0
    for pat in itertools.product(list(alphabet) + [WILD], repeat=k):
        w = lam ** sum(c is WILD for c in pat)
        fa = sum(all(c is WILD or c == g[i] for i, c in enumerate(pat)) for g in kgrams(a, k))
        fb = sum(all(c is WILD or c == g[i] for i, c in enumerate(pat)) for g in kgrams(b, k))
        total += (w * fa) * (w * fb)
    return total


def pairwise_rules_bruteforce(x, y, k, lam, wildcards):
    """SRK of Eqs. 1-2 over the rule sets of Examples 1 and 2 (no alignment)."""
    alphabet = sorted(set(x[0]) | set(x[1]) | set(y[0]) | set(y[1]))
    symbols = list(alphabet) + ([WILD] if wildcards else [])
    pats = list(itertools.product(symbols, repeat=k))

    def phi(p, seq):
        return sum(all(c is WILD or c == g[i] for i, c in enumerate(p)) for g in kgrams(seq, k))

    total = 0.0
    for ps in pats:
        a1, a2 = phi(ps, x[0]), phi(ps, y[0])
        if not a1 or not a2:
            continue
        for pt in pats:
            i = sum(c is WILD for c in ps) + sum(c is WILD for c in pt)
            total += (a1 * phi(pt, x[1]) * lam**i) * (a2 * phi(pt, y[1]) * lam**i)
    return total


@pytest.mark.parametrize("seed", range(20))
def test_ps_and_pw_equal_their_definitions(seed):
    rng = random.Random(100 + seed)
    alphabet = "ab" if seed % 2 else "abc"
    k = 1 + seed % 3
    lam = rng.choice([1.0, 0.6])
    x = random_rewriting(rng, alphabet, 5)
    y = random_rewriting(rng, alphabet, 5)
    ps = PsSRK(k=k).value(x, y)
    assert ps == pytest.approx(spectrum(x[0], y[0], k) * spectrum(x[1], y[1], k), abs=1e-10)
    assert ps == pytest.approx(pairwise_rules_bruteforce(x, y, k, 1.0, False), abs=1e-10)
    pw = PwSRK(k=k, lam=lam).value(x, y)
    want = wildcard_side(x[0], y[0], k, lam) * wildcard_side(x[1], y[1], k, lam)
    assert pw == pytest.approx(want, rel=1e-10, abs=1e-10)
    if k <= 2:
        assert pw == pytest.approx(pairwise_rules_bruteforce(x, y, k, lam, True), rel=1e-10,
                                   abs=1e-10)


def test_gram_matches_pairwise_values():
    rng = random.Random(7)
    X = [random_rewriting(rng, "abcd", 7) for _ in range(12)]
    for kern in (KbSRK(k=2, lam=0.7), PsSRK(k=2), PwSRK(k=2, lam=0.5)):
        G = kern.gram(X)
        for i in range(0, 12, 3):
            for j in range(0, 12, 4):
                assert G[i, j] == pytest.approx(kern.value(X[i], X[j]), rel=1e-12, abs=1e-12)
        assert np.allclose(G, G.T)
