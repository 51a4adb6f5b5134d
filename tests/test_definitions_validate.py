"""The code location loads and validates with Dagster's own CLI, as `make ui` would load it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_dagster_definitions_validate(tmp_path) -> None:
    env = {
        **os.environ,
        "DP_PLATFORM_HOME": str(tmp_path / "home"),
        "DP_PLATFORM_CONFIG": str(REPO / "examples" / "campaigns.yaml"),
        "DAGSTER_HOME": str(tmp_path / "dagster"),
    }
    (tmp_path / "dagster").mkdir()
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "dagster"),
            "definitions",
            "validate",
            "-w",
            "workspace.yaml",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "All code locations passed validation" in result.stderr + result.stdout


def test_library_never_imports_dagster() -> None:
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "dp_platform").rglob("*.py")
        if any(
            line.strip().startswith(
                ("import dagster", "from dagster", "import assets", "from assets")
            )
            for line in path.read_text().splitlines()
        )
    ]
    assert offenders == []


def test_instance_config_written_to_a_home_matches_the_repository() -> None:
    from assets.runner import INSTANCE_YAML

    assert yaml.safe_load(INSTANCE_YAML) == yaml.safe_load((REPO / "dagster.yaml").read_text())


def test_importing_the_code_location_reads_no_catalogue_and_solves_no_plan(tmp_path) -> None:
    """The location is built lazily (@dg.definitions): importing it touches neither the YAML
    (here a path that does not exist) nor the solver; building it reads both."""
    probe = (
        "import sys, assets.location as location\n"
        "assert 'cvxpy' not in sys.modules, 'a plan was solved at import'\n"
        "try:\n"
        "    location.defs()\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    env = {**os.environ, "DP_PLATFORM_CONFIG": str(tmp_path / "missing.yaml")}
    env["DP_PLATFORM_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("ConfigError") and "file not found" in result.stdout
