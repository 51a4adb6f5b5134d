"""The code location loads and validates with Dagster's own CLI, as `make ui` would load it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from assets.partitions import daily_job_name
from tests.platform_fixtures import catalogue

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
    output = _location_probe(probe, tmp_path / "missing.yaml", tmp_path / "home")
    assert output.startswith("ConfigError") and "file not found" in output


def _location_probe(probe: str, config: Path, home: Path) -> str:
    """What ``probe`` prints in a fresh interpreter whose code location reads ``config``."""
    env = {**os.environ, "DP_PLATFORM_CONFIG": str(config), "DP_PLATFORM_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _dg(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``dg ARGS`` from the repository root, whose pyproject.toml configures ``[tool.dg]``."""
    virtualenv = Path(sys.executable).parent.parent  # dg warns unless its venv is the active one
    return subprocess.run(
        [str(Path(sys.executable).parent / "dg"), *args],
        cwd=REPO,
        env={**env, "VIRTUAL_ENV": str(virtualenv)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_dg_checks_and_lists_the_definitions(tmp_path) -> None:
    """`dg check defs` and `dg list defs` load the project as `make ui` does: every campaign's
    assets, checks and jobs."""
    env = {
        **os.environ,
        "DP_PLATFORM_HOME": str(tmp_path / "home"),
        "DP_PLATFORM_CONFIG": str(REPO / "examples" / "campaigns.yaml"),
        "DAGSTER_HOME": str(tmp_path / "dagster"),
    }
    (tmp_path / "dagster").mkdir()
    checked = _dg("check", "defs", env=env)
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    assert "does not match the virtual environment" not in checked.stderr
    listed = _dg("list", "defs", "--json", env=env)
    assert listed.returncode == 0, listed.stderr[-3000:]
    definitions = json.loads(listed.stdout)
    campaigns = [
        c["name"] for c in yaml.safe_load(Path(env["DP_PLATFORM_CONFIG"]).read_text())["campaigns"]
    ]
    jobs = {job["name"] for job in definitions["jobs"]}
    assert {daily_job_name(name) for name in campaigns} <= jobs
    assert {tuple(a["asset_key_parts"][:1]) for a in definitions["assets"]} == {
        (name,) for name in campaigns
    }
    assert len(definitions["asset_checks"]) > 0


def test_the_code_location_loads_without_pandera_or_scipy_stats(tmp_path) -> None:
    """What every code server, `dp-platform run` and `ui` pay at start: building the definitions
    imports neither Pandera (imported when a schema check runs) nor SciPy's stats module (the
    intervals take the standard library's normal quantile): together about half of the
    location's import time (docs/testing.md)."""
    config = tmp_path / "campaigns.yaml"
    config.write_text(yaml.safe_dump(catalogue(days=8)))
    probe = (
        "import sys, assets.location as location\n"
        "location.defs()\n"
        "heavy = ('pandera', 'scipy.stats')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    assert _location_probe(probe, config, tmp_path / "home").strip() == "[]"
