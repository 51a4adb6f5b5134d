"""`dp-platform check-config`: the JSON contract of issue 6 and the whole table."""

from __future__ import annotations

import json

import pytest

from dp_platform.cli import main


@pytest.mark.parametrize(
    ("rule", "adjacency", "enforcement", "valid", "c0"),
    [
        ("lta", "user", "post", True, 1.0),
        ("uni", "conversion", "pre", True, 1.0),
        ("fta", "impression", "post", True, 2.0),
        ("uni", "impression", "post", False, None),
        ("lta", "user_publisher", "post", False, None),
        ("time_decay", "user_publisher_advertiser", "pre", False, None),
    ],
)
def test_json_contract(capsys, rule, adjacency, enforcement, valid, c0) -> None:  # type: ignore[no-untyped-def]
    argv = ["check-config", "--rule", rule, "--adjacency", adjacency]
    assert main([*argv, "--enforcement", enforcement, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"valid", "c0", "reason"}
    assert document["valid"] is valid and document["c0"] == c0
    assert isinstance(document["reason"], str) and document["reason"]


def test_all_prints_sixty_cells(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["check-config", "--all", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 60


def test_text_and_bad_names(capsys) -> None:  # type: ignore[no-untyped-def]
    assert (
        main(["check-config", "--rule", "lta", "--adjacency", "user", "--enforcement", "pre"]) == 0
    )
    assert capsys.readouterr().out.startswith("valid, C0 = 1")
    with pytest.raises(SystemExit):
        main(["check-config", "--rule", "lta", "--adjacency", "device", "--enforcement", "pre"])
    with pytest.raises(SystemExit):
        main(["check-config", "--rule", "lta"])
