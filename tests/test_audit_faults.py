"""The audit catches real privacy bugs: deliberate faults in a copy of the pipeline.

Each fault is injected into this process's pipeline (tests/audit_faults.py) and the campaign is
audited end to end on the DuckDB engine, seeded noise and seeded coins (so the outcome is fixed).
The correct pipeline's lower bound stays below the claimed ρ; each fault's lower bound exceeds
it at 95 % confidence:

* noise σ halved (a sampler bug after OpenDP's check): the releases cost 4× their charge;
* sensitivity understated 2× (a clip that keeps twice the bound): 4×;
* clipping skipped: a canary's whole day counts;
* event ids deduplicated across users, as before ingest keyed events on (user, id): other users'
  events vanish with the canary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dp_platform.audit.options import AuditOptions
from dp_platform.audit.runner import StepAudit, audit_campaign
from dp_platform.config_loader import load_catalogue
from dp_platform.privacy.noise import SeededNoise
from tests.audit_faults import (
    DOUBLE_CLIP,
    IDS_ACROSS_USERS,
    SKIP_CLIPPING,
    HalvedNoise,
    seeded_samplers,
    sql_fault,
)

CATALOGUE = Path(__file__).parent / "audit_catalogue.yaml"
CAMPAIGN = "adsbpc_short"
OPTIONS = AuditOptions(runs=40, canaries=50)


def _audit(noise: type[SeededNoise] = SeededNoise) -> StepAudit:
    (result,) = audit_campaign(
        load_catalogue(CATALOGUE),
        CAMPAIGN,
        OPTIONS,
        base_dir=CATALOGUE.parent,
        samplers=seeded_samplers(11, noise),
        inclusion_seed=5,
    )
    return result


def test_the_correct_pipeline_holds_and_the_audit_sees_its_canaries() -> None:
    result = _audit()
    assert result.step == "daily releases (adsbpc)"
    assert result.claimed_rho == pytest.approx(1.0)
    assert result.holds, result
    # not a blind audit: the guesses beat chance on the held-out runs
    assert result.rho_lower > 0.0, result
    assert result.counts.included + result.counts.excluded == OPTIONS.runs // 2 * 50


def test_noise_at_half_its_sigma_is_caught() -> None:
    result = _audit(noise=HalvedNoise)
    assert result.rho_lower > result.claimed_rho, result


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(DOUBLE_CLIP, id="sensitivity-understated-2x"),
        pytest.param(SKIP_CLIPPING, id="clipping-skipped"),
        pytest.param(IDS_ACROSS_USERS, id="ids-deduplicated-across-users"),
    ],
)
def test_a_pipeline_fault_is_caught(monkeypatch: pytest.MonkeyPatch, fault: dict) -> None:
    with sql_fault(monkeypatch, fault):
        result = _audit()
    assert result.rho_lower > result.claimed_rho, result
