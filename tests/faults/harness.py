"""Run schedules and check the invariants after each (docs/faults.md).

One schedule: copy the prepared home, start its processes (forkserver children with Dagster
pre-imported, or real CLI processes), kill them as drawn, snapshot the ledger after every
process exits, then retry ``dp-platform run`` without faults until both campaigns are complete,
and check :mod:`tests.faults.invariants`. A violation names the schedule's seed and the command
that replays it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from pathlib import Path

from dp_platform.errors import LedgerError
from dp_platform.faults import FAULT_RECORD_VARIABLE, FAULT_VARIABLE
from tests.faults import invariants
from tests.faults.backends import backend_name, schedule_ledger
from tests.faults.schedule import Schedule, draw_schedule
from tests.faults.warm import FAILED, WARM_HOME, WARM_WORLD
from tests.faults.workers import (
    EDIT_SKIPPED,
    OTHERS_ENDED,
    PRELOAD,
    REFUSED,
    Job,
    child_main,
    cli_command,
    fault_record,
)
from tests.faults.world import World, prepare_world

# A schedule is hung when none of its live process groups (a harness process, and the code
# server and run worker it started) has used any CPU for HUNG_AFTER seconds (a deadlock: every
# process asleep, waiting on something that never comes); then they are killed and reported.
# Wall time alone is no sign of a hang: on a loaded machine, under `nice`, four runs of seed 5
# once took over 600 s one step at a time (docs/faults.md#measured). A CLI polls its run's
# record every 0.2 s, so a group waiting on a run that never moves still uses a little CPU:
# PROCESS_TIMEOUT is the backstop for that and for a process that spins without end.
HUNG_AFTER = 180.0
PROCESS_TIMEOUT = 1800.0
# A process that exited on its own must leave nothing of its group running (its code server
# and run worker end with it); what still runs this long after is reported and killed.
LEFTOVER_GRACE = 30.0
WAREHOUSE_LOCK = ".warehouse.lock"  # in the home: Home.warehouse_lock's file
RETRIES = 3  # clean `dp-platform run`s allowed to finish the campaigns after the faults
POLL = 0.02


def forkserver() -> ForkServerContext:
    """Children forked from a server that has already imported Dagster and the platform, and
    run the campaigns once (tests/faults/warm.py) if ``WARM_WORLD`` and ``WARM_HOME`` name the
    world and the golden home when it starts."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, "tests.faults.warm"])
    return context


def scratch_dir() -> Path:
    """A fresh directory for homes, in memory (``/dev/shm``) where the machine has one.

    A SIGKILL loses nothing a process had written, fsynced or not: the data is in the kernel's
    page cache, which the next process reads. So what the harness tests does not depend on
    fsync, while Dagster's SQLite storage fsyncs every event it stores and dominated a run's
    wall time on disk (21.6 s on disk against 7.6 s in memory for one clean run here). A power
    cut, which fsync is for, is not what this harness simulates."""
    shm = Path("/dev/shm")
    memory = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="dp_faults_", dir=memory))


def replay_command(seed: int, ledger_url: str | None, backend_option: str | None = None) -> str:
    """The command that re-runs schedule ``seed`` alone; ``backend_option`` (e.g.
    ``--postgres``) instead of the URL of a server that is gone once the run ends."""
    option = backend_option or (f"--ledger-url {ledger_url}" if ledger_url else "")
    return f"python -m tests.faults --schedules 1 --seed {seed}{' ' + option if option else ''}"


@dataclass
class Outcome:
    job: Job
    exit_code: int | None = None
    killed_by: str | None = None  # fail point name, "timer", or "hung"
    log: Path | None = None
    group_killed: bool = False  # SIGKILL of its whole process group (timer, or hung)
    held_warehouse_lock: bool = False  # a member of the group held it when the group was killed
    faults_fired: list[str] = field(default_factory=list)  # this process's or its run worker's
    leftovers: list[str] = field(default_factory=list)  # still running after it exited

    def kills(self) -> list[str]:
        """Kills injected into this process's tree: each fail point that fired (in it or in
        the run worker it launched), and ``timer`` for the SIGKILL of its group from outside."""
        fired = [point.partition("@")[0] for point in self.faults_fired]
        return fired + (["timer"] if self.killed_by == "timer" else [])


@dataclass
class ScheduleResult:
    seed: int
    schedule: Schedule
    outcomes: list[Outcome]
    retries: int
    violations: list[str]
    seconds: float
    home: Path
    unfinished_runs: int = 0  # Dagster runs never ended (their process died by SIGKILL)

    def kills(self) -> Counter:
        """Kills injected, by fail point (``timer``: SIGKILL of a process group from outside)."""
        return Counter(kill for o in self.outcomes for kill in o.kills())


@dataclass(frozen=True)
class Proc:
    """One line of the process table: what reaping and hang detection need."""

    pid: int
    state: str
    ppid: int
    pgid: int
    cpu: float
    start: int  # clock ticks after boot: a pid's number is reused, never with the same start


def process_table() -> list[Proc]:
    """Every process on the machine, from ``/proc`` (those gone while read are left out)."""
    table = []
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        cpu = (int(fields[11]) + int(fields[12])) / tick
        pid, ppid, pgid, start = int(entry.name), int(fields[1]), int(fields[2]), int(fields[19])
        table.append(Proc(pid, fields[0], ppid, pgid, cpu, start))
    return table


def start_tick(pid: int) -> int | None:
    """When process ``pid`` started (None: no such process now)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def group_cpu(pgids: list[int], table: list[Proc]) -> dict[int, float | None]:
    """CPU seconds used so far by each group's live members (None: no member seen)."""
    used: dict[int, float | None] = dict.fromkeys(pgids)
    for proc in table:
        if proc.pgid in used and proc.state != "Z":
            used[proc.pgid] = (used[proc.pgid] or 0.0) + proc.cpu
    return used


_ORPHANS_GO_TO = {1}  # who an orphan's parent becomes: init, or this process once a subreaper


def become_subreaper() -> bool:
    """Orphans of the harness's process groups (a killed CLI's code server, its run worker)
    become this process's children, so it reaps them: a machine whose init does not reap
    keeps them as zombies otherwise (Linux ``PR_SET_CHILD_SUBREAPER``; False if refused)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        made = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False
    if made:
        _ORPHANS_GO_TO.clear()
        _ORPHANS_GO_TO.add(os.getpid())
    return made


def group_members(pgid: int, table: list[Proc]) -> list[Proc]:
    """The processes of group ``pgid`` once its leader is reaped: those descending from an
    orphan of the group (its parent became init, or this process as subreaper). Once the
    group is empty its number may be reused by an unrelated process group (pids wrap within
    minutes on a busy machine); such a stranger descends from its own parent and is left out."""
    in_group = {proc.pid: proc for proc in table if proc.pgid == pgid}
    members: dict[int, Proc] = {}
    grown = True
    while grown:
        grown = False
        for pid, proc in in_group.items():
            if pid not in members and (proc.ppid in members or proc.ppid in _ORPHANS_GO_TO):
                members[pid] = proc
                grown = True
    return list(members.values())


def _command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid} (gone)"
    return f"pid {pid}: " + raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


def end_group(pgid: int, *, killed: bool, grace: float = LEFTOVER_GRACE) -> list[str]:
    """Wait until no process of group ``pgid`` runs, reaping the ones orphaned to this process.
    ``killed``: the group was SIGKILLed (its members are dying: killed again, not reported).
    Otherwise the group's leader exited on its own, and members still running after ``grace``
    seconds are returned (command lines) and killed."""
    began = time.monotonic()
    leftovers: list[str] = []
    while True:
        live = []
        for proc in group_members(pgid, process_table()):
            if proc.state == "Z":
                if proc.ppid == os.getpid():
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(proc.pid, os.WNOHANG)
                continue  # a zombie runs nothing (another parent's: that parent reaps it)
            live.append(proc.pid)
        if not live:
            return leftovers
        if not killed and time.monotonic() - began >= grace:
            leftovers = [_command_line(pid) for pid in live]
            killed = True
        if killed:  # each member by its pid: the group's number may belong to a stranger
            for pid in live:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def reap_orphans(keep: set[int]) -> None:
    """Reap this process's zombie children but ``keep`` (children whose exit status a handle
    still has to read): orphans of groups reparented here, e.g. a code server's resource
    tracker, whose group was not waited for by :func:`end_group`."""
    me = os.getpid()
    for proc in process_table():
        if proc.ppid == me and proc.state == "Z" and proc.pid not in keep:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, os.WNOHANG)


def holds_lock(lock: Path, pgid: int) -> bool:
    """Whether a live process of group ``pgid`` holds the ``flock`` on ``lock`` now (the
    kernel's table, ``/proc/locks``; a process waiting for it does not count)."""
    try:
        found = lock.stat()
        locks = Path("/proc/locks").read_text()
    except OSError:
        return False
    file_id = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    members = {p.pid for p in process_table() if p.pgid == pgid and p.state != "Z"}
    for line in locks.splitlines():
        parts = line.split()  # "7: FLOCK ADVISORY WRITE <pid> <maj:min:inode> 0 EOF"
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == file_id:
            return int(parts[4]) in members  # one holder of an exclusive lock; waiters: "->"
    return False


class Progress:
    """Whether a schedule's processes still move: any of them used CPU, started or ended in
    the last :data:`HUNG_AFTER` seconds."""

    def __init__(self, now: float, hung_after: float = HUNG_AFTER) -> None:
        self.hung_after = hung_after
        self.last_move = now
        self.cpu: dict[int, float] = {}

    def moved(self, now: float) -> None:
        """A process started or ended."""
        self.last_move = now

    def hung(self, now: float, cpu: dict[int, float | None]) -> bool:
        """``cpu``: the live process groups' CPU seconds now (None: unknown, counted as
        moving; a group's sum changes, up or down as members start and end: moving)."""
        for pid, used in cpu.items():
            if used is None or used != self.cpu.get(pid, -1.0):
                self.last_move = now
            if used is not None:
                self.cpu[pid] = used
        return now - self.last_move >= self.hung_after


class _Running:
    """One launched process, leader of its own process group: a forkserver child (it calls
    ``setsid``) or a CLI subprocess (``start_new_session``), with its deadline."""

    def __init__(
        self, outcome: Outcome, started: float, handle: subprocess.Popen | BaseProcess
    ) -> None:
        self.outcome, self.started, self.handle = outcome, started, handle
        self.timer_kill = False
        self.start_tick = start_tick(self.pid)  # None: already gone (and reaped)

    @property
    def pid(self) -> int:
        assert self.handle.pid is not None  # started
        return self.handle.pid

    def exit_code(self) -> int | None:
        if isinstance(self.handle, subprocess.Popen):
            return self.handle.poll()
        return self.handle.exitcode

    def kill(self) -> None:
        """SIGKILL the whole group: the process, and its code server and run worker (noting
        whether one of them held the warehouse lock at that moment). Only while the process
        is still the one launched: a forkserver child that just exited may already be reaped
        by its forkserver, and its number given to a stranger."""
        if self.start_tick is None or start_tick(self.pid) != self.start_tick:
            return  # ended on its own: reap() finds its group's members by descent
        self.outcome.group_killed = True
        if self.outcome.log is not None:
            lock = self.outcome.log.parent / WAREHOUSE_LOCK
            self.outcome.held_warehouse_lock = holds_lock(lock, self.pid)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:  # a forkserver child not yet its group's leader: alone
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def reap(self) -> None:
        """Reap the process, then wait until nothing of its group runs any more."""
        if isinstance(self.handle, subprocess.Popen):
            self.handle.wait()
        else:
            self.handle.join()
        self.outcome.leftovers = end_group(self.pid, killed=self.outcome.group_killed)


def _launch(context: ForkServerContext, job: Job, home: Path, world: World, log: Path) -> object:
    extra = (str(world.extra.impressions), str(world.extra.conversions))
    if job.kind == "run_cli":
        env = {k: v for k, v in os.environ.items() if k != FAULT_VARIABLE}
        env["PYTHONWARNINGS"] = "ignore"
        env[FAULT_RECORD_VARIABLE] = fault_record(log)
        if job.fault:
            env[FAULT_VARIABLE] = job.fault
        with log.open("ab") as out:
            return subprocess.Popen(
                cli_command(job, home, (world.extra.impressions, world.extra.conversions)),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
    process = context.Process(target=child_main, args=(job, str(home), extra, str(log)))
    process.start()
    return process


def run_processes(
    context: ForkServerContext,
    jobs: tuple[Job, ...],
    home: Path,
    world: World,
    on_exit: Callable[[], None],
    log_name: str = "process",
) -> list[Outcome]:
    """Start ``jobs`` at their delays, kill as drawn; ``on_exit()`` after each process ends
    (and nothing of its process group runs any more)."""
    outcomes = [Outcome(job, log=home / f"{log_name}_{n}.log") for n, job in enumerate(jobs)]
    waiting = sorted(range(len(jobs)), key=lambda n: jobs[n].start_delay)
    running: list[_Running] = []
    began = time.monotonic()
    progress = Progress(began)
    next_cpu_look = 0.0
    others_ended = False
    while waiting or running:
        now = time.monotonic()
        if running and now >= next_cpu_look:
            next_cpu_look = now + 1.0
            hung = progress.hung(now, group_cpu([p.pid for p in running], process_table()))
        else:
            hung = False
        if hung:
            for process in running:
                process.outcome.killed_by = "hung"
                process.kill()
        while waiting and now - began >= jobs[waiting[0]].start_delay:
            outcome = outcomes[waiting.pop(0)]
            handle = _launch(context, outcome.job, home, world, outcome.log)
            running.append(_Running(outcome, now, handle))
            progress.moved(now)
        for process in list(running):
            code = process.exit_code()
            age = now - process.started
            if code is None:
                job = process.outcome.job
                due = job.kill_after is not None and age >= job.kill_after
                if due and job.kill_holding_lock and process.outcome.log is not None:
                    due = holds_lock(process.outcome.log.parent / WAREHOUSE_LOCK, process.pid)
                if due:
                    process.timer_kill = True
                    process.kill()
                elif age >= PROCESS_TIMEOUT:
                    process.outcome.killed_by = "hung"
                    process.kill()
                continue
            process.reap()
            progress.moved(time.monotonic())
            running.remove(process)
            outcome = process.outcome
            outcome.exit_code = code
            record = Path(fault_record(outcome.log)) if outcome.log else None
            if record is not None and record.exists():
                outcome.faults_fired = [line.split()[0] for line in record.read_text().splitlines()]
            if outcome.killed_by is None and code == -signal.SIGKILL and process.timer_kill:
                outcome.killed_by = "timer"
            elif outcome.killed_by is None and outcome.faults_fired:
                outcome.killed_by = outcome.faults_fired[0]
            reap_orphans({p.pid for p in running})
            on_exit()
            if not others_ended and _only_edits_left(waiting, running, jobs):
                others_ended = True
                (home / OTHERS_ENDED).touch()
        time.sleep(POLL)
    return outcomes


def _only_edits_left(waiting: list[int], running: list[_Running], jobs: tuple[Job, ...]) -> bool:
    """Every process but the edits has ended (started and exited): nothing else can register."""
    return all(jobs[n].kind == "edit" for n in waiting) and all(
        process.outcome.job.kind == "edit" for process in running
    )


def _edit_problems(outcomes: list[Outcome]) -> list[str]:
    """An edited registered campaign is refused: exit 2 naming the changed field."""
    problems = []
    for outcome in outcomes:
        if outcome.job.kind != "edit" or outcome.killed_by is not None:
            continue
        if outcome.exit_code == EDIT_SKIPPED:
            continue  # every other process died before registering: nothing to edit
        text = outcome.log.read_text(errors="replace") if outcome.log else ""
        if outcome.exit_code != REFUSED or "privacy.rho" not in text:
            problems.append(f"edited catalogue not refused (exit {outcome.exit_code})")
    return problems


def _late_loaded(outcomes: list[Outcome]) -> bool | None:
    ingests = [o for o in outcomes if o.job.kind == "ingest"]
    if any(o.exit_code == 0 for o in ingests):
        return True
    if any(o.killed_by is not None for o in ingests):
        return None  # killed: before or after its commit, both are fine
    return False


def run_schedule(
    context: ForkServerContext,
    world: World,
    golden: invariants.Golden,
    seed: int,
    workdir: Path,
    ledger_url: str | None,
) -> ScheduleResult:
    began = time.monotonic()
    schedule = draw_schedule(seed)
    block = schedule_ledger(ledger_url, f"faults_{seed}")
    home = world.copy_to(workdir / f"schedule_{seed}", block)
    observed: list[invariants.Snapshot] = []

    def observe() -> None:
        try:
            observed.append(invariants.snapshot(home, block))
        except LedgerError as error:
            if any(taken.records for taken in observed):  # it was readable before
                observed_errors.append(f"ledger unreadable after a process exit: {error}")

    observed_errors: list[str] = []
    outcomes = run_processes(context, schedule.jobs, home.root, world, observe)
    violations = [*observed_errors, *_edit_problems(outcomes)]
    violations += [f"process hung: {o.job.describe()}" for o in outcomes if o.killed_by == "hung"]
    retries = 0
    retried: list[Outcome] = []
    while not invariants.complete(home, block) and retries < RETRIES:
        retries += 1
        retried += run_processes(
            context, (Job("run"),), home.root, world, observe, f"retry_{retries}"
        )
    violations += [f"retry hung: {o.job.describe()}" for o in retried if o.killed_by == "hung"]
    violations += [
        f"still running {LEFTOVER_GRACE:.0f} s after {o.job.describe()} exited "
        f"{o.exit_code}: {leftover}"
        for o in outcomes + retried
        for leftover in o.leftovers
    ]
    if not invariants.complete(home, block):
        violations.append(f"campaigns not complete after {RETRIES} clean runs")
    else:
        final = invariants.snapshot(home, block)
        violations += invariants.check_history(observed, final, golden)
        violations += invariants.check_budget(home, block, golden)
        violations += invariants.check_plus_spends(home, block)
        violations += invariants.check_dagster_draws(home)
    # a process that died by SIGKILL (its group from outside, or its own in-process fail point)
    # may leave its one Dagster run STARTED: nothing supervises it any more
    killed_groups = sum(1 for o in outcomes + retried if o.exit_code == -signal.SIGKILL)
    unfinished = invariants.unfinished_runs(home)
    violations += invariants.check_unfinished_runs(unfinished, killed_groups)
    violations += invariants.check_warehouse(home, golden, _late_loaded(outcomes))
    seconds = time.monotonic() - began
    return ScheduleResult(
        seed, schedule, outcomes, retries, violations, seconds, home.root, len(unfinished)
    )


def _exit_label(outcome: Outcome) -> str:
    """``kind:exit code`` and, for a failure, the error's class (from the process's log); a
    process whose run worker was killed exits on its own: its exit code and error show how."""
    if outcome.exit_code == -signal.SIGKILL:
        return f"{outcome.job.kind}:killed"
    label = f"{outcome.job.kind}:{outcome.exit_code}"
    if outcome.exit_code == 0 or outcome.log is None or not outcome.log.exists():
        return label
    lines = outcome.log.read_text(errors="replace").splitlines()
    errors = [line for line in lines if ERROR_LINE.match(line)]
    return f"{label}:{ERROR_LINE.match(errors[-1]).group(1)}" if errors else label


ERROR_LINE = re.compile(
    r"^(?:[a-z_.]+\.)?([A-Z]\w*(?:Error|Day|Mismatch|Exceeded|Ended|Failed)|dp-platform \w+):"
)


@dataclass
class Summary:
    backend: str
    requested: int = 0
    schedules: int = 0
    processes: int = 0
    kills: Counter = field(default_factory=Counter)
    exits: Counter = field(default_factory=Counter)
    retries: int = 0
    failed: list[int] = field(default_factory=list)
    unfinished_runs: int = 0  # Dagster runs left STARTED by a SIGKILLed process (allowed)
    timer_kills_holding_lock: int = 0  # groups killed while one of them held the warehouse lock
    violations: int = 0
    seconds: float = 0.0

    def add(self, result: ScheduleResult) -> None:
        self.schedules += 1
        self.processes += len(result.outcomes)
        self.kills.update(result.kills())
        self.exits.update(_exit_label(o) for o in result.outcomes)
        self.retries += result.retries
        self.violations += len(result.violations)
        if result.violations:
            self.failed.append(result.seed)
        self.unfinished_runs += result.unfinished_runs
        self.timer_kills_holding_lock += sum(
            1 for o in result.outcomes if o.killed_by == "timer" and o.held_warehouse_lock
        )

    def to_json(self) -> dict:
        return {
            "backend": self.backend,
            "schedules_requested": self.requested,
            "schedules": self.schedules,
            "processes": self.processes,
            "kills_injected": sum(self.kills.values()),
            "kills_by_kind": dict(sorted(self.kills.items())),
            "process_exits": dict(sorted(self.exits.items())),
            "retry_runs": self.retries,
            "invariant_violations": self.violations,
            "failed_seeds": self.failed,
            "timer_kills_holding_warehouse_lock": self.timer_kills_holding_lock,
            "dagster_runs_left_unfinished_by_sigkill": self.unfinished_runs,
            "wall_seconds": round(self.seconds, 1),
        }


def prepare(
    workdir: Path, context: ForkServerContext, ledger_url: str | None
) -> tuple[World, invariants.Golden]:
    """The world (ingested once) and the golden run's figures (one clean `dp-platform run`: the
    forkserver's warm-up, or a child's when the forkserver was already running)."""
    world = prepare_world(workdir / "world")
    block = schedule_ledger(ledger_url, "faults_golden")
    home = world.copy_to(workdir / "golden", block)
    os.environ[WARM_WORLD] = str(workdir / "world")  # read by the forkserver when it starts
    os.environ[WARM_HOME] = str(home.root)
    try:
        started = context.Process(target=_nothing)  # the forkserver warms up before it forks
        started.start()
        started.join()
    finally:
        os.environ.pop(WARM_WORLD, None)
        os.environ.pop(WARM_HOME, None)
    failed = workdir / "world" / FAILED
    if failed.exists():
        raise RuntimeError(f"the forkserver's warm-up (golden run) failed: {failed.read_text()}")
    if not invariants.complete(home, block):  # no warm-up: the forkserver was running already
        outcome = run_processes(context, (Job("run"),), home.root, world, lambda: None)[0]
        if outcome.exit_code != 0 or not invariants.complete(home, block):
            raise RuntimeError(f"the clean run failed: see {outcome.log}")
    return world, invariants.golden_of(home, block)


def _nothing() -> None:
    """A forkserver child that only makes the server start (and warm up)."""


def run_many(
    schedules: int,
    seed: int,
    workdir: Path,
    ledger_url: str | None = None,
    *,
    keep: bool = False,
    echo: Callable[[str], None] = print,
    max_seconds: float | None = None,
    backend_option: str | None = None,
) -> Summary:
    """Schedules ``seed .. seed + schedules − 1``, one at a time; homes removed unless they
    failed (or ``keep``). ``max_seconds``: start no schedule after this much wall time (the
    summary says how many ran). ``backend_option``: how a replay names the backend."""
    began = time.monotonic()
    become_subreaper()  # before any process starts: its orphans must come here to be reaped
    context = forkserver()
    world, golden = prepare(workdir, context, ledger_url)
    summary = Summary(backend_name(ledger_url), requested=schedules)
    for number in range(schedules):
        if max_seconds is not None and time.monotonic() - began > max_seconds:
            break
        result = run_schedule(context, world, golden, seed + number, workdir, ledger_url)
        summary.add(result)
        kills = ", ".join(f"{k} {v}" for k, v in sorted(result.kills().items())) or "none"
        holding = sum(
            1 for o in result.outcomes if o.killed_by == "timer" and o.held_warehouse_lock
        )
        if holding:
            kills += f" ({holding} timer kill{'s' * (holding > 1)} holding the warehouse lock)"
        echo(
            f"schedule {result.seed}: {len(result.outcomes)} processes, kills: {kills}; "
            f"{result.retries} retries; {result.unfinished_runs} runs left unfinished; "
            f"{len(result.violations)} violations; "
            f"{result.seconds:.1f} s"
        )
        if result.violations:
            echo("\n".join(result.schedule.describe()))
            for violation in result.violations:
                echo(f"  VIOLATION: {violation}")
            echo(f"  home kept: {result.home}")
            echo(f"  replay: {replay_command(result.seed, ledger_url, backend_option)}")
        elif not keep:
            shutil.rmtree(result.home, ignore_errors=True)
    summary.seconds = time.monotonic() - began
    if not keep and not summary.failed:
        for made in ("world", "golden"):
            shutil.rmtree(workdir / made, ignore_errors=True)
    return summary


if __name__ == "__main__":  # pragma: no cover - use `python -m tests.faults`
    sys.exit("use: python -m tests.faults --help")
