"""``dp-platform audit``: its statistics, every mechanism on both engines, and the command.

The faults it must catch are in tests/test_audit_faults.py; the Spark engine's audit in
tests/test_spark_audit.py (a file of its own, so this one stays off the Spark worker).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from dp_platform.audit.bounds import (
    GuessCounts,
    bernoulli_renyi,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    rho_lower_bound,
    rho_refuted_by_rates,
)
from dp_platform.audit.canaries import CanaryDesign, canary_events
from dp_platform.audit.distinguisher import guess
from dp_platform.audit.options import AuditOptions
from dp_platform.audit.runner import audit_campaign
from dp_platform.cli import main
from dp_platform.config_loader import load_catalogue
from dp_platform.privacy.accounting import zcdp_epsilon
from tests.audit_faults import seeded_samplers

CATALOGUE = Path(__file__).parent / "audit_catalogue.yaml"

# --- what a count proves -------------------------------------------------------------------


@pytest.mark.parametrize(("successes", "trials"), [(0, 10), (3, 10), (10, 10), (57, 400)])
def test_clopper_pearson_limits_are_the_exact_interval(successes: int, trials: int) -> None:
    interval = binomtest(successes, trials).proportion_ci(confidence_level=0.9, method="exact")
    assert clopper_pearson_lower(successes, trials, 0.05) == pytest.approx(interval.low)
    assert clopper_pearson_upper(successes, trials, 0.05) == pytest.approx(interval.high)


def test_bernoulli_renyi_is_the_divergence_of_two_coins() -> None:
    p, q, alpha = 0.3, 0.1, 2.5
    direct = math.log(p**alpha * q ** (1 - alpha) + (1 - p) ** alpha * (1 - q) ** (1 - alpha))
    assert bernoulli_renyi(p, q, alpha) == pytest.approx(direct / (alpha - 1))
    assert bernoulli_renyi(0.2, 0.2, 3.0) == pytest.approx(0.0, abs=1e-12)
    assert bernoulli_renyi(0.5, 0.0, 2.0) == math.inf


@pytest.mark.parametrize("rho", [0.05, 0.5, 2.0, 8.0])
def test_no_test_of_a_gaussian_mechanism_refutes_its_rho(rho: float) -> None:
    """The refuted ρ is valid: a ρ-zCDP Gaussian (shift μ = √(2ρ)) at every threshold, in both
    directions, refutes at most ρ — and its best threshold comes close (it is not vacuous)."""
    mu = math.sqrt(2 * rho)
    thresholds = np.linspace(-4, mu + 6, 300)
    pairs = [(norm.sf(t - mu), norm.sf(t)) for t in thresholds]
    pairs += [(norm.cdf(t), norm.cdf(t - mu)) for t in thresholds]
    # rates a count can estimate (a rate of 0 refutes every ρ, as it should)
    refuted = [
        rho_refuted_by_rates(p, q) for p, q in pairs if min(p, q) > 1e-12 and max(p, q) < 1 - 1e-12
    ]
    assert max(refuted) <= rho * (1 + 1e-6)
    assert max(refuted) >= 0.75 * rho


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_no_test_of_a_laplace_mechanism_refutes_its_charge(epsilon: float) -> None:
    """ε-DP Laplace is charged ρ = ε·tanh(ε/2) (one-shot): no threshold refutes more."""
    charged = epsilon * math.tanh(epsilon / 2)

    def sf(t: float, shift: float) -> float:  # P[shift + Laplace(1/ε) > t]
        x = (t - shift) * epsilon
        return 0.5 * math.exp(-x) if x >= 0 else 1 - 0.5 * math.exp(x)

    refuted = [rho_refuted_by_rates(sf(t, 1.0), sf(t, 0.0)) for t in np.linspace(-5, 6, 400)]
    assert max(refuted) <= charged * (1 + 1e-6)
    assert max(refuted) > 0.5 * charged


def test_the_lower_bounds_follow_the_counts() -> None:
    chance = GuessCounts(50, 100, 50, 100)
    assert rho_lower_bound(chance, 0.95) == 0.0
    assert epsilon_lower_bound(chance, 0.95, 1e-6) == 0.0
    strong = GuessCounts(900, 1000, 5, 1000)
    weaker = GuessCounts(900, 1000, 50, 1000)
    assert rho_lower_bound(strong, 0.95) > rho_lower_bound(weaker, 0.95) > 0
    # more confidence, a lower bound no higher
    assert rho_lower_bound(strong, 0.999) < rho_lower_bound(strong, 0.95)
    # the ε at δ it refutes: ln((p − δ)/q) from the same limits
    p = clopper_pearson_lower(900, 1000, 0.025)
    q = clopper_pearson_upper(5, 1000, 0.025)
    assert epsilon_lower_bound(strong, 0.95, 1e-6) == pytest.approx(math.log((p - 1e-6) / q))
    with pytest.raises(ValueError, match="called_in_when_in"):
        GuessCounts(11, 10, 0, 10)


def test_the_distinguisher_scores_only_runs_it_did_not_learn_from() -> None:
    rng = np.random.default_rng(3)
    runs, canaries = 40, 30
    included = rng.random(runs * canaries) < 0.5
    features = rng.normal(size=(runs * canaries, 6))
    features[included, 2] += 1.5  # the evidence: one feature moves with the canary
    training = np.repeat(np.arange(runs) % 2 == 0, canaries)
    guesses = guess(features, included, training, 0.95)
    held_out = included[~training]
    assert guesses.counts.included == int(held_out.sum())
    assert guesses.counts.excluded == int((~held_out).sum())
    assert len(guesses.scores_in) + len(guesses.scores_out) == int((~training).sum())
    assert rho_lower_bound(guesses.counts, 0.95) > 0.3  # it found the moving feature
    # too few canaries to learn from: it calls nobody in, and refutes nothing
    few = guess(features[:8], included[:8], training[:8] & (np.arange(8) < 1), 0.95)
    assert few.counts.called_in_when_in == few.counts.called_in_when_out == 0
    # with no evidence at all it refutes nothing
    blind = guess(rng.normal(size=features.shape), included, training, 0.95)
    assert rho_lower_bound(blind.counts, 0.95) < 0.05


# --- canaries ------------------------------------------------------------------------------


def test_canaries_own_their_cells_and_shadows_reuse_their_ids() -> None:
    from datetime import date

    design = CanaryDesign.converting(3, per_day=5, shadows=2)
    events = canary_events(
        design,
        np.array([True, False, True]),
        advertiser="acme",
        start=date(2026, 3, 1),
        days=4,
        lookback_days=2,
        conversion_dimensions={"region": "north"},
        impression_dimensions={},
    )
    conversions = events.conversions.to_pandas()
    canaries = conversions[conversions["user_id"].str.startswith("audit-canary")]
    shadows = conversions[conversions["user_id"].str.startswith("audit-shadow")]
    assert sorted(canaries["user_id"].unique()) == ["audit-canary-0000", "audit-canary-0002"]
    assert len(canaries) == 2 * 4 * 5  # every day, per_day each
    assert len(shadows) == 3 * 2 * 4  # every slot's shadows, in or out, once a day
    assert set(shadows["conversion_id"]) <= {
        f"audit-conv-{j:04d}-{t:03d}-{i:03d}" for j in range(3) for t in range(4) for i in range(5)
    }
    assert not shadows["conversion_id"].duplicated().any()  # one shadow's ids are not another's
    assert canaries.index.max() < shadows.index.min()  # a first copy is the canary's
    assert (conversions["region"] == "north").all()
    impressions = events.impressions.to_pandas()
    seen = impressions.groupby("user_id")["ts"].count()
    assert seen["audit-canary-0000"] == seen["audit-shadow-0001-000"] == 2  # days 1 and 3
    publishers = impressions.groupby("user_id")["publisher_id"].unique()
    assert publishers["audit-canary-0002"].tolist() == ["audit-pub-0002"]
    assert publishers["audit-shadow-0001-000"].tolist() == ["audit-shadow-pub-0001"]
    assert CanaryDesign.converting(1, per_day=2, shadows=3).shadows == 2
    with pytest.raises(ValueError, match="shadows"):
        canary_events(
            CanaryDesign(design.slots[:1], per_day=2, shadows=3, converts=True),
            np.array([True]),
            advertiser="acme",
            start=date(2026, 3, 1),
            days=1,
            lookback_days=30,
            conversion_dimensions={},
            impression_dimensions={},
        )


def test_adsbpc_canaries_convert_past_every_bound_its_svt_can_reach(scripted) -> None:
    """The canary's conversions a day come from the plan's largest bound: driven up at every
    chance (window 1, so each report multiplies the last bound), the SVT's bounds reach Λ·s↑^k
    and no further, and an AdsBPC canary converts more than twice that every day."""
    from dp_platform.audit.probes import StreamProbe
    from dp_platform.mechanisms.adsbpc_settings import BoundsConfig
    from dp_platform.plans import campaign_plan
    from dp_platform.privacy.svt import SvtState, update_bound

    config = BoundsConfig()
    state = SvtState.create(
        epsilon=0.5, t_up=50, t_down=50, s_up=config.s_up, s_down=config.s_down,
        max_reports=config.max_reports,
    )  # fmt: skip
    days = config.max_reports + 3
    # draw order: up threshold, up query, down threshold, down query; then the queries only,
    # until the up test has fired k times and draws nothing more
    draws = [0.0, 1e6, 1e6, 0.0] + [1e6, 0.0] * (config.max_reports - 1) + [0.0] * 3
    noise = scripted(draws)
    histogram = np.bincount([100] * 200)
    bounds = [float(config.cap)]
    for _ in range(days):
        bound, _, state = update_bound(state, histogram, bounds, 1, noise)
        bounds.append(bound)
    assert max(bounds) == pytest.approx(config.largest_bound)
    plan = campaign_plan(load_catalogue(CATALOGUE).campaign("adsbpc_short"), CATALOGUE.parent)
    assert plan.stream is not None and plan.stream.largest_bound == pytest.approx(62.748517)
    design = StreamProbe("adsbpc").design(plan, SMALL)
    assert design.per_day > 2 * max(bounds)


# --- every mechanism ------------------------------------------------------------------------

SMALL = AuditOptions(runs=6, canaries=12, users=300)


@pytest.mark.parametrize(
    ("campaign", "steps"),
    [
        ("adsbpc_short", ["daily releases (adsbpc)"]),
        ("plus_diagonal", ["daily releases (adsbpc_plus)"]),
        ("plus_sqrt", ["daily releases (adsbpc_plus)"]),
        ("once_and_reach", ["one_shot", "reach"]),
    ],
)
def test_every_mechanism_holds_on_duckdb(campaign: str, steps: list[str]) -> None:
    catalogue = load_catalogue(CATALOGUE)
    results = audit_campaign(
        catalogue,
        campaign,
        SMALL,
        base_dir=CATALOGUE.parent,
        samplers=seeded_samplers(21),
        inclusion_seed=8,
    )
    assert [r.step for r in results] == steps
    for result in results:
        assert result.engine == "duckdb"
        assert result.holds, result
        assert result.claimed_epsilon == pytest.approx(zcdp_epsilon(result.claimed_rho, 1e-6))
        trials = result.counts.included + result.counts.excluded
        assert trials == SMALL.runs // 2 * result.canaries_per_run
    reach = [r for r in results if r.step == "reach"]
    if reach:  # one canary per bin of the frequency histogram
        assert reach[0].canaries_per_run == 8


# --- the command ------------------------------------------------------------------------


def test_the_command_reports_every_step_as_json_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the CLI, with the production secure sampler: 2 held-out runs × 4 canaries cannot
    refute ρ = 1 at 95 % (Clopper–Pearson on 8 trials stays within chance), so exit code 0 is
    certain whatever the noise."""
    plot = tmp_path / "scores.png"
    code = main(
        [
            "audit", str(CATALOGUE), "--campaign", "once_and_reach", "--runs", "4",
            "--canaries", "4", "--users", "200", "--json", "--plot", str(plot),
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr()
    documents = json.loads(out.out)
    assert [d["step"] for d in documents] == ["one_shot", "reach"]
    for document in documents:
        assert document["holds"] is True
        assert document["claimed_rho"] > document["rho_lower"] >= 0
        assert set(document["counts"]) == {
            "called_in_when_in", "included", "called_in_when_out", "excluded"
        }  # fmt: skip
    assert plot.stat().st_size > 10_000
    assert "4/4 runs" in out.err  # the progress bar


def test_the_command_says_it_leaves_production_alone_and_fails_on_a_refuted_claim(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dp_platform.audit import runner

    real = runner.audit_campaign

    def overstated(*args: object, **kwargs: object) -> list[runner.StepAudit]:
        results = real(*args, **kwargs)  # type: ignore[arg-type]
        return [runner.StepAudit(**{**r.__dict__, "rho_lower": 2 * r.claimed_rho}) for r in results]

    code = main(
        ["audit", str(CATALOGUE), "--campaign", "once_and_reach", "--runs", "4",
         "--canaries", "2", "--users", "100"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "production ledger and warehouse are never opened" in out
    assert "holds: every lower bound is below its claim" in out
    monkeypatch.setattr(runner, "audit_campaign", overstated)
    code = main(
        ["audit", str(CATALOGUE), "--campaign", "once_and_reach", "--runs", "4",
         "--canaries", "2", "--users", "100"]
    )  # fmt: skip
    assert code == 1
    assert "REFUTED" in capsys.readouterr().out


def test_bad_options_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(CATALOGUE), "--runs", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "runs" in err
