"""Privacy cost of every baseline: brute-force sensitivities and the ρ actually charged.

The sensitivities here are computed independently of the library by enumerating the vertices
of the set of allowed user changes (docs/baselines.md#sensitivity,
docs/baselines.md#oracle-sensitivity): GS·e_{p,i} for the global cap,
and "per day, nothing or r_i on one publisher" for per-day caps. The charged ρ is then
recomputed from the σ the release *actually passed to the noise source*, so a wrong σ, a wrong
sensitivity formula or a release that ignores the plan would all fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dp_platform.privacy.noise import SeededNoise
from dp_platform.privacy.noise_check import Amount
from dp_research.baselines import BIN, IPA, MMBPC, UMM, Stream, prefix, prefix_weights, sliding
from dp_research.baselines import tree as tr
from dp_research.baselines.contributions import Conversions
from dp_research.baselines.sensitivity import global_sensitivity, per_day_sensitivity

RHO = 0.7


class RecordingNoise(SeededNoise):
    """Seeded noise that remembers every (kind, scale, count) it was asked for."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.calls: list[tuple[str, float, int]] = []

    def add_gaussian(self, values: np.ndarray, scale: float, **declared: Amount) -> np.ndarray:
        self.calls.append(("gaussian", float(scale), np.size(values)))
        return super().add_gaussian(values, scale, **declared)

    def add_laplace(self, values: np.ndarray, scale: float, **declared: Amount) -> np.ndarray:
        self.calls.append(("laplace", float(scale), np.size(values)))
        return super().add_laplace(values, scale, **declared)


def brute_global(strategy: np.ndarray, bound: float, publishers: int = 1) -> float:
    """max ‖S d_p‖ over the vertices bound·e_{p,i} of {d ≥ 0, Σ_{p,i} d ≤ bound}."""
    n = strategy.shape[1]
    best = 0.0
    for p, i in itertools.product(range(publishers), range(n)):
        d = np.zeros((publishers, n))
        d[p, i] = bound
        best = max(best, float(np.sqrt(np.sum((d @ strategy.T) ** 2))))
    return best


def brute_per_day(strategy: np.ndarray, r: np.ndarray, publishers: int = 1) -> float:
    """max over vertices of {d ≥ 0, Σ_p d_{p,i} ≤ r_i}: per day, 0 or r_i on one publisher."""
    n = strategy.shape[1]
    choices = np.array(list(itertools.product(range(publishers + 1), repeat=n)))  # 0 = none
    d = np.zeros((len(choices), publishers, n))
    for p in range(publishers):
        d[:, p, :] = (choices == p + 1) * r[None, :]
    values = np.einsum("vpn,kn->vpk", d, strategy)
    return float(np.sqrt(np.max(np.sum(values**2, axis=(1, 2)))))


def gaussian_scales(noise: RecordingNoise) -> list[float]:
    return [scale for kind, scale, _ in noise.calls if kind == "gaussian"]


def run_release(plan, n: int, seed: int = 0) -> RecordingNoise:
    noise = RecordingNoise(seed)
    plan.release(np.ones((2, n)), noise)
    return noise


GLOBAL_MECHANISMS = [
    lambda gs: IPA(gs, RHO),
    lambda gs: BIN(gs, RHO),
    lambda gs: BIN(gs, RHO, simple=True),
    lambda gs: UMM(gs, RHO),
    lambda gs: UMM(gs, RHO, "optimal"),
    lambda gs: UMM(gs, RHO, "optimal", tuple(prefix_weights(10, squared=False))),
]


@pytest.mark.parametrize("make", GLOBAL_MECHANISMS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 10])
def test_global_cap_sensitivity_and_cost(make, n: int) -> None:
    gs = 3.0
    mechanism = make(gs)
    if getattr(mechanism, "weights", None) is not None and len(mechanism.weights) != n:
        mechanism = UMM(gs, RHO, "optimal", tuple(prefix_weights(n, squared=False)))
    for workload in (prefix(n), sliding(n, min(3, n))):
        plan = mechanism.plan(workload)
        exact = brute_global(plan.strategy, gs)
        assert plan.sensitivity == pytest.approx(exact, rel=1e-12)
        # docs/baselines.md#multi-publisher: two publishers are no worse than one
        assert brute_global(plan.strategy, gs, publishers=2) == pytest.approx(exact, rel=1e-12)
        (sigma,) = gaussian_scales(run_release(plan, n))
        assert exact**2 / (2 * sigma**2) == pytest.approx(RHO, rel=1e-12, abs=1e-12)
        assert plan.zcdp_cost() == pytest.approx(RHO, abs=1e-12)
        assert plan.rho == RHO


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_global_cap_random_points_never_exceed(n: int) -> None:
    """Interior points of the polytope (mass spread over days and publishers) stay below Δ."""
    rng = np.random.default_rng(n)
    for plan in (BIN(4.0, RHO).plan(prefix(n)), UMM(4.0, RHO).plan(prefix(n))):
        mass = rng.dirichlet(np.ones(3 * n), size=500).reshape(500, 3, n) * 4.0
        norms = np.sqrt(np.sum(np.einsum("vpn,kn->vpk", mass, plan.strategy) ** 2, axis=(1, 2)))
        assert norms.max() <= plan.sensitivity * (1 + 1e-12)


def test_bin_full_tree_flag_pays_for_root_levels() -> None:
    """Full tree over 2^⌈log₂ n⌉ leaves: Δ = GS√L_full, matched by brute force on that tree."""
    n, gs = 6, 2.0
    plan = BIN(gs, RHO, full_tree=True).plan(prefix(n))
    leaves = 8
    full = np.array(
        [
            [1.0 if k * 2**j <= i < (k + 1) * 2**j else 0.0 for i in range(n)]
            for j in range(4)
            for k in range(leaves >> j)
        ]
    )
    assert plan.sensitivity == pytest.approx(brute_global(full, gs), rel=1e-12)
    assert plan.sensitivity > brute_global(plan.strategy, gs)  # the kept tree alone is cheaper
    (sigma,) = gaussian_scales(run_release(plan, n))
    assert plan.sensitivity**2 / (2 * sigma**2) == pytest.approx(RHO, rel=1e-12)


PER_DAY_STRATEGIES = ["sqrt", "optimal"]


@pytest.mark.parametrize("strategy", PER_DAY_STRATEGIES)
@pytest.mark.parametrize("n", [1, 2, 4, 7, 10])
@pytest.mark.parametrize("rescale", [False, True])
def test_mmbpc_sensitivity_and_cost(strategy: str, n: int, rescale: bool) -> None:
    r = np.random.default_rng(n).uniform(1, 10, size=n).round(1)
    mechanism = MMBPC(tuple(r), RHO, strategy, rescale=rescale)
    for workload in (prefix(n), sliding(n, min(3, n))):
        plan = mechanism.plan(workload)
        exact = brute_per_day(plan.strategy, r)
        assert plan.sensitivity == pytest.approx(exact, rel=1e-12)
        (sigma,) = gaussian_scales(run_release(plan, n))
        assert exact**2 / (2 * sigma**2) == pytest.approx(RHO, rel=1e-12)
        assert plan.zcdp_cost() == pytest.approx(RHO, abs=1e-12)


@pytest.mark.parametrize("n", [1, 3, 5])
def test_mmbpc_multi_publisher_reduction(n: int) -> None:
    """Enumerate (P + 1)^n vertices with P = 2: splitting a user over publishers never helps."""
    r = np.arange(1.0, n + 1)
    for strategy in PER_DAY_STRATEGIES:
        plan = MMBPC(tuple(r), RHO, strategy).plan(prefix(n))
        assert brute_per_day(plan.strategy, r, publishers=2) == pytest.approx(
            plan.sensitivity, rel=1e-12
        )


def test_mmbpc_group_reading_is_an_upper_bound() -> None:
    r = np.array([2.0, 1.0, 3.0, 1.0, 2.0])
    exact = MMBPC(tuple(r), RHO).plan(prefix(5)).sensitivity
    group = MMBPC(tuple(r), RHO, sensitivity="group").plan(prefix(5)).sensitivity
    assert group > exact


def test_signed_strategy_uses_the_absolute_value_bound() -> None:
    """For X with negative entries rᵀXr can be wrong; the |X| bound must stay ≥ the vertex max."""
    rng = np.random.default_rng(7)
    signed = 0
    while signed < 20:
        n = int(rng.integers(2, 9))
        strategy = np.tril(rng.normal(size=(n, n)))
        if (strategy.T @ strategy).min() >= 0:
            continue
        signed += 1
        r = rng.uniform(0.5, 3.0, size=n)
        exact = brute_per_day(strategy, r)
        bound = per_day_sensitivity(strategy, r)
        assert bound >= exact * (1 - 1e-12)
        assert per_day_sensitivity(strategy, r, "abs_bound") == pytest.approx(bound)
    # and there are signed strategies where rᵀXr alone would under-state the sensitivity
    strategy = np.array([[1.0, 0.0], [-1.0, 1.0]])
    r = np.ones(2)
    assert np.sqrt(r @ strategy.T @ strategy @ r) < brute_per_day(strategy, r)
    assert per_day_sensitivity(strategy, r) >= brute_per_day(strategy, r)


def test_nonnegative_gram_uses_exact_value() -> None:
    strategy = tr.node_incidence(7)
    r = np.linspace(1, 3, 7)
    assert per_day_sensitivity(strategy, r) == pytest.approx(brute_per_day(strategy, r), rel=1e-12)
    assert global_sensitivity(strategy, 2.0) == pytest.approx(brute_global(strategy, 2.0))


# Stream -------------------------------------------------------------------------------------


def small_conversions(seed: int, users: int = 60, n: int = 8, publishers: int = 2) -> Conversions:
    rng = np.random.default_rng(seed)
    per_user = rng.integers(1, 12, size=users)
    user = np.repeat(np.arange(users), per_user)
    size = len(user)
    return Conversions(
        user=user,
        day=rng.integers(0, n, size=size),
        publisher=rng.integers(0, publishers, size=size),
        time=rng.random(size),
    )


@pytest.mark.parametrize(("gs", "tau0"), [(50.0, 1.0), (256.0, 1.0), (10.0, 3.0), (1.0, 1.0)])
@pytest.mark.parametrize("kind", ["prefix", "sliding"])
def test_stream_accounting_sums_to_rho(gs: float, tau0: float, kind: str) -> None:
    n = 8
    workload = prefix(n) if kind == "prefix" else sliding(n, 3)
    plan = Stream(gs, RHO, tau0=tau0).plan(workload)
    noise = RecordingNoise(1)
    plan.release(small_conversions(0, n=n), 2, noise)
    laplace = [(scale, count) for kind_, scale, count in noise.calls if kind_ == "laplace"]
    sigmas = gaussian_scales(noise)
    j = plan.instances
    assert len(sigmas) == j + 1  # one tree per rung, every one charged
    svt = 0.0
    if j:
        (threshold_scale, thresholds), (query_scale, _) = laplace
        assert thresholds == j
        epsilon = 2.0 / threshold_scale  # AboveThreshold with Δ = 1: Lap(2/ε), Lap(4/ε)
        assert query_scale == pytest.approx(4.0 / epsilon, rel=1e-12)
        svt = (j * epsilon) ** 2 / 2  # J pure ε-DP instances ⇒ (Jε)²/2-zCDP
        assert svt == pytest.approx(RHO / 2, rel=1e-12)
    else:
        assert laplace == []
    trees = 0.0
    for tau, sigma in zip(plan.taus, sigmas, strict=True):
        delta = brute_global(tr.node_incidence(n), tau)  # user adds ≤ τ_j to rung j
        trees += delta**2 / (2 * sigma**2)
    assert svt + trees == pytest.approx(RHO, rel=1e-12)
    assert plan.zcdp_cost() == pytest.approx(RHO, rel=1e-12)


def test_stream_ladder() -> None:
    plan = Stream(50.0, 1.0).plan(prefix(31))
    np.testing.assert_array_equal(plan.taus, [1, 2, 4, 8, 16, 32, 50])
    tree = BIN(1.0, 1.0).plan(prefix(31))
    for tau, rung in zip(plan.taus, plan.trees, strict=True):
        # σ_j² = τ_j²·L·(J+1)/(2ρ_tree), ρ_tree = ρ/2, L = 5
        assert rung.sigma**2 == pytest.approx(tau**2 * 5 * 7 / (2 * 0.5), rel=1e-12)
        np.testing.assert_allclose(rung.decoder, tree.decoder)
    assert plan.threshold == pytest.approx(4 / (1.0 / 6) * np.log(62), rel=1e-12)
