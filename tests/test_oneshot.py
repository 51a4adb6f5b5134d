"""One-shot release (Delaney et al., Lemma 1): plan and cost, sensitivity by brute force on the
warehouse (remove each user), the noise law, and the error it implies."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import pytest

from dp_platform.config_loader import parse_campaign
from dp_platform.errors import ConfigError
from dp_platform.mechanisms.oneshot import (
    MECHANISM,
    plan_from_config,
    plan_one_shot,
    release_one_shot,
    warehouse_sums,
)
from dp_platform.privacy.accounting import pure_dp_rho_tanh
from dp_platform.privacy.discrete import SeededIntegerNoise, discrete_laplace_variance
from dp_platform.privacy.noise import SeededNoise
from dp_platform.warehouse.store import Warehouse
from tests.conftest_data import FAR_FUTURE, Conv, Imp, write_events


def _campaign(**one_shot: object):  # type: ignore[no-untyped-def]
    rule = one_shot.pop("rule", "lta")
    adjacency = one_shot.pop("adjacency", "add_remove")
    return parse_campaign(
        {
            "name": "once",
            "advertiser": "acme",
            "account": "a",
            "start": "2026-03-01",
            "days": 3,
            "mode": "one_shot",
            "one_shot": one_shot,
            "attribution": {"rule": rule, "lookback_days": 7},
            "privacy": {"rho": 0.5, "adjacency": adjacency},
        }
    )


def test_plan_cost_fits_rho_and_scale_is_c0_r_delta_over_eps() -> None:
    plan = plan_from_config(_campaign(bound=3, measure="value", value_cap=20.0))
    assert plan.c0 == 1.0 and plan.sensitivity_factor == 1
    assert plan.rho == pure_dp_rho_tanh(plan.epsilon) and plan.rho <= 0.5
    assert float(plan.rho) == pytest.approx(0.5, rel=1e-9)
    assert plan.scale == pytest.approx(3 * 20.0 / plan.epsilon)
    replace = plan_from_config(_campaign(adjacency="replace"))
    assert replace.sensitivity_factor == 2  # publishers: all


def test_config_refuses_unsound_one_shot_options() -> None:
    with pytest.raises(ConfigError, match="integer"):
        _campaign(enforcement="pre", bound=1.5)
    with pytest.raises(ConfigError, match="discrete_laplace"):
        _campaign(noise="discrete_laplace", rule="uni")
    with pytest.raises(ConfigError, match="discrete_laplace"):
        _campaign(noise="discrete_laplace", measure="value")
    with pytest.raises(ValueError, match="rule must be one of"):
        plan_one_shot(rho=1.0, rule="nonsense_rule_for_test")  # type: ignore[arg-type]


def _events(tmp_path, drop_user: str | None = None):  # type: ignore[no-untyped-def]
    """5 users, 3 publishers, up to 4 conversions each with values; u0 is heavy."""
    t0 = datetime(2026, 3, 1, 6)
    imps, convs = [], []
    for u in range(5):
        user = f"u{u}"
        if user == drop_user:
            continue
        for k in range(3):
            imps.append(Imp(f"i{u}{k}", user, f"p{(u + k) % 3}", "acme", t0 + timedelta(hours=k)))
        for k in range(4 if u == 0 else 1 + u % 3):
            value = 25.0 + 10 * k if u == 0 else 5.0 + 10 * k
            convs.append(Conv(f"c{u}{k}", user, "acme", t0 + timedelta(hours=4 + 9 * k), value))
    return write_events(tmp_path / (drop_user or "all"), imps, convs)


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The events, and the events without each user: one warehouse each (ingested once)."""
    root = tmp_path_factory.mktemp("oneshot")
    opened = {}
    for drop in (None, "u0", "u1", "u2", "u3", "u4"):
        wh = Warehouse(root / f"{drop}.duckdb")
        wh.ingest(*_events(root, drop), now=FAR_FUTURE)
        opened[drop] = wh
    yield opened
    for wh in opened.values():
        wh.close()


def _sums(warehouses, camp, plan, drop_user=None) -> np.ndarray:  # type: ignore[no-untyped-def]
    wh = warehouses[drop_user]
    wh.attribute_days(camp, camp.start, camp.end)
    return warehouse_sums(wh, camp, plan)


@pytest.mark.parametrize(
    "options",
    [
        {"enforcement": "post", "bound": 1.5, "measure": "value", "value_cap": 20.0, "rule": "uni"},
        {"enforcement": "pre", "bound": 2, "measure": "count", "rule": "lta"},
        {"enforcement": "post", "bound": 2, "measure": "value", "value_cap": 12.0, "rule": "fta"},
    ],
)
def test_removing_any_user_moves_the_sums_by_at_most_the_sensitivity(warehouses, options) -> None:  # type: ignore[no-untyped-def]
    camp = _campaign(**options)
    plan = plan_from_config(camp)
    base = _sums(warehouses, camp, plan)
    changes = [np.abs(base - _sums(warehouses, camp, plan, f"u{u}")).sum() for u in range(5)]
    assert max(changes) <= plan.l1_sensitivity + 1e-9
    assert max(changes) == pytest.approx(plan.l1_sensitivity)  # the heavy user reaches it


def test_post_bound_keeps_first_conversions_in_time_order(warehouses) -> None:  # type: ignore[no-untyped-def]
    """u0 has 4 conversions (values 25, 35, 45, 55 → capped at 30): bound 1.5 keeps 25 + 0.5·30."""
    camp = _campaign(enforcement="post", bound=1.5, measure="value", value_cap=30.0)
    plan = plan_from_config(camp)
    full = _sums(warehouses, camp, plan)
    without = _sums(warehouses, camp, plan, "u0")
    assert (full - without).sum() == pytest.approx(25.0 + 0.5 * 30.0)


def test_laplace_release_law_and_error() -> None:
    camp = _campaign(bound=2)
    plan = plan_from_config(camp)
    declared = MECHANISM.declare(plan, camp)
    noise = SeededNoise(1)
    draws = np.array(
        [
            release_one_shot(
                [10.0, 0.0, 3.0], ["a", "b", "c"], plan, allotment=declared, noise=noise
            ).values
            for _ in range(4000)
        ]
    )
    errors = draws - np.array([10.0, 0.0, 3.0])
    # E|Lap(b)| = b, sd b: 4 s.e. over 12 000 draws
    assert np.abs(errors).mean() == pytest.approx(
        plan.scale, abs=4 * plan.scale / math.sqrt(12_000)
    )
    release = release_one_shot(
        [1.0, 2.0, 3.0], ["a", "b", "c"], plan, allotment=declared, noise=SeededNoise(2)
    )
    document = release.to_json()
    assert set(document["values"]) == {"a", "b", "c"}
    assert document["rho_charged"] == pytest.approx(float(plan.rho))


def test_discrete_laplace_release_is_integer_with_the_stated_variance() -> None:
    camp = _campaign(bound=2, noise="discrete_laplace")
    plan = plan_from_config(camp)
    declared = MECHANISM.declare(plan, camp)
    source = SeededIntegerNoise(3)
    draws = np.array(
        [
            release_one_shot(
                [4, 7], ["a", "b"], plan, allotment=declared, integer_noise=source
            ).values
            for _ in range(4000)
        ]
    )
    assert np.all(draws == np.round(draws))
    assert (draws - [4, 7]).var() == pytest.approx(discrete_laplace_variance(plan.scale), rel=0.08)
    with pytest.raises(ValueError, match="integer"):
        release_one_shot([4.5, 7], ["a", "b"], plan, allotment=declared, integer_noise=source)
