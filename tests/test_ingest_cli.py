"""`dp-platform ingest`: JSON report, idempotent re-run, one-line errors with exit code 2."""

from __future__ import annotations

import json

from dp_platform.cli import main
from tests.conftest_data import CONV_HEADER, IMP_HEADER, write_csv

SECRET = "user-4711"


def _files(tmp_path):
    imps = write_csv(
        tmp_path / "i.csv",
        IMP_HEADER,
        [
            ["i1", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", "view"],
            ["i2", SECRET, "p1", "acme", "2026-03-01T10:00:00Z", "stare"],
        ],
    )
    convs = write_csv(
        tmp_path / "c.csv", CONV_HEADER, [["c1", SECRET, "acme", "2026-03-01T11:00:00Z", "-3"]]
    )
    return imps, convs


def test_ingest_json_and_rerun(tmp_path, capsys):
    imps, convs = _files(tmp_path)
    argv = ["ingest", "--home", str(tmp_path / "home"), "--impressions", str(imps)]
    argv += ["--conversions", str(convs), "--now", "2026-04-01T00:00:00", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["impressions"]["accepted"] == 1
    assert first["impressions"]["reasons"] == {"unknown_interaction": 1}
    assert first["conversions"]["reasons"] == {"negative_value": 1}
    assert (tmp_path / "home" / "warehouse.duckdb").is_file()

    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["impressions"]["already_loaded"] and second["impressions"]["accepted"] == 0

    assert main(argv[:-1]) == 0  # text output
    out = capsys.readouterr().out
    assert "loaded before" in out and SECRET not in out


def test_ingest_missing_column_exits_2_with_one_line(tmp_path, capsys):
    imps, _ = _files(tmp_path)
    bad = write_csv(tmp_path / "bad.csv", ["conversion_id", "ts"], [["c1", SECRET]])
    code = main(
        ["ingest", "--home", str(tmp_path), "--impressions", str(imps), "--conversions", str(bad)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "bad.csv: missing column(s) user_id, advertiser_id" in err
    assert SECRET not in err


def test_ingest_bad_now_is_a_config_error(tmp_path, capsys):
    imps, convs = _files(tmp_path)
    argv = ["ingest", "--home", str(tmp_path), "--impressions", str(imps)]
    assert main([*argv, "--conversions", str(convs), "--now", "soon"]) == 2
    assert "--now: not an ISO date-time" in capsys.readouterr().err
