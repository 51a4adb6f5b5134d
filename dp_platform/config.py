"""Campaign catalogue: budget accounts and campaigns, validated before anything runs.

The keys are those of design.md §3.1 and the defaults those of adsbpc.md §4. Every invalid value
is refused with the path of the field and the rule it broke (``ConfigError``), so an operator
never starts a campaign whose privacy plan was silently altered.
"""

from __future__ import annotations

import math
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SPLIT_TOLERANCE = 1e-9


class ConfigError(ValueError):
    """A configuration value broke a rule; the message names the field and the rule."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AccountConfig(_Strict):
    """A user population whose total ρ is capped across every campaign that draws on it."""

    name: str
    rho_cap: float = Field(gt=0, description="zCDP cap for all campaigns of this account")


class PrivateTouchConfig(_Strict):
    """``rule: private_last_touch`` (seed 000 §2): the credited touch is drawn by the
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


class AttributionConfig(_Strict):
    rule: Literal["lta", "fta", "uni", "time_decay", "u_shaped", "private_last_touch"] = "lta"
    lookback_days: int = Field(default=30, gt=0, le=366)
    half_life_days: float = Field(default=7.0, gt=0, description="time_decay only")
    private: PrivateTouchConfig = PrivateTouchConfig()


class SplitConfig(_Strict):
    """Shares of ρ: measurement → ρ1, quantile → l·ρ2 (all l days together), svt → ρ3."""

    measurement: float = Field(default=0.7, gt=0, le=1)
    quantile: float = Field(default=0.15, ge=0, le=1)
    svt: float = Field(default=0.15, ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitConfig:
        total = self.measurement + self.quantile + self.svt
        if abs(total - 1.0) > _SPLIT_TOLERANCE:
            raise ValueError(f"split must sum to 1 (measurement + quantile + svt = {total:g})")
        return self


class PrivacyConfig(_Strict):
    adjacency: Literal["add_remove", "replace"] = "add_remove"
    rho: float = Field(default=1.0, gt=0, description="total zCDP budget of the campaign")
    split: SplitConfig = SplitConfig()


class PrefixWorkload(_Strict):
    kind: Literal["prefix"] = "prefix"


class SlidingWorkload(_Strict):
    kind: Literal["sliding"]
    window: int = Field(default=7, ge=1)


class DailyWorkload(_Strict):
    kind: Literal["daily"]


class RangeWorkload(_Strict):
    kind: Literal["range"]
    ranges: list[tuple[int, int]] = Field(min_length=1)

    @field_validator("ranges")
    @classmethod
    def _ordered(cls, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
        for a, b in ranges:
            if not 1 <= a <= b:
                raise ValueError(f"range [{a}, {b}] must satisfy 1 <= start <= end")
        return ranges


class MatrixWorkload(_Strict):
    kind: Literal["matrix"]
    path: str


Workload = Annotated[
    PrefixWorkload | SlidingWorkload | DailyWorkload | RangeWorkload | MatrixWorkload,
    Field(discriminator="kind"),
]


class ObjectiveConfig(_Strict):
    """How the per-day noise scales are chosen (adsbpc.md §3)."""

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


class BoundsConfig(_Strict):
    """Private choice of the daily contribution bound (adsbpc.md §4)."""

    quantile_days: int = Field(default=7, ge=1, description="l: days chosen by PrivateQuantile")
    p: float = Field(default=0.99, gt=0, lt=1)
    cap: int = Field(default=10, ge=1, description="Λ: upper end of the quantile's range")
    s_up: float = 1.3
    s_down: float = 0.8
    t_up: float = Field(default=50.0, ge=0)
    t_down: float = Field(default=50.0, ge=0)
    max_reports: int = Field(default=7, ge=1, description="k: positive reports per SVT")

    @field_validator("s_up")
    @classmethod
    def _s_up(cls, value: float) -> float:
        if not value > 1:
            raise ValueError("s_up must be > 1")
        return value

    @field_validator("s_down")
    @classmethod
    def _s_down(cls, value: float) -> float:
        if not 0 < value < 1:
            raise ValueError("s_down must be in (0, 1)")
        return value


class AdsbpcPlusConfig(_Strict):
    """AdsBPC+ (``mechanism: adsbpc_plus``): individual filter, cheap bounds (adsbpc_plus.py).

    Shares of ρ: ``histogram`` for the n daily noisy count histograms, ``profile`` for the one
    noisy profile histogram after ``profile_days``; the rest (ρ1) is each user's filter budget.
    """

    histogram_share: float = Field(default=0.03, gt=0, lt=1)
    profile_share: float = Field(default=0.02, ge=0, lt=1)
    profile_days: int = Field(default=7, ge=0, description="m: days the profile is read from")
    quantile: float = Field(default=0.99, gt=0, lt=1, description="q of the per-user profile")
    prior_scale: float = Field(
        default=0.5, gt=0, le=1, description="ψ0: σ_i = σ̄_i·ψ0·r_i on days 1..m (public prior)"
    )
    cap: int = Field(default=10, ge=1, description="Λ: largest daily bound r_i")
    pool_days: int = Field(default=7, ge=1, description="noisy histograms pooled for r_i")
    scale_prior: float | None = Field(
        default=None,
        gt=0,
        description=(
            "s0: profile scale kept when the noisy profile cannot rule it out "
            "(default ψ0·Λ; set Λ to fall back on cutting nobody)"
        ),
    )

    @property
    def profile_prior(self) -> float:
        """s0 in conversions: the configured prior, or ψ0·Λ (the scale days 1..m plan for)."""
        return self.scale_prior if self.scale_prior is not None else self.prior_scale * self.cap

    @model_validator(mode="after")
    def _shares(self) -> AdsbpcPlusConfig:
        if self.scale_prior is not None and self.scale_prior > self.cap:
            raise ValueError(f"scale_prior must be <= cap ({self.cap})")
        if self.histogram_share + self.profile_share >= 1:
            raise ValueError("histogram_share + profile_share must be < 1 (rho1 needs a share)")
        if (self.profile_days == 0) != (self.profile_share == 0):
            raise ValueError("profile_share must be > 0 exactly when profile_days > 0")
        return self


class OneShotConfig(_Strict):
    """``mode: one_shot``: one Laplace release of the whole period (dp_platform/oneshot.py)."""

    enforcement: Literal["pre", "post"] = "post"
    bound: float = Field(default=1.0, gt=0, description="r: conversions kept per user")
    measure: Literal["count", "value"] = "count"
    value_cap: float = Field(default=1.0, gt=0, description="Δ(f): largest value counted")
    noise: Literal["laplace", "discrete_laplace"] = "laplace"


class ReachConfig(_Strict):
    """Reach and k+-frequency over the whole period (dp_platform/reach.py); its own ρ."""

    rho: float = Field(gt=0, description="zCDP budget of the reach release (on the account)")
    max_frequency: int = Field(default=10, ge=1, description="K: frequencies >= K pooled")


def _check_validity(campaign: CampaignConfig) -> None:
    """The release's configuration must be valid (docs/validity.md); one_shot's options sound."""
    from dp_platform.validity import check

    rule = campaign.attribution.rule
    rule = "lta" if rule == "private_last_touch" else rule
    one_shot = campaign.one_shot
    enforcement = one_shot.enforcement if campaign.mode == "one_shot" else "post"
    cell = check(rule, "user", enforcement)
    if not cell.valid:
        raise ValueError(
            f"attribution.rule: ({rule}, user, {enforcement}) is invalid: {cell.reason}"
        )
    if campaign.mode != "one_shot":
        return
    if campaign.mechanism != "adsbpc":
        raise ValueError("mode: one_shot replaces the daily mechanism; leave mechanism at adsbpc")
    if one_shot.enforcement == "pre" and one_shot.bound != int(one_shot.bound):
        raise ValueError("one_shot.bound: a pre-attribution bound counts conversions (integer)")
    if one_shot.noise == "discrete_laplace" and (
        one_shot.measure != "count"
        or one_shot.bound != int(one_shot.bound)
        or rule not in {"lta", "fta"}
    ):
        raise ValueError(
            "one_shot.noise: discrete_laplace needs integer sums (measure count, an integer "
            "bound and a single-touch rule)"
        )


class CampaignConfig(_Strict):
    name: str
    advertiser: str
    account: str
    start: date
    days: int = Field(default=31, ge=2)
    publishers: Literal["all"] | list[str] = "all"
    mechanism: Literal["adsbpc", "adsbpc_plus"] = "adsbpc"
    attribution: AttributionConfig = AttributionConfig()
    privacy: PrivacyConfig = PrivacyConfig()
    workload: Workload = PrefixWorkload()
    objective: ObjectiveConfig = ObjectiveConfig()
    bounds: BoundsConfig = BoundsConfig()
    adsbpc_plus: AdsbpcPlusConfig = AdsbpcPlusConfig()
    mode: Literal["adsbpc", "one_shot"] = "adsbpc"
    one_shot: OneShotConfig = OneShotConfig()
    reach: ReachConfig | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
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
        if self.mechanism == "adsbpc" and self.bounds.quantile_days >= self.days:
            raise ValueError(
                f"bounds.quantile_days: l must be < days (l = {self.bounds.quantile_days}, "
                f"days = {self.days})"
            )
        workload = self.workload
        if isinstance(workload, SlidingWorkload) and workload.window > self.days:
            raise ValueError(f"workload.window must be <= days ({self.days})")
        if isinstance(workload, RangeWorkload):
            for a, b in workload.ranges:
                if b > self.days:
                    raise ValueError(f"workload.ranges: [{a}, {b}] ends after day {self.days}")
        if self.mechanism == "adsbpc_plus" and self.privacy.adjacency == "replace":
            raise ValueError(
                "privacy.adjacency: adsbpc_plus supports add_remove only (its individual filter "
                "bounds each user's own loss; under replace a pair of users can lose up to 4x "
                "rho1); use add_remove or mechanism adsbpc"
            )
        if self.mechanism == "adsbpc_plus" and self.adsbpc_plus.profile_days >= self.days:
            raise ValueError(
                f"adsbpc_plus.profile_days: m must be < days (m = "
                f"{self.adsbpc_plus.profile_days}, days = {self.days})"
            )
        split = self.privacy.split
        if split.quantile == 0 or split.svt == 0:
            raise ValueError("privacy.split: quantile and svt must be > 0 for adsbpc")
        _check_validity(self)
        return self

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


# Spark settings the platform's session fixes: each shows per-operator row counts (private
# values) in a UI, an event log, a listener or a metrics sink (dp_platform/warehouse/spark/
# session.py sets them; a catalogue may not change them).
SPARK_PRIVATE_PREFIXES = (
    "spark.ui.",
    "spark.eventLog.",
    "spark.history.",
    "spark.sql.ui.",
    "spark.sql.streaming.ui.",
    "spark.metrics.",
    "spark.extraListeners",
    "spark.sql.queryExecutionListeners",
    "spark.sql.sources.partitionOverwriteMode",
    "spark.sql.session.timeZone",
    "spark.sql.hive.manageFilesourcePartitions",
)


class SparkSettings(_Strict):
    """Where and how the Spark engine runs (docs/operators.md, "Spark")."""

    master: str = Field(default="local[2]", description="Spark master URL")
    path: str | None = Field(
        default=None, description="root of the Parquet tables (default <home>/spark/tables)"
    )
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark settings")

    @field_validator("conf")
    @classmethod
    def _private(cls, conf: dict[str, str]) -> dict[str, str]:
        for key in conf:
            if key.startswith(SPARK_PRIVATE_PREFIXES):
                raise ValueError(
                    f"{key} is fixed by the platform (a UI, event log, listener or metrics "
                    "sink would expose per-operator row counts; time zone and partition "
                    "overwrite are part of the storage format)"
                )
        return conf


class WarehouseConfig(_Strict):
    """The warehouse engine: embedded DuckDB (default, the reference) or Apache Spark."""

    engine: Literal["duckdb", "spark"] = "duckdb"
    spark: SparkSettings = SparkSettings()


class Catalogue(_Strict):
    accounts: list[AccountConfig] = Field(min_length=1)
    campaigns: list[CampaignConfig] = Field(min_length=1)
    warehouse: WarehouseConfig = WarehouseConfig()

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


def _format_location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in {"prefix", "sliding", "daily", "range", "matrix"} and out.endswith("workload"):
            continue  # discriminated-union tag: the user wrote `workload`, not `workload.sliding`
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{_format_location(item['loc'])}: {message}")
    return "; ".join(lines)


def parse_catalogue(data: object) -> Catalogue:
    """Validate a catalogue given as plain data (the parsed YAML)."""
    try:
        return Catalogue.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def parse_campaign(data: object) -> CampaignConfig:
    """Validate one campaign given as plain data."""
    try:
        return CampaignConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def load_catalogue(path: str | Path) -> Catalogue:
    """Read and validate a YAML catalogue; a missing file or bad YAML is a ConfigError too."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error})") from None
    return parse_catalogue(data)
