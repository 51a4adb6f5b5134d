"""`dp-platform bench` at CI size: the JSON of docs/operators.md, the pandas reference in the same
run, and both engines agreeing on every histogram and clipped vector."""

from __future__ import annotations

import json

import pytest

from dp_platform.cli import main

pytestmark = pytest.mark.system  # benchmarks: measured, not part of the development loop


def test_bench_json_with_pandas_reference(tmp_path, capsys):
    argv = ["bench", "--conversions", "3000", "--impressions", "20000", "--users", "800"]
    argv += ["--publishers", "12", "--days", "4", "--lookback-days", "7", "--bound", "1.5"]
    argv += ["--reference", "pandas", "--threads", "1", "--workdir", str(tmp_path), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)

    assert (result["conversions"], result["impressions"]) == (3000, 20000)
    assert (result["publishers"], result["days"]) == (12, 4)
    stages = ("ingest", "attribution", "contributions", "histogram", "clipping")
    seconds = result["seconds"]
    assert all(seconds[s] > 0 for s in stages)
    assert abs(seconds["total"] - sum(seconds[s] for s in stages)) < 0.01
    assert abs(seconds["pipeline"] - sum(seconds[s] for s in stages[1:])) < 0.01
    assert result["peak_rss_mb"] >= max(result["peak_rss_mb_by_phase"].values()) > 50

    assert result["ingest_report"]["conversions"]["accepted"] == 3000
    rows = result["rows"]
    assert 0 < rows["attributed"] <= 3000 and rows["attributed"] + rows["unattributed"] == 3000

    reference = result["reference"]
    assert reference["engine"] == "pandas" and reference["peak_rss_mb"] > 50
    assert set(reference["seconds"]) == set(seconds)
    assert result["agreement"]["histograms_equal"] is True
    assert result["agreement"]["max_abs_vector_difference"] < 1e-9
    assert set(result["speedup"]) == set(seconds)


def test_bench_refuses_bad_sizes(capsys):
    assert main(["bench", "--days", "1"]) == 2
    assert "--days must be >= 2" in capsys.readouterr().err


def test_bench_with_cells_loads_dimensions_and_clips_every_cell(tmp_path, capsys):
    argv = ["bench", "--conversions", "2000", "--impressions", "12000", "--users", "500"]
    argv += ["--publishers", "6", "--days", "3", "--lookback-days", "7", "--cells"]
    argv += ["--threads", "1", "--workdir", str(tmp_path), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["cells"] is True
    conversions = result["ingest_report"]["conversions"]
    assert conversions["accepted"] == 2000 and conversions["quarantined"] == 0
    assert result["seconds"]["clipping"] > 0


def test_bench_with_impression_cells_loads_the_impressions_column(tmp_path, capsys):
    argv = ["bench", "--conversions", "2000", "--impressions", "12000", "--users", "500"]
    argv += ["--publishers", "6", "--days", "3", "--lookback-days", "7", "--cells"]
    argv += ["--impression-cells", "--threads", "1", "--workdir", str(tmp_path), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["impression_cells"] is True
    impressions = result["ingest_report"]["impressions"]
    assert impressions["accepted"] == 12000 and impressions["quarantined"] == 0
    assert result["rows"]["attributed"] > 0 and result["seconds"]["clipping"] > 0
    assert main(["bench", "--impression-cells"]) == 2
    assert "--impression-cells needs --cells" in capsys.readouterr().err


def test_bench_refuses_cells_with_the_pandas_reference(capsys):
    assert main(["bench", "--cells", "--reference", "pandas"]) == 2
    assert "--cells runs without --reference" in capsys.readouterr().err
