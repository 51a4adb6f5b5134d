"""``dp-platform releases --home DIR --campaign NAME``: the published data, and only that.

Reads the ledger's write-once releases: per day the bound r_i, σ_i, ρ charged, the noisy value
of every publisher and the answers of the campaign's queries that end by that day (post-
processing of the noisy values); and the campaign-level releases (one-shot, reach and
frequency) when there are any. A campaign with a breakdown or the value measure publishes
cells (publisher, dimension values, measure, value, σ, 95 % interval): ``--json`` has every
cell of every day, the derived totals over every subset of the breakdown (exact sums of the
cells) and every cell's and total's campaign-to-date number: the running sum (unbiased, exact
95 % interval, totals exact sums of cells), and apart from it, labelled, a per-cell projection
onto non-negative, non-decreasing series (biased upward when summed); the table
shows the last day's largest cells per measure (``--cells N``), each dimension's totals that day
and campaign to date (running sums).
Its per-publisher values and answers are counts summed over the cells. Every number comes with
its 95 % interval (noise only: docs/slices.md#confidence-intervals). This is what an
advertiser may see. Releases live in the ledger whatever the warehouse engine: ``--config`` is
accepted (and checked) for symmetry with the other commands, and opens no warehouse.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dp_platform.cells import CellLayout
    from dp_platform.publication import PublishedDay


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", required=True, help="platform home directory")
    parser.add_argument("--campaign", required=True, help="campaign name")
    parser.add_argument("--config", help="campaign catalogue (checked; releases need no engine)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--cells", type=int, default=10, help="cells shown per measure in the table (default 10)"
    )
    parser.set_defaults(handler=run)


def cell_table(cells: list[dict], per_measure: int) -> list[str]:
    """The largest cells of each measure, value ± 1.96σ rounded to what the noise justifies."""
    from dp_platform.cells import largest_cells

    lines = []
    keys, top = largest_cells(cells, per_measure)
    for measure, largest in top.items():
        count = sum(1 for c in cells if c["measure"] == measure)
        lines.append(f"  {measure}: top {len(largest)} of {count} cells")
        for cell in largest:
            label = " / ".join(str(cell[k]) for k in keys)
            lines.append(
                f"    {label:<40} {_plus_minus(float(cell['value']), float(cell['sigma']))}"
            )
    return lines


def margin_table(layout: CellLayout, cells: list[dict]) -> list[str]:
    """Each dimension's totals over every publisher, and the grand total, per measure: sums of
    the day's published cells (the same numbers as ``--json``'s ``totals``), value ± 95 %."""
    from dp_platform.cells import PUBLISHER
    from dp_platform.consistency import slice_rows

    names = layout.dimension_names
    levels = [(PUBLISHER, *(n for n in names if n != kept)) for kept in names]
    levels.append((PUBLISHER, *names))
    rows = slice_rows(layout, [c["value"] for c in cells], [c["sigma"] for c in cells], levels)
    return _margin_lines(layout, rows)


def to_date_table(layout: CellLayout, days: list[PublishedDay]) -> list[str]:
    """The same totals campaign to date (``--json``'s ``cumulative`` ``value``): running sums of
    the released cells, unbiased, each the exact sum of its slices, value ± 95 % — never the
    labelled per-cell projection, which is biased upward when summed."""
    from dp_platform.consistency import ALL
    from dp_platform.release_view import CumulativeRows

    rows = [
        row
        for row in CumulativeRows(layout, days).day_rows(len(days))
        if row["publisher"] == ALL and sum(row[n] != ALL for n in layout.dimension_names) <= 1
    ]
    return _margin_lines(layout, rows)


def _margin_lines(layout: CellLayout, rows: list[dict]) -> list[str]:
    from dp_platform.consistency import ALL

    names = layout.dimension_names
    lines = []
    for row in sorted(rows, key=lambda r: str(r["measure"])):  # stable: level order kept
        label = " / ".join(f"{n}={row[n]}" for n in names if row[n] != ALL) or "all"
        value = _plus_minus(float(row["value"]), float(row["se"]))
        lines.append(f"    {row['measure']:<6} {label:<40} {value}")
    return lines


def _plus_minus(value: float, se: float) -> str:
    """``value ± half-width`` of the 95 % interval, both rounded to what the noise justifies."""
    from dp_platform.cells import Z95
    from dp_platform.display import round_to_noise

    shown = round_to_noise(value, se) + 0.0  # + 0.0: a rounded -0.2 shows as 0, not -0
    return f"{shown:g} ± {round_to_noise(Z95 * se, se):g}"


def run(args: argparse.Namespace) -> int:
    from dp_platform import mechanisms
    from dp_platform.config_loader import load_catalogue
    from dp_platform.display import significant
    from dp_platform.home import Home
    from dp_platform.ledger import Ledger
    from dp_platform.publication import campaign_layout, published_days
    from dp_platform.release_view import release_document

    if args.config:
        load_catalogue(args.config).campaign(args.campaign)  # a typo fails here, not silently
    with Ledger.at_home(Home.existing(args.home).root, read_only=True) as ledger:
        if args.json:
            print(json.dumps(release_document(ledger, args.campaign), indent=2))
            return 0
        days = published_days(ledger, args.campaign)
        layout = campaign_layout(ledger, args.campaign) if days else None
        campaign_level = ledger.campaign_releases(args.campaign)
    for kind, payload in campaign_level.items():
        print(mechanisms.campaign_level(kind).describe_release(payload))
    print(f"campaign {args.campaign}: {len(days)} released days")
    print(
        " day    bound      σ_i   ρ charged   noisy total ± 95 %      "
        "answer(s) ending today (total ± 95 %)"
    )
    for day in days:  # shown rounded to what the noise justifies (display.py); --json is exact
        std = day.values_total_std()
        total = f"{_plus_minus(sum(day.values.values()), std)}"
        answers = ", ".join(
            f"q{j}={_plus_minus(sum(v.values()), day.answer_std[j])}"
            for j, v in day.answers.items()
        )
        print(
            f"{day.day:>4} {significant(day.bound):>8g} {significant(day.sigma):>8g} "
            f"{significant(day.rho_charged):>11g} {total:>22}   {answers}"
        )
    if layout is not None and not layout.plain:  # a campaign with cells
        print(f"day {days[-1].day} cells (publisher / dimension values; value ± 95 % interval):")
        print("\n".join(cell_table(days[-1].cells, args.cells)))
        print(f"day {days[-1].day} totals over all publishers (exact sums of its cells):")
        print("\n".join(margin_table(layout, days[-1].cells)))
        print(
            f"totals over all publishers to date, through day {days[-1].day} "
            "(running sums of the released cells, unbiased):"
        )
        print("\n".join(to_date_table(layout, days)))
    return 0
