"""A campaign's registration: the configuration, plan and publisher keys fixed when it starts.

Once a campaign is registered, the ledger's record is the only source of every value a step that
draws noise, clips under a filter or charges the ledger uses — σ̄_i and allotments, the
adjacency factor, the filter cap, the split, the workload and the publisher keys. The catalogue
(YAML) is read only to register and to compare: an edited campaign is refused with
:class:`~dp_platform.ledger.PlanMismatch` naming every changed field, whichever asset or command
meets it first. Reading the plan back instead of re-planning from the YAML means no path — a
single-asset materialisation, a retry, a backfill — can run on numbers other than those reserved.

Publisher keys are frozen here too: an explicit list as written, or for ``publishers: all`` the
advertiser's publishers known to the warehouse at registration (the media plan, assumed public).
A publisher seen later never becomes a key and never halts the campaign (docs/operators.md).

A campaign whose mechanism keeps per-user state in the warehouse (AdsBPC+) is bound here to the
registering home's warehouse, and checked against it on every later registration
(dp_platform/warehouse_binding.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dp_platform import mechanisms
from dp_platform.cells import CellLayout, layout_of
from dp_platform.config import AccountConfig, CampaignConfig
from dp_platform.config_loader import parse_campaign
from dp_platform.errors import ConfigError
from dp_platform.ledger import Ledger, LedgerError, PlanMismatch
from dp_platform.ledger_records import CampaignRecord
from dp_platform.mechanisms.base import plan_marginals
from dp_platform.plans import CampaignPlan
from dp_platform.records import JsonValue
from dp_platform.warehouse_binding import require_warehouse

__all__ = [
    "Declaration",
    "Registration",
    "changed_fields",
    "declaration",
    "load_registration",
    "registered_campaign",
]

MATRIX_FIELD = "workload.matrix_sha256"


@dataclass(frozen=True)
class Declaration:
    """A catalogue entry as written: every field's value, and which fields were written."""

    values: dict[str, JsonValue]
    explicit: frozenset[str]

    def to_record(self) -> dict[str, JsonValue]:
        return {"values": self.values, "explicit": sorted(self.explicit)}

    @classmethod
    def from_record(cls, data: dict) -> Declaration:
        return cls(dict(data["values"]), frozenset(data["explicit"]))


def _flatten(data: object, prefix: str = "") -> dict[str, JsonValue]:
    if isinstance(data, dict) and data:
        out: dict[str, JsonValue] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}  # type: ignore[dict-item]


def declaration(campaign: CampaignConfig, base_dir: str | Path | None) -> Declaration:
    """The fields of ``campaign`` by dotted path; a workload matrix counts by its content."""
    values = _flatten(campaign.model_dump(mode="json"))
    explicit = set(_flatten(campaign.model_dump(mode="json", exclude_defaults=True)))
    if campaign.workload.kind == "matrix":
        path = Path(campaign.workload.path)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        try:
            values[MATRIX_FIELD] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as error:
            raise ConfigError(f"workload.path: cannot read {path} ({error.strerror})") from None
        explicit.add(MATRIX_FIELD)
    return Declaration(values, frozenset(explicit))


def changed_fields(registered: Declaration, current: Declaration) -> list[str]:
    """Fields the operator changed since registration, as "path: old → new".

    Compared are the fields written on either side; a default that a newer platform release
    changed is not an edit (the registered plan keeps running on the registered value).
    """
    changes = []
    for path in sorted(registered.explicit | current.explicit):
        old, new = registered.values.get(path), current.values.get(path)
        if old != new:
            changes.append(f"{path}: {_show(old)} → {_show(new)}")
    return changes


def _show(value: JsonValue) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, str) and len(value) == 64:  # a content hash
        return value[:12]
    return json.dumps(value) if not isinstance(value, str) else value


@dataclass(frozen=True)
class Registration:
    """A campaign as registered: what every privacy step of it uses."""

    config: CampaignConfig  # as registered, ``publishers`` the frozen key list
    plan: CampaignPlan
    account: str
    ended_at: str | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def publishers(self) -> list[str]:
        assert isinstance(self.config.publishers, list)
        return list(self.config.publishers)

    @property
    def layout(self) -> CellLayout:
        """The registered cells and how they are measured (the stream plan's marginals)."""
        stream = self.plan.stream
        marginals = None if stream is None else plan_marginals(stream)
        return layout_of(self.config, self.publishers, marginals)


def _decode(record: CampaignRecord) -> Registration:
    return Registration(
        config=parse_campaign(record.config),
        plan=CampaignPlan.from_record(record.plan),
        account=record.account,
        ended_at=record.ended_at,
    )


def find_registration(ledger: Ledger, name: str) -> Registration | None:
    """The registered campaign, or None when the ledger has not registered it (one read)."""
    record = ledger.campaign_record(name)
    return None if record is None else _decode(record)


def load_registration(ledger: Ledger, name: str) -> Registration:
    """The registered campaign (read-only paths: releases, budget, answers)."""
    registration = find_registration(ledger, name)
    if registration is None:
        raise LedgerError(f"campaign {name} is not registered in the ledger")
    return registration


def _registered_mechanism(campaign: CampaignConfig, record: CampaignRecord) -> CampaignConfig:
    """``campaign`` as compared with its registration: when its entry names no mechanism
    (``mechanism_defaulted``), with the daily mechanism it registered with. The default depends
    on the platform release (AdsBPC+ under add/remove since issue 27, AdsBPC before), and a
    changed default is not an edit: the entry is compared as if it named the registered
    mechanism with no settings of its own, so its other fields, and any setting the
    registration wrote, are still compared. An entry that names a mechanism, or a registration
    whose mechanism replaces the daily stream (never a default), is compared as it is."""
    block = record.config.get("mechanism")
    kind = block.get("kind") if isinstance(block, dict) else None
    if not campaign.mechanism_defaulted or kind == campaign.mechanism.kind:
        return campaign
    if kind not in mechanisms.STREAM:
        return campaign
    settings = mechanisms.settings_type(kind).model_validate({"kind": kind})
    return campaign.model_copy(update={"mechanism": settings})


def _registered_catch_alls(campaign: CampaignConfig, record: CampaignRecord) -> CampaignConfig:
    """``campaign`` as compared with its registration: a breakdown dimension whose catalogue
    definition writes no ``catch_all`` (``catch_all_defaulted``) takes the catch-all it
    registered with — none for a registration older than catch-alls, whose cells must not
    grow. Like a defaulted mechanism, a default is not an edit; a written one is compared."""
    if not campaign.catch_all_defaulted:
        return campaign
    breakdown = record.config.get("breakdown")
    registered = {
        item.get("name"): item.get("catch_all")
        for item in (breakdown if isinstance(breakdown, list) else [])
        if isinstance(item, dict)
    }
    dimensions = [
        dimension.model_copy(update={"catch_all": registered[dimension.name]})
        if dimension.name in campaign.catch_all_defaulted and dimension.name in registered
        else dimension
        for dimension in campaign.breakdown
    ]
    return campaign.model_copy(update={"breakdown": dimensions})


def _refuse_edits(record: CampaignRecord, current: Declaration) -> None:
    changes = changed_fields(Declaration.from_record(record.declared), current)
    if changes:
        raise PlanMismatch(
            f"campaign {record.name} was registered with a different configuration "
            f"({'; '.join(changes)}); nothing was drawn or charged. Its releases follow the "
            "registered plan: restore those values, or end it (`dp-platform campaign end "
            f"{record.name}`) and register the edited campaign under a new name "
            "(docs/operators.md, 'Changing a running campaign')"
        )


def registered_campaign(
    ledger: Ledger,
    campaign: CampaignConfig,
    plan: CampaignPlan,
    account: AccountConfig,
    *,
    advertiser_publishers: Callable[[], list[str]],
    warehouse_identity: Callable[[], str],
    base_dir: str | Path | None = None,
) -> Registration:
    """The campaign as registered — registering it now (reserving its plan, freezing its
    publisher keys) if it is new — after refusing a catalogue entry that differs from it, and a
    campaign with per-user state registered from another warehouse (WarehouseMismatch).

    ``advertiser_publishers`` is asked only when a ``publishers: all`` campaign registers;
    ``warehouse_identity`` (the home's ``WarehouseEngine.identity``) only for a campaign with
    per-user state.
    """
    record = ledger.campaign_record(campaign.name)
    if record is not None:
        campaign = _registered_mechanism(campaign, record)  # a changed default: no edit
        campaign = _registered_catch_alls(campaign, record)
    current = declaration(campaign, base_dir)
    if record is None:
        if isinstance(campaign.publishers, list):
            publishers = list(campaign.publishers)
        else:
            publishers = list(advertiser_publishers())
            if not publishers:
                raise ConfigError(
                    f"campaign {campaign.name}: publishers: all, but advertiser "
                    f"{campaign.advertiser} has no publisher in the warehouse yet; ingest its "
                    "impressions first or list the publishers"
                )
        frozen = campaign.model_copy(update={"publishers": publishers})
        ledger.register(
            CampaignRecord(
                name=campaign.name,
                account=account.name,
                days=campaign.days,
                planned=plan.total,
                declared=current.to_record(),
                config=frozen.model_dump(mode="json"),
                plan=plan.to_record(),
            ),
            account,
        )
        record = ledger.campaign_record(campaign.name)  # ours, or a racing process's
        assert record is not None
    _refuse_edits(record, current)
    registration = _decode(record)
    require_warehouse(ledger, registration, warehouse_identity)
    return registration
