"""From repeats of a method to the numbers of the paper's tables (metric conventions of metrics.py).

- Prefix workload: WRMSE = sqrt(Σ_j w_j MSE_j / Σ_j w_j) with w = γ² = (1, …, 1, 49), MSE
  averaged over repeats and publishers before the root; paper scale sqrt(Σ_j w_j MSE_j)/n.
- Sliding workload: max over full windows of the MSE (variance + bias², averaged over repeats
  and publishers); the paper prints it divided by 10⁴, which is the paper scale here.

``error`` uses the expected squared errors (see :mod:`.methods`), ``error_empirical`` the
realised ones; ``error_std`` is the spread of the realised metric from one repeat to the next
(what a single run would scatter by). ``error_consistent`` is the realised error after the
consistency post-processing every method gets alike: prefix answers (cumulative counts) projected
per publisher onto non-negative, non-decreasing series, each day's answer the projection of the
series released so far (:func:`dp_platform.release_view.prefix_isotonic`, weights 1/Var);
sliding-window answers clipped at 0 (the only constraint a window sum has).

``total_error`` scores the all-publisher campaign total (Σ over publishers of each answer) with
the same metric on that single series — expected (:attr:`Outcome.total_expected`, averaged over
repeats) — and ``total_error_empirical`` the realised Σ_p answers against Σ_p truth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_platform.release_view import prefix_isotonic
from dp_research.baselines import Workload, prefix_weights
from dp_research.evaluation.methods import Outcome
from dp_research.evaluation.metrics import max_window_mse, weighted_mean, workload_error, wrmse

__all__ = ["PAPER_SLIDING_UNIT", "Score", "consistent_answers", "metric_name", "score"]

PAPER_SLIDING_UNIT = 1e4


@dataclass(frozen=True)
class Score:
    error: float
    error_std: float
    error_empirical: float
    error_paper_scale: float
    per_repeat: tuple[float, ...]
    bias_share: float | None = (
        None  # share of the expected MSE (as the metric weighs it) due to clipping
    )
    error_consistent: float | None = None  # realised, after the consistency projection
    total_error: float | None = None  # the all-publisher total's metric, expected
    total_error_empirical: float | None = None  # ... and realised
    worst_window: int | None = None  # sliding: which window (1-based) has the largest MSE


def metric_name(workload: Workload) -> str:
    return "wrmse" if workload.kind == "prefix" else "max_variance"


def _prefix_error(mse: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """(WRMSE, paper scale) of a (P × m) mean squared error."""
    error = float(np.sqrt(weighted_mean(mse, weights).mean()))
    paper = float(np.sqrt((mse @ weights).mean()) / mse.shape[-1])
    return error, paper


def score(outcomes: list[Outcome], truth_answers: np.ndarray, workload: Workload) -> Score:
    """The table numbers of one method over its repeats."""
    if not outcomes:
        raise ValueError("no repeats to score")
    answers = np.stack([o.answers for o in outcomes])
    expected = np.stack([o.expected for o in outcomes]).mean(axis=0)
    variances = None
    if all(o.variances is not None for o in outcomes):
        variances = np.mean([o.variances for o in outcomes], axis=0)
    share = worst = None
    if workload.kind == "prefix":
        weights = prefix_weights(workload.n)
        error, paper = _prefix_error(expected, weights)
        if variances is not None:
            share = 1.0 - float(variances @ weights) / float(expected.mean(axis=0) @ weights)
        empirical = wrmse(answers, truth_answers, weights)
        per_repeat = [wrmse(a, truth_answers, weights) for a in answers]
    else:
        per_window = expected.mean(axis=0)
        error = float(per_window.max())
        paper = error / PAPER_SLIDING_UNIT
        worst = int(np.argmax(per_window))
        if variances is not None:
            share = 1.0 - float(variances[worst]) / error
        empirical = max_window_mse(answers, truth_answers)
        per_repeat = [max_window_mse(a, truth_answers) for a in answers]
    spread = float(np.std(per_repeat, ddof=1)) if len(per_repeat) > 1 else 0.0
    per = tuple(float(v) for v in per_repeat)
    consistent = None
    if variances is not None:
        projected = np.stack([consistent_answers(a, variances, workload) for a in answers])
        if workload.kind == "prefix":
            consistent = wrmse(projected, truth_answers, prefix_weights(workload.n))
        else:
            consistent = max_window_mse(projected, truth_answers)
    total, total_empirical = _total_errors(outcomes, truth_answers, workload)
    return Score(
        error,
        spread,
        float(empirical),
        paper,
        per,
        None if share is None else max(share, 0.0),
        None if consistent is None else float(consistent),
        total,
        total_empirical,
        None if worst is None else worst + 1,
    )


def _total_errors(
    outcomes: list[Outcome], truth_answers: np.ndarray, workload: Workload
) -> tuple[float | None, float | None]:
    """(expected, realised) metric of the campaign total series; None if a repeat lacks it."""
    if any(o.total_expected is None for o in outcomes):
        return None, None
    expected = np.mean([o.total_expected for o in outcomes], axis=0)
    totals = np.stack([o.total_series for o in outcomes])[:, None, :]  # (R × 1 × m)
    truth = truth_answers.sum(axis=0)[None, :]
    if workload.kind == "prefix":
        realised = wrmse(totals, truth, prefix_weights(workload.n))
    else:
        realised = max_window_mse(totals, truth)
    return workload_error(expected, workload), float(realised)


def consistent_answers(
    answers: np.ndarray, variances: np.ndarray, workload: Workload
) -> np.ndarray:
    """One repeat's (P × m) answers after the consistency post-processing (module doc)."""
    if workload.kind != "prefix":
        return np.maximum(answers, 0.0)
    sigmas = np.broadcast_to(np.sqrt(np.maximum(variances, 1e-300)), answers.shape)
    last, _ = prefix_isotonic(answers, sigmas)
    return last
