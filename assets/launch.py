"""Launch a campaign's job the way the UI does, and wait for it: one kind of run on every surface.

``dp-platform run`` (and ``demo``) serve the code location (``assets.location``) with Dagster's
own server, ``dagster api grpc``, for as long as they wait, and submit each run with ``dagster job
launch`` against it: the run is created with the location's origin (so it is listed on its job's
page, in the timeline and in the runs list) and handed to the instance's run coordinator and run
launcher — the objects a UI launch or a schedule goes through. The launcher starts the run in a
worker process of the code server, which reports the run failed if that process dies.

Why commands and not the Python API: every Python entry point that creates a run with a code
location origin lives in Dagster's private modules (``dagster._cli``, ``dagster._core.workspace``);
the command line is the supported interface. Its cost: the server's start (loading the code
location, once per command) and a cold ``dagster job launch`` (≈ 2 s) per run.

The run's own record is then read from the instance: its status, and for a failed run the
failing step's error, raised as the library error it was (a budget refusal stays a one-line
refusal with exit code 2).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
from dagster import DagsterRun

from dp_platform.errors import ConfigError, LedgerError, RunFailed
from dp_platform.home import Home

__all__ = ["LOCATION_MODULE", "CodeServer", "RunFailed", "run_error", "worker_pid"]

LOCATION_MODULE = "assets.location"  # the code location workspace.yaml and `dg` load
POLL_SECONDS = 0.2
QUEUED_HINT_AFTER_S = 10.0  # an instance with a run queue: the daemon must dequeue the run
SERVER_START_TIMEOUT_S = 300
SERVER_STOP_GRACE_S = 1.0
PR_SET_PDEATHSIG = 1  # prctl option: the signal a child gets when its parent dies
WORKER_GRACE_S = 10.0  # a dead worker's run not failed by its code server after this: end it
START_TIMEOUT_S = 300.0  # no worker recorded this long after the launch: it never started
NOT_LAUNCHED = {dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING}


def _user_errors() -> dict[str, type[Exception]]:
    """The library's errors an operator can act on, by class name (a step's error crosses the
    process boundary as its class name and message only)."""
    found: dict[str, type[Exception]] = {}
    todo: list[type[Exception]] = [ConfigError, LedgerError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo += cls.__subclasses__()
    return found


def run_error(instance: dg.DagsterInstance, run_id: str, job_name: str) -> Exception:
    """The error a failed run should raise here: the failing step's library error (same class,
    same message) if it was one, else :class:`RunFailed` with the step's one-line message."""
    known = _user_errors()
    failures = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    failures += instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    for entry in failures:
        event = entry.dagster_event
        error = getattr(event.event_specific_data, "error", None) if event else None
        seen = error
        while seen is not None:
            if seen.cls_name in known:
                message = seen.message.strip()
                prefix = f"{seen.cls_name}: "
                if message.startswith(prefix):
                    message = message[len(prefix) :]
                elif ": " in message.splitlines()[0] and message.split(": ", 1)[0].endswith(
                    seen.cls_name
                ):
                    message = message.split(": ", 1)[1]
                return known[seen.cls_name](message)
            seen = seen.cause
        if error is not None:
            innermost = error
            while innermost.cause is not None:
                innermost = innermost.cause
            return RunFailed(f"{job_name}: {innermost.message.strip().splitlines()[0]}")
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        if "terminated by signal" in entry.message or "exited with" in entry.message:
            # the code server's account of a run worker that died (e.g. SIGKILL)
            return RunFailed(f"{job_name}: run {run_id}: {entry.message.strip().splitlines()[0]}")
    for entry in failures:
        if entry.message:
            return RunFailed(f"{job_name}: run {run_id}: {entry.message.strip().splitlines()[0]}")
    return RunFailed(f"{job_name}: run {run_id} failed (see it in the UI)")


def _environment(home: Home, config_path: Path) -> dict[str, str]:
    """What the code location reads (assets/location.py) and where the instance lives."""
    return {
        **os.environ,
        "DAGSTER_HOME": str(home.dagster),
        "DP_PLATFORM_HOME": str(home.root),
        "DP_PLATFORM_CONFIG": str(config_path),
    }


def worker_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The run worker's pid, as Dagster recorded it when the worker started."""
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = entry.dagster_event.event_specific_data if entry.dagster_event else None
        pid = getattr(data, "metadata", {}).get("pid") if data else None
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value)
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _end_with_parent() -> None:
    """In the code server, before it runs: SIGTERM when this command dies, even by SIGKILL
    (Linux ``PR_SET_PDEATHSIG``), so a killed command never leaves its server serving."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class CodeServer:
    """The code location served over a Unix socket for as long as this command waits on runs.

    ``dagster api grpc`` is the server ``dg dev`` and the UI use; the runs it launches execute
    in worker processes it supervises (a worker that dies is reported failed by the server).
    ``dagster job launch -w`` against it creates each run with the location's origin, hands it
    to the instance's run coordinator, and exits; this object then waits on the run's record."""

    def __init__(self, instance: dg.DagsterInstance, home: Home, config_path: Path) -> None:
        self.instance, self.home = instance, home
        self.env = _environment(home, config_path.resolve())
        self.directory = Path(tempfile.mkdtemp(prefix="dp-code-"))  # short: a socket path
        self.socket = self.directory / "code.sock"
        self.workspace = self.directory / "workspace.yaml"
        self.workspace.write_text(
            "load_from:\n"
            "  - grpc_server:\n"
            f"      socket: {self.socket}\n"
            f"      location_name: {LOCATION_MODULE}\n"
        )
        self.log = home.dagster / "code-server.log"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> CodeServer:
        command = [
            sys.executable,
            "-m",
            "dagster",
            "api",
            "grpc",
            "-m",
            LOCATION_MODULE,
            "--socket",
            str(self.socket),
            "--location-name",
            LOCATION_MODULE,
        ]
        with self.log.open("a") as output:  # other commands on this home may be writing too
            self.process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=self.env,
                preexec_fn=_end_with_parent,  # started before any thread of this process
            )
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not self._listening():
            if self.process.poll() is not None:
                raise RunFailed(f"the code server did not start: {self._tail(self.log)}")
            if time.monotonic() > deadline:
                raise RunFailed(f"the code server did not start in {SERVER_START_TIMEOUT_S} s")
            time.sleep(POLL_SECONDS)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            # Every run it launched has ended (or this command is failing): it stops serving at
            # once on SIGTERM, and its interpreter's teardown that follows took ~4 s, which
            # nothing needs to wait for.
            self.process.terminate()
            try:
                self.process.wait(timeout=SERVER_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _listening(self) -> bool:
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(self.socket))
            except OSError:
                return False
        return True

    @staticmethod
    def _tail(log: Path) -> str:
        """The log's last error line (a traceback's last line is its exception), else its
        last line: one line that says what went wrong."""
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
        lines = [line for line in lines if line and not line.startswith("(Background on")]
        errors = [line for line in lines if "Error" in line or "error" in line]
        return (errors or lines or ["no output"])[-1]

    def launch(
        self, job_name: str, tags: Mapping[str, str], run_config: Mapping[str, object]
    ) -> str:
        """Launch ``job_name`` through the instance and block until the run ends; its run id.
        Raises the run's error if it did not succeed."""
        run_id = str(uuid.uuid4())
        log = self.directory / f"launch-{run_id}.log"
        command = [
            sys.executable,
            "-m",
            "dagster",
            "job",
            "launch",
            "-w",
            str(self.workspace),
            "-j",
            job_name,
            "--run-id",
            run_id,
            "--tags",
            json.dumps(dict(tags)),
            "--config-json",
            json.dumps(run_config),
        ]
        with log.open("w") as output:
            done = subprocess.run(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                check=False,
            )
        created = self.instance.get_run_by_id(run_id)
        if done.returncode != 0 and (created is None or created.status in NOT_LAUNCHED):
            # e.g. a full disk: the run could not be created or handed to the launcher
            if created is not None:
                with contextlib.suppress(Exception):  # the same fault may refuse this write
                    self.instance.report_run_failed(created, message="its launch failed")
            raise RunFailed(f"{job_name}: `dagster job launch` failed: {self._tail(log)}")
        run = self._wait(run_id, job_name)
        if run.status != dg.DagsterRunStatus.SUCCESS:
            raise run_error(self.instance, run_id, job_name)
        return run_id

    def _wait(self, run_id: str, job_name: str) -> DagsterRun:
        """Until the run's record says it ended. A worker that died without recording its end
        (its storage refused the write, or its code server died with it) ends it here."""
        hinted = False
        queued_since: float | None = None
        worker_gone_since: float | None = None
        launched_at = time.monotonic()
        while True:
            server_ended = self.process is None or self.process.poll() is not None
            run = self.instance.get_run_by_id(run_id)
            assert run is not None  # created by the launch
            if run.is_finished:
                return run
            if run.status == dg.DagsterRunStatus.QUEUED:
                queued_since = queued_since or time.monotonic()
                if not hinted and time.monotonic() - queued_since > QUEUED_HINT_AFTER_S:
                    print(
                        f"run {run_id} of {job_name} is queued: the instance's run queue needs "
                        "the Dagster daemon (`make ui` runs one)",
                        file=sys.stderr,
                    )
                    hinted = True
            else:
                pid = worker_pid(self.instance, run_id)
                gone = (pid is not None and not _alive(pid)) or (pid is None and server_ended)
                never_started = pid is None and time.monotonic() - launched_at > START_TIMEOUT_S
                if gone or never_started:
                    worker_gone_since = worker_gone_since or time.monotonic()
                    # the code server reports its dead workers within a second or two
                    if server_ended or time.monotonic() - worker_gone_since > WORKER_GRACE_S:
                        with contextlib.suppress(Exception):  # its storage may refuse it too
                            self.instance.report_run_failed(
                                run, message="its worker process ended without recording it"
                            )
                        raise RunFailed(
                            f"{job_name}: run {run_id}: its worker process "
                            f"{'never started' if pid is None else f'{pid} ended'} without "
                            f"recording the run's end (code server log: {self.log})"
                        )
            time.sleep(POLL_SECONDS)
