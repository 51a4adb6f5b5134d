"""The distinguisher: learn from half the runs how a canary shows, guess on the other half.

Linear discriminant analysis on each canary's evidence (probes.py): the direction
w = (Σ + λI)⁻¹(m_in − m_out), with Σ the pooled covariance of the training canaries' evidence and
a small ridge λ (a stream has one feature per day and measure). It learns whatever the step's
releases reveal — a shift in the canary's cell, a shift the other way when shadows vanish with
it, days where a filter stopped it — without being told the mechanism. Guessing "in" above a
threshold is one binary test; the threshold that refutes the largest ρ on the training runs is
kept, and only the other runs' guesses are counted, so choosing it costs no confidence (a
test chosen on the data it is scored on would overstate what it proves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_platform.audit.bounds import GuessCounts, rho_lower_bound

__all__ = ["Guesses", "guess"]

_RIDGE = 1e-3  # × the mean feature variance: keeps Σ invertible when days carry no evidence
_THRESHOLDS = 200


@dataclass(frozen=True)
class Guesses:
    """The held-out canaries' scores and what the chosen test called them."""

    counts: GuessCounts
    threshold: float
    scores_in: np.ndarray
    scores_out: np.ndarray


def _direction(features: np.ndarray, included: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inside, outside = features[included], features[~included]
    if len(inside) < 2 or len(outside) < 2:  # nothing to learn from: a test that never calls in
        return np.zeros(features.shape[1]), np.zeros(features.shape[1])
    centred = np.vstack([inside - inside.mean(axis=0), outside - outside.mean(axis=0)])
    covariance = np.atleast_2d(np.cov(centred, rowvar=False))
    ridge = _RIDGE * max(float(np.trace(covariance)) / len(covariance), 1e-12)
    difference = inside.mean(axis=0) - outside.mean(axis=0)
    weights = np.linalg.solve(covariance + ridge * np.eye(len(covariance)), difference)
    middle = (inside.mean(axis=0) + outside.mean(axis=0)) / 2.0
    return weights, middle


def _counts(scores: np.ndarray, included: np.ndarray, threshold: float) -> GuessCounts:
    called = scores > threshold
    return GuessCounts(
        called_in_when_in=int(called[included].sum()),
        included=int(included.sum()),
        called_in_when_out=int(called[~included].sum()),
        excluded=int((~included).sum()),
    )


def guess(
    features: np.ndarray, included: np.ndarray, training: np.ndarray, confidence: float
) -> Guesses:
    """Fit on the ``training`` canaries, choose the threshold there, count on the rest."""
    features = np.asarray(features, dtype=np.float64)
    included = np.asarray(included, dtype=bool)
    training = np.asarray(training, dtype=bool)
    weights, middle = _direction(features[training], included[training])
    scores = (features - middle) @ weights
    train_scores, train_in = scores[training], included[training]
    candidates = np.unique(np.quantile(train_scores, np.linspace(0.5, 0.999, _THRESHOLDS)))
    best = max(
        candidates,
        key=lambda t: rho_lower_bound(_counts(train_scores, train_in, t), confidence),
    )
    held_out = ~training
    test_scores, test_in = scores[held_out], included[held_out]
    return Guesses(
        counts=_counts(test_scores, test_in, float(best)),
        threshold=float(best),
        scores_in=test_scores[test_in],
        scores_out=test_scores[~test_in],
    )
