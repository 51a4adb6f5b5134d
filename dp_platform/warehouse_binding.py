"""A campaign with per-user privacy state is bound to the one warehouse that holds that state.

AdsBPC+'s individual filter keeps each user's running spend in the warehouse (the mechanism's
``carries_spend``). Two homes may share one ledger (docs/operators.md, "Two hosts, one ledger"),
each with its own warehouse; if their ingests differ (late data on one host), each keeps its own
spends and a day drawn from one home clips users at spends the other never charged, so the
per-user bound that the filter's accounting rests on no longer holds. Making two warehouses
agree is not provable here, so the platform refuses it: the ledger records the warehouse's
identity (``WarehouseEngine.identity``) when such a campaign registers — or, for a campaign
registered before bindings existed, at its first draw — and every registration check and every
step that chooses a bound, clips under the filter or draws a release is refused, before it
reads or writes anything, from any other warehouse. Private last-touch attribution is bound
the same way: it draws each conversion's touch once and keeps the draw in the warehouse, so a
second warehouse would draw that touch again (its ε spent twice). Campaigns without per-user
state (AdsBPC, one-shot, reach, with a deterministic attribution rule) are not bound and run
from any number of homes on one ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from dp_platform import mechanisms
from dp_platform.errors import WarehouseMismatch

if TYPE_CHECKING:
    from dp_platform.config import CampaignConfig
    from dp_platform.ledger import Ledger
    from dp_platform.plans import CampaignPlan

__all__ = ["Registered", "require_warehouse", "warehouse_state"]


class Registered(Protocol):
    """What a binding reads of a registered campaign (``registration.Registration``, which
    calls :func:`require_warehouse` when it registers: typed here, not imported, so the two
    modules are not a circle)."""

    @property
    def name(self) -> str: ...
    @property
    def config(self) -> CampaignConfig: ...
    @property
    def plan(self) -> CampaignPlan: ...


def warehouse_state(registration: Registered) -> str | None:
    """What per-user privacy state the campaign keeps in the warehouse, or None: the filter's
    spends (a daily mechanism that ``carries_spend``), or private last touch's draws."""
    name = registration.plan.mechanism
    stream = registration.plan.stream is not None and name is not None
    if stream and mechanisms.stream(name).carries_spend:
        return "spends"
    if registration.config.attribution.keeps_draws_in_warehouse:
        return "touch draws"
    return None


def require_warehouse(
    ledger: Ledger, registration: Registered, identity: Callable[[], str]
) -> None:
    """Bind the campaign to the warehouse ``identity()`` names if it needs one warehouse and is
    not bound yet; refuse (WarehouseMismatch, one line) if it is bound to another.
    ``identity`` is asked only for a campaign that needs it (a Spark home opens its session)."""
    state = warehouse_state(registration)
    if state is None:
        return
    here = identity()
    bound = ledger.bind_warehouse(registration.name, here)
    if bound != here:
        raise WarehouseMismatch(
            f"campaign {registration.name} keeps per-user privacy {state} in the warehouse it "
            f"was registered with ({bound[:8]}…), and this home's warehouse is another "
            f"({here[:8]}…); run this campaign only from its own home (docs/operators.md, "
            "'Two hosts, one ledger'); nothing was drawn or charged"
        )
