"""Warm the harness's forkserver with the golden run: one clean ``dp-platform run`` on the golden
home and one ingest on a scratch copy of the world, in the forkserver itself, before it forks
any child.

A run imports about 700 modules lazily on the way (SQLAlchemy's SQLite dialect, Alembic's
migration scripts, OpenDP, Pandera, ...), about 1.3 s of CPU that every child of a cold
forkserver paid again. Imported here once, every child inherits them. The run is the one the
harness needs anyway: its home is the golden home (:func:`tests.faults.harness.prepare` reads
the golden figures from it), so preparing costs one clean run, not two. Nothing of the warm-up
survives into a child: it leaves no thread running (Dagster's and the platform's storages are
closed after use) and children set their own ``DAGSTER_HOME``.

The harness names the world in :data:`WARM_WORLD` and the golden home in :data:`WARM_HOME`
before it starts the forkserver; without them importing this module does nothing. A failed
warm-up is written to ``warm_up_failed.txt`` in the world's directory, and the harness stops
with it. A forkserver already running (another harness run in the same process) does not warm
up again: the harness then runs the golden run in a child.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

WARM_WORLD = "DP_FAULTS_WARM_WORLD"  # the world's directory (tests/faults/world.py)
WARM_HOME = "DP_FAULTS_WARM_HOME"  # the golden home, a copy of the world with its ledger
FAILED = "warm_up_failed.txt"  # in the world's directory: the warm-up's traceback


def warm_up(world_dir: Path, golden_home: Path) -> None:
    """Run the campaigns on the golden home and an ingest on a scratch copy of the world,
    output discarded."""
    from dp_platform.cli import main
    from tests.faults.world import World

    world = World.at(world_dir)
    scratch = Path(tempfile.mkdtemp(prefix="warm_", dir=world_dir.parent))
    saved = os.dup(1), os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        golden = str(golden_home)
        codes = [main(["run", "--home", golden, "--config", str(golden_home / "campaigns.yaml")])]
        home = world.copy_to(scratch / "home", None).root
        extra = world.extra
        codes += [
            main(
                [
                    "ingest",
                    "--home",
                    str(home),
                    "--impressions",
                    str(extra.impressions),
                    "--conversions",
                    str(extra.conversions),
                ]
            )
        ]
        if any(codes):
            raise RuntimeError(f"the warm-up's run and ingest exited {codes}")
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (quiet, *saved):
            os.close(fd)
        shutil.rmtree(scratch, ignore_errors=True)
        os.environ.pop("DAGSTER_HOME", None)


if os.environ.get(WARM_WORLD) and os.environ.get(WARM_HOME):
    try:
        warm_up(Path(os.environ[WARM_WORLD]), Path(os.environ[WARM_HOME]))
    except Exception:  # the harness stops with it (tests/faults/harness.py prepare)
        (Path(os.environ[WARM_WORLD]) / FAILED).write_text(traceback.format_exc())
