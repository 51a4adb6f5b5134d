"""The catalogue of hostile campaign catalogues: one case per class, each an edit of the example
catalogue (examples/campaigns.yaml) — or a path that is not a catalogue — and the one line
`dp-platform plan` must refuse it with.

``run_too`` marks the classes an earlier release let through `plan` that then failed in `run`
after ρ was reserved (issue 18): the test also runs `run` and checks it refuses the same way
before the ledger reserves anything. The limits are documented in docs/operators.md#limits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "campaigns.yaml"


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Path]  # writes the case's catalogue under a directory; its path
    message: str  # fragments (joined by "*") the one stderr line must contain, in any order
    run_too: bool = False


CASES: list[Case] = []


def _edit(old: str, new: str, count: int = 1) -> Callable[[Path], Path]:
    """The example with ``old`` replaced by ``new`` (the first ``count`` times; must occur)."""

    def build(directory: Path) -> Path:
        text = EXAMPLE.read_text(encoding="utf-8")
        assert old in text, old
        path = directory / "campaigns.yaml"
        path.write_text(text.replace(old, new, count), encoding="utf-8")
        return path

    return build


def _raw(data: bytes) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        path = directory / "campaigns.yaml"
        path.write_bytes(data)
        return path

    return build


def add(name: str, build: Callable[[Path], Path], message: str, *, run_too: bool = False) -> None:
    CASES.append(Case(name, build, message, run_too))


RHO = "      rho: 1.0\n"
SPLIT = "split: {measurement: 0.7, quantile: 0.15, svt: 0.15}"
BOUNDS = "cap: 10, s_up: 1.3, s_down: 0.8,\n               t_up: 50, t_down: 50"
REACH = "reach: {rho: 0.1, max_frequency: 10}"
PLUS = "{kind: adsbpc_plus, profile_days: 7, scale_prior: 4.0}"
ONE_SHOT = "{kind: one_shot, bound: 2,"


def _split(measurement: str, quantile: str, svt: str) -> Callable[[Path], Path]:
    return _edit(SPLIT, f"split: {{measurement: {measurement}, quantile: {quantile}, svt: {svt}}}")


def _bounds(**values: str) -> Callable[[Path], Path]:
    defaults = {"cap": "10", "s_up": "1.3", "s_down": "0.8", "t_up": "50", "t_down": "50"}
    merged = {**defaults, **values}
    return _edit(
        BOUNDS,
        f"cap: {merged['cap']}, s_up: {merged['s_up']}, s_down: {merged['s_down']},\n"
        f"               t_up: {merged['t_up']}, t_down: {merged['t_down']}",
    )


# -- the file itself ---------------------------------------------------------------------------
add("file_missing", lambda d: d / "nothing.yaml", "nothing.yaml: file not found")
add("path_is_directory", lambda d: d, "is a directory, not a catalogue file")
add(
    "non_utf8_byte",
    _raw(EXAMPLE.read_bytes().replace(b"pub_04", b"pub_\xff4")),
    "not UTF-8 text*line 12",
)
add("utf16_file", _raw(EXAMPLE.read_text().encode("utf-16")), "not UTF-8 text*line 1")
add("empty_file", _raw(b""), "<root>: Input should be a valid dictionary")
add("top_level_list", _raw(b"- 1\n- 2\n"), "<root>: Input should be a valid dictionary")
add("yaml_syntax_error", _edit("accounts:", "accounts: ["), "not valid YAML (line 5, column 3:")
add(
    "yaml_tab_indent",
    _edit("    advertiser: acme\n", "\tadvertiser: acme\n"),
    "not valid YAML (line 8",
)
add("yaml_unclosed_quote", _edit("name: spring_sale", 'name: "spring_sale'), "not valid YAML (line")
add(
    "yaml_python_tag",
    _edit("rho: 1.0\n", "rho: !!python/object:os.system 1\n"),
    "not valid YAML (line 16",
)
add(
    "duplicate_key_rho",
    _edit(RHO, RHO + "      rho: 3.0\n"),
    "key 'rho' is written twice*lines 16 and 17",
)
add(
    "duplicate_key_flow",
    _edit("{name: acme-users, rho_cap: 4.0}", "{name: acme-users, rho_cap: 4.0, rho_cap: 9}"),
    "key 'rho_cap' is written twice*lines 5 and 5",
)
add(
    "duplicate_top_level_key",
    _raw(EXAMPLE.read_bytes() + b"accounts: []\n"),
    "key 'accounts' is written twice*lines 4 and 51",
)

# -- non-finite and out-of-range amounts -------------------------------------------------------
add(
    "rho_inf",
    _edit(RHO, "      rho: .inf\n"),
    "campaigns[0].privacy.rho: Input should be a finite number",
)
add(
    "rho_nan",
    _edit(RHO, "      rho: .nan\n"),
    "campaigns[0].privacy.rho: Input should be a finite number",
)
add(
    "rho_cap_inf",
    _edit("rho_cap: 4.0", "rho_cap: .inf"),
    "accounts[0].rho_cap: Input should be a finite number",
)
add(
    "rho_below_floor",
    _edit(RHO, "      rho: 1e-300\n"),
    "campaigns[0].privacy.rho: Input should be greater than or equal to 0.000001",
    run_too=True,
)
add(
    "rho_zero",
    _edit(RHO, "      rho: 0\n"),
    "campaigns[0].privacy.rho: Input should be greater than or equal to",
)
add(
    "rho_negative",
    _edit(RHO, "      rho: -1\n"),
    "campaigns[0].privacy.rho: Input should be greater than or equal to",
)
add(
    "rho_text",
    _edit(RHO, "      rho: lots\n"),
    "campaigns[0].privacy.rho: Input should be a valid number",
)
add(
    "rho_cap_below_floor",
    _edit("rho_cap: 4.0", "rho_cap: 1e-9"),
    "accounts[0].rho_cap: Input should be greater than or equal to",
)
add(
    "reach_rho_inf",
    _edit(REACH, "reach: {rho: .inf, max_frequency: 10}"),
    "campaigns[1].releases.rho: Input should be a finite number",
)
add(
    "reach_rho_below_floor",
    _edit(REACH, "reach: {rho: 1e-300, max_frequency: 10}"),
    "campaigns[1].releases.rho: Input should be greater than or equal to",
    run_too=True,
)

# -- split -------------------------------------------------------------------------------------
add(
    "split_over_by_one_ulp",
    _split("0.30000000000000004", "0.35", "0.35"),
    "campaigns[0].privacy.split: split must sum to 1*exceeds 1 by",
    run_too=True,
)
add(
    "split_under",
    _split("0.5", "0.15", "0.15"),
    "campaigns[0].privacy.split: split must sum to 1 (within 1e-09 below)",
)
add(
    "split_share_negative",
    _split("0.7", "-0.15", "0.45"),
    "campaigns[0].privacy.split.quantile: Input should be greater than or equal to 0",
)
add(
    "split_share_tiny",
    _split("0.85", "1e-300", "0.15"),
    "campaigns[0].privacy.split.quantile: a share is 0 or at least 0.001",
    run_too=True,
)
add(
    "split_share_inf",
    _split("0.7", ".inf", "0.15"),
    "campaigns[0].privacy.split.quantile: Input should be a finite number",
)

# -- days and dates ----------------------------------------------------------------------------
add(
    "days_billion",
    _edit("days: 31", "days: 1000000000"),
    "campaigns[0].days: Input should be less than or equal to 366",
)
add(
    "days_367",
    _edit("days: 31", "days: 367"),
    "campaigns[0].days: Input should be less than or equal to 366",
)
add(
    "days_one",
    _edit("days: 31", "days: 1"),
    "campaigns[0].days: Input should be greater than or equal to 2",
)
add(
    "days_fraction",
    _edit("days: 31", "days: 30.5"),
    "campaigns[0].days: Input should be a valid integer",
)
add(
    "start_year_1",
    _edit("start: 2026-03-01", "start: 0001-01-01"),
    "campaigns[0].start: start must lie in 1970-01-01 .. 2199-12-31",
    run_too=True,
)
add(
    "start_year_9999",
    _edit("start: 2026-03-01", "start: 9999-12-25"),
    "campaigns[0].start: start must lie in 1970-01-01 .. 2199-12-31",
    run_too=True,
)
add(
    "end_after_window",
    _edit("start: 2026-03-01", "start: 2199-12-25"),
    "campaigns[0]: days: the campaign must end by 2199-12-31",
    run_too=True,
)
add(
    "start_not_a_date",
    _edit("start: 2026-03-01", "start: 2026-13-01"),
    "not valid YAML (line 10, column 12: '2026-13-01' is not a date (month must be in 1..12)",
)

# -- the daily mechanism's bounds --------------------------------------------------------------
add(
    "bounds_cap_1e10",
    _bounds(cap="10000000000"),
    "campaigns[0].mechanism.bounds.cap: Input should be less than or equal to 100000",
    run_too=True,
)
add(
    "bounds_cap_float",
    _bounds(cap="1e10"),
    "campaigns[0].mechanism.bounds.cap: Input should be a valid integer",
)
add(
    "s_up_inf_t_up_zero",
    _bounds(s_up=".inf", t_up="0"),
    "campaigns[0].mechanism.bounds.s_up: Input should be a finite number",
    run_too=True,
)
add(
    "s_up_reaches_past_limit",
    _bounds(s_up="30"),
    "campaigns[0].mechanism.bounds: cap·s_up^max_reports*must be <= 1e+09",
    run_too=True,
)
add(
    "s_down_nan",
    _bounds(s_down=".nan"),
    "campaigns[0].mechanism.bounds.s_down: Input should be a finite number",
)
add(
    "t_up_inf",
    _bounds(t_up=".inf"),
    "campaigns[0].mechanism.bounds.t_up: Input should be a finite number",
    run_too=True,
)
add(
    "t_down_negative",
    _bounds(t_down="-1"),
    "campaigns[0].mechanism.bounds.t_down: Input should be greater than or equal to 0",
)
add(
    "quantile_days_not_below_days",
    _edit("quantile_days: 7", "quantile_days: 31"),
    "bounds.quantile_days: l must be < days",
)
add(
    "plus_cap_huge",
    _edit(PLUS, "{kind: adsbpc_plus, profile_days: 7, cap: 1000000}"),
    "campaigns[2].mechanism.cap: Input should be less than or equal to 100000",
    run_too=True,
)
add(
    "plus_histogram_share_tiny",
    _edit(PLUS, "{kind: adsbpc_plus, profile_days: 7, histogram_share: 1e-300}"),
    "campaigns[2].mechanism.histogram_share: Input should be greater than or equal to 0.001",
    run_too=True,
)
add(
    "one_shot_bound_huge",
    _edit(ONE_SHOT, "{kind: one_shot, bound: 1e300,"),
    "campaigns[3].mechanism.bound: Input should be less than or equal to 1000000000",
    run_too=True,
)
add(
    "one_shot_bound_inf",
    _edit(ONE_SHOT, "{kind: one_shot, bound: .inf,"),
    "campaigns[3].mechanism.bound: Input should be a finite number",
)

# -- structure and references ------------------------------------------------------------------
add(
    "unknown_field",
    _edit(RHO, "      rhoo: 1.0\n"),
    "campaigns[0].privacy.rhoo: Extra inputs are not permitted",
)
add(
    "unknown_account",
    _edit("    account: acme-users\n", "    account: nobody\n"),
    "campaigns[0].account: account 'nobody' is not declared",
)
add(
    "campaign_name_repeated",
    _edit("name: summer_weekly", "name: spring_sale"),
    "campaigns: names must be unique",
)
add(
    "campaign_name_invalid",
    _edit("name: spring_sale", "name: spring-sale"),
    "campaigns[0].name: name must start with a letter",
)
add(
    "publishers_empty",
    _edit("publishers: [pub_00, pub_01]\n", "publishers: []\n"),
    "campaigns[3].publishers: publishers must not be empty",
)
add(
    "publishers_repeated",
    _edit("publishers: [pub_00, pub_01]\n", "publishers: [pub_00, pub_00]\n"),
    "campaigns[3].publishers: publishers must not repeat",
)
add("mechanism_unknown", _edit("kind: one_shot", "kind: two_shot"), "campaigns[3]: mechanism:")
add(
    "window_longer_than_campaign",
    _edit("window: 7", "window: 29"),
    "campaigns[1]: workload.window must be <= days (28)",
)
add(
    "lookback_zero",
    _edit("lookback_days: 30", "lookback_days: 0"),
    "campaigns[0].attribution.lookback_days: Input should be greater than 0",
)
add(
    "matrix_path_is_directory",
    _edit("workload: {kind: sliding, window: 7}", "workload: {kind: matrix, path: .}"),
    ": Is a directory",
)
add(
    "spark_private_setting",
    _raw(
        EXAMPLE.read_bytes()
        + b"warehouse: {engine: spark, spark: {conf: {spark.ui.enabled: 'true'}}}\n"
    ),
    "warehouse.spark.conf: spark.ui.enabled is fixed by the platform",
)
