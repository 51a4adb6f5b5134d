"""How released numbers are shown: rounded to what their noise justifies.

A noisy value with standard deviation σ carries no information below about σ/10, and printing
``0.019806963861120904`` invites readers to trust digits that are noise. Every place that shows a
release to a person (the Dagster UI's metadata, the CLI table) rounds it here, one rule for all:
keep one decimal digit finer than σ's leading digit. The stored release and ``--json`` keep full
precision — rounding is post-processing, for the eye only.
"""

from __future__ import annotations

import html
import itertools
import math

__all__ = [
    "INLINE_MARKDOWN_LIMIT",
    "RHO_DIGITS",
    "answers_chart_markdown",
    "decimals_for",
    "round_to_noise",
    "significant",
]

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
_POINTS = 32  # at most this many days drawn: a longer campaign is thinned

# The answers chart: plot area x 0..99 (days), y 0..49 (top down) in viewBox units, about 4 px
# each, so every coordinate is at most two digits; y labels sit left of it, days and legend below.
_PLOT_X, _PLOT_Y = 99, 49
_LINE_COLOURS = ("blue", "red", "teal", "peru", "purple")  # short names: each char counts
_LEGEND_NAME = 10  # legend names longer than this are cut with "…"
CHART_ALT = "answers ±2σ"
_NBSP = "\u00a0"  # a space inside SVG text that costs one character, not three (%20)


def _numbers(values: list[int]) -> str:
    """SVG path numbers, comma-separated except before a minus sign (which separates itself)."""
    return "".join(("" if v < 0 or not k else ",") + str(v) for k, v in enumerate(values))


def _nice_ticks(bottom: float, top: float) -> list[float]:
    """Round-numbered y ticks (1, 2 or 5 × 10^k apart) covering [bottom, top], 3 to 5 of them."""
    span = (top - bottom) or abs(top) or 1.0
    raw = span / 2
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    low, high = math.floor(bottom / step), math.ceil(top / step)
    if high == low:
        high += 1
    return [k * step for k in range(low, high + 1)]


def _tick_label(value: float) -> str:
    """A tick value, short: 2000 → 2k, 12000 → 12k, 2500000 → 2.5M (ticks are round)."""
    for factor, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= factor and (abs(value) >= 10 * factor or value % (factor / 10) == 0):
            return f"{value / factor:g}{suffix}"
    return f"{value:g}"


def _legend_name(name: str) -> str:
    """A publisher's name for the legend, cut to ``_LEGEND_NAME`` characters."""
    short = name if len(name) <= _LEGEND_NAME else name[: _LEGEND_NAME - 1] + "…"
    return html.escape(short.replace("\n", " "))


def _svg_markdown(svg: str) -> str:
    """``svg`` as an inline markdown image. Only what the markdown link destination and the
    data URI need is escaped (space → %20, # → %23): ``<``/``>`` may stay raw inside a
    destination that does not start with one, and every character counts toward the limit."""
    encoded = svg.replace("%", "%25").replace(" ", "%20").replace("#", "%23")
    encoded = encoded.replace("(", "%28").replace(")", "%29").replace("\\", "%5C")
    return f"![{CHART_ALT}](data:image/svg+xml,{encoded})"


def _chart(
    days: list[int],
    total: list[float],
    low: list[float],
    high: list[float],
    lines: dict[str, list[float]],
    keep: list[int],
    middle_day: bool = True,
) -> str:
    """The SVG of the answers chart over the points ``keep`` (indices into ``days``); the x axis
    labels the first and the last day, and the middle one if ``middle_day``."""
    shown = [*total, *low, *high, *(v for series in lines.values() for v in series)]
    ticks = _nice_ticks(min(shown), max(shown))
    bottom, span = ticks[0], (ticks[-1] - ticks[0])
    first, width = days[keep[0]], (days[keep[-1]] - days[keep[0]]) or 1

    def x(i: int) -> int:
        return round(_PLOT_X * (days[i] - first) / width)

    def y(value: float) -> int:
        return round(_PLOT_Y - _PLOT_Y * (value - bottom) / span)

    def path(points: list[tuple[int, int]]) -> str:
        moves = [c for a, b in itertools.pairwise(points) for c in (b[0] - a[0], b[1] - a[1])]
        return f"M{points[0][0]},{points[0][1]}" + (f"l{_numbers(moves)}" if moves else "")

    def line(series: list[float]) -> str:
        return path([(x(i), y(series[i])) for i in keep])

    grid = "".join(f"M0,{y(t)}H{_PLOT_X}" for t in ticks[1:-1])  # the top one: with the axes
    band = path([(x(i), y(high[i])) for i in keep] + [(x(i), y(low[i])) for i in keep[::-1]])
    curves = "".join(
        f"<path d='{line(series)}' stroke='{colour}'/>"
        for series, colour in zip(lines.values(), _LINE_COLOURS, strict=False)
    )
    # the root anchors all text at its end: y labels end left of the axis, each day's label
    # just right of its day, the legend at the plot's right edge
    y_labels = "".join(f"<text x='-1' y='{y(t) + 1}'>{_tick_label(t)}</text>" for t in ticks)
    x_days = sorted({keep[0], keep[len(keep) // 2] if middle_day else keep[0], keep[-1]})
    x_labels = "".join(  # "day 1 … 4 … 6": the unit once, where the axis starts
        f"<tspan x='{x(i) + 1}'>{'' if k else 'day' + _NBSP}{days[i]}</tspan>"
        for k, i in enumerate(x_days)
    )
    legend = "".join(
        f"<tspan fill='{colour}'>{_NBSP}{_legend_name(name)}</tspan>"
        for name, colour in zip(lines, _LINE_COLOURS, strict=False)
    )
    return (
        "<svg xmlns='http://www.w3.org/2000/svg' viewBox='-10,-2,112,63' width='440' "
        "style='font:3px sans-serif;text-anchor:end;stroke-width:.4'>"
        f"<path d='{band}' fill='#cde'/><g fill='none' stroke='black'>"
        f"<path d='M{_PLOT_X},0H0V{_PLOT_Y}H{_PLOT_X}{grid}' stroke='#ccc'/>"
        f"<path d='{line(total)}'/>{curves}</g>{y_labels}"
        f"<text y='{_PLOT_Y + 5}'>{x_labels}</text>"
        f"<text x='{_PLOT_X}' y='{_PLOT_Y + 11}'>total{legend}</text></svg>"
    )


def answers_chart_markdown(
    days: list[int],
    total: list[float],
    low: list[float],
    high: list[float],
    lines: dict[str, list[float]],
) -> str:
    """A real chart of the answers, as markdown short enough for the Dagster UI to draw inline:
    day-numbered x axis, y axis with round ticks, the total in black inside its ±2σ band
    [``low``, ``high``], and one coloured line per publisher in ``lines`` (at most five) with
    a legend. Every series is already a DP output rounded to its noise; the chart only maps it.

    To fit under :data:`INLINE_MARKDOWN_LIMIT` it first leaves the middle day's label out, then
    thins a longer campaign's days (first and last always kept, at least 8), then drops the
    smallest publishers' lines: a chart behind "[Show Markdown]" is a chart nobody looks at.
    """
    n = len(days)
    series = [total, low, high, *lines.values()]
    if not n or any(len(s) != n for s in series):
        raise ValueError("need as many values as days in every series, and at least one day")
    names = list(lines)[: len(_LINE_COLOURS)]
    while True:
        for points in range(min(n, _POINTS), 0, -1):
            keep = sorted({round(i * (n - 1) / max(points - 1, 1)) for i in range(points)})
            chosen = {name: lines[name] for name in names}
            for middle_day in (True, False):
                markdown = _svg_markdown(_chart(days, total, low, high, chosen, keep, middle_day))
                if len(markdown) < INLINE_MARKDOWN_LIMIT and (points >= min(n, 8) or not names):
                    return markdown
        if not names:
            return markdown
        names = names[:-1]
