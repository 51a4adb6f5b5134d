"""A stale ledger restore through Dagster: run, single-asset materialisation, retry and backfill
all refuse naming the missing days, and no noise is drawn (the release journal)."""

from __future__ import annotations

import shutil
from datetime import date, timedelta

import dagster as dg
import pytest

from assets.definitions import build_definitions
from assets.partitions import daily_job_name
from assets.runner import run_campaigns
from dp_platform.cli import main
from dp_platform.errors import PublishedReleaseMissing
from dp_platform.ledger import Ledger
from dp_platform.privacy.noise import SeededNoise
from tests.counting_noise import CountingNoise
from tests.platform_fixtures import START, copy_home, make_home

TODAY = date(2026, 11, 22)
BOUND = dg.AssetKey(["spring", "contribution_bound"])
RELEASE = dg.AssetKey(["spring", "noisy_daily_release"])


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return make_home(tmp_path_factory.mktemp("prepared") / "home", days=8)


def ledger_state(home) -> tuple[list, dict]:
    with Ledger.at_home(home.root) as ledger:
        return ledger.releases("spring"), ledger.campaign_budget("spring").per_day


def step_error(result: dg.ExecuteInProcessResult) -> str:
    failure = next(e for e in result.all_events if e.is_step_failure)
    return str(failure.step_failure_data.error)


def test_a_restored_old_backup_refuses_every_path_and_draws_nothing(
    prepared, tmp_path, capsys
) -> None:
    home = copy_home(prepared, tmp_path / "home")
    config = home.root / "campaigns.yaml"
    instance = dg.DagsterInstance.ephemeral()

    def run(through_day: int, noise) -> None:
        through = START + timedelta(days=through_day - 1)
        run_campaigns(
            config, home.root, instance=instance, today=TODAY, through=through, noise=noise
        )

    run(3, SeededNoise(1))
    backup = tmp_path / "day3.sqlite"
    assert main(["ledger", "backup", "--home", str(home.root), "--to", str(backup)]) == 0
    run(5, SeededNoise(2))
    published, charged = ledger_state(home)
    assert [r.day for r in published] == [1, 2, 3, 4, 5]
    assert main(["ledger", "restore", "--home", str(home.root), "--from", str(backup)]) == 0
    assert "missing days 4, 5" in capsys.readouterr().err

    counting = CountingNoise(3)
    with pytest.raises(PublishedReleaseMissing, match="campaign 'spring': missing days 4, 5"):
        run(6, counting)
    argv = ["run", "--home", str(home.root), "--config", str(config), "--through", "2026-03-06"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("dp-platform run: the ledger does not hold what was published")
    assert "missing days 4, 5" in err and err.count("\n") == 1

    job = build_definitions(config, home.root, noise=counting).resolve_job_def(
        daily_job_name("spring")
    )
    single = {"partition_key": "2026-03-04", "raise_on_error": False}
    for key in (BOUND, BOUND, RELEASE):  # the bound asset alone, its retry, the release alone
        result = job.execute_in_process(instance=instance, asset_selection=[key], **single)
        assert not result.success
        assert "PublishedReleaseMissing" in step_error(result)
        assert "missing days 4, 5" in step_error(result)
    backfill = job.execute_in_process(
        instance=instance,
        raise_on_error=False,
        tags={
            "dagster/asset_partition_range_start": "2026-03-04",
            "dagster/asset_partition_range_end": "2026-03-06",
        },
    )
    assert not backfill.success and "missing days 4, 5" in step_error(backfill)
    assert counting.raw == 0
    assert ledger_state(home) == (published[:3], {d: charged[d] for d in (1, 2, 3)})

    # the check is what stopped them: without the journal, the bound asset alone draws day 4
    control = copy_home(home, tmp_path / "control")
    shutil.rmtree(control.root / "journal")
    control_job = build_definitions(
        control.root / "campaigns.yaml", control.root, noise=counting
    ).resolve_job_def(daily_job_name("spring"))
    redrawn = control_job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), asset_selection=[BOUND], **single
    )
    assert redrawn.success and counting.raw > 0

    # restoring the newest ledger (kept aside by the restore) lets runs carry on
    kept = next(home.root.glob("ledger-before-restore-*.sqlite"))
    capsys.readouterr()  # Dagster's own log lines so far
    assert main(["ledger", "restore", "--home", str(home.root), "--from", str(kept)]) == 0
    assert capsys.readouterr().err == ""
    run(6, SeededNoise(4))
    after, _ = ledger_state(home)
    assert after[:5] == published and [r.day for r in after] == [1, 2, 3, 4, 5, 6]
