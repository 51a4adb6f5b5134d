"""Asset checks, one result per day: schemas of the private tables, the bound chain, the budget,
the answers.

A run covers one day or a range of days, so each check is partitioned like its asset and
reports a result for *each day* of the run on that day's partition (``check_events``: how, and
what Dagster 1.13 shows of it). Schema checks read one day's rows at a time
and report which rules were broken — never the offending values nor how many rows broke them,
which are private data.
The other checks read the ledger and report pass/fail and public budget figures — never the
secret bound state they inspect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date

import dagster as dg

from dp_platform.config import AccountConfig, CampaignConfig
from dp_platform.daily import answers_through
from dp_platform.display import RHO_DIGITS, round_to_noise, significant
from dp_platform.ledger import Ledger
from dp_platform.mechanisms.base import Chain, ChoiceT, StateT
from dp_platform.privacy.accounting import Rho
from dp_platform.publication import published_days
from dp_platform.registration import Registration

SCHEMA_CHECK = "schema"
BOUND_CHAIN_CHECK = "bound_chain"
SPENT_CHECK = "spent_within_plan"
ANSWERS_CHECK = "answers_match_releases"


@dataclass(frozen=True)
class CheckSpec:
    """A check of one asset: its name, what it checks, and whether a failure stops downstream."""

    name: str
    description: str
    blocking: bool = False


SCHEMA = CheckSpec(SCHEMA_CHECK, "The day's rows satisfy the table's Pandera model.", True)
BOUND_CHAIN = CheckSpec(
    BOUND_CHAIN_CHECK,
    "Day d's stored bound state follows day d−1's, and d was charged exactly the registered "
    "plan's bound charges.",
)
SPENT = CheckSpec(
    SPENT_CHECK,
    "ρ spent by the campaign through the day is at most its plan; the account's spending and "
    "reservations are at most its cap.",
)
ANSWERS = CheckSpec(
    ANSWERS_CHECK,
    "The day's answers equal the post-processing of the stored releases (what `dp-platform "
    "releases` publishes), and the answer first published for the day.",
)


@dataclass(frozen=True)
class DayResult:
    passed: bool
    description: str
    metadata: dict[str, dg.MetadataValue | float | int | str]


CheckEvent = dg.AssetCheckResult | dg.AssetCheckEvaluation


def check_events(
    context: dg.AssetExecutionContext,
    asset: dg.AssetKey,
    check: CheckSpec,
    results: dict[date, DayResult],
) -> list[CheckEvent]:
    """What a step reports for one check, yielded *after* its ``MaterializeResult``.

    Only an ``AssetCheckResult`` gives the check's step output (without it Dagster logs "did
    not yield" and a blocking check "emitted no result"), and Dagster (1.13) ties it to the
    day's materialisation — what the check's Partitions tab reads — only in a one-partition
    step. So a one-day run reports that result alone; a range run reports each day as an
    ``AssetCheckEvaluation`` on that day's partition (execution history, one row per day) plus
    one result for the whole run, which fails if any day failed.
    """
    if dg.AssetCheckKey(asset, check.name) not in context.selected_asset_check_keys:
        return []
    if context.has_partition_key and len(results) == 1:
        (result,) = results.values()
        return [_result(asset, check, result)]
    return [*_day_evaluations(asset, check, results), _result(asset, check, run_verdict(results))]


def run_verdict(results: dict[date, DayResult]) -> DayResult:
    """One verdict for a run's days: passed if every day passed, naming the days that failed
    (public: the run's days are; which rule broke is in each day's own evaluation)."""
    days = sorted(results)
    failed = [day.isoformat() for day in days if not results[day].passed]
    span = f"{days[0].isoformat()} .. {days[-1].isoformat()} ({len(days)} days)"
    return DayResult(
        passed=not failed,
        description=f"{span}: "
        + ("every day passed" if not failed else "failed on " + ", ".join(failed)),
        metadata={"days_checked": len(days), "days_failed": dg.MetadataValue.json(failed)},
    )


def _result(asset: dg.AssetKey, check: CheckSpec, result: DayResult) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=check.name,
        passed=result.passed,
        description=result.description,
        metadata=result.metadata,
        severity=dg.AssetCheckSeverity.ERROR,
    )


def _day_evaluations(
    asset: dg.AssetKey, check: CheckSpec, results: dict[date, DayResult]
) -> list[dg.AssetCheckEvaluation]:
    """One evaluation per day, on that day's partition."""
    return [
        dg.AssetCheckEvaluation(
            asset_key=asset,
            check_name=check.name,
            passed=result.passed,
            partition=day.isoformat(),
            description=result.description,
            metadata=result.metadata,
            blocking=check.blocking,
            severity=dg.AssetCheckSeverity.ERROR,
        )
        for day, result in sorted(results.items())
    ]


def schema_results(
    warehouse, table: str, campaign: CampaignConfig, days: list[date]
) -> dict[date, DayResult]:
    """Validate each day's rows of ``table`` with its Pandera model (lazy: all errors). A failure
    names the rules broken and nothing else: neither the offending values nor how many private
    rows broke each rule (a true count of private rows is not DP).

    Pandera is imported here, when a check runs: ~0.6 s that the code server, the command line
    and every process that only loads the definitions would otherwise pay at start."""
    import pandera.errors

    from dp_platform.schemas import SCHEMAS

    model = SCHEMAS[table]
    results = {}
    for day in days:  # one day's rows at a time: memory stays a day's size at any scale
        frame = warehouse.day_frame(table, campaign, [day])
        broken: list[str] = []
        try:
            model.validate(frame, lazy=True)
        except pandera.errors.SchemaErrors as errors:
            cases = errors.failure_cases[["column", "check"]].drop_duplicates()
            broken = sorted(f"{column}: {rule}" for column, rule in cases.itertuples(index=False))
        metadata: dict = {"model": model.__name__}
        if broken:
            metadata["rules_broken"] = dg.MetadataValue.json(broken)
        results[day] = DayResult(
            passed=not broken,
            description=f"{model.__name__}: "
            + ("every row valid" if not broken else "rules broken: " + "; ".join(broken)),
            metadata=metadata,
        )
    return results


def bound_chain_results(
    ledger: Ledger,
    registration: Registration,
    days: list[date],
    chain: Chain[ChoiceT, StateT],
    expected_charges: Callable[[int], dict[str, Rho]],
) -> dict[date, DayResult]:
    """Day d's stored state follows day d−1's: it is day d's, its bounds are d−1's plus the
    bound chosen on d, and d was charged exactly the registered plan's bound charges."""
    campaign = registration.config
    results = {}
    for day in days:
        index = campaign.day_index(day)
        choice = ledger.bound_choice(campaign.name, index, chain)
        state = ledger.bound_state(campaign.name, index, chain)
        before = ledger.bound_state(campaign.name, index - 1, chain)
        follows = (
            choice is not None
            and state.day == index
            and tuple(state.bounds) == (*before.bounds, choice.bound)
            and choice.charges == expected_charges(index)
        )
        results[day] = DayResult(
            follows,
            f"day {index}'s state follows day {index - 1}'s" if follows else "the chain is broken",
            {"day": str(index)},
        )
    return results


def spent_results(
    ledger: Ledger, registration: Registration, account: AccountConfig, days: list[date]
) -> dict[date, DayResult]:
    """ρ spent through each day ≤ the campaign's plan; the account ≤ its cap (with its cap)."""
    budget = ledger.campaign_budget(registration.name)
    report = ledger.budget_report()["accounts"][account.name]
    account_ok = report["spent"] <= report["rho_cap"] and report["reserved"] <= report["rho_cap"]
    results = {}
    for day in days:
        index = registration.config.day_index(day)
        through = sum(
            (
                rho
                for d, parts in budget.per_day.items()
                if 1 <= d <= index
                for rho in parts.values()
            ),
            Rho.zero(),
        )
        passed = through <= budget.planned and budget.spent <= budget.planned and account_ok
        results[day] = DayResult(
            passed=bool(passed),
            description=f"spent ρ {float(through):.4g} of the plan's {float(budget.planned):.4g}; "
            f"account {account.name}: {report['spent']:.4g} spent, cap {report['rho_cap']:g}",
            metadata={  # ρ is public, but its 16-digit tail is noise to the eye (ledger: exact)
                "rho_spent_through_day": significant(float(through), RHO_DIGITS),
                "rho_planned": significant(float(budget.planned), RHO_DIGITS),
                "account": account.name,
                "account_rho_cap": significant(float(report["rho_cap"]), RHO_DIGITS),
                "account_rho_reserved": significant(float(report["reserved"]), RHO_DIGITS),
                "account_rho_spent": significant(float(report["spent"]), RHO_DIGITS),
            },
        )
    return results


def first_shown(
    instance: dg.DagsterInstance, key: dg.AssetKey, day: date
) -> Mapping[str, dg.MetadataValue]:
    """The metadata the first materialisation of ``day``'s partition showed (empty if never)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[day.isoformat()]),
        limit=1,
        ascending=True,
    ).records
    materialization = records[0].asset_materialization if records else None
    return materialization.metadata if materialization else {}


def first_shown_answer(instance: dg.DagsterInstance, key: dg.AssetKey, day: date) -> float | None:
    """The ``answer`` the first materialisation of ``day``'s partition showed (None if never)."""
    shown = first_shown(instance, key, day).get("answer")
    return None if shown is None else float(shown.value)


def answers_results(
    ledger: Ledger,
    registration: Registration,
    days: list[date],
    first_shown: dict[date, float | None],
) -> dict[date, DayResult]:
    """Each day's answers equal the post-processing of the stored releases two ways — the
    mechanism's workload on the stored releases, and what `dp-platform releases` publishes —
    and equal the answer first shown for the day (a published answer never changes)."""
    published = {p.day: p for p in published_days(ledger, registration.name)}
    results = {}
    for day in days:
        answers = answers_through(ledger, registration, day)
        today = published[registration.config.day_index(day)]
        problems = []
        for query, per_publisher in today.answers.items():
            computed = answers.answers[int(query) - 1]
            if any(
                abs(a - b) > 1e-9 * (1 + abs(b))
                for a, b in zip(computed, per_publisher.values(), strict=True)
            ):
                problems.append(f"q{query} differs from the stored releases")
        if today.answers and first_shown.get(day) is not None:
            query = max(today.answers, key=int)
            now = round_to_noise(sum(today.answers[query].values()), today.answer_std[query])
            if now != first_shown[day]:
                problems.append(f"q{query} is not the answer first published")
        results[day] = DayResult(
            passed=not problems,
            description="; ".join(problems) or f"{len(today.answers)} answer(s) match",
            metadata={"answers_compared": len(today.answers)},
        )
    return results
