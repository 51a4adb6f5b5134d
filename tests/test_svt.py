"""UpdateBoundSVT: exact branching with injected noise, k-stop, a threshold drawn once."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dp_platform.privacy.svt import SparseVectorTest, SvtState, num_above, update_bound
from dp_platform.records import from_record, to_record

K = 3
EPS3 = 0.8


def make_state() -> SvtState:
    return SvtState.create(epsilon=EPS3, t_up=50, t_down=50, s_up=1.3, s_down=0.8, max_reports=K)


# 100 users with count 2, 60 with 3, 10 with 6. With τ = 3: NumAbove(3) = 10 and
# NumAbove(τ·s↓ = 2.4) = 70, so q↑ = 10 and q↓ = 10 − 70 = −60.
HISTOGRAM = np.bincount([2] * 100 + [3] * 60 + [6] * 10)
BOUNDS = [3.0, 3.0, 3.0]


def test_num_above_counts_strictly_greater() -> None:
    assert num_above(HISTOGRAM, 3.0) == 10
    assert num_above(HISTOGRAM, 2.4) == 70
    assert num_above(HISTOGRAM, 0.5) == 170
    assert num_above(HISTOGRAM, 99) == 0


@pytest.mark.parametrize(
    ("threshold_up", "query_up", "threshold_down", "query_down", "expected"),
    [
        # q↑ = 10 vs T↑ = 50; q↓ = 10 − 70 = −60 vs −50
        (0.0, 45.0, 0.0, 0.0, ("up", 3.0 * 1.3)),  # 10+45 ≥ 50; −60 < −50
        (0.0, 0.0, 0.0, 15.0, ("down", 3.0 * 0.8)),  # 10 < 50; −45 ≥ −50
        (0.0, 45.0, 0.0, 15.0, ("keep", 3.0)),  # both fire
        (0.0, 0.0, 0.0, 0.0, ("keep", 3.0)),  # neither fires
        (-40.0, 0.0, 0.0, 0.0, ("up", 3.0 * 1.3)),  # threshold noise counts too
        (0.0, 0.0, -10.0, 0.0, ("down", 3.0 * 0.8)),  # −60 ≥ −50 − 10
    ],
)
def test_up_down_both_neither(
    scripted, threshold_up, query_up, threshold_down, query_down, expected
) -> None:
    # draw order: up threshold, up query, down threshold, down query
    noise = scripted([threshold_up, query_up, threshold_down, query_down])
    bound, decision, _ = update_bound(make_state(), HISTOGRAM, BOUNDS, 3, noise)
    assert (decision, bound) == (expected[0], pytest.approx(expected[1]))


def test_noise_scales_are_those_of_the_improved_svt(scripted) -> None:
    noise = scripted([0.0, 0.0, 0.0, 0.0])
    update_bound(make_state(), HISTOGRAM, BOUNDS, 3, noise)
    eps_each = EPS3 / 2
    # threshold Lap(2/ε'), query Lap(4k/ε'), ε' = ε3/2 per test
    assert noise.laplace_scales == pytest.approx(
        [2 / eps_each, 4 * K / eps_each, 2 / eps_each, 4 * K / eps_each]
    )


def test_threshold_is_drawn_once_and_tests_stop_after_k_positives(scripted) -> None:
    test = SparseVectorTest(threshold=50.0, epsilon=0.4, max_reports=K)
    noise = scripted([7.0] + [0.0] * 10)
    answers = []
    for _ in range(K + 3):
        fired, test = test.ask(100.0, noise)
        answers.append(fired)
    assert answers == [True] * K + [False] * 3  # k positives, then silence
    assert test.noisy_threshold == 57.0  # the first draw, never re-drawn
    threshold_scale = 2.0 / 0.4
    assert noise.laplace_scales.count(threshold_scale) == 1
    assert len(noise.laplace_scales) == 1 + K  # a halted test draws nothing


def test_negative_answers_do_not_count_towards_k(scripted) -> None:
    test = SparseVectorTest(threshold=50.0, epsilon=0.4, max_reports=1)
    noise = scripted([0.0, -100.0, -100.0, 0.0, 0.0])
    results = []
    for _ in range(4):
        fired, test = test.ask(60.0, noise)
        results.append(fired)
    assert results == [False, False, True, False]


def test_state_round_trips_through_json(seeded) -> None:
    state = make_state()
    _, _, state = update_bound(state, HISTOGRAM, BOUNDS, 3, seeded(3))
    restored = from_record(SvtState, json.loads(json.dumps(to_record(state))))
    assert restored == state
    a = update_bound(state, HISTOGRAM, BOUNDS, 3, seeded(9))
    b = update_bound(restored, HISTOGRAM, BOUNDS, 3, seeded(9))
    assert a == b


def test_update_needs_l_previous_bounds() -> None:
    with pytest.raises(ValueError, match="previous bounds"):
        update_bound(make_state(), HISTOGRAM, [1.0], 3)
