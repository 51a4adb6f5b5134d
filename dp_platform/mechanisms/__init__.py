"""The mechanism registry: a name (the catalogue's ``mechanism: {kind: …}`` or a campaign-level
block) → the module that implements it, imported when first used.

Adding a mechanism: one new module exposing ``MECHANISM`` (a :class:`~.base.StreamMechanism` or
a :class:`~.base.CampaignMechanism`) and one line in :data:`STREAM` or :data:`CAMPAIGN_LEVEL`.
Nothing else in the platform names a mechanism (``tests/test_architecture.py`` checks it).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dp_platform.config import MechanismSettings
    from dp_platform.mechanisms.base import CampaignMechanism, StreamMechanism

__all__ = [
    "CAMPAIGN_LEVEL",
    "DEFAULT_BY_ADJACENCY",
    "MODE_STREAM",
    "STREAM",
    "addon_names",
    "campaign_level",
    "default_stream",
    "names",
    "register",
    "settings_type",
    "stream",
]

STREAM: dict[str, str] = {
    "adsbpc": "dp_platform.mechanisms.adsbpc",
    "adsbpc_plus": "dp_platform.mechanisms.adsbpc_plus",
}
"""Daily mechanisms, chosen by ``mechanism: {kind: NAME}``."""

CAMPAIGN_LEVEL: dict[str, str] = {
    "one_shot": "dp_platform.mechanisms.oneshot",
    "reach": "dp_platform.mechanisms.reach",
}
"""Releases of the whole period: one that replaces the daily stream is chosen as a
``mechanism``; the others are added by a top-level block of their name."""

DEFAULT_BY_ADJACENCY: dict[str, str] = {"add_remove": "adsbpc_plus", "replace": "adsbpc"}
"""The daily mechanism of a campaign that names none, by its ``privacy.adjacency``: the most
accurate one whose assumptions hold. AdsBPC+ spends 5 % of ρ choosing bounds (AdsBPC 30 %) and
correlates noise across days, but its individual filter needs add/remove adjacency; under
replace the default stays AdsBPC (docs/operators.md#default-mechanism). A campaign registered
under an earlier default keeps its registered mechanism (dp_platform/registration.py)."""

MODE_STREAM = "adsbpc"
"""The daily mechanism the older catalogue format's ``mode:`` names: ``mode: adsbpc`` chose it,
any other mode a campaign-level release that replaces it (dp_platform/config_legacy.py)."""


@cache
def _load(module: str) -> StreamMechanism | CampaignMechanism:
    return importlib.import_module(module).MECHANISM


def register(name: str, module: str, *, campaign_level: bool = False) -> None:
    """Add a mechanism (an extension's one line; tests register a toy one)."""
    (CAMPAIGN_LEVEL if campaign_level else STREAM)[name] = module


def default_stream(adjacency: str) -> str:
    """The daily mechanism of a campaign with ``adjacency`` that names none
    (:data:`DEFAULT_BY_ADJACENCY`); an unknown adjacency is a ValueError naming the known ones."""
    if adjacency not in DEFAULT_BY_ADJACENCY:
        known = ", ".join(sorted(DEFAULT_BY_ADJACENCY))
        raise ValueError(f"unknown adjacency {adjacency!r}; known: {known}")
    return DEFAULT_BY_ADJACENCY[adjacency]


def names() -> list[str]:
    return [*STREAM, *CAMPAIGN_LEVEL]


def stream(name: str) -> StreamMechanism:
    """The daily mechanism ``name``; an unknown name is a ValueError naming the known ones."""
    if name not in STREAM:
        raise ValueError(f"unknown mechanism {name!r}; known: {', '.join(sorted(STREAM))}")
    return _load(STREAM[name])  # type: ignore[return-value]


def campaign_level(name: str) -> CampaignMechanism:
    if name not in CAMPAIGN_LEVEL:
        raise ValueError(f"unknown release {name!r}; known: {', '.join(sorted(CAMPAIGN_LEVEL))}")
    return _load(CAMPAIGN_LEVEL[name])  # type: ignore[return-value]


def addon_names() -> list[str]:
    """Campaign-level releases added beside the daily stream (a block of their name)."""
    return [n for n in CAMPAIGN_LEVEL if not campaign_level(n).replaces_stream]


def settings_type(kind: str) -> type[MechanismSettings]:
    """The catalogue block of ``mechanism: {kind: …}`` (a daily mechanism, or a campaign-level
    one that replaces the daily stream)."""
    if kind in STREAM:
        return stream(kind).settings
    if kind in CAMPAIGN_LEVEL and campaign_level(kind).replaces_stream:
        return campaign_level(kind).settings
    known = [*STREAM, *(n for n in CAMPAIGN_LEVEL if campaign_level(n).replaces_stream)]
    raise ValueError(f"unknown mechanism {kind!r}; known: {', '.join(sorted(known))}")
