"""How a campaign's cells are measured (dp_platform/cell_strategy.py): the catalogue's
``marginals:`` refused by field and rule, registered plans keeping independent cells, the Gram
form AdsBPC+'s filter would charge, and totals' σ read from the strategy."""

from __future__ import annotations

import numpy as np
import pytest

from dp_platform.cell_strategy import IndependentCells, MarginalWeights, ResidualCells
from dp_platform.cells import CellLayout
from dp_platform.config_loader import parse_catalogue
from dp_platform.errors import ConfigError
from dp_platform.mechanisms.adsbpc import AdsbpcPlan
from dp_platform.mechanisms.adsbpc_plus_plan import PlusPlan
from dp_platform.plans import campaign_plan
from dp_platform.records import from_record, to_record
from tests.cells_data import VALUE_CAP, campaign_entry
from tests.test_cells import catalogue

SLICED = {"breakdown": ["region", "device"], "measures": ["count", "value"], "value_cap": 50}
ADSBPC = {"kind": "adsbpc", "bounds": {"quantile_days": 2, "cap": 5}}


PLUS = {"kind": "adsbpc_plus", "cap": 5, "profile_days": 2}
MECHANISMS = {"adsbpc": ADSBPC, "adsbpc_plus": PLUS}


def _with_marginals(marginals: dict, mechanism: dict = ADSBPC, **fields: object) -> dict:
    return campaign_entry(**{**SLICED, **fields}, mechanism={**mechanism, "marginals": marginals})


REFUSED = [
    ({"publisher": 2, "publisher,colour": 1}, {}, "'colour' is not publisher"),
    ({"publisher": 2}, {}, "the full cells (publisher, region, device)"),
    ({"publisher,region,device": 1, "device,publisher,region": 2}, {}, "listed twice"),
    ({"publisher,region,device": 0}, {}, "needs a weight > 0"),
    (
        {"publisher,region,device": 1},
        {"privacy": {"adjacency": "replace"}},
        "add_remove adjacency only",
    ),
    ({"publisher": 1}, {"breakdown": [], "measures": ["count"]}, "one count per publisher"),
    (
        {"publisher": 2, "publisher,region,device": {"count": 1}},
        {},
        "must be weighed for value",
    ),
    ({"publisher,region,device": {"count": 1, "clicks": 1}}, {}, "'clicks' is not a measure"),
    ({"publisher,region,device": {"count": 1, "value": 0}}, {}, "device value needs a weight > 0"),
    (
        {"publisher,region,device": 1, "publisher,device,region": {"count": 1}},
        {},
        "listed twice",
    ),
]


@pytest.mark.parametrize("kind", list(MECHANISMS))
@pytest.mark.parametrize(("marginals", "fields", "message"), REFUSED)
def test_marginals_are_refused_by_field_and_rule(kind, marginals, fields, message) -> None:
    """The same refusals for AdsBPC and AdsBPC+ (one check: cell_strategy.check_marginals)."""
    entry = _with_marginals(marginals, MECHANISMS[kind], **fields)
    with pytest.raises(ConfigError) as error:
        parse_catalogue(catalogue([entry]))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("kind", list(MECHANISMS))
def test_written_marginals_are_what_the_plan_registers(kind) -> None:
    entry = _with_marginals({"publisher": 8, "publisher,region,device": 1}, MECHANISMS[kind])
    campaign = parse_catalogue(catalogue([entry])).campaigns[0]
    assert campaign_plan(campaign).stream.marginals == MarginalWeights(
        ((("publisher",), 8.0), (("publisher", "region", "device"), 1.0))
    )


@pytest.mark.parametrize(("kind", "plan_type"), [("adsbpc", AdsbpcPlan), ("adsbpc_plus", PlusPlan)])
def test_per_measure_weights_are_registered_and_planned_apart(kind, plan_type) -> None:
    """``{count: 50, value: 1}`` weighs a marginal's measures apart: the plan registers them
    (and its record reads back equal, one from before per-measure weights as ()), and the
    strategy's count publisher totals then beat the value's, which weighing alike does not."""
    written = {"publisher": {"count": 50, "value": 1}, "publisher,region,device": 1}
    entry = _with_marginals(written, MECHANISMS[kind])
    plan = campaign_plan(parse_catalogue(catalogue([entry])).campaigns[0]).stream
    assert plan.marginals == MarginalWeights(
        ((("publisher", "region", "device"), 1.0),),
        ((("publisher",), (("count", 50.0), ("value", 1.0))),),
    )
    record = to_record(plan)
    assert from_record(plan_type, record).marginals == plan.marginals
    del record["marginals"]["by_measure"]
    assert from_record(plan_type, record).marginals.by_measure == ()
    apart = CellLayout(**{**LAYOUT.__dict__, "marginals": plan.marginals})
    alike = CellLayout(
        **{**LAYOUT.__dict__, "marginals": MarginalWeights.written({**written, "publisher": 50})}
    )
    publisher = ("publisher",)
    ratio = [
        layout.strategy.entry_std(publisher, "count")
        / layout.strategy.entry_std(publisher, "value")
        for layout in (apart, alike)
    ]
    assert ratio[0] < 0.5 * ratio[1]
    assert [row["weight"] for row in apart.marginal_sigmas(1.0)] == [
        {"count": 1.0, "value": 1.0},
        {"count": 50.0, "value": 1.0},
    ]


@pytest.mark.parametrize(("kind", "plan_type"), [("adsbpc", AdsbpcPlan), ("adsbpc_plus", PlusPlan)])
def test_a_plan_registered_before_residual_strategies_keeps_independent_cells(
    kind, plan_type
) -> None:
    """The ledger's plan record of an earlier release has no ``marginals``: it reads back as
    independent cells, what it ran with — and a new plan's record reads back equal. A
    count-only campaign without breakdown has none to plan."""
    entry = campaign_entry(**SLICED, mechanism=MECHANISMS[kind])
    plan = campaign_plan(parse_catalogue(catalogue([entry])).campaigns[0]).stream
    assert plan.marginals == MarginalWeights.default(["region", "device"])
    record = to_record(plan)
    assert from_record(plan_type, record).marginals == plan.marginals
    del record["marginals"]
    assert from_record(plan_type, record).marginals is None
    plain = campaign_entry(mechanism=MECHANISMS[kind])
    assert campaign_plan(parse_catalogue(catalogue([plain])).campaigns[0]).stream.marginals is None


LAYOUT = CellLayout(
    ("a", "b", "c"),
    (("region", ("n", "s")), ("device", ("m", "d", "t"))),
    ("count", "value"),
    value_cap=VALUE_CAP,
    marginals=MarginalWeights.default(["region", "device"]),
)


APART = CellLayout(
    **{
        **LAYOUT.__dict__,
        "marginals": MarginalWeights.written(
            {
                "publisher": {"count": 50, "value": 1},
                "publisher,region,device": {"count": 2, "value": 1},
            }
        ),
    }
)


@pytest.mark.parametrize("layout", [LAYOUT, APART, CellLayout(("a", "b"), (), ("count", "value"))])
def test_the_gram_form_is_the_encoded_norm(layout: CellLayout) -> None:
    """What AdsBPC+'s filter would charge a user from marginal sums (signed weights) equals
    the squared norm of what the strategy encodes, for any vector (seeded)."""
    gram = layout.strategy.gram()
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.random(layout.size) * (rng.random(layout.size) < 0.3)
        encoded = layout.strategy.encode(x)
        assert gram.norm_squared(x) == pytest.approx(float(encoded @ encoded), rel=1e-9)


def test_strategies_follow_the_layout() -> None:
    assert isinstance(LAYOUT.strategy, ResidualCells)
    plain = CellLayout(("a", "b"), (("region", ("n", "s")),), ("count",))
    assert isinstance(plain.strategy, IndependentCells)
    x = np.arange(plain.size, dtype=np.float64)
    assert plain.strategy.encode(x).tolist() == x.tolist()


def test_a_residual_total_refuses_cells_whose_sigma_differs() -> None:
    """A residual total's σ is the release's σ times the marginal's factor: cells of one
    measure with different σ cannot come from one release, and are refused."""
    sigmas = np.ones(LAYOUT.shape)
    sigmas[0, 0, 0, 0] = 2.0
    with pytest.raises(ValueError, match="count cells of one release must share their σ"):
        LAYOUT.strategy.total_std(sigmas, (0,))
