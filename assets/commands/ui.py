"""``dp-platform ui --home DIR``: the Dagster UI (webserver and daemon) over a platform home.

Runs ``dg dev`` (what Dagster recommends over the older ``dagster dev``) on the home's own
Dagster instance (``<home>/dagster``, the one ``dp-platform run`` uses) and on the catalogue
``<home>/campaigns.yaml`` unless ``--config`` names another, from inside the instance directory
so its ``dagster.yaml`` is the one read. Its webserver, daemon and code server take 5-7 s to
stop on their own; here Ctrl-C or SIGTERM asks them to stop and, after ``--grace`` seconds
(default 2), ends their whole process group, so the UI is always gone within 5 s. A run still
going is interrupted as by any kill, which is safe: the ledger commits a day's draw and charge in
one transaction and the kernel releases the warehouse lock.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE = 2.0  # seconds to stop cleanly before the process group is ended: the UI is gone in ≤ 5 s


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--home", default=".dp_home", help="platform home (default .dp_home)")
    parser.add_argument("--config", help="campaign catalogue (default <home>/campaigns.yaml)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000, help="port (3000)")
    parser.add_argument(
        "--grace", type=float, default=GRACE, help=f"seconds to stop cleanly ({GRACE:g})"
    )
    parser.set_defaults(handler=run)


def command(home: Path, config: Path, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The ``dg dev`` command line and environment for a home (tests start it the same)."""
    from assets.runner import write_instance_config
    from dp_platform.home import Home

    platform_home = Home.at(home)
    write_instance_config(platform_home)
    fixes = Path(__file__).resolve().parents[1] / "uiprocess"  # sitecustomize: dagster_fixes.py
    path = os.pathsep.join(p for p in (str(fixes), os.environ.get("PYTHONPATH", "")) if p)
    environment = {
        **os.environ,
        "PYTHONPATH": path,
        "DAGSTER_HOME": str(platform_home.dagster),
        "DP_PLATFORM_HOME": str(platform_home.root),
        "DP_PLATFORM_CONFIG": str(config.resolve()),
    }
    dg = Path(sys.executable).with_name("dg")
    argv = [str(dg), "dev", "-m", "assets.location", "-h", host, "-p", str(port)]
    return argv, environment


def stop(process: subprocess.Popen, grace: float) -> int:
    """Ask ``dg dev`` (its own process group) to stop; end the group after ``grace`` s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        deadline = time.monotonic() + grace
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):  # the webserver and daemon children too
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return 0


def run(args: argparse.Namespace) -> int:
    from dp_platform.errors import ConfigError

    home = Path(args.home)
    config = Path(args.config) if args.config else home / "campaigns.yaml"
    if not config.is_file():
        raise ConfigError(
            f"{config}: no catalogue; run `dp-platform demo --home {home}` or pass --config"
        )
    argv, environment = command(home, config, args.host, args.port)
    process = subprocess.Popen(
        argv, env=environment, cwd=Path(environment["DAGSTER_HOME"]), start_new_session=True
    )
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    print(f"Dagster UI on http://{args.host}:{args.port} (Ctrl-C stops it)", flush=True)
    while not stopping and process.poll() is None:
        time.sleep(0.2)
    stop(process, args.grace)
    return 0
