"""``dp-platform demo``: the whole platform on a simulated campaign, end to end.

Generates a seeded event-level campaign (impressions and conversions of one advertiser),
ingests it into the DuckDB warehouse under ``--home``, writes a catalogue with three campaigns
on one budget account, each on the default mechanism, AdsBPC+ (daily prefix sums, 7-day sliding
windows, and prefix sums broken down by creative × region with the value), materialises every day
through Dagster, and prints each day's release next to the truth — possible only because the
data is simulated — with the errors, the budget and PNG plots. Re-running it finds the files
already loaded and the days already released: it prints the stored releases and spends nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", default=".dp_home", help="platform home (default .dp_home)")
    parser.add_argument("--days", type=int, default=31, help="campaign days (31)")
    parser.add_argument("--users", type=int, default=20_000, help="simulated users (20000)")
    parser.add_argument("--publishers", type=int, default=20, help="publishers (20)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from assets.demo import run_demo  # imports Dagster: only when this command runs

    report = run_demo(Path(args.home), days=args.days, users=args.users, publishers=args.publishers)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0


def render(report: dict) -> str:
    lines = [
        f"demo home {report['home']}: {report['ingest']}",
    ]
    for name, campaign in report["campaigns"].items():
        lines.append("")
        lines.append(
            f"campaign {name} ({campaign['workload']}): "
            f"{'ran ' + str(len(campaign['ran'])) + ' days' if campaign['ran'] else 'nothing new'}"
        )
        lines.append(
            " day   bound     σ_i   noisy total  true total    error"
            "    noisy answer   true answer    error"
        )
        for row in campaign["days"]:
            answer = ""
            if row["noisy_answer"] is not None:
                answer = (
                    f"{row['noisy_answer']:>14.1f} {row['true_answer']:>13.1f} "
                    f"{row['noisy_answer'] - row['true_answer']:>+8.1f}"
                )
            lines.append(
                f"{row['day']:>4} {row['bound']:>7.3f} {row['sigma']:>7.2f} "
                f"{row['noisy_total']:>12.1f} {row['true_total']:>11.1f} "
                f"{row['noisy_total'] - row['true_total']:>+8.1f}  {answer}"
            )
        if campaign.get("noise_fit"):  # each day's error against that day's stated std
            lines.append(f"  answers vs truth: {campaign['noise_fit']['sentence']}")
        lines.append(f"  plot: {campaign['plot']}")
        if "slice_plot" in campaign:
            lines.append(f"  top slices: {campaign['slice_plot']}")
    lines.append("")
    for name, account in report["budget"]["accounts"].items():
        lines.append(
            f"account {name}: cap ρ {account['rho_cap']:g}, reserved {account['reserved']:g}, "
            f"spent {account['spent']:.6g}"
        )
    for name, budget in report["budget"]["campaigns"].items():
        lines.append(
            f"  {name}: planned {budget['planned']:g}, spent {budget['spent']:.6g}, "
            f"remaining {budget['remaining']:.6g}"
        )
    return "\n".join(lines)
