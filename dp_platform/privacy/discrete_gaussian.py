"""An exact sampler of the discrete Gaussian N_ℤ(0, S²), S a positive integer, a vector at a time.

The algorithm is Canonne, Kamath & Steinke's ("The discrete Gaussian for differential
privacy", Algorithms 1–3), the one OpenDP runs draw by draw; here every step runs on a whole
vector with NumPy, which makes a day's 1000 draws ~3× cheaper than OpenDP's per-draw calls
(the cost was its ~15 secure-generator calls and big-rational arithmetic per draw).

Exactness: every random decision is a comparison of uniformly random integers drawn from random
64-bit words, never a floating-point approximation of a probability:

* ``uniform below b``: the top L bits of a word, 2^L ≥ b, kept if below b (rejection);
* Bernoulli(a/b) = [uniform below b < a]; Bernoulli(γ/K) = Bernoulli(γ) ∧ Bernoulli(1/K) with
  independent draws (a product of independent Bernoullis is the Bernoulli of the product);
* Bernoulli(exp(−γ)), γ ∈ [0, 1] (Algorithm 1): K = 1; while Bernoulli(γ/K): K += 1;
  success iff K is odd. For γ > 1: ⌊γ⌋ successes of Bernoulli(exp(−1)) in a row (the run of
  successes is at least ⌊γ⌋), then Bernoulli(exp(−(γ − ⌊γ⌋)));
* discrete Laplace DLap(t), P(y) ∝ exp(−|y|/t) (Algorithm 2 with s = 1): U uniform below t,
  kept with probability exp(−U/t); V the run of Bernoulli(exp(−1)) successes; X = U + t·V; a
  sign bit, −0 rejected;
* N_ℤ(0, S²) (Algorithm 3): t = S + 1, Y ~ DLap(t), kept with probability exp(−γ),
  γ = (|Y| − S²/t)²/(2S²) = (|Y|·t − S²)² / (2S²t²), a ratio of integers. Its fractional part
  has a huge denominator (S ≈ 2^53), so Bernoulli(r/d) there compares d·w with r·2^64 for a
  random 64-bit word w in Python integers, and draws 64 more bits in the rare case the first
  64 cannot decide (U = 0.w… lies in [w/2^64, (w+1)/2^64)).

Rejected candidates are discarded and the accepted ones kept in order, so the output is i.i.d.
N_ℤ(0, S²) whatever the batch sizes. The random words come from the caller's ``bits``
function: the operating system's secure generator in production
(:class:`dp_platform.privacy.noise.SecureNoise`), a seeded one only in tests of the law.
Only :mod:`dp_platform.privacy.noise` calls this module, behind its OpenDP privacy-map check.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

__all__ = ["MAX_SCALE", "Bits", "discrete_gaussian"]

Bits = Callable[[int], np.ndarray]
"""``bits(n)``: n independent uniformly random 64-bit words (``np.uint64``)."""

MAX_SCALE = 1 << 61
"""Largest S handled: t = S + 1, U < t and the uniform draws stay inside int64."""

_WORD = 1 << 64


def _uniform_below(bound: np.ndarray | int, size: int, bits: Bits) -> np.ndarray:
    """``size`` uniform integers in [0, bound) (int64, 1 ≤ bound < 2^62), by rejection: the top
    L bits of a word, 2^L ≥ bound, kept if below bound (probability > 1/2)."""
    if np.ndim(bound) == 0:
        return _uniform_below_one(int(bound), size, bits)
    bounds = np.asarray(bound, dtype=np.int64)
    # 2^exponent > bound − 1: the float conversion may round up past a power of two (one bit
    # more, still correct) but never below one (powers of two are exact); frexp(0) gives 0.
    _, exponent = np.frexp((bounds - 1).astype(np.float64))
    shift = (64 - exponent).astype(np.uint64)
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:  # two words per pending draw and round: the first one kept wins
        words = bits(todo.size * 2).reshape(todo.size, 2)
        shifts = shift[todo, None]
        drawn = np.where(shifts >= 64, np.uint64(0), words >> np.minimum(shifts, np.uint64(63)))
        drawn = drawn.astype(np.int64)  # < 2^62 after the shift
        kept = drawn < bounds[todo, None]
        first = kept.argmax(axis=1)
        done = kept[np.arange(todo.size), first]
        out[todo[done]] = drawn[np.flatnonzero(done), first[done]]
        todo = todo[~done]
    return out


def _uniform_below_one(bound: int, size: int, bits: Bits) -> np.ndarray:
    """:func:`_uniform_below` for one bound: enough words for all at once, kept in order."""
    length = (bound - 1).bit_length()
    if length == 0:
        return np.zeros(size, dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        wanted = size - filled
        words = bits(wanted * (1 << length) // bound + wanted // 16 + 16)
        drawn = (words >> np.uint64(64 - length)).astype(np.int64)
        kept = drawn[drawn < bound][:wanted]
        out[filled : filled + kept.size] = kept
        filled += kept.size
    return out


def _bernoulli_exp_fraction(numerator: np.ndarray, denominator: int, bits: Bits) -> np.ndarray:
    """Bernoulli(exp(−a/b)) elementwise for int64 0 ≤ a < b ≤ 2^61: CKS Algorithm 1, each
    Bernoulli(a/(b·K)) one uniform draw below b·K (two, Bernoulli(a/b)·Bernoulli(1/K), once
    b·K would leave int64)."""
    k = np.ones(numerator.size, dtype=np.int64)
    running = np.arange(numerator.size)
    single = (1 << 62) // denominator
    while running.size:
        ks = k[running]
        if int(ks.max()) <= single:
            going = _uniform_below(denominator * ks, running.size, bits) < numerator[running]
        else:
            going = _uniform_below(denominator, running.size, bits) < numerator[running]
            going &= _uniform_below(ks, running.size, bits) == 0
        k[running[going]] += 1
        running = running[going]
    return k % 2 == 1


def _exp_minus_one_bounds(bits_wanted: int) -> tuple[Fraction, Fraction]:
    """lo ≤ e^−1 ≤ hi with hi − lo ≤ 2^−bits_wanted: partial sums of Σ (−1)^i / i!, which
    bracket the limit (the terms decrease)."""
    total, term, i = Fraction(1), Fraction(1), 0
    while True:
        i += 1
        term /= i
        previous = total
        total = total - term if i % 2 else total + term
        if term <= Fraction(1, 1 << bits_wanted):
            return min(previous, total), max(previous, total)


_LO, _HI = _exp_minus_one_bounds(80)
_E1_WORD = (_LO * _WORD).__floor__()
"""⌊e^−1·2^64⌋: a word below it means U < e^−1, a word above it U > e^−1 (U ∈ [w, w+1)/2^64)."""
if (_HI * _WORD).__floor__() != _E1_WORD:  # pragma: no cover - a constant, checked on import
    raise AssertionError("e^-1 is not pinned down to 64 bits")


def _below_exp_minus_one(words: np.ndarray, bits: Bits) -> np.ndarray:
    """U < e^−1 for uniform U = 0.w… whose first 64 bits are ``words``; a word equal to
    ⌊e^−1·2^64⌋ (probability 2^−64) is decided exactly with more bits of U."""
    below = words < np.uint64(_E1_WORD)
    for i in np.flatnonzero(words == np.uint64(_E1_WORD)):
        word, scale, precision = int(words[i]), _WORD, 64
        while True:
            word, scale, precision = word * _WORD + int(bits(1)[0]), scale * _WORD, precision + 64
            lo, hi = _exp_minus_one_bounds(precision + 16)
            if (word + 1) <= lo * scale:
                below[i] = True
                break
            if word >= hi * scale:
                below[i] = False
                break
    return below


def _exp1_runs(size: int, bits: Bits) -> np.ndarray:
    """Runs of Bernoulli(exp(−1)) successes before the first failure: P(run ≥ v) = e^−v.
    Two words per row first (a run passes 2 with probability e^−2), then four at a time."""
    runs = np.zeros(size, dtype=np.int64)
    running = np.arange(size)
    width = 2
    while running.size:
        words = bits(running.size * width).reshape(running.size, width)
        success = _below_exp_minus_one(words.ravel(), bits).reshape(running.size, width)
        failed = ~success
        first = np.where(failed.any(axis=1), failed.argmax(axis=1), width)
        runs[running] += first
        running = running[first == width]
        width = 4
    return runs


def _discrete_laplace(t: int, size: int, bits: Bits) -> np.ndarray:
    """``size`` i.i.d. draws of DLap(t), P(y) ∝ exp(−|y|/t), as Python integers (object
    array: X = U + t·V is exact whatever V). CKS Algorithm 2 with s = 1."""
    out: list[np.ndarray] = []
    missing = size
    while missing > 0:
        candidates = 2 * missing + 32  # about 63 % are kept
        u = _uniform_below(t, candidates, bits)
        u = u[_bernoulli_exp_fraction(u, t, bits)]
        v = _exp1_runs(u.size, bits)
        x = u.astype(object) + t * v.astype(object)
        negative = (bits(u.size) >> np.uint64(63)).astype(bool)
        valid = ~(negative & (u == 0) & (v == 0))  # −0 is rejected (0 would count twice)
        y = np.where(negative, -x, x)[valid][:missing]
        out.append(y)
        missing -= y.size
    return np.concatenate(out) if out else np.zeros(0, dtype=object)


def _bernoulli_big(remainder: np.ndarray, denominator: int, bits: Bits) -> np.ndarray:
    """Bernoulli(r / d) elementwise for Python integers 0 ≤ r < d: U = 0.w… uniform, success
    iff U < r/d, decided from the first 64 bits of U unless r/d falls inside their interval."""
    words = bits(remainder.size).astype(object)
    target = remainder * _WORD
    success = (words + 1) * denominator <= target
    decided = success | (words * denominator >= target)
    for i in np.flatnonzero(~decided):  # probability ≤ 2^-64 each: exact, element by element
        word, scale = int(words[i]), _WORD
        while True:
            word = word * _WORD + int(bits(1)[0])
            scale *= _WORD
            r = int(remainder[i]) * scale
            if (word + 1) * denominator <= r:
                success[i] = True
                break
            if word * denominator >= r:
                success[i] = False
                break
    return success.astype(bool)


def _bernoulli_exp_ratio(numerator: np.ndarray, denominator: int, bits: Bits) -> np.ndarray:
    """Bernoulli(exp(−n/d)) elementwise, n ≥ 0 Python integers, d a positive integer."""
    whole, remainder = numerator // denominator, numerator % denominator
    result = _exp1_runs(whole.size, bits).astype(object) >= whole  # ⌊γ⌋ successes in a row
    k = np.ones(whole.size, dtype=np.int64)
    running = np.flatnonzero(result)
    while running.size:  # Algorithm 1 on the fractional part, where the whole part succeeded
        going = _bernoulli_big(remainder[running], denominator, bits)
        going &= _uniform_below(k[running], running.size, bits) == 0
        k[running[going]] += 1
        running = running[going]
    return result.astype(bool) & (k % 2 == 1)


def discrete_gaussian(scale: int, size: int, bits: Bits) -> np.ndarray:
    """``size`` i.i.d. draws of N_ℤ(0, scale²), P(z) ∝ exp(−z²/(2·scale²)), as Python integers
    (object array). CKS Algorithm 3 with t = scale + 1."""
    if not 1 <= scale <= MAX_SCALE:
        raise ValueError(
            f"the discrete Gaussian's scale must be an integer in [1, 2^61], got {scale}"
        )
    t = scale + 1
    square = scale * scale
    denominator = 2 * square * t * t
    out: list[np.ndarray] = []
    missing = size
    while missing > 0:
        y = _discrete_laplace(t, missing + missing // 2 + 16, bits)
        excess = np.abs(y) * t - square
        kept = y[_bernoulli_exp_ratio(excess * excess, denominator, bits)][:missing]
        out.append(kept)
        missing -= kept.size
    return np.concatenate(out) if out else np.zeros(0, dtype=object)
