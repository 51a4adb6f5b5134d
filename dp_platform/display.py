"""How released numbers are shown: rounded to what their noise justifies.

A noisy value with standard deviation σ carries no information below about σ/10, and printing
``0.019806963861120904`` invites readers to trust digits that are noise. Every place that shows a
release to a person (the Dagster UI's metadata, the CLI table) rounds it here, one rule for all:
keep one decimal digit finer than σ's leading digit. The stored release and ``--json`` keep full
precision — rounding is post-processing, for the eye only.
"""

from __future__ import annotations

import math

__all__ = ["RHO_DIGITS", "decimals_for", "round_to_noise", "significant"]

RHO_DIGITS = 4  # ρ spent and remaining, shown next to a release (the ledger keeps it exact)


def decimals_for(std: float) -> int:
    """Decimal places worth showing for a value with standard deviation ``std`` (≥ 0 places)."""
    if not (std > 0 and math.isfinite(std)):
        return 6
    return max(0, 1 - math.floor(math.log10(std)))


def round_to_noise(value: float, std: float) -> float:
    """``value`` rounded to one digit finer than its noise: σ = 24.8 → units, σ = 0.02 → 0.001."""
    return round(float(value), decimals_for(std))


def significant(value: float, digits: int = 3) -> float:
    """``value`` to ``digits`` significant digits (bounds, σ, ρ shown next to a release)."""
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


INLINE_MARKDOWN_LIMIT = 1000  # Dagster's UI shows shorter markdown metadata inline
_WIDTH, _HEIGHT, _POINTS = 300, 80, 32


def band_chart_markdown(
    values: list[float], low: list[float], high: list[float], *, points: int = _POINTS
) -> str:
    """A tiny SVG line of ``values`` inside the band [low, high], as markdown short enough for
    the Dagster UI to draw inline on the asset page (a PNG would hide behind "[Show Markdown]").

    Days are evenly spaced left to right; longer series are thinned to at most 32 points
    (always keeping the first and the last). The band is the answer ± 2σ of its noise.
    """
    n = len(values)
    if not n or len(low) != n or len(high) != n:
        raise ValueError("need as many band edges as values, and at least one value")
    if n > points:
        keep = sorted({round(i * (n - 1) / (points - 1)) for i in range(points)})
    else:
        keep = list(range(n))
    top, bottom = max(high[i] for i in keep), min(low[i] for i in keep)
    span = (top - bottom) or 1.0

    def point(i: int, y: float) -> str:
        x = 0 if n == 1 else round(_WIDTH * i / (n - 1))
        return f"{x},{round(_HEIGHT - 2 - (_HEIGHT - 4) * (y - bottom) / span)}"

    line = "L".join(point(i, values[i]) for i in keep)
    band = "L".join([point(i, high[i]) for i in keep] + [point(i, low[i]) for i in reversed(keep)])
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_WIDTH} {_HEIGHT}' "
        f"width='{_WIDTH}' height='{_HEIGHT}'><path d='M{band}Z' fill='%23cfe0f5'/>"
        f"<path d='M{line}' fill='none' stroke='%231f5fbf' stroke-width='2'/></svg>"
    )
    encoded = svg.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")
    markdown = f"![noisy answers, band ±2σ](data:image/svg+xml,{encoded})"
    if len(markdown) > INLINE_MARKDOWN_LIMIT and points > 8:  # thinner: never hidden
        return band_chart_markdown(values, low, high, points=points * 3 // 4)
    return markdown
