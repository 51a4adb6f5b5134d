"""The ledger: reservations against caps, write-once chains, exact totals, races and crashes.

Every test runs on both backends (the ``ledger_location`` fixture of tests/conftest.py: a SQLite
file, and a fresh database on a throwaway PostgreSQL server)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from fractions import Fraction

import numpy as np
import pytest

from dp_platform.config import AccountConfig
from dp_platform.config_loader import parse_campaign
from dp_platform.ledger import (
    BudgetExceeded,
    Ledger,
    LedgerError,
    MissingPreviousDay,
    PlanMismatch,
)
from dp_platform.mechanisms.adsbpc import MECHANISM, choose_bound, declare, make_plan, measure
from dp_platform.plans import campaign_plan
from dp_platform.privacy.noise import SeededNoise
from dp_platform.registration import registered_campaign

ACCOUNT = AccountConfig(name="users", rho_cap=2.0)
CHAIN = MECHANISM.chain
HISTOGRAM = np.bincount([1] * 50 + [2] * 20 + [3] * 5 + [9])
CLIPPED = np.array([10.0, 20.0, 5.0])


def campaign(name: str = "spring", rho: float = 1.0, days: int = 10):
    return parse_campaign(
        {
            "name": name,
            "advertiser": "acme",
            "account": "users",
            "start": "2026-03-01",
            "days": days,
            "publishers": ["a", "b", "c"],
            "privacy": {"rho": rho},
            "bounds": {"quantile_days": 3},
        }
    )


def register(ledger: Ledger, config) -> bool:
    """Register ``config`` (or check it against its registration); True if newly registered."""
    new = ledger.campaign_record(config.name) is None
    registered_campaign(
        ledger,
        config,
        campaign_plan(config),
        ACCOUNT,
        advertiser_publishers=lambda: [],
        warehouse_identity=lambda: "one warehouse",
    )
    return new


def bound_charges(plan, day):
    return {k: v for k, v in plan.day_charge(day).items() if k != "gaussian"}


def run_day(ledger: Ledger, plan, day: int, noise, calls: list | None = None):
    def choose(state):
        if calls is not None:
            calls.append(("bound", day))
        return choose_bound(plan, state, HISTOGRAM, noise=noise)

    def draw(choice):
        if calls is not None:
            calls.append(("release", day))
        return measure(plan, choice, CLIPPED, allotment=declare(plan, choice), noise=noise)

    ledger.bound_for_day(plan.campaign, day, bound_charges(plan, day), choose, CHAIN)
    gaussian = {"gaussian": plan.day_charge(day)["gaussian"]}
    return ledger.release_for_day(plan.campaign, day, gaussian, draw, ["a", "b", "c"], CHAIN)


@pytest.fixture
def ledger(ledger_location: str):
    with Ledger(ledger_location) as opened:
        yield opened


def test_register_reserves_the_plan_and_refuses_over_cap(ledger: Ledger) -> None:
    first = campaign("spring", rho=1.5)
    assert register(ledger, first) is True
    assert register(ledger, first) is False  # idempotent
    second = campaign("summer", rho=0.6)
    with pytest.raises(BudgetExceeded, match=r"needs ρ = 0.6 but account users has 0.5 left"):
        register(ledger, second)
    assert ledger.campaigns() == ["spring"]
    fits = campaign("summer", rho=0.5)
    assert register(ledger, fits) is True
    assert ledger.budget_report()["accounts"]["users"]["reserved"] == pytest.approx(2.0)


def test_a_changed_plan_is_refused(ledger: Ledger) -> None:
    register(ledger, campaign())
    edited = campaign(rho=0.5)
    with pytest.raises(PlanMismatch):
        register(ledger, edited)


def test_each_day_is_drawn_once_and_rerun_returns_the_stored_release(ledger: Ledger) -> None:
    plan = make_plan(campaign())
    register(ledger, campaign())
    calls: list = []
    first, drawn = run_day(ledger, plan, 1, SeededNoise(1), calls)
    again, drawn_again = run_day(ledger, plan, 1, SeededNoise(2), calls)
    assert drawn and not drawn_again
    assert again == first
    assert calls == [("bound", 1), ("release", 1)]  # the re-run drew nothing
    assert ledger.campaign_budget("spring").spent == sum(
        plan.day_charge(1).values(), start=type(plan.budget.rho)(Fraction(0))
    )


def test_day_without_previous_day_fails_and_releases_nothing(ledger: Ledger) -> None:
    plan = make_plan(campaign())
    register(ledger, campaign())
    with pytest.raises(MissingPreviousDay, match="day 1 has no contribution bound"):
        run_day(ledger, plan, 2, SeededNoise(1))
    assert ledger.releases("spring") == []
    assert ledger.campaign_budget("spring").per_day == {}


def test_full_campaign_charges_exactly_the_plan(ledger: Ledger) -> None:
    plan = make_plan(campaign())
    register(ledger, campaign())
    noise = SeededNoise(4)
    for day in range(1, 11):
        run_day(ledger, plan, day, noise)
    budget = ledger.campaign_budget("spring")
    assert budget.spent == plan.budget.total
    assert budget.remaining.value == 0
    assert [r.day for r in ledger.releases("spring")] == list(range(1, 11))
    with pytest.raises(LedgerError, match="day 11 is outside"):
        ledger.bound_for_day("spring", 11, {}, lambda state: pytest.fail("must not draw"), CHAIN)


def _race(path: str, seed: int, barrier) -> None:
    plan = make_plan(campaign())
    with Ledger(path) as ledger:
        register(ledger, campaign())
        barrier.wait()
        noise = SeededNoise(seed)
        for day in range(1, 11):
            run_day(ledger, plan, day, noise)


@pytest.mark.system
def test_two_processes_racing_release_once(ledger_location: str) -> None:
    path = ledger_location
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [context.Process(target=_race, args=(path, s, barrier)) for s in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    with Ledger(path) as ledger:
        budget = ledger.campaign_budget("spring")
        assert budget.spent == make_plan(campaign()).budget.total
        assert len(ledger.releases("spring")) == 10
        assert all(len(parts) >= 1 for parts in budget.per_day.values())


def _die_mid_release(path: str) -> None:
    plan = make_plan(campaign())
    with Ledger(path) as ledger:
        register(ledger, campaign())
        noise = SeededNoise(1)
        for day in (1, 2):
            run_day(ledger, plan, day, noise)

        def choose_then_die(state):
            choose_bound(plan, state, HISTOGRAM, noise=noise)  # noise drawn…
            os.kill(os.getpid(), signal.SIGKILL)  # …and the process dies before commit

        ledger.bound_for_day("spring", 3, bound_charges(plan, 3), choose_then_die, CHAIN)


@pytest.mark.system
def test_sigkill_mid_transaction_leaves_nothing_and_restart_finishes(ledger_location: str) -> None:
    path = ledger_location
    worker = multiprocessing.get_context("spawn").Process(target=_die_mid_release, args=(path,))
    worker.start()
    worker.join(60)
    assert worker.exitcode == -signal.SIGKILL
    plan = make_plan(campaign())
    with Ledger(path) as ledger:
        assert sorted(ledger.campaign_budget("spring").per_day) == [1, 2]
        assert ledger.bound_choice("spring", 3, CHAIN) is None
        noise = SeededNoise(9)
        for day in range(3, 11):
            run_day(ledger, plan, day, noise)
        assert ledger.campaign_budget("spring").spent == plan.budget.total


def _terminable() -> None:
    """Pool initializer: SIGTERM back to its default in the worker. A spawned child inherits
    the signals its parent ignores, and the suite's process can be left ignoring SIGTERM by a
    library it ran earlier (measured: a pytest worker with SIGINT and SIGTERM ignored); the
    pool's ``terminate`` then waits forever on a worker it cannot stop."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _open_fresh(path: str, barrier) -> str:
    barrier.wait()
    try:
        with Ledger(path):
            return "ok"
    except Exception as error:  # the test reports what went wrong, in the worker's words
        return repr(error)


@pytest.mark.system
def test_many_processes_opening_a_fresh_ledger_at_once_all_succeed(new_ledger_location) -> None:
    """Two runs started together both open a new home's ledger: the WAL switch must wait, not fail.

    Before the fix about one start in twenty answered ``database is locked`` (SQLite refuses the
    journal-mode switch without consulting the busy timeout); 40 rounds of 6 openers caught it.
    On PostgreSQL the openers race to create the schema (an advisory lock makes them take turns).
    """
    # spawn, not fork: forking a test process that holds other threads (a Spark gateway,
    # Dagster's) can leave a child deadlocked on a lock copied mid-use.
    context = multiprocessing.get_context("spawn")
    failures: list[str] = []
    with context.Manager() as manager, context.Pool(6, _terminable) as pool:
        first = new_ledger_location()
        # a fresh PostgreSQL database costs ~1 s to create: fewer rounds there
        rounds = 8 if first.startswith("postgresql://") else 40
        for round_ in range(rounds):
            path = first if round_ == 0 else new_ledger_location()
            barrier = manager.Barrier(6)
            failures += [r for r in pool.starmap(_open_fresh, [(path, barrier)] * 6) if r != "ok"]
    assert failures == []


def _register_then_report(path: str, name: str, barrier) -> str:
    with Ledger(path) as ledger:
        barrier.wait()
        try:
            register(ledger, campaign(name, rho=1.5))
            return "registered"
        except BudgetExceeded:
            return "refused"


@pytest.mark.system
def test_two_processes_racing_for_the_last_of_an_accounts_cap_one_wins(ledger_location) -> None:
    """Cap 2, two campaigns of ρ 1.5 registered at the same instant: each fits alone, not both.
    Without the account lock both would read "0 reserved" and both reserve (overspend)."""
    with Ledger(ledger_location) as ledger:
        ledger.ensure_account(ACCOUNT)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(2, _terminable) as pool:
        for round_ in range(5):
            barrier = manager.Barrier(2)
            names = [f"r{round_}a", f"r{round_}b"]
            outcomes = pool.starmap(
                _register_then_report, [(ledger_location, n, barrier) for n in names]
            )
            assert sorted(outcomes) == ["refused", "registered"]
            with Ledger(ledger_location) as ledger:
                winner = names[outcomes.index("registered")]
                ledger.end_campaign(winner, cancel=True)  # its reservation returns for the next
                report = ledger.budget_report()["accounts"]["users"]
                assert report["reserved"] == 0.0
