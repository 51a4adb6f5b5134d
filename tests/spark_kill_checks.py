"""What a SIGKILL at a Spark write point must leave (tests/test_spark_kill_points.py): the
warehouse's state read back as the old snapshot or the new one, never a mix, and nothing drawn
or charged twice. Every read opens the home's tables in the test's own session, as the next
process would (its views of the loaded tables show the committed loads' rows: visibility.py),
and reads nothing else.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from dp_platform.faults import FAULT_RECORD_VARIABLE, FAULT_VARIABLE
from dp_platform.home import Home
from dp_platform.warehouse.spark.visibility import KEY_TABLES, LOADED_TABLES
from tests.process_runs import CLI

DERIVED = ("attributed_conversions", "user_day_contributions")


def launch(home: Home, argv: list[str], fault: str | None, record: Path) -> int:
    """``dp-platform ARGV --home HOME`` as a real process (its own session: a kill takes its
    JVM along), with ``fault`` named; waits until every process of its group is gone (a run's
    code server and worker); returns its exit code."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop(FAULT_VARIABLE, None)
    if fault is not None:
        env[FAULT_VARIABLE], env[FAULT_RECORD_VARIABLE] = fault, str(record)
    process = subprocess.Popen(
        [*CLI, *argv, "--home", str(home.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    _, err = process.communicate(timeout=900)
    _wait_group_gone(process.pid)
    if process.returncode not in (0, 1, -signal.SIGKILL):
        raise AssertionError(f"exit {process.returncode}: {err[-2000:]}")
    if fault is None and process.returncode != 0:
        raise AssertionError(err[-2000:])
    return process.returncode


def _group_members(group: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def _wait_group_gone(group: int) -> None:
    """No process of the group runs any more (a left-over JVM could still commit); a member
    alive after 120 s is a hang, killed and reported."""
    deadline = time.monotonic() + 120
    while _group_members(group):
        if time.monotonic() > deadline:
            os.killpg(group, signal.SIGKILL)
            raise AssertionError(f"process group {group} outlived its leader")
        time.sleep(0.2)


def fired(record: Path, fault: str) -> bool:
    """The point recorded that it killed its process (the run's worker is not our child)."""
    return record.exists() and any(
        line.split()[0] == fault for line in record.read_text().splitlines()
    )


def open_tables(spark, home: Home):
    from dp_platform.warehouse.spark.store import SparkWarehouse

    return SparkWarehouse(spark, str(home.root / "spark" / "tables"))


def _digest(columns: str) -> str:
    return f"count(*), sum(CAST(xxhash64({columns}) AS DECIMAL(38, 0)))"


def _columns_but_load(warehouse, table: str) -> str:
    return ", ".join(c for c in warehouse.spark.table(table).columns if c != "load_id")


def event_fingerprint(warehouse) -> dict[str, tuple]:
    """Each loaded table's rows as read (count and an order-free hash) and the committed
    loads', leaving out load ids: an ingest run again after one that never committed takes new
    ids (records.reserve_loads), and the same rows are loaded."""
    hashed = {table: _columns_but_load(warehouse, table) for table in LOADED_TABLES}
    hashed["loads"] = "kind, sha256, rows_in, accepted, quarantined"
    query = " UNION ALL ".join(
        f"SELECT '{table}', {_digest(columns)} FROM {table}" for table, columns in hashed.items()
    )
    return {name: (rows, total) for name, rows, total in warehouse.sql.query(query)}


def key_rows(warehouse) -> dict[str, set[tuple]]:
    """Each key table's rows but their load ids (read whole: a key once written is its id's
    key, its ingest committed or not)."""
    return {
        table: set(
            warehouse.sql.query(f"SELECT {_columns_but_load(warehouse, table)} FROM {table}")
        )
        for table in KEY_TABLES
    }


def assert_keys_between(before: dict, now: dict, after: dict) -> None:
    """Every key before is kept, and every key since is one the whole ingest gives."""
    for table in KEY_TABLES:
        assert before[table] <= now[table] <= after[table], table


# Per derived asset: the columns that do not depend on the noise (private last touch's winner
# does; which conversions are attributed, to which user and rank, and their counts do not).
STABLE = {
    "attributed_conversions": "conversion_key, user_key, user_rank, weight, day",
    "user_day_contributions": "user_key, conversions, day",
}


@dataclass
class State:
    """The warehouse and ledger as a process left them (what later states must keep)."""

    recorded: dict[tuple[str, str, object], tuple] = field(default_factory=dict)
    stable: dict[tuple[str, str, object], tuple] = field(default_factory=dict)
    choices: set[tuple] = field(default_factory=set)
    spend_days: dict[tuple[str, object], tuple] = field(default_factory=dict)
    releases: set[tuple] = field(default_factory=set)
    bounds: set[tuple] = field(default_factory=set)


def read_state(warehouse, home: Home) -> State:
    """Read a home after a kill, checking what must hold in any single snapshot:

    - a recorded (asset, campaign, day) reads exactly the rows its recorded Delta version wrote,
      as many as recorded (a later write without a new record would be a mix);
    - an attributed conversion's publisher is its committed private-touch draw, and no
      conversion has two draws;
    - an AdsBPC+ day counts once (one plus_spend_days row), each user charged once that day by
      the run it records, their spend the previous committed spend plus the day's cost, and
      the day's clip, once recorded, is that run's vector.
    """
    sql = warehouse.sql.query
    state = State()
    for asset, campaign, day, version, rows in sql(
        "SELECT asset, campaign, day, version, rows FROM partitions"
    ):
        where = f"WHERE campaign = '{campaign}' AND day = DATE'{day}'"
        now = sql(f"SELECT {_digest('*')} FROM {asset} {where}")[0]
        then = sql(f"SELECT {_digest('*')} FROM {asset} VERSION AS OF {version} {where}")[0]
        assert now == then, f"{asset} {day}: rows differ from the recorded version's (a mix)"
        assert now[0] == rows, f"{asset} {day}: {now[0]} rows, {rows} recorded"
        assert (asset, campaign, day) not in state.recorded, f"{asset} {day} recorded twice"
        state.recorded[asset, campaign, day] = (version, now)
        if asset in STABLE:  # a clipped day's values are kept with its spends (_check_spends)
            state.stable[asset, campaign, day] = sql(
                f"SELECT {_digest(STABLE[asset])} FROM {asset} {where}"
            )[0]
    for campaign, key, draws in sql(
        "SELECT campaign, conversion_key, count(*) FROM private_touch_choices "
        "GROUP BY campaign, conversion_key HAVING count(*) > 1"
    ):
        raise AssertionError(f"{campaign}: conversion {key} drawn {draws} times")
    state.choices = set(
        sql(
            "SELECT campaign, conversion_key, publisher_key, touch, batch "
            "FROM private_touch_choices"
        )
    )
    mismatched = sql(
        "SELECT count(*) FROM attributed_conversions AS a JOIN partitions AS p "
        "ON p.asset = 'attributed_conversions' AND p.campaign = a.campaign AND p.day = a.day "
        "LEFT JOIN private_touch_choices AS c "
        "ON c.campaign = a.campaign AND c.conversion_key = a.conversion_key "
        "WHERE c.publisher_key IS NULL OR c.publisher_key <> a.publisher_key"
    )[0][0]
    assert mismatched == 0, f"{mismatched} attributed rows not of their committed draw"
    _check_spends(warehouse, state)
    state.releases, state.bounds = ledger_rows(home)
    return state


def _check_spends(warehouse, state: State) -> None:
    """Each committed AdsBPC+ day: the rows of the run it records (those a later day reads),
    one spend a user; the committed run's vector, and the day's clip, once recorded, that
    vector."""
    sql = warehouse.sql.query
    days = sql("SELECT campaign, day, count(*) FROM plus_spend_days GROUP BY campaign, day")
    for campaign, day, count in days:
        assert count == 1, f"{campaign} {day}: its spend committed {count} times"
        where = f"WHERE campaign = '{campaign}' AND day = DATE'{day}'"
        run = f"{where} AND run <=> (SELECT min(run) FROM plus_spend_days {where})"
        users, distinct = sql(
            f"SELECT count(*), count(DISTINCT user_key) FROM plus_user_spend {run}"
        )[0]
        assert users == distinct, f"{campaign} {day}: a user charged twice"
        vector = sql(f"SELECT {_digest('position, value')} FROM plus_day_vectors {run}")[0]
        state.spend_days[campaign, day] = (
            sql(f"SELECT {_digest('user_key, cost, spend')} FROM plus_user_spend {run}")[0],
            vector,
        )
        if ("clipped_daily_vectors", campaign, day) in state.recorded:
            clip = sql(f"SELECT {_digest('position, value')} FROM clipped_daily_vectors {where}")
            assert clip[0] == vector, f"{campaign} {day}: the clip is not the committed vector"
    wrong = sql(
        "WITH committed AS (SELECT s.* FROM plus_user_spend AS s JOIN plus_spend_days AS d "
        "ON d.campaign = s.campaign AND d.day = s.day AND d.run <=> s.run), "
        "ordered AS (SELECT campaign, user_key, day, cost, spend, coalesce(lag(spend) OVER "
        "(PARTITION BY campaign, user_key ORDER BY day), 0.0D) AS before FROM committed) "
        "SELECT count(*) FROM ordered WHERE abs(spend - before - cost) > 1e-9 * (1.0 + spend)"
    )[0][0]
    assert wrong == 0, f"{wrong} users' spends are not their previous spend plus the day's cost"


def ledger_rows(home: Home) -> tuple[set[tuple], set[tuple]]:
    """The ledger's stored releases and bound choices (write-once rows), read only."""
    path = home.root / "ledger.sqlite"
    if not path.exists():
        return set(), set()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        try:
            releases = set(db.execute("SELECT campaign, day, release_json FROM releases"))
            bounds = set(db.execute("SELECT campaign, day, choice_json FROM bound_choices"))
        except sqlite3.OperationalError:  # not created yet
            return set(), set()
    return releases, bounds


def assert_kept(before: State, after: State) -> None:
    """Nothing committed before is redrawn or recharged after: every draw, committed AdsBPC+
    day and ledger row of ``before`` is in ``after`` unchanged; a recorded partition is either
    the same version or rewritten whole (its noise-free columns the same)."""
    assert before.choices <= after.choices, "a committed private-touch draw changed or vanished"
    for day, kept in before.spend_days.items():
        assert after.spend_days.get(day) == kept, f"{day}: committed spends or clip changed"
    assert before.releases <= after.releases, "a stored release changed"
    assert before.bounds <= after.bounds, "a stored bound changed"
    for key, stable in before.stable.items():
        if key in after.stable:
            assert after.stable[key] == stable, f"{key}: rewritten with other rows"
