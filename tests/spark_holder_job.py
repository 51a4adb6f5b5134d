"""A driver that holds a home's Spark warehouse open (tests/test_spark_runs_at_once.py): it
opens the warehouse as a run's step does (``open_at_home``), says ``open`` on stdout, and
keeps it open until the file named by its second argument appears (or 10 minutes pass).

Run as ``python -m tests.spark_holder_job HOME GO`` from the repository root.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dp_platform.home import Home
from dp_platform.settings import WarehouseConfig
from dp_platform.warehouse.spark.store import open_at_home
from tests.spark_fixtures import RUN_SETTINGS


def main(home: str, go: str) -> None:
    settings = WarehouseConfig(engine="spark", spark=RUN_SETTINGS)
    with open_at_home(settings, Home.at(home), read_only=False):
        print("open", flush=True)
        deadline = time.monotonic() + 600
        while not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.2)


if __name__ == "__main__":
    main(*sys.argv[1:3])
