"""What the UI may show. Built only from DP outputs (releases, bounds, ρ) — never from data.

The Dagster UI and its event log are treated as visible to anyone who can read a release: the
functions here take ledger objects (noisy vectors, r_i, σ_i, ρ) and nothing else, so a true
count or an SVT threshold cannot reach metadata by accident.
"""

from __future__ import annotations

import math

import dagster as dg

from dp_platform.adsbpc import AdsbpcPlan, BoundChoice, Measurement
from dp_platform.daily import CampaignAnswers
from dp_platform.ledger import CampaignBudget
from dp_platform.privacy.accounting import Rho
from dp_platform.reporting import cumulative_chart, markdown_image


def bound_metadata(choice: BoundChoice, drawn_now: bool) -> dict[str, dg.MetadataValue]:
    return {
        "day": dg.MetadataValue.int(choice.day),
        "bound_r": dg.MetadataValue.float(choice.bound),
        "bound_method": dg.MetadataValue.text(choice.method),
        "rho_charged": dg.MetadataValue.float(float(sum(choice.charges.values(), Rho.zero()))),
        "drawn_now": dg.MetadataValue.bool(drawn_now),
    }


def release_metadata(
    release: Measurement, budget: CampaignBudget, publishers: list[str], drawn_now: bool
) -> dict[str, dg.MetadataValue]:
    """r_i, σ_i, ρ charged / spent / remaining and the noisy total, as floats the UI plots."""
    charged = budget.per_day.get(release.day, {})
    rows = [f"| {p} | {v:.2f} |" for p, v in zip(publishers, release.values, strict=True)]
    table = "\n".join(["| publisher | noisy value |", "|---|---|", *rows[:50]])
    return {
        "day": dg.MetadataValue.int(release.day),
        "bound_r": dg.MetadataValue.float(release.bound),
        "sigma": dg.MetadataValue.float(release.sigma),
        "rho_charged_today": dg.MetadataValue.float(float(sum(charged.values(), Rho.zero()))),
        "rho_spent": dg.MetadataValue.float(float(budget.spent)),
        "rho_remaining": dg.MetadataValue.float(float(budget.remaining)),
        "noisy_total": dg.MetadataValue.float(float(sum(release.values))),
        "publishers": dg.MetadataValue.int(len(publishers)),
        "noisy_values": dg.MetadataValue.md(table),
        "drawn_now": dg.MetadataValue.bool(drawn_now),
    }


def answers_metadata(plan: AdsbpcPlan, answers: CampaignAnswers) -> dict[str, dg.MetadataValue]:
    """The queries answered through this day, summed over publishers, with a chart."""
    totals = answers.totals()
    ends = plan.query_ends
    ending_today = [j for j in totals if ends[j] == answers.day]
    metadata: dict[str, dg.MetadataValue] = {
        "day": dg.MetadataValue.int(answers.day),
        "queries_answered": dg.MetadataValue.int(len(totals)),
    }
    if ending_today:
        j = ending_today[-1]
        metadata["answer_ending_today"] = dg.MetadataValue.float(totals[j])
        metadata["answer_std"] = dg.MetadataValue.float(_query_std(plan, j, answers))
    # One point per day: the last query that ends on that day (e.g. the prefix sum through it).
    days, values, bands = [], [], []
    for day in range(1, answers.day + 1):
        ending = [j for j in totals if ends[j] == day]
        if ending:
            days.append(day)
            values.append(totals[ending[-1]])
            bands.append(_query_std(plan, ending[-1], answers))
    if days:
        png = cumulative_chart(days, values, band=bands, title=f"{plan.campaign}: noisy answers")
        metadata["chart"] = dg.MetadataValue.md(markdown_image(png, "noisy query answers"))
    return metadata


def _query_std(plan: AdsbpcPlan, query: int, answers: CampaignAnswers) -> float:
    """Expected std of a query's total over publishers, from the σ_i actually used (public)."""
    sigmas = [r.sigma for r in answers.releases]
    weights = plan.queries[query, : len(sigmas)]
    publishers = len(answers.publishers)
    return math.sqrt(publishers * sum((w * s) ** 2 for w, s in zip(weights, sigmas, strict=True)))


def one_shot_metadata(payload: dict, drawn_now: bool) -> dict[str, dg.MetadataValue]:
    """The one-shot release (DP values: noisy per-publisher sums, scale, ρ)."""
    values = payload.get("values", {})
    rows = [f"| {p} | {v:.2f} |" for p, v in values.items()]
    return {
        "noisy_total": dg.MetadataValue.float(float(payload["total"])),
        "noise_scale": dg.MetadataValue.float(float(payload["scale"])),
        "std_per_publisher": dg.MetadataValue.float(float(payload["std"])),
        "epsilon": dg.MetadataValue.float(float(payload["epsilon"])),
        "rho_charged": dg.MetadataValue.float(float(payload["rho_charged"])),
        "noisy_values": dg.MetadataValue.md(
            "\n".join(["| publisher | noisy value |", "|---|---|", *rows[:50]])
        ),
        "drawn_now": dg.MetadataValue.bool(drawn_now),
    }


def reach_metadata(payload: dict, drawn_now: bool) -> dict[str, dg.MetadataValue]:
    """Reach and k+-frequency (DP values: the noisy histogram and what follows from it)."""
    at_least = payload.get("at_least", [])
    rows = [f"| {k}+ | {v} |" for k, v in enumerate(at_least, start=1)]
    return {
        "noisy_reach": dg.MetadataValue.float(float(payload["reach"])),
        "rho_charged": dg.MetadataValue.float(float(payload["rho_charged"])),
        "frequency": dg.MetadataValue.md(
            "\n".join(["| seen at least | noisy users |", "|---|---|", *rows])
        ),
        "drawn_now": dg.MetadataValue.bool(drawn_now),
    }
