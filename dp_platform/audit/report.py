"""The audit's results for people: a table, and a plot of what the distinguisher saw."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dp_platform.audit.runner import StepAudit

__all__ = ["plot_scores", "text_report"]


def text_report(results: list[StepAudit]) -> str:
    """One line per step: claim, lower bound at its confidence, tightness, (ε, δ) beside them."""
    if not results:
        return "nothing to audit"
    delta = results[0].delta
    confidence = results[0].confidence
    header = (
        f"{'campaign':<18} {'step':<30} {'claimed ρ':>10} {'lower bound ρ':>14} "
        f"{'tightness':>9} {'claimed ε':>10} {'lower ε':>8}  guesses called in (in, out)"
    )
    lines = [
        f"lower bounds at {confidence:.0%} confidence; ε at δ = {delta:g}",
        header,
    ]
    for r in results:
        c = r.counts
        lines.append(
            f"{r.campaign:<18} {r.step:<30} {r.claimed_rho:>10.4g} {r.rho_lower:>14.4g} "
            f"{r.tightness:>9.2f} {r.claimed_epsilon:>10.4g} {r.epsilon_lower:>8.3g}  "
            f"{c.called_in_when_in}/{c.included}, {c.called_in_when_out}/{c.excluded}"
        )
    refuted = [f"{r.campaign} {r.step}" for r in results if not r.holds]
    if refuted:
        lines.append(f"REFUTED: the lower bound reaches the claimed ρ for {', '.join(refuted)}")
    else:
        lines.append(
            "holds: every lower bound is below its claim (a lower bound, not a proof: "
            "docs/privacy.md#the-empirical-audit)"
        )
    return "\n".join(lines)


def plot_scores(results: list[StepAudit], path: Path) -> None:
    """Held-out canaries' scores, in against out, one panel per step (PNG at ``path``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(
        len(results), 1, figsize=(7, 2.6 * max(1, len(results))), squeeze=False
    )
    for axis, r in zip(axes[:, 0], results, strict=True):
        everything = np.concatenate([r.scores_in, r.scores_out])
        bins = np.linspace(everything.min(), everything.max(), 40) if everything.size else 10
        axis.hist(r.scores_out, bins=bins, alpha=0.6, label="canary out")
        axis.hist(r.scores_in, bins=bins, alpha=0.6, label="canary in")
        axis.set_title(
            f"{r.campaign} · {r.step}: ρ ≥ {r.rho_lower:.3g} (claimed {r.claimed_rho:.3g})",
            fontsize=9,
        )
        axis.set_xlabel("distinguisher score (held-out runs)")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
