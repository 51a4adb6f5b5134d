"""Storage faults, one case per class (catalogue: storage_cases.py): a home that is a file,
missing or a symlink loop, a read-only home, a full disk, a home deleted mid-run.

Each asserts the exit code and, for a refusal, exactly one stderr line naming the path and the
cause, with no traceback. On a read-only home `budget` and `releases` must work and create no
file; a full disk at registration must leave nothing reserved.
"""

from __future__ import annotations

import ctypes
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dp_platform.cli import main
from dp_platform.ledger import Ledger
from tests.hostile.config_cases import EXAMPLE
from tests.hostile.storage_cases import CASES, StorageCase
from tests.platform_fixtures import catalogue, make_home

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, PR_CAPBSET_DROP = 1, 2, 24
DAYS = 8


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small home whose campaign was run (8 days released)."""
    home = make_home(
        tmp_path_factory.mktemp("storage") / "home",
        users=200,
        days=DAYS,
        config=catalogue(days=DAYS),
    ).root
    assert main(["run", "--home", str(home), "--config", str(home / "campaigns.yaml")]) == 0
    return home


def _without_write_override() -> None:
    """In the child: root without the capabilities that let it ignore file modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _child(argv: list[str], preexec) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "dp_platform.cli", *argv],
        capture_output=True,
        text=True,
        preexec_fn=preexec,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _campaigns_reserved(home: Path) -> int:
    path = home / "ledger.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM campaigns").fetchone()[0]


def _check_refusal(case: StorageCase, err: str, out: str) -> None:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith(f"dp-platform {case.command[0]}: "), lines[0]
    for part in case.message.split("*"):
        assert part in lines[0], (part, lines[0])
    assert out == ""


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_storage_fault(
    case: StorageCase, prepared: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    home = case.damage(tmp_path)
    config = EXAMPLE
    if case.damage.__name__ == "_prepared":
        shutil.copytree(prepared, home, symlinks=True)
        config = home / "campaigns.yaml"
    if case.damage.__name__ == "_fresh":
        home = make_home(home, users=50, days=DAYS, config=catalogue(days=DAYS)).root
        config = home / "campaigns.yaml"
    argv = [a.format(home=home, config=config) for a in case.command]

    if case.runner == "read_only":
        before = _files(home)
        subprocess.run(["chmod", "-R", "a-w", str(home)], check=True)
        try:
            code, out, err = _child(argv, _without_write_override)
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(home)], check=True)
        assert _files(home) == before  # nothing created in a read-only home
    elif case.runner == "file_size_limit":
        code, out, err = _child(argv, _file_size_limit(case.file_size_limit))
        assert _campaigns_reserved(home) == case.registered  # a failed registration rolls back
        assert str(home) in err  # the line says where the disk filled
        if case.registered:  # space returns: the same run finishes, each day charged once
            assert _child(argv, None)[0] == 0
            with Ledger.at_home(home) as ledger:
                budget = ledger.campaign_budget("spring")
                assert budget.spent == budget.planned
                assert len(ledger.releases("spring")) == DAYS
    else:
        capfd.readouterr()
        code = main(argv)
        out, err = capfd.readouterr()

    assert code == case.exit_code, (code, err)
    if case.exit_code == 2:
        _check_refusal(case, err, out)
    else:
        assert "Traceback" not in err and out


def test_home_deleted_mid_run(
    prepared: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The home vanishes after registration, before the days run: one line, exit 2."""
    import assets.runner

    home = tmp_path / "home"
    shutil.copytree(prepared, home, symlinks=True)
    config = tmp_path / "campaigns.yaml"
    text = (home / "campaigns.yaml").read_text().replace(f"days: {DAYS}", f"days: {DAYS + 2}")
    config.write_text(text.replace("name: spring", "name: autumn"))
    original = assets.runner.instance_for  # opened after registration, before the first run

    def delete_home_first(home_dir):
        shutil.rmtree(home)
        return original(home_dir)

    monkeypatch.setattr(assets.runner, "instance_for", delete_home_first)
    capfd.readouterr()
    code = main(["run", "--home", str(home), "--config", str(config), "--through", "2026-03-02"])
    out, err = capfd.readouterr()
    assert code == 2 and out == "", err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(home) in lines[0], lines[0]
