"""What the lineage graph tells a data engineer about each asset: released or private (a kind
drawn on the node, and the ``privacy`` tag), and which warehouse engine and ledger it uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assets.definitions import build_definitions

REPO = Path(__file__).resolve().parents[1]
# What may be shown to an advertiser: the daily noisy release, the answers computed from it, and
# the campaign-level releases. Everything else holds true values.
RELEASED = {"noisy_daily_release", "cumulative_query_answers", "one_shot_release"}
RELEASED |= {"reach_and_frequency"}
WAREHOUSE_STEPS = {
    "raw_impressions",
    "raw_conversions",
    "attributed_conversions",
    "user_day_contributions",
    "clipped_daily_vector",
}
LEDGER_STEPS = {"contribution_bound", "noisy_daily_release", "one_shot_release"}
LEDGER_STEPS |= {"reach_and_frequency"}


@pytest.mark.parametrize(
    ("warehouse", "ledger", "engine_kind", "ledger_kind"),
    [
        (None, None, "duckdb", "sqlite"),
        (
            {"engine": "spark"},
            {"url": "postgresql://dp@127.0.0.1:5432/ledger"},
            "spark",
            "postgres",
        ),
    ],
)
def test_every_asset_shows_whether_it_is_released_and_where_it_runs(
    tmp_path, warehouse, ledger, engine_kind, ledger_kind
) -> None:
    catalogue = yaml.safe_load((REPO / "examples" / "campaigns.yaml").read_text())
    if warehouse:
        catalogue["warehouse"] = warehouse
    if ledger:
        catalogue["ledger"] = ledger
    config = tmp_path / "campaigns.yaml"
    config.write_text(yaml.safe_dump(catalogue))
    definitions = build_definitions(config, tmp_path / "home")
    specs = definitions.resolve_all_asset_specs()
    names = {spec.key.path[-1] for spec in specs}
    assert names >= RELEASED | WAREHOUSE_STEPS | LEDGER_STEPS  # every kind of asset is here
    for spec in specs:
        name, kinds = spec.key.path[-1], set(spec.kinds)
        released = name in RELEASED
        assert ("released" in kinds, "private" in kinds) == (released, not released), spec.key
        assert spec.tags["privacy"] == ("release" if released else "private"), spec.key
        assert (engine_kind in kinds) == (name in WAREHOUSE_STEPS), spec.key
        assert (ledger_kind in kinds) == (name in LEDGER_STEPS), spec.key
        assert not kinds & ({"duckdb", "spark", "sqlite", "postgres"} - {engine_kind, ledger_kind})
        assert spec.group_name == spec.key.path[0]  # one group per campaign
