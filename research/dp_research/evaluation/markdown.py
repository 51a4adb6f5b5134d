"""Markdown tables of docs/results.md, ours next to the paper's (rendering only, no computing)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dp_research.evaluation.ablations import AblationRow
from dp_research.evaluation.experiment import ExperimentResult
from dp_research.evaluation.methods import LABELS, METHODS
from dp_research.evaluation.paper import TABLE_IX, TABLE_X, paper_ratio

if TYPE_CHECKING:
    from dp_research.evaluation.all_results import AllResults

__all__ = ["render_results"]

PAPER_ORDER = ("ipa", "bin", "stream", "umm", "mmbpc", "adsbpc")
ABLATION_TITLES = {
    "split": ("XIII", "budget split λ (ρ1 = (1 − λ)ρ, quantiles λρ/2, SVT λρ/2)", "λ"),
    "scale": ("XIV", "SVT scaling factor s↑ (s↓ = 1/s↑)", "s↑"),
    "threshold": ("XV", "SVT thresholds T↑ = T↓", "T"),
    "constant": ("XVI", "constant bound r, no quantile or SVT, all of ρ on the Gaussian", "r"),
    "quantile_only": ("XVII", "PrivateQuantile every day, no SVT, total ρ", "ρ"),
}


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _header(cells: list[str]) -> list[str]:
    return [_row(cells), _row(["---"] * len(cells))]


def _main_table(results: AllResults, workload: str) -> list[str]:
    """Our paper-scale numbers over the paper's, per dataset."""
    paper = TABLE_IX if workload == "prefix" else TABLE_X
    columns = [LABELS[m] for m in PAPER_ORDER] + ["Oracle †", "AdsBPC ÷ best", "improvement"]
    lines = _header(["dataset", "", *columns])
    for (dataset, w), result in results.main.items():
        if w != workload:
            continue
        ours = [
            result.methods[m].score.error_paper_scale if m in result.methods else None
            for m in PAPER_ORDER
        ]
        oracle = result.methods.get("oracle")
        summary = result.summary()
        ratio = summary.get("adsbpc_over_best_baseline")
        lines.append(
            _row(
                [
                    dataset,
                    "ours",
                    *(_fmt(v) for v in ours),
                    _fmt(oracle.score.error_paper_scale if oracle else None),
                    f"{_fmt(ratio)} ({LABELS[summary['best_baseline']]})" if ratio else "—",
                    f"{100 * (1 - ratio):.1f}%" if ratio else "—",
                ]
            )
        )
        row = paper.get(dataset)
        if row:
            pr = paper_ratio(dataset, workload)
            lines.append(
                _row(
                    [
                        "",
                        "paper",
                        *(_fmt(row[m]) for m in PAPER_ORDER),
                        "—",
                        _fmt(pr),
                        f"{100 * (1 - pr):.1f}%" if pr else "—",
                    ]
                )
            )
    return lines


def _detail_table(results: AllResults, workload: str) -> list[str]:
    """Our own normalisation with the spread and the realised (empirical) value."""
    lines = _header(
        [
            "dataset",
            "method",
            "error",
            "± std (one run)",
            "empirical",
            "bias share",
            "ρ charged",
            "seconds",
        ]
    )
    for (dataset, w), result in results.main.items():
        if w != workload:
            continue
        for name, m in result.methods.items():
            lines.append(
                _row(
                    [
                        dataset,
                        LABELS[name],
                        _fmt(m.score.error),
                        _fmt(m.score.error_std),
                        _fmt(m.score.error_empirical),
                        "—" if m.score.bias_share is None else f"{100 * m.score.bias_share:.0f}%",
                        f"{m.rho_charged:.4g}" + ("" if m.private else " (not private)"),
                        f"{m.seconds:.2f}",
                    ]
                )
            )
    return lines


def _ratio_table(results: AllResults) -> list[str]:
    lines = _header(
        [
            "dataset",
            "workload",
            "best baseline",
            "AdsBPC ÷ best (ours)",
            "paper",
            "AdsBPC ÷ oracle",
            "AdsBPC below every baseline",
        ]
    )
    for (dataset, workload), result in results.main.items():
        s = result.summary()
        best = s.get("best_baseline")
        lines.append(
            _row(
                [
                    dataset,
                    workload,
                    LABELS[best] if best else "—",
                    _fmt(s.get("adsbpc_over_best_baseline")),
                    _fmt(s.get("paper_ratio")),
                    _fmt(s.get("adsbpc_over_oracle")),
                    {True: "yes", False: "**no**", None: "—"}[s.get("adsbpc_below_every_baseline")],
                ]
            )
        )
    return lines


def _span(values: tuple[float, ...]) -> str:
    low, high = min(values), max(values)
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def _bounds_table(results: AllResults) -> list[str]:
    lines = _header(
        [
            "dataset",
            "AdsBPC r, days 1–7 (mean)",
            "AdsBPC r, days 8–n",
            "true 0.99-quantile r (oracle)",
        ]
    )
    for (dataset, workload), result in results.main.items():
        if workload != "prefix":
            continue
        ours = result.methods.get("adsbpc")
        oracle = result.methods.get("oracle")
        if not (ours and ours.mean_bounds and oracle and oracle.mean_bounds):
            continue
        first, rest = ours.mean_bounds[:7], ours.mean_bounds[7:]
        lines.append(
            _row(
                [
                    dataset,
                    _fmt(sum(first) / len(first)),
                    _fmt(sum(rest) / len(rest)) if rest else "—",
                    _span(oracle.mean_bounds),
                ]
            )
        )
    return lines


def _sweep_tables(kind: str, by_dataset: dict[str, dict[str, list[ExperimentResult]]]) -> list[str]:
    lines: list[str] = []
    for dataset, by_workload in by_dataset.items():
        for workload, runs in by_workload.items():
            if not runs:
                continue
            present = [m for m in METHODS if m in runs[0].methods]
            lines += ["", f"**{dataset}, {workload}** ({runs[0].metric}, our normalisation)", ""]
            lines += _header([kind, *(LABELS[m] for m in present), "AdsBPC ÷ best"])
            for r in runs:
                x = r.config.rho if kind == "rho" else r.config.days
                ratio = r.summary().get("adsbpc_over_best_baseline")
                lines.append(_row([f"{x:g}", *(_fmt(r.error(m)) for m in present), _fmt(ratio)]))
    return lines


def _ablation_tables(ablations: dict[str, dict[str, list[AblationRow]]]) -> list[str]:
    lines: list[str] = []
    datasets = list(ablations)
    tables = list(next(iter(ablations.values()))) if ablations else []
    for table in tables:
        number, title, symbol = ABLATION_TITLES[table]
        lines += ["", f"**Table {number}: {title}** (prefix WRMSE at the paper's scale)", ""]
        header = [symbol]
        for d in datasets:
            header += [f"{d} (ours)", f"{d} mean r"]
        lines += _header([*header, "Facebook (paper)"])
        rows = zip(*(ablations[d][table] for d in datasets), strict=True)
        for cells in rows:
            line = [f"{cells[0].value:g}"]
            for cell in cells:
                line += [_fmt(cell.score.error_paper_scale), _fmt(cell.mean_bound)]
            lines.append(_row([*line, _fmt(cells[0].paper_facebook)]))
    return lines


def _timing(results: AllResults) -> list[str]:
    lines = _header(["step", "seconds"])
    for (dataset, workload), result in results.main.items():
        if workload == "prefix":
            lines.append(
                _row([f"{dataset}: generate + prepare data", f"{result.prepare_seconds:.1f}"])
            )
    for step, seconds in results.seconds.items():
        label = f"{step}: everything" if step in {d for d, _ in results.main} else step
        lines.append(_row([label, f"{seconds:.1f}"]))
    return lines


def render_results(results: AllResults, *, command: str) -> str:
    """The generated part of docs/results.md."""
    s = results.scale
    out = [
        f"Regenerate with `{command}` (users = {s.users:,}, publishers = {s.publishers:,}, "
        f"repeats = {s.repeats}, seed = {s.seed}; ρ = 1 and n = 31 unless a sweep says otherwise).",
        "",
        "† Oracle: AdsBPC's release with the *true* per-day 0.99-quantile as the bound and all "
        "of ρ on the Gaussian — **not private**, a reference floor only.",
        "",
        "### Table IX — prefix sums, WRMSE at the paper's scale sqrt(Σ_j w_j MSE_j)/n, "
        "w = (1, …, 1, 49)",
        "",
        *_main_table(results, "prefix"),
        "",
        "### Table X — sliding windows (K = 7), max over windows of the MSE, ÷ 10⁴",
        "",
        *_main_table(results, "sliding"),
        "",
        "### AdsBPC against the best baseline and the oracle",
        "",
        *_ratio_table(results),
        "",
        "### Bounds AdsBPC chose (mean over repeats) and the true per-day quantile",
        "",
        *_bounds_table(results),
        "",
        "### Details — our normalisation (prefix: sqrt(Σ w MSE / Σ w); sliding: max MSE), "
        "± std of one run's realised error, realised (empirical) error, ρ charged, run time",
        "",
        "Prefix:",
        "",
        *_detail_table(results, "prefix"),
        "",
        "Sliding:",
        "",
        *_detail_table(results, "sliding"),
    ]
    if results.sweeps.get("rho"):
        out += [
            "",
            "### Figure 1 — error against ρ (n = 31)",
            "",
            "![ρ sweep](figures/figure1_rho.png)",
        ]
        out += _sweep_tables("rho", results.sweeps["rho"])
    if results.sweeps.get("days"):
        out += [
            "",
            "### Figure 2 — error against n (ρ = 1)",
            "",
            "![n sweep](figures/figure2_days.png)",
        ]
        out += _sweep_tables("n", results.sweeps["days"])
    if results.ablations:
        out += ["", "### Ablations (Appendix A, Tables XIII–XVII)"]
        out += _ablation_tables(results.ablations)
    out += ["", "### Run time", "", *_timing(results)]
    return "\n".join(out) + "\n"
