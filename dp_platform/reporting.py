"""Charts of released (noisy) values, as PNG bytes, for the UI and `dp-platform demo`.

Only DP values are ever plotted here; a chart that compares with the truth (the demo's
simulated data) takes the truth as an explicit, separately labelled argument.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt

__all__ = ["cumulative_chart", "slice_chart", "top_slices"]


def cumulative_chart(
    days: Sequence[int],
    noisy: Sequence[float],
    *,
    title: str,
    truth: Sequence[float] | None = None,
    band: Sequence[float] | None = None,
    ylabel: str = "conversions",
) -> bytes:
    """A line chart of noisy answers per day (± one expected standard error), PNG bytes."""
    figure, axes = plt.subplots(figsize=(7, 3.2), dpi=100)
    axes.plot(days, noisy, marker="o", markersize=3, label="released (noisy)")
    if band is not None:
        low = [v - s for v, s in zip(noisy, band, strict=True)]
        high = [v + s for v, s in zip(noisy, band, strict=True)]
        axes.fill_between(days, low, high, alpha=0.2, label="± 1 expected std")
    if truth is not None:
        axes.plot(days, truth, linestyle="--", color="black", label="truth (simulation only)")
    axes.set_xlabel("campaign day")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


def top_slices(series: Sequence[dict], top: int) -> list[dict]:
    """The ``top`` series with the largest last ``value``: the campaign-to-date running sum,
    unbiased — never the per-slice ``projected`` number, which is biased upward (most for the
    small slices a ranking would otherwise lift)."""
    return sorted(series, key=lambda s: -float(s["value"][-1]))[:top]


def slice_chart(
    series: Sequence[dict],
    *,
    title: str,
    label_keys: Sequence[str],
    top: int = 6,
    ylabel: str = "conversions to date",
) -> bytes:
    """One line per slice over the campaign's days with its 95 % band, for the ``top`` slices
    by their last value; ``series`` are ``releases --json``'s ``cumulative`` rows (DP values
    only: the unprojected running sums, unbiased, ± 1.96·se exactly — a line may dip: noise)."""
    figure, axes = plt.subplots(figsize=(7, 3.6), dpi=100)
    for row in top_slices(series, top):
        label = " / ".join(str(row[k]) for k in label_keys)
        (line,) = axes.plot(row["days"], row["value"], marker="o", markersize=2, label=label)
        axes.fill_between(
            row["days"], row["ci_low"], row["ci_high"], color=line.get_color(), alpha=0.12
        )
    axes.set_xlabel("campaign day")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize=7, title="slice (band: 95 %)", title_fontsize=7)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()
