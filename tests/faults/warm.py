"""Warm the harness's forkserver: one clean ``dp-platform run`` and one ingest on a scratch copy
of the world, in the forkserver itself, before it forks any child.

A run imports about 700 modules lazily on the way (SQLAlchemy's SQLite dialect, Alembic's
migration scripts, OpenDP, Pandera, ...), about 1.3 s of CPU that every child of a cold
forkserver paid again. Imported here once, every child inherits them. Nothing of the warm-up
survives into a child: its home is removed, it leaves no thread running (Dagster's and the
platform's storages are closed after use) and children set their own ``DAGSTER_HOME``.

The harness names the world in :data:`WARM_WORLD` before it starts the forkserver; without it
importing this module does nothing. A failed warm-up is only a lost saving: it is written to
``warm_up_failed.txt`` in the world's directory and the harness goes on.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

WARM_WORLD = "DP_FAULTS_WARM_WORLD"  # the world's directory (tests/faults/world.py)


def warm_up(world_dir: Path) -> None:
    """Run the campaigns and an ingest once on a scratch copy of the world, output discarded."""
    from dp_platform.cli import main
    from tests.faults.world import World

    world = World.at(world_dir)
    scratch = Path(tempfile.mkdtemp(prefix="warm_", dir=world_dir.parent))
    saved = os.dup(1), os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        home = world.copy_to(scratch / "home", None).root
        codes = [main(["run", "--home", str(home), "--config", str(home / "campaigns.yaml")])]
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


if os.environ.get(WARM_WORLD):
    try:
        warm_up(Path(os.environ[WARM_WORLD]))
    except Exception:  # only a saving: a cold child is slower, not wrong
        (Path(os.environ[WARM_WORLD]) / "warm_up_failed.txt").write_text(traceback.format_exc())
