"""The answers chart on `cumulative_query_answers`: a real chart (axes, days, ±2σ band, one line
per large publisher, a legend) drawn inline by the Dagster UI, from rounded DP answers only."""

from __future__ import annotations

import math
import re
import urllib.parse
import xml.etree.ElementTree as ET

import pytest

import assets.metadata as metadata_module
from assets.metadata import answers_metadata
from dp_platform.display import (
    CHART_ALT,
    INLINE_MARKDOWN_LIMIT,
    answers_chart_markdown,
    round_to_noise,
)
from dp_platform.publication import PublishedDay

SVG = "{http://www.w3.org/2000/svg}"
# What CommonMark accepts as an image destination without angle brackets: no ASCII space, no
# control character, no parenthesis (ours has none at all, so none can be unbalanced).
INLINE_IMAGE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\((?P<src>data:image/svg\+xml,[^ \x00-\x1f\x7f()]+)\)"
)


def history(days: int, publishers: list[str], std: float = 40.0) -> list[PublishedDay]:
    """A prefix-sum campaign's published days: query d ends on day d, answers grow by day."""
    out = []
    for day in range(1, days + 1):
        answers = {p: 100.0 * day * (k + 1) + 7.123456 * k + 0.3 for k, p in enumerate(publishers)}
        out.append(
            PublishedDay(
                day=day,
                bound=3.0,
                sigma=std,
                rho_charged=0.01,
                rho_spent=0.01 * day,
                rho_planned=1.0,
                values={p: 10.0 for p in publishers},
                answers={str(day): dict(sorted(answers.items()))},
                answer_std={str(day): std * math.sqrt(day * len(publishers))},
                value_std=std,
            )
        )
    return out


def parse(markdown: str) -> ET.Element:
    """The chart's SVG, as the browser gets it from the data URI (well-formed XML or a failure)."""
    match = INLINE_IMAGE.fullmatch(markdown)
    assert match, markdown[:200]
    assert match["alt"] == CHART_ALT
    return ET.fromstring(urllib.parse.unquote(match["src"].split(",", 1)[1]))


def texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()).replace("\u00a0", " ") for t in svg.iter(f"{SVG}text")]


def strokes(svg: ET.Element) -> list[str]:
    """The coloured lines: one stroke per path inside the line group."""
    group = svg.find(f"{SVG}g")
    return [p.get("stroke", group.get("stroke")) for p in group.iter(f"{SVG}path")][1:]


def test_the_chart_has_axes_days_a_band_and_a_line_per_publisher() -> None:
    publishers = ["pub_0", "pub_1", "pub_2", "pub_3"]
    shown = answers_metadata(history(6, publishers))
    chart = shown["chart"].value
    assert len(chart) < INLINE_MARKDOWN_LIMIT  # drawn inline, not behind "[Show Markdown]"
    svg = parse(chart)
    labels = texts(svg)
    ticks = [label for label in labels if re.fullmatch(r"-?[\d.]+[kM]?", label)]
    assert len(ticks) >= 3, labels  # the y axis: round values, bottom to top
    assert any(label.startswith("day 1") and label.endswith("6") for label in labels), labels
    legend = next(label for label in labels if label.startswith("total"))
    # pub_3 answers the most: the legend lists the largest publisher first
    assert legend.split() == ["total", "pub_3", "pub_2", "pub_1", "pub_0"]
    band = svg.find(f"{SVG}path")
    assert band.get("fill") not in (None, "none") and band.get("d").startswith("M")
    axes = svg.find(f"{SVG}g").find(f"{SVG}path")
    assert re.match(r"M99,0H0V49H99", axes.get("d"))  # top, y axis, x axis
    assert strokes(svg) == ["black", "blue", "red", "teal", "peru"]  # total + 4 publishers


def test_a_long_campaign_with_many_publishers_still_draws_inline() -> None:
    publishers = [f"publisher_with_a_long_name_{k}" for k in range(12)]
    chart = answers_metadata(history(90, publishers))["chart"].value
    assert len(chart) < INLINE_MARKDOWN_LIMIT
    svg = parse(chart)
    labels = texts(svg)
    assert any(label.startswith("day 1") and label.endswith("90") for label in labels), labels
    lines = strokes(svg)
    assert 2 <= len(lines) <= 6 and lines[0] == "black"  # total + at most five publishers
    legend = next(label for label in labels if label.startswith("total")).split()
    assert len(legend) == len(lines) and all(len(name) <= 10 for name in legend[1:])
    total_path = svg.find(f"{SVG}g").findall(f"{SVG}path")[1].get("d")
    points = len(re.findall(r"-?\d+", total_path)) // 2
    assert 8 <= points < 90  # thinned, but still a line through many days


@pytest.mark.parametrize("name", ["a<b&c", "(paren", "it's", "x)y"])
def test_publisher_names_cannot_break_the_chart(name: str) -> None:
    chart = answers_chart_markdown([1, 2], [10, 20], [8, 18], [12, 22], {name: [5, 9]})
    legend = next(t for t in texts(parse(chart)) if t.startswith("total"))
    assert name in legend


def test_a_single_day_and_equal_values_draw() -> None:
    svg = parse(answers_chart_markdown([1], [0.0], [0.0], [0.0], {"p": [0.0]}))
    assert "day 1" in " ".join(texts(svg))
    with pytest.raises(ValueError):
        answers_chart_markdown([1, 2], [1.0], [0.0], [2.0], {})


def test_the_chart_and_the_per_publisher_entries_show_rounded_dp_answers_only(
    monkeypatch,
) -> None:
    publishers = ["pub_0", "pub_1", "pub_2"]
    days = history(5, publishers)
    drawn = {}

    def capture(days_, total, low, high, lines):
        drawn.update(days=days_, total=total, low=low, high=high, lines=lines)
        return "chart"

    monkeypatch.setattr(metadata_module, "answers_chart_markdown", capture)
    shown = answers_metadata(days)
    today = days[-1]
    query = max(today.answers, key=int)
    std = today.answer_std[query]
    one_std = std / math.sqrt(len(publishers))
    for p, answer in today.answers[query].items():
        assert shown[f"answer/{p}"].value == round_to_noise(answer, one_std)
        two_std = round_to_noise(2 * one_std, one_std)
        row = f"| {p} | {round_to_noise(answer, one_std):g} | ± {two_std:g}"
        assert row in shown["answers_by_publisher"].value
    assert drawn["days"] == [1, 2, 3, 4, 5]
    for i, published in enumerate(days):
        q = max(published.answers, key=int)
        s = published.answer_std[q]
        total = sum(published.answers[q].values())
        assert drawn["total"][i] == round_to_noise(total, s)
        assert drawn["low"][i] == round_to_noise(round_to_noise(total, s) - 2 * s, s)
        assert drawn["high"][i] == round_to_noise(round_to_noise(total, s) + 2 * s, s)
        for p, series in drawn["lines"].items():
            answer = published.answers[q][p]
            assert series[i] == round_to_noise(answer, s / math.sqrt(len(publishers)))
            assert series[i] != answer  # the unrounded tail never reaches the chart
