"""What must hold after every schedule, however its processes were killed.

- Every release (daily, campaign-level) and every bound ever observed equals the final one:
  each campaign-day is drawn once and never changed after publication; so are its charges.
- Once complete, each campaign's charges equal its registered plan exactly (no day charged
  twice, none missing), the plan is the catalogue's as first registered (a mid-campaign edit
  changed nothing), and the account's total never passed its cap.
- AdsBPC+: every user's recorded spend equals the sum over released days of that user's cost
  (their whole row: with a correlated strategy their earlier days through C too),
  recomputed here independently (a NumPy re-implementation of the filter over the warehouse's
  attributed rows, with the bound and σ stored in the ledger), and is ≤ ρ1 exactly; the stored
  clipped vectors equal the recomputed sums.
- Warehouse: rows in = accepted + quarantined for every load, tables hold exactly the accepted
  rows, no file loaded twice; derived partitions equal those of a clean, fault-free run.
- Dagster: no partition's draw reported twice, and every run ended, but one per process that
  died by SIGKILL (nothing is left to end it); a run whose worker alone died was failed by its
  code server.

Reading goes through :func:`tests.faults.backends.open_ledger` (the ledger's backend) and a
read-only DuckDB connection; nothing here writes.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np

from dp_platform import mechanisms
from dp_platform.errors import StorageError
from dp_platform.home import Home
from dp_platform.ledger import Ledger
from dp_platform.privacy.filter import budget_fraction, remaining
from dp_platform.records import to_record
from dp_platform.registration import load_registration
from tests.faults.backends import open_ledger
from tests.faults.world import CAMPAIGNS, DAYS, START

Key = tuple[str, str, int]  # (table, campaign, day or 0)


@dataclass
class Snapshot:
    """Every write-once record and charge of the ledger at one moment (as JSON-able records)."""

    records: dict[Key, object] = field(default_factory=dict)
    charges: dict[tuple[str, int, str], Fraction] = field(default_factory=dict)
    account_spent: Fraction = Fraction(0)


def snapshot(home: Home, ledger_block: dict | None) -> Snapshot:
    """The ledger's releases, bounds, campaign-level releases and charges now."""
    taken = Snapshot()
    with open_ledger(home, ledger_block) as ledger:
        for name in ledger.campaigns():
            registration = load_registration(ledger, name)
            chain = mechanisms.stream(registration.plan.mechanism).chain
            for release in ledger.releases(name):
                taken.records["release", name, release.day] = to_record(release)
            for day in range(1, DAYS + 1):
                choice = ledger.bound_choice(name, day, chain)
                if choice is not None:
                    taken.records["bound", name, day] = to_record(choice)
            for kind, payload in ledger.campaign_releases(name).items():
                taken.records[f"campaign:{kind}", name, 0] = payload
            budget = ledger.campaign_budget(name)
            for day, parts in budget.per_day.items():
                for part, rho in parts.items():
                    taken.charges[name, day, part] = rho.value
            taken.account_spent += budget.spent.value
    return taken


@dataclass(frozen=True)
class Golden:
    """What a clean, fault-free run gives: the reservations and the deterministic partitions."""

    planned: dict[str, Fraction]
    partitions: dict[tuple[str, str, date], tuple]
    cap: Fraction


def partition_digests(warehouse: Path) -> dict[tuple[str, str, date], tuple]:
    """Per (table, campaign, day): row count and order-free sums of the attributed rows and the
    contributions (deterministic SQL: equal in every correct run)."""
    digests: dict[tuple[str, str, date], tuple] = {}
    with duckdb.connect(str(warehouse), read_only=True) as db:
        for row in db.execute(
            "SELECT campaign, day, count(*), sum(conversion_key), sum(user_key * 7 + user_rank), "
            "sum(publisher_key), round(sum(weight), 9), count(DISTINCT conversion_key) "
            "FROM attributed_conversions GROUP BY campaign, day"
        ).fetchall():
            digests["attributed", row[0], row[1]] = tuple(row[2:])
        for row in db.execute(
            "SELECT campaign, day, count(*), count(DISTINCT user_key), sum(user_key), "
            "sum(conversions) FROM user_day_contributions GROUP BY campaign, day"
        ).fetchall():
            digests["contributions", row[0], row[1]] = tuple(row[2:])
    return digests


def golden_of(home: Home, ledger_block: dict | None) -> Golden:
    with open_ledger(home, ledger_block) as ledger:
        planned = {name: ledger.campaign_budget(name).planned.value for name in CAMPAIGNS}
        cap = Fraction(str(ledger.budget_report()["accounts"]["acme-users"]["rho_cap"]))
    return Golden(planned, partition_digests(home.warehouse), cap)


def complete(home: Home, ledger_block: dict | None) -> bool:
    """Every day of both campaigns released and the campaign-level releases drawn (False when
    nothing was registered yet: every process of the schedule died or was refused first)."""
    try:
        with open_ledger(home, ledger_block) as ledger:
            return _complete(ledger)
    except StorageError as error:  # the read-only views' words for an empty ledger
        if "no ledger here" in str(error):
            return False
        raise


def _complete(ledger: Ledger) -> bool:
    if not set(CAMPAIGNS) <= set(ledger.campaigns()):
        return False
    for name in CAMPAIGNS:
        if [r.day for r in ledger.releases(name)] != list(range(1, DAYS + 1)):
            return False
        wanted = set(load_registration(ledger, name).plan.releases)
        if not wanted <= set(ledger.campaign_releases(name)):
            return False
    return True


def check_history(observed: list[Snapshot], final: Snapshot, golden: Golden) -> list[str]:
    """Nothing observed was ever changed or removed; no snapshot over a plan or the cap."""
    problems = []
    for number, taken in enumerate(observed):
        for key, value in taken.records.items():
            if final.records.get(key) != value:
                problems.append(f"snapshot {number}: {key} changed or vanished after publication")
        for key, rho in taken.charges.items():
            if final.charges.get(key) != rho:
                problems.append(f"snapshot {number}: charge {key} changed or vanished")
        if taken.account_spent > golden.cap:
            problems.append(f"snapshot {number}: account spent {taken.account_spent} > cap")
        for name, planned in golden.planned.items():
            spent = sum((r for (c, _, _), r in taken.charges.items() if c == name), Fraction(0))
            if spent > planned:
                problems.append(f"snapshot {number}: {name} spent {spent} > plan {planned}")
    return problems


def check_budget(home: Home, ledger_block: dict | None, golden: Golden) -> list[str]:
    """Reservations as first registered, charges = plan, account within its cap (exact; sums
    taken here, so an over-charge is reported rather than refused by ``Rho``'s arithmetic)."""
    problems = []
    reserved = spent_total = Fraction(0)
    with open_ledger(home, ledger_block) as ledger:
        for name in CAMPAIGNS:
            budget = ledger.campaign_budget(name)
            planned, spent = budget.planned.value, budget.spent.value
            reserved, spent_total = reserved + planned, spent_total + spent
            if planned != golden.planned[name]:
                problems.append(
                    f"{name}: reserved {planned} ≠ the catalogue's plan {golden.planned[name]} "
                    "(an edit registered?)"
                )
            if spent != planned:
                problems.append(f"{name}: charged {float(spent):.9g} ≠ plan {float(planned):.9g}")
    if spent_total > golden.cap or reserved > golden.cap:
        problems.append(f"account over its cap: reserved {reserved}, spent {spent_total}")
    return problems


def _filter_costs(
    rows: list[tuple[int, int, int, float]],
    positions: dict[int, int],
    publishers: int,
    bound: float,
    sigma: float,
    cap: float,
    spend: dict[int, float],
    strategy_row: np.ndarray,
    history: dict[int, list[np.ndarray]],
) -> tuple[dict[int, float], np.ndarray]:
    """One day t of the AdsBPC+ filter, re-implemented: per user (cost, released row), from rows
    (user_key, user_rank, publisher_key, weight) — privacy/filter.py's rule, plain loops.

    ``strategy_row`` is C's row t (days 1..t; [1.0] … for the diagonal strategy, zeros before
    the diagonal); ``history[user]`` the user's kept vectors of days 1..t−1, extended here.
    A user's row is α·(P + C_tt·k): P their earlier days through C; when ‖P‖² alone passes
    the room, k = 0 and α = √(room/‖P‖²) (out from then on at the full cap; under a paced
    plan's lower ``cap`` of the day, back on a later day whose cap is higher)."""
    by_user: dict[int, dict[int, np.ndarray]] = defaultdict(dict)
    for user, rank, publisher, weight in rows:
        vector = by_user[user].setdefault(rank, np.zeros(publishers))
        if publisher in positions:
            vector[positions[publisher]] += weight
    day = len(strategy_row) - 1
    ctt = float(strategy_row[day])
    two_var = 2.0 * sigma * sigma
    costs: dict[int, float] = {}
    total = np.zeros(publishers)
    for user in set(by_user) | set(history):
        past_days = history.setdefault(user, [np.zeros(publishers)] * day)
        past = sum(
            (c * k for c, k in zip(strategy_row[:day], past_days, strict=True)),
            np.zeros(publishers),
        )
        room = two_var * float(remaining(cap, np.array([spend.get(user, 0.0)]))[0])
        kept = np.zeros(publishers)
        if float(past @ past) > room:
            row = np.sqrt(room / float(past @ past)) * past
        else:
            full = past.copy()  # the row with earlier conversions at full weight (q, b)
            for rank in sorted(by_user.get(user, {})):
                w = by_user[user][rank]
                count_part = min(1.0, max(0.0, bound - rank))
                a, b, q = ctt * ctt * float(w @ w), ctt * float(full @ w), float(full @ full)
                budget_part = float(budget_fraction(q, a, b, room))
                kept += min(count_part, budget_part) * w
                full += ctt * w
            row = past + ctt * kept
        past_days.append(kept)
        cost = float(row @ row) / two_var
        if cost > 0:
            costs[user] = cost
        total += row
    return costs, total


def check_plus_spends(home: Home, ledger_block: dict | None) -> list[str]:
    """AdsBPC+: recorded spends = Σ recomputed costs of the released days, ≤ ρ1 exactly."""
    problems = []
    with open_ledger(home, ledger_block) as ledger:
        registration = load_registration(ledger, "plus")
        chain = mechanisms.stream("adsbpc_plus").chain
        released = {r.day: r for r in ledger.releases("plus")}
        choices = {day: ledger.bound_choice("plus", day, chain) for day in released}
    plan = registration.plan.stream
    rho1 = Fraction(plan.budget.rho1.value)
    keys = registration.publishers
    with duckdb.connect(str(home.warehouse), read_only=True) as db:
        key_of = dict(db.execute("SELECT publisher_id, publisher_key FROM publishers").fetchall())
        positions = {key_of[p]: i for i, p in enumerate(keys) if p in key_of}
        stored_days = {
            (row[0] - START).days + 1: (row[1], row[2])
            for row in db.execute(
                "SELECT day, bound, sigma FROM plus_spend_days WHERE campaign = 'plus'"
            ).fetchall()
        }
        spend_rows = db.execute(
            "SELECT day, user_key, cost, spend FROM plus_user_spend WHERE campaign = 'plus'"
        ).fetchall()
        clipped = defaultdict(dict)
        for day, position, value in db.execute(
            "SELECT day, position, value FROM clipped_daily_vectors WHERE campaign = 'plus'"
        ).fetchall():
            clipped[(day - START).days + 1][position] = value
        attributed = defaultdict(list)
        for day, *row in db.execute(
            "SELECT day, user_key, user_rank, publisher_key, weight FROM attributed_conversions "
            "WHERE campaign = 'plus'"
        ).fetchall():
            attributed[(day - START).days + 1].append(tuple(row))
    if set(stored_days) != set(released):
        problems.append(
            f"plus: spends applied on days {sorted(stored_days)}, released {sorted(released)}"
        )
    recorded: dict[int, dict[int, tuple[float, float]]] = defaultdict(dict)
    for day, user, cost, spend in spend_rows:
        index = (day - START).days + 1
        if user in recorded[index]:
            problems.append(f"plus: user row twice on day {index}")
        recorded[index][user] = (cost, spend)
    spend: dict[int, float] = {}
    exact: dict[int, Fraction] = defaultdict(Fraction)
    matrix = plan.matrix  # the registered strategy (the identity for the diagonal one)
    history: dict[int, list[np.ndarray]] = {}
    for day in sorted(released):
        choice = choices[day]
        if stored_days.get(day) != (choice.bound, choice.sigma):
            problems.append(
                f"plus day {day}: filtered at {stored_days.get(day)}, released at "
                f"{(choice.bound, choice.sigma)}"
            )
            continue
        rows = sorted(attributed[day])
        costs, total = _filter_costs(
            rows,
            positions,
            len(keys),
            choice.bound,
            choice.sigma,
            plan.day_cap(day),  # the registered plan's cap of the day (paced or not)
            spend,
            matrix[day - 1, :day],
            history,
        )
        if set(costs) != set(recorded[day]):
            problems.append(
                f"plus day {day}: {len(recorded[day])} users charged, {len(costs)} recomputed"
            )
        for user, cost in costs.items():
            stored_cost, stored_spend = recorded[day].get(user, (math.nan, math.nan))
            spend[user] = spend.get(user, 0.0) + cost
            exact[user] += Fraction(stored_cost) if stored_cost == stored_cost else 0
            if not math.isclose(stored_cost, cost, rel_tol=1e-9, abs_tol=1e-15):
                problems.append(f"plus day {day}: a user's cost {stored_cost} ≠ recomputed {cost}")
            elif not math.isclose(stored_spend, spend[user], rel_tol=1e-9, abs_tol=1e-15):
                problems.append(f"plus day {day}: a running spend ≠ Σ of released costs")
            if Fraction(stored_spend) > rho1:
                problems.append(f"plus day {day}: a user's spend passed ρ1")
        vector = np.array([clipped[day].get(i, math.nan) for i in range(len(keys))])
        if not np.allclose(vector, total, rtol=1e-9, atol=1e-9):
            problems.append(f"plus day {day}: stored clipped vector ≠ recomputed sums")
    for total_cost in exact.values():
        if total_cost > rho1:
            problems.append(f"plus: a user's summed cost {float(total_cost)} passed ρ1")
    return problems


DRAWING_ASSETS = ("contribution_bound", "noisy_daily_release", "reach_and_frequency")


def check_dagster_draws(home: Home) -> list[str]:
    """What the UI saw: no partition of a drawing asset materialised twice with ``drawn_now``
    true (each draw is reported by at most one run; a killed run may report none)."""
    import dagster as dg  # only here: the harness's parent process needs no Dagster otherwise

    problems = []
    instance = dg.DagsterInstance.from_config(str(home.dagster))
    try:
        for campaign in CAMPAIGNS:
            for asset in DRAWING_ASSETS:
                drawn = Counter()
                key = dg.AssetKey([campaign, asset])
                cursor = None
                while True:
                    page = instance.fetch_materializations(key, limit=500, cursor=cursor)
                    for record in page.records:
                        materialization = record.asset_materialization
                        shown = materialization.metadata.get("drawn_now")
                        if shown is not None and shown.value is True:
                            drawn[materialization.partition] += 1
                    if not page.has_more:
                        break
                    cursor = page.cursor
                twice = sorted(str(p) for p, n in drawn.items() if n > 1)
                if twice:
                    problems.append(f"{campaign}/{asset}: drawn_now shown twice for {twice}")
    finally:
        instance.dispose()
    return problems


def unfinished_runs(home: Home) -> list[str]:
    """The home's Dagster runs that never ended (queued, starting, started or cancelling), as
    ``run id (status)``."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(home.dagster))
    try:
        return [
            f"{run.run_id} ({run.status.value})"
            for run in instance.get_runs()
            if not run.is_finished
        ]
    finally:
        instance.dispose()


def check_unfinished_runs(unfinished: list[str], killed: int) -> list[str]:
    """A run ends (success or failure) unless the process that waits on it died by SIGKILL
    with it: its whole group killed from outside (CLI, code server and run worker: nothing is
    left to report the run's end), or its own in-process fail point. Each such process waits
    on one run at a time, so at most ``killed`` runs may be left unfinished. A run whose worker
    alone was killed must be reported failed by its code server."""
    if len(unfinished) <= killed:
        return []
    return [
        f"{len(unfinished)} Dagster runs never ended, {killed} processes SIGKILLed: "
        + ", ".join(unfinished[:4])
    ]


def check_warehouse(home: Home, golden: Golden, late_loaded: bool | None) -> list[str]:
    """Rows conserved per load; tables hold exactly the accepted rows; derived partitions as in
    a clean run; one clipped value per (campaign, day, publisher). ``late_loaded``: whether the
    late ingest must be there (True), must not (False) or may be (None: it was killed)."""
    problems = []
    with duckdb.connect(str(home.warehouse), read_only=True) as db:
        loads = db.execute(
            "SELECT kind, sha256, rows_in, accepted, quarantined FROM loads"
        ).fetchall()
        for kind, _, rows_in, accepted, quarantined in loads:
            if rows_in != accepted + quarantined:
                problems.append(f"load of {kind}: {rows_in} in ≠ {accepted} + {quarantined}")
        if len({row[1] for row in loads}) != len(loads):
            problems.append("a file was loaded twice")
        for kind in ("impressions", "conversions"):
            accepted = sum(row[3] for row in loads if row[0] == kind)
            quarantined = sum(row[4] for row in loads if row[0] == kind)
            (rows,) = db.execute(f"SELECT count(*) FROM {kind}").fetchone()
            (held,) = db.execute(
                "SELECT count(*) FROM quarantine WHERE kind = ?", [kind]
            ).fetchone()
            if rows != accepted or held != quarantined:
                problems.append(
                    f"{kind}: {rows} rows and {held} quarantined, loads say {accepted} and "
                    f"{quarantined}"
                )
        (late,) = db.execute(
            "SELECT count(*) FROM conversions c JOIN advertisers a "
            "ON a.advertiser_key = c.advertiser_key WHERE a.advertiser_id = 'other'"
        ).fetchone()
        if late_loaded is not None and (late > 0) != late_loaded:
            problems.append(f"late ingest: {late} rows present, expected loaded={late_loaded}")
        (duplicates,) = db.execute(
            "SELECT count(*) FROM (SELECT campaign, day, position FROM clipped_daily_vectors "
            "GROUP BY ALL HAVING count(*) > 1)"
        ).fetchone()
        if duplicates:
            problems.append(f"{duplicates} clipped values stored twice")
    digests = partition_digests(home.warehouse)
    if digests != golden.partitions:
        differing = sorted(
            {
                k
                for k in digests.keys() | golden.partitions.keys()
                if digests.get(k) != golden.partitions.get(k)
            }
        )
        problems.append(f"derived partitions differ from a clean run: {differing[:4]}")
    return problems
