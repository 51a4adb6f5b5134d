"""What the audit reads of each private step: one probe per step, one interface for all.

A probe names the step's claim (its share of the registered ρ), designs the canaries that
stress it, makes the step draw its releases in a run, and reads back — from the stored, noisy
releases only, as an advertiser would — the numbers of each canary's own cell. The
distinguisher then learns from those numbers alone.

* daily stream (AdsBPC, AdsBPC+ under any strategy): each day, what was measured (the cells
  as the cell strategy encodes them) projected on the canary's cell, and on its shadows' cell,
  divided by that day's σ — a day's evidence in noise units — with the day's 1/σ and r/σ
  beside them (public: what else the cells hold scales with them);
* a campaign-level release (one-shot, reach): the number of the canary's own cell, in noise
  units, as the mechanism places it (``canary_placement``, ``canary_evidence``).
"""

from __future__ import annotations

import math
from datetime import date
from typing import Protocol

import numpy as np

from dp_platform import mechanisms
from dp_platform.audit.canaries import CanaryDesign, CanarySlot
from dp_platform.audit.options import AuditOptions, AuditSamplers
from dp_platform.cells import CellLayout
from dp_platform.daily import bound_day, campaign_release, release_day
from dp_platform.ledger import Ledger
from dp_platform.plans import CampaignPlan
from dp_platform.registration import Registration
from dp_platform.warehouse.base import WarehouseEngine

__all__ = ["MAX_PER_DAY", "Probe", "above_bound", "probes_of"]


class Probe(Protocol):
    """One private step of a campaign, as the audit sees it."""

    @property
    def step(self) -> str: ...

    def claimed(self, plan: CampaignPlan) -> float:
        """The zCDP ρ this step claims for one user (what the ledger charges for it)."""
        ...

    def design(self, plan: CampaignPlan, options: AuditOptions) -> CanaryDesign: ...

    def release(
        self,
        warehouse: WarehouseEngine,
        ledger: Ledger,
        registration: Registration,
        days: list[date],
        samplers: AuditSamplers,
    ) -> None:
        """Draw (once, through the ledger) every release this step makes in a run."""
        ...

    def features(
        self, ledger: Ledger, registration: Registration, design: CanaryDesign
    ) -> np.ndarray:
        """Per canary slot, the noisy evidence about it (rows: slots)."""
        ...


def _own_publishers(design: CanaryDesign, slot: CanarySlot) -> list[str]:
    """A canary's own publisher key, and its shadows' when it has some."""
    return [slot.publisher, slot.shadow_publisher] if design.shadows else [slot.publisher]


def _direction(layout: CellLayout, publisher: str) -> np.ndarray:
    """The unit vector a canary's day moves the measured vector along: its cell (its publisher,
    every dimension's first listed value: dp_platform/audit/canaries.py), every measure alike
    (a capped value counts as much as a conversion), as the cell strategy encodes it. Its inner
    product with what was measured is the day's evidence: with independent noise on the
    measured entries, the most powerful single number (the cell strategy is public)."""
    entries = np.zeros(layout.size)
    p = layout.publishers.index(publisher)
    start = p * layout.combinations * len(layout.measures)
    entries[start : start + len(layout.measures)] = 1.0
    direction = layout.strategy.encode(entries)
    return direction / np.linalg.norm(direction)


class StreamProbe:
    """The daily releases of AdsBPC or AdsBPC+ (bound choices, filter and noise together)."""

    def __init__(self, mechanism: str) -> None:
        self.step = f"daily releases ({mechanism})"

    def claimed(self, plan: CampaignPlan) -> float:
        assert plan.stream is not None
        return float(plan.stream.total)

    def design(self, plan: CampaignPlan, options: AuditOptions) -> CanaryDesign:
        assert plan.stream is not None
        return _converting(options, plan.stream.largest_bound)

    def release(
        self,
        warehouse: WarehouseEngine,
        ledger: Ledger,
        registration: Registration,
        days: list[date],
        samplers: AuditSamplers,
    ) -> None:
        warehouse.contributions_days(registration.config, days[0], days[-1])
        for day in days:
            bound_day(warehouse, ledger, registration, day, noise=samplers.real)
            release_day(warehouse, ledger, registration, day, noise=samplers.real)

    def features(
        self, ledger: Ledger, registration: Registration, design: CanaryDesign
    ) -> np.ndarray:
        releases = ledger.releases(registration.config.name)
        values = np.array([r.values for r in releases], dtype=np.float64)  # day × cell
        sigmas = np.array([r.sigma for r in releases], dtype=np.float64)
        bounds = np.array([r.bound for r in releases], dtype=np.float64)
        # public per-day covariates: what the shadow cell holds (its shadows, once a day each)
        # and what a canary at the bound adds scale with them, so the distinguisher can take
        # them out rather than mistake a day's bound for evidence
        covariates = np.concatenate([1.0 / sigmas, bounds / sigmas])
        layout = registration.layout
        strategy = layout.strategy
        measured = np.array([strategy.encode(v) for v in values])  # what the noise was added to
        rows = []
        for slot in design.slots:
            days = [
                measured @ _direction(layout, p) / sigmas for p in _own_publishers(design, slot)
            ]
            rows.append(np.concatenate([*days, covariates]))
        return np.array(rows)


class CampaignLevelProbe:
    """A release over the whole period (one-shot, reach …): drawn once after the last day.
    The mechanism says where a canary shows (``canary_placement``, ``canary_evidence``)."""

    def __init__(self, name: str) -> None:
        self.step = name
        self._name = name
        self._mechanism = mechanisms.campaign_level(name)

    def claimed(self, plan: CampaignPlan) -> float:
        return float(self._mechanism.charge(plan.releases[self._name]))

    def design(self, plan: CampaignPlan, options: AuditOptions) -> CanaryDesign:
        placement = self._mechanism.canary_placement(plan.releases[self._name])
        if placement.frequencies is not None:
            return CanaryDesign.seen(list(placement.frequencies))
        return _converting(options, placement.largest_bound)

    def release(
        self,
        warehouse: WarehouseEngine,
        ledger: Ledger,
        registration: Registration,
        days: list[date],
        samplers: AuditSamplers,
    ) -> None:
        campaign_release(
            warehouse,
            ledger,
            registration,
            self._name,
            noise=samplers.real,
            integer_noise=samplers.integer,
        )

    def features(
        self, ledger: Ledger, registration: Registration, design: CanaryDesign
    ) -> np.ndarray:
        payload = ledger.campaign_releases(registration.config.name)[self._name]
        evidence = self._mechanism.canary_evidence
        return np.array(
            [
                [evidence(payload, p, slot.frequency) for p in _own_publishers(design, slot)]
                for slot in design.slots
            ]
        )


MAX_PER_DAY = 1_000
"""The most conversions a canary makes a day, whatever the plan's largest bound: a plan whose
SVT could raise its bound higher gets canaries that may sit below the bound on such days."""


def above_bound(bound: float) -> int:
    """Conversions a day that keep a canary at the bound, and twice over it (so a clip that
    kept twice the bound, or none, would show): 2⌈bound⌉ + 1, at most :data:`MAX_PER_DAY`."""
    return min(2 * math.ceil(bound) + 1, MAX_PER_DAY)


def _converting(options: AuditOptions, largest_bound: float) -> CanaryDesign:
    """Converting canaries past ``largest_bound`` (or the operator's ``per_day``)."""
    per_day = options.per_day or above_bound(largest_bound)
    return CanaryDesign.converting(options.canaries, per_day, options.shadows)


def probes_of(plan: CampaignPlan) -> list[Probe]:
    """Every private step of a plan, in order: the daily stream, then each campaign release."""
    probes: list[Probe] = []
    if plan.stream is not None and plan.mechanism is not None:
        probes.append(StreamProbe(plan.mechanism))
    probes += [CampaignLevelProbe(name) for name in plan.releases]
    return probes
