"""Hostile campaign catalogues, one case per class (catalogue: config_cases.py; the limits:
docs/operators.md#limits).

Each case runs `dp-platform plan` in process through ``dp_platform.cli.main`` (stderr captured
at the file descriptor) and asserts exit code 2 and exactly one stderr line naming the field or
file and the rule, with no traceback. For the classes that once passed `plan` and failed in
`run` after ρ was reserved, `run` is asked too: it must refuse the same way, and the home's
ledger must hold no reservation (a catalogue `plan` refuses never reaches the ledger).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dp_platform.cli import main
from tests.hostile.config_cases import CASES, Case


def _cli(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capfd.readouterr()
    code = main(argv)
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def _check_refusal(command: str, code: int, out: str, err: str, case: Case) -> None:
    assert code == 2, (code, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith(f"dp-platform {command}: "), lines[0]
    for part in case.message.split("*"):
        assert part in lines[0], (part, lines[0])
    assert out == ""


def _reserved_campaigns(home: Path) -> int:
    path = home / "ledger.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM campaigns").fetchone()[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_config(case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    config = case.build(tmp_path)

    _check_refusal("plan", *_cli(["plan", str(config)], capfd), case)

    if case.run_too:
        home = tmp_path / "home"
        argv = ["run", "--home", str(home), "--config", str(config)]
        _check_refusal("run", *_cli(argv, capfd), case)
        assert _reserved_campaigns(home) == 0


def test_catalogue_has_at_least_45_classes_with_unique_names() -> None:
    names = [c.name for c in CASES]
    assert len(names) >= 45 and len(set(names)) == len(names)


def test_the_example_itself_passes(capfd: pytest.CaptureFixture[str]) -> None:
    """The cases are edits of the example: it must pass, or every refusal proves nothing."""
    from tests.hostile.config_cases import EXAMPLE

    code, out, err = _cli(["plan", str(EXAMPLE)], capfd)
    assert (code, err) == (0, "")
    assert "account acme-users" in out
