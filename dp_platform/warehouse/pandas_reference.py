"""A straightforward pandas implementation of the warehouse's stages, for ``dp-platform bench``.

Same inputs, same rules, same outputs as the SQL (tests check they agree), written the way a
careful data scientist would with pandas: read the files, validate with vectorised masks,
factorise the string ids once into integer codes (sorted, so code order is id order and ties
still break by id), then per day merge the day's conversions with the impressions of the
look-back window on the user, filter, find each conversion's first and last candidate with
group-wise min/max, weight, and aggregate. It exists to measure what the DuckDB warehouse
buys; nothing in the platform uses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dp_platform.clipping import count_fraction
from dp_platform.config import CampaignConfig

__all__ = ["PandasPipeline"]

_IMP = ["impression_id", "user_id", "publisher_id", "advertiser_id", "ts", "interaction"]
_CONV = ["conversion_id", "user_id", "advertiser_id", "ts"]


def _strings_as_arrow(kind: pa.DataType) -> pd.ArrowDtype | None:
    """Plain strings stay Arrow-backed (compact); dictionaries become categoricals."""
    return pd.ArrowDtype(kind) if pa.types.is_string(kind) else None


def _read(path: Path) -> pd.DataFrame:
    if path.suffix.lower() in {".parquet", ".pq"}:
        return pq.read_table(path).to_pandas(types_mapper=_strings_as_arrow)
    return pd.read_csv(path, dtype="string[pyarrow]", keep_default_na=False)


def _text(column: pd.Series) -> pd.Series:
    """Trimmed text, empty → missing (the SQL's rule); categoricals are trimmed per category."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        names = column.cat.categories.astype("string").str.strip()
        names = names.where(names != "")
        codes = column.cat.codes.to_numpy()
        values = np.where(codes >= 0, names.to_numpy(dtype=object)[codes], None)
        return pd.Series(pd.Categorical(values), index=column.index)
    text = column.astype("string[pyarrow]").str.strip()
    return text.mask(text == "")


def _parse_ts(column: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(column.dtype):
        parsed = column.dt.tz_localize("UTC") if column.dt.tz is None else column
    else:
        parsed = pd.to_datetime(_text(column), utc=True, errors="coerce", format="ISO8601")
    return parsed.dt.tz_localize(None)


def _reasons(frame: pd.DataFrame, checks: list[tuple[pd.Series, str]]) -> pd.Series:
    """The first failing check's name per row (NaN = accepted), like the SQL's CASE."""
    reason = np.full(len(frame), None, dtype=object)
    for mask, name in checks:
        hit = np.asarray(mask.fillna(False), dtype=bool) & (reason == None)  # noqa: E711
        reason[hit] = name
    return pd.Series(reason, index=frame.index)


def _repeated(frame: pd.DataFrame, id_column: str, reason: pd.Series) -> pd.Series:
    """Rows that passed the checks and repeat an earlier passing row's (user, id): an event is
    its user and its id, as in the SQL (another user's row with the same id is another event)."""
    return (
        frame.loc[reason.isna(), ["user_id", id_column]]
        .duplicated()
        .reindex(frame.index, fill_value=False)
    )


@dataclass
class PandasPipeline:
    """In-memory frames standing in for the warehouse."""

    campaign: CampaignConfig
    impressions: pd.DataFrame = field(default_factory=pd.DataFrame)
    conversions: pd.DataFrame = field(default_factory=pd.DataFrame)
    publisher_names: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    attributed: dict[date, pd.DataFrame] = field(default_factory=dict)
    contributions: dict[date, pd.Series] = field(default_factory=dict)

    # -- ingest ------------------------------------------------------------------------------

    def ingest(self, impressions: str | Path, conversions: str | Path, now: datetime) -> dict:
        """Validate both files like the SQL (reasons in the same order), keep accepted rows."""
        moment = pd.Timestamp(now if now.tzinfo else now.replace(tzinfo=UTC))
        cutoff = moment.tz_convert("UTC").tz_localize(None)
        imps = _read(Path(impressions))
        for column in _IMP:
            imps[column] = _parse_ts(imps[column]) if column == "ts" else _text(imps[column])
        interaction = imps["interaction"].str.lower()
        checks = [(imps[c].isna(), f"missing_{c}") for c in _IMP]
        checks += [
            (~interaction.isin(["view", "click"]), "unknown_interaction"),
            (imps["ts"] > cutoff, "future_ts"),
        ]
        reason = _reasons(imps, checks)
        reason[reason.isna() & _repeated(imps, "impression_id", reason)] = "duplicate_in_load"
        keep = reason.isna()
        imps = imps.loc[keep, _IMP[:-1]]
        report = {"impressions": {"accepted": int(keep.sum()), "reasons": reason.value_counts()}}

        convs = _read(Path(conversions))
        for column in _CONV:
            convs[column] = _parse_ts(convs[column]) if column == "ts" else _text(convs[column])
        raw = _text(convs["value"]) if "value" in convs else pd.Series(pd.NA, index=convs.index)
        value = pd.to_numeric(raw, errors="coerce").astype("float64")
        checks = [(convs[c].isna(), f"missing_{c}") for c in _CONV]
        checks += [
            (raw.notna() & ~np.isfinite(value), "unparsable_value"),
            (value < 0, "negative_value"),
            (convs["ts"] > cutoff, "future_ts"),
        ]
        reason = _reasons(convs, checks)
        reason[reason.isna() & _repeated(convs, "conversion_id", reason)] = "duplicate_in_load"
        keep = reason.isna()
        convs = convs.loc[keep, _CONV]
        report["conversions"] = {"accepted": int(keep.sum()), "reasons": reason.value_counts()}

        # integer codes; sorted, so comparing codes compares ids
        users = pd.concat([imps["user_id"], convs["user_id"]], ignore_index=True)
        user_codes, _ = pd.factorize(users, sort=True)
        pub_codes, pub_names = pd.factorize(imps["publisher_id"], sort=True)
        self.publisher_names = np.asarray(pub_names, dtype=object)
        self.impressions = pd.DataFrame(
            {
                "imp": pd.factorize(imps["impression_id"], sort=True)[0],
                "user": user_codes[: len(imps)],
                "pub": pub_codes,
                "mine": (imps["advertiser_id"] == self.campaign.advertiser).to_numpy(bool),
                "ts": imps["ts"].to_numpy(),
            }
        )
        self.conversions = pd.DataFrame(
            {
                "conv": pd.factorize(convs["conversion_id"], sort=True)[0],
                "user": user_codes[len(imps) :],
                "mine": (convs["advertiser_id"] == self.campaign.advertiser).to_numpy(bool),
                "ts": convs["ts"].to_numpy(),
            }
        )
        for part in report.values():
            part["reasons"] = {str(k): int(v) for k, v in part["reasons"].items()}
        return report

    # -- stages --------------------------------------------------------------------------------

    def publishers(self) -> list[str]:
        """The release's publishers, as Warehouse.campaign_publishers."""
        if isinstance(self.campaign.publishers, list):
            return list(self.campaign.publishers)
        used = np.unique(self.impressions.loc[self.impressions["mine"], "pub"])
        return [str(self.publisher_names[p]) for p in used]

    def attribute_day(self, day: date) -> pd.DataFrame:
        """(conv, user, ts, pub, weight) rows of the day's attributed conversions."""
        rule = self.campaign.attribution
        window = pd.Timedelta(days=rule.lookback_days)
        start = pd.Timestamp(day)
        end = start + pd.Timedelta(days=1)
        convs, imps = self.conversions, self.impressions
        conv = convs[convs["mine"] & (convs["ts"] >= start) & (convs["ts"] < end)]
        wanted = np.flatnonzero(np.isin(self.publisher_names, self.publishers()))
        imp = imps[
            imps["mine"]
            & (imps["ts"] >= start - window)
            & (imps["ts"] < end)
            & imps["pub"].isin(wanted)
        ]
        imp = imp[imp["user"].isin(conv["user"])]
        cand = conv[["conv", "user", "ts"]].merge(
            imp[["imp", "user", "pub", "ts"]], on="user", suffixes=("", "_imp")
        )
        cand = cand[(cand["ts_imp"] >= cand["ts"] - window) & (cand["ts_imp"] < cand["ts"])]
        # candidates in (ts, impression) order: first = min ts then min id, last = max, max
        group = cand.groupby("conv")
        m = group["imp"].transform("size").to_numpy()
        at_first = cand["ts_imp"] == group["ts_imp"].transform("min")
        at_last = cand["ts_imp"] == group["ts_imp"].transform("max")
        first = at_first & (
            cand["imp"] == cand["imp"].where(at_first).groupby(cand["conv"]).transform("min")
        )
        last = at_last & (
            cand["imp"] == cand["imp"].where(at_last).groupby(cand["conv"]).transform("max")
        )
        first, last = first.to_numpy(), last.to_numpy()
        if rule.rule == "lta":
            weight = last.astype(float)
        elif rule.rule == "fta":
            weight = first.astype(float)
        elif rule.rule == "uni":
            weight = 1.0 / m
        elif rule.rule == "u_shaped":
            middle = 0.2 / np.maximum(m - 2, 1)
            weight = np.where(
                m == 1, 1.0, np.where(m == 2, 0.5, np.where(first | last, 0.4, middle))
            )
        else:  # time_decay, relative to the newest candidate like the SQL
            age = (cand["ts"] - cand["ts_imp"]).dt.total_seconds().to_numpy()
            newest = (cand["ts"] - group["ts_imp"].transform("max")).dt.total_seconds()
            raw = np.exp2(-(age - newest.to_numpy()) / (rule.half_life_days * 86_400.0))
            totals = pd.Series(raw, index=cand.index).groupby(cand["conv"])
            weight = raw / totals.transform("sum").to_numpy()
        cand = cand.assign(weight=weight)
        cand = cand[cand["weight"] > 0]
        out = cand.groupby(["conv", "user", "ts", "pub"], as_index=False)["weight"].sum()
        self.attributed[day] = out
        return out

    def contributions_day(self, day: date) -> pd.Series:
        """Attributed conversions per user on ``day``."""
        rows = self.attributed[day].drop_duplicates("conv")
        counts = rows.groupby("user").size()
        self.contributions[day] = counts
        return counts

    def day_histogram(self, day: date) -> np.ndarray:
        counts = self.contributions[day].to_numpy()
        hist = np.bincount(counts) if len(counts) else np.zeros(1, dtype=np.int64)
        hist[0] = 0
        return hist.astype(np.int64)

    def clipped_vector(self, day: date, bound: float) -> np.ndarray:
        rows = self.attributed[day]
        conv = rows.drop_duplicates("conv").sort_values(["user", "ts", "conv"])
        rank = conv.groupby("user").cumcount().to_numpy()
        factors = pd.Series(count_fraction(rank, bound), index=conv["conv"].to_numpy())
        value = rows["weight"].to_numpy() * factors.loc[rows["conv"].to_numpy()].to_numpy()
        sums = pd.Series(value).groupby(self.publisher_names[rows["pub"].to_numpy()]).sum()
        return sums.reindex(self.publishers(), fill_value=0.0).to_numpy(dtype=np.float64)

    def days(self) -> list[date]:
        return [self.campaign.start + timedelta(days=i) for i in range(self.campaign.days)]
