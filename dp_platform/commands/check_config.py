"""``dp-platform check-config``: is an attribution configuration valid, and with which C0?

Classifies (attribution rule, adjacency, enforcement point) by the table of docs/validity.md:
valid with a constant C0 — Laplace noise of scale C0·r·Δ(f)/ε per publisher then gives ε-DP
(Lemma 1 of Delaney et al.) — or invalid, with the reason. ``--all`` prints the whole table.
"""

from __future__ import annotations

import argparse
import json

from dp_platform.validity import ADJACENCIES, ENFORCEMENTS, RULES, check, table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--rule", choices=RULES, help="attribution rule")
    parser.add_argument("--adjacency", choices=ADJACENCIES, help="privacy unit")
    parser.add_argument("--enforcement", choices=ENFORCEMENTS, help="bounding point")
    parser.add_argument("--all", action="store_true", help="print every cell of the table")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.all:
        cells = {"/".join(key): cell.to_json() for key, cell in table().items()}
        if args.json:
            print(json.dumps(cells, indent=2))
        else:
            for key, cell in cells.items():
                verdict = f"valid, C0 = {cell['c0']:g}" if cell["valid"] else "invalid"
                print(f"{key}: {verdict}")
        return 0
    missing = [name for name in ("rule", "adjacency", "enforcement") if getattr(args, name) is None]
    if missing:
        raise SystemExit(
            "dp-platform check-config: give --rule, --adjacency and --enforcement (or --all); "
            f"missing: {', '.join('--' + m for m in missing)}"
        )
    cell = check(args.rule, args.adjacency, args.enforcement)
    if args.json:
        print(json.dumps(cell.to_json()))
    elif cell.valid:
        print(f"valid, C0 = {cell.c0:g}: {cell.reason}")
    else:
        print(f"invalid: {cell.reason}")
    return 0
