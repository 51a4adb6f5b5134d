"""The only place where noise is drawn — and where every draw is checked by OpenDP's own map.

Production uses :class:`SecureNoise` and :class:`SecureIntegerNoise`, backed by OpenDP 0.16's
samplers: they draw from the operating system's cryptographically secure generator and sample
*exactly* (Gaussian and Laplace as discrete noise on a 2^k grid with correct rounding of
``value + noise`` to float; the exponential mechanism as report-noisy-max with exact Gumbel
noise; discrete Laplace and discrete Gaussian on integers), so they are safe against the
floating-point attacks that break textbook ``numpy.random`` samplers (Mironov, "On significance
of the least significant bits for differential privacy"). Tests inject :class:`SeededNoise` /
:class:`SeededIntegerNoise` through an explicit ``noise=`` parameter; production never does:
:func:`resolve` / :func:`resolve_integer` turn ``None`` into the secure source.

**Defence in depth.** Every drawing method takes, besides the noise scale, keyword-only
*declarations*: the sensitivity of what it releases (in the metric of the mechanism) and the
loss allotted to this draw (ρ for the zCDP mechanisms, ε for the pure-DP ones). A daily or
campaign release declares its mechanism's ``declare`` (:mod:`dp_platform.privacy.allotment`),
restated from the registered plan apart from the code that sizes the noise. Before drawing, the
public method builds (or takes from a cache) the exact OpenDP measurement the secure source
applies, asks its ``map`` for the loss at the declared sensitivity and raises
:class:`AllotmentExceeded` — drawing nothing — if that loss exceeds the allotment by more than
a relative :data:`SLACK` (float rounding only). The check lives in the base classes
:class:`NoiseSource` and :class:`IntegerNoiseSource`; a source implements only the raw draws,
so the seeded test sources go through exactly the check production does. The measurements, their
maps and the refusal are :mod:`dp_platform.privacy.noise_check`.

=========================  =============================================  =====  ==========
method                     OpenDP measurement (what the map is asked of)  loss   allotment
=========================  =============================================  =====  ==========
``add_gaussian``           ``make_gaussian`` on n floats, ℓ2, grid 2^k    ρ      ``rho``
``add_laplace``            ``make_laplace`` on n floats, ℓ1, grid 2^k     ε      ``epsilon``
``exponential_index``      ``make_noisy_max``, ℓ∞, zCDP (Gumbel noise)    ρ      ε²/8
``noisy_max_index``        ``make_noisy_max``, ℓ∞, pure (exponential)     ε      ``epsilon``
``add_discrete_laplace``   ``make_laplace`` on integers, ℓ1               ε      ``epsilon``
``add_discrete_gaussian``  ``make_gaussian`` on integers, ℓ2              ρ      ``rho``
``exponentials``           the race's twin: ``make_noisy_max``, Gumbel    ρ      ε²/8
=========================  =============================================  =====  ==========

The exponential mechanism with ε = 2Δ/scale is ε-bounded-range, hence ε²/8-zCDP (Cesar &
Rogers, "Bounding, concentrating, and truncating: unifying privacy loss composition for data
analytics"), and OpenDP's map of Gumbel report-noisy-max is exactly (2Δ/scale)²/8: comparing
the map's ρ with ε²/8 is comparing 2Δ/scale with ε. ``uniform`` (a point inside an interval
already chosen privately) reads no data and costs nothing, so it has no check.

**The grid (noise at speed).** On floats OpenDP samples discrete noise on the grid 2^k; with
its default k (the finest float grid) one Gaussian draw costs 0.1–0.2 ms. Rounding the input to
a coarser grid moves it by ≤ 2^(k−1) per coordinate, which OpenDP's map charges as extra
sensitivity (+2^k·√n in ℓ2, +2^k·n in ℓ1, for n coordinates). :func:`grid_k` picks the
coarsest k whose extra sensitivity is at most 2^−46 of the declared one — a relative loss of
≤ 3·10⁻¹⁴, inside the check's slack, and since the check maps the measurement actually used,
the rounding term is inside the check. The draw stays exact (discrete Gaussian / Laplace on the
grid, rounded once to float).

**A day's vector in one draw.** A Gaussian or Laplace vector is one call of the OpenDP
measurement the check mapped (``make_gaussian`` / ``make_laplace`` over a vector domain of the
vector's length): OpenDP draws every coordinate with its own exact sampler over the operating
system's secure generator, so the guarantee rests on that vetted sampler alone — no sampler of
this project's own draws production noise (``tests/test_noise.py`` checks every draw ends in
OpenDP). ``uniform``, the one data-independent draw, is OpenDP's too
(``make_impute_uniform_float``: its uniform float sampler, also over the secure generator).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from dp_platform.privacy.noise_check import (
    Amount,
    Draw,
    bounded_range_allotment,
    declared_amount,
    declared_sensitivity,
    float_domain,
    grid_k,
    opendp_prelude,
    privacy_loss,
    refuse_above,
)

if TYPE_CHECKING:
    pass

__all__ = [
    "IntegerNoiseSource",
    "NoiseSource",
    "SecureIntegerNoise",
    "SecureNoise",
    "SeededIntegerNoise",
    "SeededNoise",
    "exponentials",
    "resolve",
    "resolve_integer",
]

_EXP_GRID_K = -100  # Exp(1) draws on a 2^-100 grid: far below the float rounding of the race


# -- real-valued noise ----------------------------------------------------------------------


def _as_vector(values: np.ndarray | list[float] | float) -> np.ndarray:
    vector = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if not np.all(np.isfinite(vector)):
        raise ValueError("noise can only be added to finite values")
    return vector


def _check_scale(scale: float) -> float:
    scale = float(scale)
    if not (scale >= 0 and np.isfinite(scale)):
        raise ValueError(f"noise scale must be finite and >= 0, got {scale!r}")
    return scale


class NoiseSource(ABC):
    """What a mechanism may ask of a source of randomness; every draw checked (module doc).

    Subclasses implement the raw draws (``_gaussian``, ``_laplace``, ``_gumbel_max``,
    ``_exponential_max``, ``_uniform``) and nothing else: validation and the OpenDP check are
    here, so no source can skip them.
    """

    def add_gaussian(
        self, values: np.ndarray, scale: float, *, l2_sensitivity: float, rho: Amount
    ) -> np.ndarray:
        """``values + N(0, scale²)`` element-wise, if ρ-zCDP at ℓ2 sensitivity Δ by OpenDP's map
        (ρ = Δ²/(2·scale²), plus the grid's ≤ 3·10⁻¹⁴ relative)."""
        vector = _as_vector(values)
        draw = self.check_gaussian(scale, l2_sensitivity=l2_sensitivity, rho=rho, size=vector.size)
        return self._gaussian(vector, draw) if draw.scale else vector.copy()

    def check_gaussian(
        self, scale: float, *, l2_sensitivity: float, rho: Amount, size: int = 1
    ) -> Draw:
        """What :meth:`add_gaussian` checks for ``size`` values, without drawing: raises as it
        would (so a release of two draws can refuse the second before making the first)."""
        scale = _check_scale(scale)
        delta = declared_sensitivity(l2_sensitivity, "l2_sensitivity")
        k = grid_k(delta, scale, math.sqrt(size)) if scale else None
        draw = Draw(scale, "gaussian", size, k)
        loss = privacy_loss("gaussian", scale, delta, size=size, k=k)
        refuse_above("gaussian", loss, declared_amount(rho, "rho"), "ρ")
        return draw

    def add_laplace(
        self, values: np.ndarray, scale: float, *, l1_sensitivity: float, epsilon: Amount
    ) -> np.ndarray:
        """``values + Lap(scale)`` element-wise, if ε-DP at ℓ1 sensitivity Δ by OpenDP's map
        (ε = Δ/scale, plus the grid's ≤ 1.5·10⁻¹⁴ relative)."""
        vector, scale = _as_vector(values), _check_scale(scale)
        delta = declared_sensitivity(l1_sensitivity, "l1_sensitivity")
        k = grid_k(delta, scale, float(vector.size)) if scale else None
        draw = Draw(scale, "laplace", vector.size, k)
        loss = privacy_loss("laplace", scale, delta, size=vector.size, k=k)
        refuse_above("laplace", loss, declared_amount(epsilon, "epsilon"), "ε")
        return self._laplace(vector, draw) if scale else vector.copy()

    def exponential_index(
        self, scores: np.ndarray, scale: float, *, sensitivity: float, epsilon: Amount
    ) -> int:
        """Index i drawn with probability ∝ exp(scores[i] / scale) (argmax of scores + Gumbel):
        the exponential mechanism, ε-DP for ε = 2Δ/scale with Δ the scores' sensitivity;
        checked as OpenDP's ρ = (2Δ/scale)²/8 against ε²/8."""
        vector, scale = _as_vector(scores), _check_scale(scale)
        delta = declared_sensitivity(sensitivity, "sensitivity")
        loss = privacy_loss("gumbel_max", scale, delta)
        refuse_above("gumbel_max", loss, bounded_range_allotment(epsilon), "ρ", "ε²/8")
        if scale == 0:
            return int(np.argmax(vector))
        return self._gumbel_max(vector, Draw(scale, "gumbel_max"))

    def noisy_max_index(
        self,
        scores: np.ndarray,
        scale: float,
        *,
        sensitivity: float,
        epsilon: Amount,
        monotonic: bool = False,
    ) -> int:
        """argmax of scores + Exp(scale) noise (report-noisy-max with exponential noise, the same
        law as permute-and-flip): ε-DP for ε = 2Δ/scale, Δ/scale if every score moves in the
        same direction between neighbours (``monotonic``); checked by OpenDP's pure-DP map."""
        vector, scale = _as_vector(scores), _check_scale(scale)
        delta = declared_sensitivity(sensitivity, "sensitivity")
        loss = privacy_loss("exponential_max", scale, delta, monotonic=monotonic)
        refuse_above("exponential_max", loss, declared_amount(epsilon, "epsilon"), "ε")
        if scale == 0:
            return int(np.argmax(vector))
        draw = Draw(scale, "exponential_max", monotonic=monotonic)
        return self._exponential_max(vector, draw)

    def uniform(self, low: float, high: float) -> float:
        """A uniform draw from [low, high): reads no data, so it costs nothing and is unchecked."""
        return self._uniform(float(low), float(high))

    @abstractmethod
    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray: ...

    @abstractmethod
    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray: ...

    @abstractmethod
    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int: ...

    @abstractmethod
    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int: ...

    @abstractmethod
    def _uniform(self, low: float, high: float) -> float: ...


class SecureNoise(NoiseSource):
    """OpenDP-backed exact samplers over the OS's secure RNG. Cannot be seeded, by design."""

    def __init__(self) -> None:
        opendp_prelude()

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return _opendp_draw(vector, draw)

    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return _opendp_draw(vector, draw)

    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int:
        return int(draw.measurement(vector.tolist()))

    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int:
        return int(draw.measurement(vector.tolist()))

    def _uniform(self, low: float, high: float) -> float:
        # The point inside an interval already chosen privately reads no data; OpenDP's uniform
        # float sampler (over the secure generator) draws it, as it imputes a missing value.
        if not low < high:
            return low
        return float(low + (high - low) * _unit_uniform()([math.nan])[0])


@lru_cache(maxsize=1)
def _unit_uniform():  # type: ignore[no-untyped-def]
    """OpenDP's uniform float sampler on [0, 1), as it imputes a missing value."""
    dp = opendp_prelude()
    nan_floats = dp.vector_domain(dp.atom_domain(T=float, nan=True))
    return dp.t.make_impute_uniform_float(nan_floats, dp.symmetric_distance(), bounds=(0.0, 1.0))


def _opendp_draw(vector: np.ndarray, draw: Draw) -> np.ndarray:
    """The OpenDP measurement applied to the vector's entries (passed as one NumPy array)."""
    noisy = draw.measurement(np.ascontiguousarray(vector.ravel()))
    return np.asarray(noisy, dtype=np.float64).reshape(vector.shape)


class SeededNoise(NoiseSource):
    """Reproducible noise for tests only (numpy PCG64). Never used by production code paths.

    Checked like the secure source (the base class); the draws are numpy's, in the same order
    and with the same values for a given seed as before the check existed.
    """

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def _gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return vector + self._rng.normal(0.0, draw.scale, size=vector.shape)

    def _laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return vector + self._rng.laplace(0.0, draw.scale, size=vector.shape)

    def _gumbel_max(self, vector: np.ndarray, draw: Draw) -> int:
        return int(np.argmax(vector + self._rng.gumbel(0.0, draw.scale, size=vector.shape)))

    def _exponential_max(self, vector: np.ndarray, draw: Draw) -> int:
        return int(np.argmax(vector + self._rng.exponential(draw.scale, size=vector.shape)))

    def _uniform(self, low: float, high: float) -> float:
        return float(self._rng.uniform(low, high))


_SECURE: SecureNoise | None = None


def resolve(noise: NoiseSource | None) -> NoiseSource:
    """The source to use: the caller's (tests) or the process-wide secure one (production)."""
    global _SECURE
    if noise is not None:
        return noise
    if _SECURE is None:
        _SECURE = SecureNoise()
    return _SECURE


# -- integer noise and Exp(1) variates ------------------------------------------------------


def _integers(values: np.ndarray | list[int]) -> np.ndarray:
    vector = np.atleast_1d(np.asarray(values))
    if vector.dtype.kind not in "iu" and (
        not np.all(np.isfinite(vector)) or np.any(vector != np.round(vector))
    ):
        raise ValueError("discrete noise needs integer values")
    return vector.astype(np.int64)


class IntegerNoiseSource(ABC):
    """What a mechanism may ask of a source of integer noise and Exp(1) variates; every draw
    checked like :class:`NoiseSource`'s. Subclasses implement ``_discrete_laplace``,
    ``_discrete_gaussian`` and ``_exponentials`` only."""

    def add_discrete_laplace(
        self, values: np.ndarray, scale: float, *, l1_sensitivity: float, epsilon: Amount
    ) -> np.ndarray:
        """``values + DLap(scale)`` element-wise, P(z) ∝ exp(−|z|/scale), z ∈ ℤ; ε-DP at ℓ1
        sensitivity Δ for ε = Δ/scale (OpenDP's map, checked)."""
        vector, scale = _integers(values), _check_scale(scale)
        delta = declared_sensitivity(l1_sensitivity, "l1_sensitivity")
        loss = privacy_loss("discrete_laplace", scale, delta)
        refuse_above("discrete_laplace", loss, declared_amount(epsilon, "epsilon"), "ε")
        if scale == 0:
            return vector.copy()
        return self._discrete_laplace(vector, Draw(scale, "discrete_laplace"))

    def add_discrete_gaussian(
        self, values: np.ndarray, scale: float, *, l2_sensitivity: float, rho: Amount
    ) -> np.ndarray:
        """``values + N_ℤ(0, scale²)`` element-wise, P(z) ∝ exp(−z²/(2·scale²)); ρ-zCDP at ℓ2
        sensitivity Δ for ρ = Δ²/(2·scale²) (Canonne–Kamath–Steinke; OpenDP's map, checked)."""
        vector, scale = _integers(values), _check_scale(scale)
        delta = declared_sensitivity(l2_sensitivity, "l2_sensitivity")
        loss = privacy_loss("discrete_gaussian", scale, delta)
        refuse_above("discrete_gaussian", loss, declared_amount(rho, "rho"), "ρ")
        if scale == 0:
            return vector.copy()
        return self._discrete_gaussian(vector, Draw(scale, "discrete_gaussian"))

    def exponentials(
        self, size: int, *, gumbel_scale: float, sensitivity: float, epsilon: Amount
    ) -> np.ndarray:
        """``size`` i.i.d. Exp(1) draws (float64, all > 0) for an exponential race.

        The race argmin_i ln E_i − s_i/b over a group of candidates *is* the exponential
        mechanism P(i) ∝ exp(s_i/b): −ln E is a standard Gumbel variable when E ~ Exp(1), so
        argmin_i (ln E_i − s_i/b) = argmax_i (s_i + b·G_i), report-noisy-max with Gumbel noise
        of scale b (Gumbel-max trick) — OpenDP's ``make_noisy_max`` under zCDP. The caller
        declares the b its race uses (``gumbel_scale``), its scores' sensitivity Δ and ε; the
        check asks that measurement's map, as for :meth:`NoiseSource.exponential_index`, for
        each group (each group is its own mechanism).
        """
        scale = _check_scale(gumbel_scale)
        delta = declared_sensitivity(sensitivity, "sensitivity")
        loss = privacy_loss("gumbel_max", scale, delta)
        refuse_above("gumbel_max", loss, bounded_range_allotment(epsilon), "ρ", "ε²/8")
        if size <= 0:
            return np.zeros(0, dtype=np.float64)
        return self._exponentials(int(size))

    @abstractmethod
    def _discrete_laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray: ...

    @abstractmethod
    def _discrete_gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray: ...

    @abstractmethod
    def _exponentials(self, size: int) -> np.ndarray: ...


class SecureIntegerNoise(IntegerNoiseSource):
    """OpenDP's exact integer samplers over the OS's secure RNG. Cannot be seeded, by design."""

    def __init__(self) -> None:
        opendp_prelude()

    def _discrete_laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return np.asarray(draw.measurement(vector.tolist()), dtype=np.int64)

    def _discrete_gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return np.asarray(draw.measurement(vector.tolist()), dtype=np.int64)

    def _exponentials(self, size: int) -> np.ndarray:
        # |Lap(1)| is exactly Exp(1); OpenDP draws it exactly on the 2^-100 grid and rounds once
        # to float, so the race's keys ln E carry float rounding only (the grid is far finer).
        dp = opendp_prelude()
        laplace = dp.m.make_laplace(
            float_domain(size), dp.l1_distance(T=float), scale=1.0, k=_EXP_GRID_K
        )
        draws = np.abs(np.asarray(laplace([0.0] * size), dtype=np.float64))
        # |Lap(1)| = 0 has probability ~2^-100 on the grid; the race needs E > 0.
        return np.where(draws > 0, draws, 2.0**_EXP_GRID_K)


class SeededIntegerNoise(IntegerNoiseSource):
    """Reproducible integer noise for tests only (numpy PCG64). Never used in production."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def _dlap(self, scale: float, size: int) -> np.ndarray:
        # difference of two i.i.d. geometrics with success 1 − e^{−1/scale} is DLap(scale)
        q = -math.expm1(-1.0 / scale)
        return self._rng.geometric(q, size) - self._rng.geometric(q, size)

    def _discrete_laplace(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        return vector + self._dlap(draw.scale, vector.size)

    def _discrete_gaussian(self, vector: np.ndarray, draw: Draw) -> np.ndarray:
        # Canonne–Kamath–Steinke rejection sampler: DLap(t), t = ⌊σ⌋ + 1, accepted with
        # probability exp(−(|y| − σ²/t)²/(2σ²)).
        scale = draw.scale
        t = math.floor(scale) + 1
        out = np.empty(vector.size, dtype=np.int64)
        filled = 0
        while filled < vector.size:
            y = self._dlap(t, 2 * (vector.size - filled) + 16)
            accept = self._rng.random(y.size) < np.exp(
                -((np.abs(y) - scale**2 / t) ** 2) / (2 * scale**2)
            )
            take = y[accept][: vector.size - filled]
            out[filled : filled + take.size] = take
            filled += take.size
        return vector + out

    def _exponentials(self, size: int) -> np.ndarray:
        draws = self._rng.exponential(1.0, size)
        return np.where(draws > 0, draws, 2.0**_EXP_GRID_K)


_SECURE_INTEGER: SecureIntegerNoise | None = None


def resolve_integer(noise: IntegerNoiseSource | None) -> IntegerNoiseSource:
    """The caller's source (tests) or the process-wide secure one (production)."""
    global _SECURE_INTEGER
    if noise is not None:
        return noise
    if _SECURE_INTEGER is None:
        _SECURE_INTEGER = SecureIntegerNoise()
    return _SECURE_INTEGER


def exponentials(
    size: int,
    noise: IntegerNoiseSource | None = None,
    *,
    gumbel_scale: float,
    sensitivity: float,
    epsilon: Amount,
) -> np.ndarray:
    """``size`` i.i.d. Exp(1) draws for a race of scale ``gumbel_scale`` (checked, see
    :meth:`IntegerNoiseSource.exponentials`), from the secure source or the test's."""
    return resolve_integer(noise).exponentials(
        size, gumbel_scale=gumbel_scale, sensitivity=sensitivity, epsilon=epsilon
    )
