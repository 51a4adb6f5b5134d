"""Campaign catalogue: budget accounts and campaigns, validated before anything runs.

The keys are those of docs/operators.md#1-configure-campaigns and the defaults those of
docs/algorithm.md#defaults. Every invalid value is refused with the path of the field and the rule
it broke (``ConfigError``), so an operator never starts a campaign whose privacy plan was silently
altered.

This module is the catalogue's models and their rules. Reading a file is config_loader.py, older
catalogue shapes are folded by config_legacy.py, and the warehouse and ledger blocks are
settings.py."""

from __future__ import annotations

import math
from datetime import date, timedelta
from fractions import Fraction
from typing import Annotated, ClassVar, Literal, Protocol

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializeAsAny,
    ValidationInfo,
    field_validator,
    model_validator,
)

from dp_platform.config_dimensions import (
    CATCH_ALL,
    NAME,
    BreakdownDimension,
    DimensionConfig,
    check_dimension_name,
)
from dp_platform.errors import ConfigError
from dp_platform.settings import LedgerConfig, Strict, WarehouseConfig

# Limits on what a catalogue may say (docs/operators.md#limits). Each keeps every accepted value
# one that `run` can execute, so a catalogue that passes `dp-platform plan` never fails later for
# a configuration reason — after its ρ was reserved.
SPLIT_TOLERANCE = Fraction(1, 10**9)
"""The split may fall short of 1 by this much (rounding of three decimal shares), never exceed 1."""
MAX_DAYS = 366
"""A campaign is at most a (leap) year: the plan solves for an n×n workload's scales."""
FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(2199, 12, 31)
"""Campaign days lie in ingest's accepted time window (docs/data.md), so data can exist for them."""
RHO_FLOOR = 1e-6
"""Smallest ρ of a campaign, reach release or account: below it every part's ε underflows."""
SHARE_FLOOR = 1e-3
"""Smallest non-zero share of a split: a part's ρ stays ≥ ρ·share/days ≫ float underflow."""
MAX_BOUND_CAP = 100_000
"""Largest Λ (contributions per user and day): the quantile scores Λ candidates a day."""
MAX_REACHABLE_BOUND = 1e9
"""Largest bound the SVT can reach from Λ (Λ·s_up^k): every σ and count stays finite."""
MAX_CELLS_PER_PUBLISHER = 10_000
"""Largest number of cells per publisher (value combinations × measures): the release vector
is publishers × this, drawn and stored every day."""


class AccountConfig(Strict):
    """A user population whose total ρ is capped across every campaign that draws on it."""

    name: str
    rho_cap: float = Field(ge=RHO_FLOOR, description="zCDP cap for all campaigns of this account")


class PrivateTouchConfig(Strict):
    """``rule: private_last_touch`` (Agarwal et al. §2): the credited touch is drawn by the
    exponential mechanism, protecting each touch time within ±τ (dp_platform/attribution)."""

    score: Literal["time", "exp_time", "inverse_gap"] = "time"
    tau_hours: float = Field(default=1.0, gt=0, description="τ: protected shift of a touch time")
    alpha_hours: float | None = Field(default=None, gt=0, description="α: inverse_gap only")
    epsilon: float = Field(default=1.0, gt=0, description="ε per conversion's draw")

    @model_validator(mode="after")
    def _alpha(self) -> PrivateTouchConfig:
        if self.score == "inverse_gap" and self.alpha_hours is None:
            raise ValueError("alpha_hours is required when score is inverse_gap")
        return self


class AttributionConfig(Strict):
    rule: Literal["lta", "fta", "uni", "time_decay", "u_shaped", "private_last_touch"] = "lta"
    lookback_days: int = Field(default=30, gt=0, le=366)
    half_life_days: float = Field(default=7.0, gt=0, description="time_decay only")
    private: PrivateTouchConfig = PrivateTouchConfig()

    @property
    def keeps_draws_in_warehouse(self) -> bool:
        """True when attribution draws noise kept in the warehouse: private last touch draws
        each conversion's touch once and stores it there, so the campaign must attribute in one
        warehouse only (dp_platform/warehouse_binding.py)."""
        return self.rule == "private_last_touch"


class SplitConfig(Strict):
    """Shares of ρ: measurement → ρ1, quantile → l·ρ2 (all l days together), svt → ρ3."""

    measurement: float = Field(default=0.7, ge=SHARE_FLOOR, le=1)
    quantile: float = Field(default=0.15, ge=0, le=1)
    svt: float = Field(default=0.15, ge=0, le=1)

    @field_validator("quantile", "svt")
    @classmethod
    def _zero_or_floor(cls, share: float) -> float:
        if 0 < share < SHARE_FLOOR:
            raise ValueError(f"a share is 0 or at least {SHARE_FLOOR:g}")
        return share

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitConfig:
        """Summed exactly by their decimal forms, as the budget is (dp_platform/privacy/
        accounting.py): above 1 by any amount would overspend ρ."""
        shares = (self.measurement, self.quantile, self.svt)
        total = sum((Fraction(repr(share)) for share in shares), Fraction(0))
        if total > 1:
            raise ValueError(
                f"split must sum to 1; measurement + quantile + svt exceeds 1 by "
                f"{float(total - 1):.3g} (summed exactly, as the budget is; lower one share)"
            )
        if total < 1 - SPLIT_TOLERANCE:
            raise ValueError(
                f"split must sum to 1 (within {float(SPLIT_TOLERANCE):g} below), it sums to "
                f"{float(total):.12g}"
            )
        return self


class PrivacyConfig(Strict):
    adjacency: Literal["add_remove", "replace"] = "add_remove"
    rho: float = Field(default=1.0, ge=RHO_FLOOR, description="total zCDP budget of the campaign")
    split: SplitConfig = SplitConfig()


class PrefixWorkload(Strict):
    kind: Literal["prefix"] = "prefix"


class SlidingWorkload(Strict):
    kind: Literal["sliding"]
    window: int = Field(default=7, ge=1)


class DailyWorkload(Strict):
    kind: Literal["daily"]


class RangeWorkload(Strict):
    kind: Literal["range"]
    ranges: list[tuple[int, int]] = Field(min_length=1)

    @field_validator("ranges")
    @classmethod
    def _ordered(cls, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
        for a, b in ranges:
            if not 1 <= a <= b:
                raise ValueError(f"range [{a}, {b}] must satisfy 1 <= start <= end")
        return ranges


class MatrixWorkload(Strict):
    kind: Literal["matrix"]
    path: str


Workload = Annotated[
    PrefixWorkload | SlidingWorkload | DailyWorkload | RangeWorkload | MatrixWorkload,
    Field(discriminator="kind"),
]


class ObjectiveConfig(Strict):
    """How the per-day noise scales are chosen (docs/algorithm.md#scales)."""

    kind: Literal["wsum", "maxvar", "min_budget"] = "wsum"
    last_weight: float = Field(default=7.0, gt=0, description="γ_n; the weight is γ_n²")
    gammas: list[float] | None = Field(default=None, description="γ_j per query (weights γ²)")
    max_variance: float | None = Field(default=None, gt=0, description="min_budget: cap v_j")

    @field_validator("gammas")
    @classmethod
    def _positive(cls, gammas: list[float] | None) -> list[float] | None:
        if gammas is not None and any(not (g >= 0 and math.isfinite(g)) for g in gammas):
            raise ValueError("gammas must be finite and >= 0")
        return gammas

    @model_validator(mode="after")
    def _budget_cap(self) -> ObjectiveConfig:
        if self.kind == "min_budget" and self.max_variance is None:
            raise ValueError("max_variance is required when kind is min_budget")
        return self


def _catch_all_defaulted(data: dict, info: ValidationInfo) -> frozenset[str]:
    """Breakdown names resolved from a catalogue definition that writes no ``catch_all``."""
    declared = (info.context or {}).get("dimensions")
    breakdown = data.get("breakdown")
    if not isinstance(declared, dict) or not isinstance(breakdown, list):
        return frozenset()
    return frozenset(
        item
        for item in breakdown
        if isinstance(item, str) and "catch_all" not in as_block(declared.get(item))
    )


class MechanismSettings(Strict):
    """A mechanism's block in the catalogue, ``mechanism: {kind: NAME, …}`` (or, for a release
    added beside the daily stream such as reach & frequency, a top-level block of its name).

    Each mechanism defines its own subclass in its module (dp_platform/mechanisms/), registered
    by name; the catalogue dispatches on ``kind``, so a block exists only for the mechanism
    chosen. ``legacy_blocks`` are top-level keys of the older catalogue format that belong to
    this mechanism (e.g. ``bounds:``); they are folded into the block, and refused for any other.
    ``privacy_keys`` are keys of the campaign's ``privacy:`` block that only this mechanism reads
    (e.g. ``split``). A campaign that names no mechanism but writes a legacy block or a privacy
    key of one daily mechanism gets that mechanism, not the default (config_legacy.py).
    """

    kind: str
    legacy_blocks: ClassVar[tuple[str, ...]] = ()
    privacy_keys: ClassVar[tuple[str, ...]] = ()
    cell_norm: ClassVar[Literal[1, 2] | None] = None
    """The p of the ℓp norm in which the mechanism's sensitivity bounds a user's contribution,
    when it releases a campaign's cell vector (breakdowns, the value measure:
    dp_platform/cells.py scales each measure so one conversion's cells have norm ≤ 1 in it);
    None: it releases one count per publisher and refuses a campaign that asks for cells."""

    def check(self, campaign: CampaignConfig) -> None:
        """Rules that tie the block to the rest of the campaign (raise ValueError); by default
        the attribution rule must be valid with clipping after attribution."""
        check_attribution(campaign, "post")


def check_attribution(campaign: CampaignConfig, enforcement: str) -> None:
    """The release's configuration must be valid (docs/validity.md): (rule, user, enforcement)."""
    from dp_platform.validity import check

    rule = campaign.attribution.rule
    rule = "lta" if rule == "private_last_touch" else rule
    cell = check(rule, "user", enforcement)
    if not cell.valid:
        raise ValueError(
            f"attribution.rule: ({rule}, user, {enforcement}) is invalid: {cell.reason}"
        )


def as_block(value: object) -> dict[str, object]:
    """A catalogue block as a new dict to fold into ({} for a value that is no mapping)."""
    return dict(value) if isinstance(value, dict) else {}


class MechanismBlocks(Protocol):
    """How a campaign's mechanism blocks are read: what the models need of the mechanism
    registry (dp_platform/mechanisms/). The loader (config_loader.py) passes it as validation
    context ``mechanisms``, so these models never import the mechanisms that build on them."""

    def fold(self, campaign: dict[str, object]) -> dict[str, object]:
        """The campaign's keys with its blocks in the current shape (config_legacy.py)."""
        ...

    def defaulted(self, campaign: dict[str, object]) -> bool:
        """Whether the campaign's mechanism is the default: it names none and writes no key
        of one (config_legacy.py)."""
        ...

    def settings_type(self, kind: str) -> type[MechanismSettings]:
        """The block of ``mechanism: {kind: …}``; ValueError for an unknown kind."""
        ...

    def release_type(self, name: str) -> type[MechanismSettings]:
        """The block of the added release ``name``; ValueError for an unknown one."""
        ...


def _mechanisms(info: ValidationInfo) -> MechanismBlocks:
    blocks = (info.context or {}).get("mechanisms")
    if blocks is None:
        raise ValueError(
            "a campaign is read by the catalogue loader, which knows the registered mechanisms "
            "(dp_platform.config_loader: load_catalogue, parse_catalogue, parse_campaign)"
        )
    return blocks


class CampaignConfig(Strict):
    name: str
    advertiser: str
    account: str
    start: date
    days: int = Field(default=31, ge=2, le=MAX_DAYS)
    publishers: Literal["all"] | list[str] = "all"
    mechanism: SerializeAsAny[MechanismSettings]
    """The chosen mechanism's block; the loader's folding always supplies it (when the catalogue
    names none, the mechanism whose keys it writes, else the default for its adjacency)."""
    attribution: AttributionConfig = AttributionConfig()
    privacy: PrivacyConfig = PrivacyConfig()
    workload: Workload = PrefixWorkload()
    objective: ObjectiveConfig = ObjectiveConfig()
    releases: dict[str, SerializeAsAny[MechanismSettings]] = Field(default_factory=dict)
    """Campaign-level releases added beside the daily stream, by name (e.g. reach)."""
    measures: list[Literal["count", "value"]] = Field(default_factory=lambda: ["count"])
    """What each cell releases: ``[count]`` or ``[count, value]`` (dp_platform/cells.py)."""
    value_cap: float | None = Field(default=None, gt=0)
    """Public cap on one conversion's value (required iff ``value`` is measured)."""
    breakdown: list[BreakdownDimension] = Field(default_factory=list)
    """Dimensions crossing the publisher keys, by name from the catalogue's ``dimensions:``."""
    _mechanism_defaulted: bool = PrivateAttr(default=False)
    _catch_all_defaulted: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def catch_all_defaulted(self) -> frozenset[str]:
        """The breakdown dimensions whose catalogue definition writes no ``catch_all``: their
        catch-all is the default, and a registered campaign keeps the one it registered with
        (none, for a registration older than catch-alls: dp_platform/registration.py)."""
        return self._catch_all_defaulted

    @property
    def mechanism_defaulted(self) -> bool:
        """True when the catalogue names no mechanism and writes no key of one: ``mechanism``
        is then the default for the adjacency, and a registered campaign runs the mechanism it
        registered with instead (a default a newer release changed is not an edit:
        dp_platform/registration.py)."""
        return self._mechanism_defaulted

    @field_validator("measures")
    @classmethod
    def _measures(cls, measures: list[str]) -> list[str]:
        if measures not in (["count"], ["count", "value"]):
            raise ValueError("measures must be [count] or [count, value]")
        return measures

    @field_validator("breakdown", mode="before")
    @classmethod
    def _resolve_breakdown(cls, value: object, info: ValidationInfo) -> object:
        """Names are looked up in the catalogue's ``dimensions:`` (passed as context), a
        definition without ``catch_all`` getting the default :data:`CATCH_ALL` written in; a
        registered campaign carries the definitions themselves."""
        if not isinstance(value, list):
            return value
        declared = (info.context or {}).get("dimensions")
        resolved = []
        for item in value:
            if isinstance(item, str):
                if not isinstance(declared, dict) or item not in declared:
                    raise ValueError(
                        f"dimension {item!r} is not declared under the catalogue's dimensions"
                    )
                item = {"name": item, "catch_all": CATCH_ALL, **as_block(declared[item])}
            resolved.append(item)
        names = [item.get("name") for item in resolved if isinstance(item, dict)]
        if len(set(names)) != len(names):
            raise ValueError("a dimension must not repeat")
        return resolved

    @model_validator(mode="wrap")
    @classmethod
    def _mechanism_blocks(
        cls, data: object, handler: ModelWrapValidatorHandler[CampaignConfig], info: ValidationInfo
    ) -> CampaignConfig:
        """``mechanism: NAME`` or ``{kind: NAME, …}``; the older format's separate blocks
        (``mode: one_shot``, ``one_shot:``, ``adsbpc_plus:``, ``bounds:``) folded into it; a
        block of a mechanism that is not chosen is refused; release blocks (``reach:``) go to
        ``releases`` (config_legacy.py, given by the loader). Whether the mechanism was left to
        the default is kept (:attr:`mechanism_defaulted`)."""
        if not isinstance(data, dict):
            return handler(data)
        blocks = _mechanisms(info)
        campaign = handler(blocks.fold(data))
        campaign._mechanism_defaulted = blocks.defaulted(data)
        campaign._catch_all_defaulted = _catch_all_defaulted(data, info)
        return campaign

    @field_validator("mechanism", mode="before")
    @classmethod
    def _mechanism_type(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, dict):
            return _mechanisms(info).settings_type(str(value.get("kind"))).model_validate(value)
        return value

    @field_validator("releases", mode="before")
    @classmethod
    def _release_types(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, dict):
            return value
        return {
            name: _mechanisms(info)
            .release_type(name)
            .model_validate({"kind": name, **as_block(block)})
            if isinstance(block, dict)
            else block
            for name, block in value.items()
        }

    @field_validator("start")
    @classmethod
    def _in_window(cls, start: date) -> date:
        if not FIRST_DAY <= start <= LAST_DAY:
            raise ValueError(f"start must lie in {FIRST_DAY} .. {LAST_DAY}")
        return start

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError("name must start with a letter and use only letters, digits and _")
        return value

    @field_validator("publishers")
    @classmethod
    def _publishers(cls, value: Literal["all"] | list[str]) -> Literal["all"] | list[str]:
        if isinstance(value, list):
            if not value:
                raise ValueError("publishers must not be empty")
            if len(set(value)) != len(value):
                raise ValueError("publishers must not repeat")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> CampaignConfig:
        if (LAST_DAY - self.start).days < self.days - 1:
            raise ValueError(f"days: the campaign must end by {LAST_DAY}")
        workload = self.workload
        if isinstance(workload, SlidingWorkload) and workload.window > self.days:
            raise ValueError(f"workload.window must be <= days ({self.days})")
        if isinstance(workload, RangeWorkload):
            for a, b in workload.ranges:
                if b > self.days:
                    raise ValueError(f"workload.ranges: [{a}, {b}] ends after day {self.days}")
        self.mechanism.check(self)
        for release in self.releases.values():
            release.check(self)
        self._check_cells()
        return self

    def _check_cells(self) -> None:
        if ("value" in self.measures) != (self.value_cap is not None):
            raise ValueError(
                "value_cap: required when measures include value, and only then"
                if self.value_cap is None
                else "value_cap: only with measures [count, value]"
            )
        if self.value_cap is not None and not math.isfinite(self.value_cap):
            raise ValueError("value_cap must be a finite number > 0")
        for dimension in self.breakdown:
            check_dimension_name(dimension.name)
        if self.cells_per_publisher > MAX_CELLS_PER_PUBLISHER:
            raise ValueError(
                f"breakdown: {self.cells_per_publisher} cells per publisher (value "
                f"combinations × measures); at most {MAX_CELLS_PER_PUBLISHER}"
            )
        if self.cells_per_publisher > 1 and self.mechanism.cell_norm is None:
            raise ValueError(
                f"mechanism: {self.mechanism.kind} releases one count per publisher; breakdown "
                "and the value measure need a mechanism that releases cells "
                "(docs/algorithm.md#cells)"
            )

    @property
    def cells_per_publisher(self) -> int:
        """Value combinations of the breakdown × measures (1 for a count-only campaign)."""
        return math.prod(len(d.cell_values) for d in self.breakdown) * len(self.measures)

    @property
    def end(self) -> date:
        """Last day of the campaign (inclusive)."""
        return self.start + timedelta(days=self.days - 1)

    def day_index(self, day: date) -> int:
        """1-based index of a calendar day within the campaign; refuses days outside it."""
        index = (day - self.start).days + 1
        if not 1 <= index <= self.days:
            raise ConfigError(f"{day} is outside campaign {self.name} ({self.start}..{self.end})")
        return index

    @property
    def several_publishers(self) -> bool:
        """Whether a user's day-i row may spread over > 1 publisher (decides `replace` cost)."""
        return self.publishers == "all" or len(self.publishers) > 1

    @property
    def several_cells(self) -> bool:
        """Whether a user's day-i row may spread over > 1 released cell (decides `replace`
        cost): several publishers, or several cells per publisher."""
        return self.several_publishers or self.cells_per_publisher > 1


class Catalogue(Strict):
    accounts: list[AccountConfig] = Field(min_length=1)
    dimensions: dict[str, DimensionConfig] = Field(default_factory=dict)
    campaigns: list[CampaignConfig] = Field(min_length=1)
    warehouse: WarehouseConfig = WarehouseConfig()
    ledger: LedgerConfig = LedgerConfig()

    @field_validator("dimensions")
    @classmethod
    def _dimension_names(cls, dimensions: dict[str, DimensionConfig]) -> dict:
        for name in dimensions:
            check_dimension_name(name)
        return dimensions

    @model_validator(mode="after")
    def _references(self) -> Catalogue:
        names = [a.name for a in self.accounts]
        if len(set(names)) != len(names):
            raise ValueError("accounts: names must be unique")
        campaign_names = [c.name for c in self.campaigns]
        if len(set(campaign_names)) != len(campaign_names):
            raise ValueError("campaigns: names must be unique")
        for i, campaign in enumerate(self.campaigns):
            if campaign.account not in names:
                raise ValueError(
                    f"campaigns[{i}].account: account {campaign.account!r} is not declared "
                    "under accounts"
                )
        return self

    def campaign(self, name: str) -> CampaignConfig:
        for campaign in self.campaigns:
            if campaign.name == name:
                return campaign
        raise ConfigError(f"campaign {name!r} is not in the catalogue")

    def account(self, name: str) -> AccountConfig:
        for account in self.accounts:
            if account.name == name:
                return account
        raise ConfigError(f"account {name!r} is not in the catalogue")
