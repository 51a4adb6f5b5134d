"""Commands other packages add (entry-point group ``dp_platform.commands``), and what
``dp-platform`` says when the package behind one is not installed: the product's wheel carries no
research code, so an operator who types ``dp-platform evaluate`` must learn in one line how to
get it, not read a traceback or argparse's usage."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from dp_platform import cli

NOT_INSTALLED = (
    "dp-platform evaluate: needs the research package (the paper's reproduction harness, "
    "docs/results.md), which is not installed: from the repository's root, "
    "pip install -e ./research"
)


EXAMPLE = ("dp_platform.commands.plan", "an example command")
"""What a plugin's entry point loads to: (module with ``configure``, one-line help)."""


def _entry_points(*installed: EntryPoint):
    """A stand-in for ``importlib.metadata.entry_points`` that sees only ``installed``."""

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [e for e in installed if e.group == group]

    return entry_points


@pytest.fixture
def without_research(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on an operator's machine: no package provides a command."""
    monkeypatch.setattr(cli, "entry_points", _entry_points())


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--dataset", "zipf", "--workload", "prefix"],
        ["evaluate", "--all", "--out", "docs/"],
        ["evaluate", "--help"],
        ["evaluate"],
    ],
)
def test_evaluate_without_the_research_package_is_one_line(
    without_research: None, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == NOT_INSTALLED + "\n"
    assert cli.missing_command("evaluate") == NOT_INSTALLED


def test_help_lists_evaluate_as_not_installed(
    without_research: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "evaluate not installed: needs the research package" in help_text
    assert "plan show each campaign's privacy plan" in help_text


def test_other_commands_work_without_it(
    without_research: None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check-config", "--rule", "lta", "--adjacency", "user", "--enforcement", "pre"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert out and err == ""


def test_a_plugin_adds_a_command_but_never_replaces_a_built_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    group = cli.PLUGIN_GROUP
    monkeypatch.setattr(
        cli,
        "entry_points",
        _entry_points(
            # Loading this one would fail: a built-in's name is skipped before it is loaded.
            EntryPoint(name="plan", value="no_such_module:PLAN", group=group),
            EntryPoint(name="evaluate", value="tests.test_cli_plugins:EXAMPLE", group=group),
            EntryPoint(name="other", value="no_such_module:X", group="another.group"),
        ),
    )
    assert cli.plugin_commands() == {"evaluate": EXAMPLE}
    assert cli.COMMANDS["plan"][0] == "dp_platform.commands.plan"


def test_the_research_package_provides_evaluate_when_installed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In the development venv (make installs research/), the entry point leads to the command:
    without the flags it needs, it is the command's own usage error, not the install hint."""
    plugins = cli.plugin_commands()
    if "evaluate" not in plugins:
        pytest.skip("the research package is not installed in this environment")
    assert plugins["evaluate"][0] == "dp_research.commands.evaluate"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["evaluate", "--quiet"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "dp-platform evaluate: --dataset, --workload required\n"


NOT_A_PAIR = "dp_platform.commands.plan"
"""An entry point's object of the wrong shape (a module name without its help)."""


def test_a_plugin_of_the_wrong_shape_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = EntryPoint(
        name="bad", value="tests.test_cli_plugins:NOT_A_PAIR", group=cli.PLUGIN_GROUP
    )
    monkeypatch.setattr(cli, "entry_points", _entry_points(entry))
    with pytest.raises(TypeError, match=r"dp_platform\.commands entry point bad = tests"):
        cli.plugin_commands()
