"""Older catalogue shapes folded into the current one, so a catalogue written for an earlier
release still loads to the same campaign.

The current shape names a campaign's daily mechanism in one block, ``mechanism: NAME`` or
``mechanism: {kind: NAME, …}``, and its added releases under ``releases:``. The older shape
spread them over top-level keys: ``mode: one_shot``, a block named after the mechanism
(``one_shot:``, ``adsbpc_plus:``), the mechanism's ``legacy_blocks`` (``bounds:``) and a release's
own block (``reach:``). Which keys belong to which mechanism is the registry's knowledge
(dp_platform/mechanisms/), so the catalogue models (config.py) receive this folding from the
loader (config_loader.py) rather than importing the mechanisms that build on them.
"""

from __future__ import annotations

from dp_platform import mechanisms
from dp_platform.config import PrivacyConfig, as_block

__all__ = ["fold_mechanism_blocks", "mechanism_defaulted"]


def fold_mechanism_blocks(data: dict[str, object]) -> dict[str, object]:
    """A campaign's raw keys with its mechanism blocks in the current shape: ``mechanism`` the
    chosen mechanism's block (its kind set), ``releases`` the added releases by name. A block
    of a mechanism that is not chosen is refused (ValueError naming the key), as is an unknown
    mechanism. A campaign that names no mechanism gets the one whose keys it writes, else the
    default for its adjacency (:func:`_unnamed_kind`)."""
    data = dict(data)
    block = _named_block(data)
    mode = data.pop("mode", None)
    if mode is not None and mode != mechanisms.MODE_STREAM:
        if block.get("kind", mechanisms.MODE_STREAM) != mechanisms.MODE_STREAM:
            raise ValueError(f"mode: {mode} replaces the daily mechanism; leave mechanism out")
        block["kind"] = mode
    if "kind" not in block:
        block["kind"] = mechanisms.MODE_STREAM if mode is not None else _unnamed_kind(data, block)
    kind = block["kind"]
    try:
        settings = mechanisms.settings_type(str(kind))
    except ValueError as error:
        raise ValueError(f"mechanism: {error}") from None
    if kind in data:  # the older format's block named after the mechanism
        block = {**as_block(data.pop(kind)), **block}
    for key in settings.legacy_blocks:
        if key in data:
            block[key] = data.pop(key)
    releases = dict(as_block(data.pop("releases", None)))
    for name in mechanisms.addon_names():
        if name in data and data[name] is not None:
            releases[name] = data.pop(name)
        else:
            data.pop(name, None)
    for other in mechanisms.names():
        others = (
            (other,)
            if other not in mechanisms.STREAM
            else (
                other,
                *mechanisms.settings_type(other).legacy_blocks,
            )
        )
        for key in others:
            if key in data:
                raise ValueError(f"{key}: only with mechanism {other} (this campaign uses {kind})")
    data["mechanism"] = block
    data["releases"] = releases
    return data


def mechanism_defaulted(data: dict[str, object]) -> bool:
    """Whether the campaign's mechanism is the default for its adjacency: it names none
    (``mechanism:``, the older ``mode:``) and writes no key of one. Such a campaign keeps the
    mechanism it registered with when a platform release changes the default (registration.py)."""
    block = _named_block(data)
    return "kind" not in block and data.get("mode") is None and _owner(data, block) is None


def _named_block(data: dict[str, object]) -> dict[str, object]:
    """``mechanism: NAME`` or ``{kind: NAME, …}`` as a new block (no ``kind`` if none is named)."""
    chosen = data.get("mechanism")
    return {"kind": chosen} if isinstance(chosen, str) else as_block(chosen)


def _unnamed_kind(data: dict[str, object], block: dict[str, object]) -> str:
    """The mechanism of a campaign that names none: the daily mechanism whose own keys it
    writes (so a catalogue written for AdsBPC's ``bounds:`` or ``privacy.split`` keeps it), else
    the registry's default for its adjacency."""
    owner = _owner(data, block)
    if owner is not None:
        return owner
    adjacency = as_block(data.get("privacy")).get("adjacency")
    if not isinstance(adjacency, str) or adjacency not in mechanisms.DEFAULT_BY_ADJACENCY:
        # absent: the model's default; invalid: refused by its own field after this fold
        adjacency = PrivacyConfig.model_fields["adjacency"].default
    return mechanisms.default_stream(str(adjacency))


def _owner(data: dict[str, object], block: dict[str, object]) -> str | None:
    """The one daily mechanism whose own keys the campaign writes without naming it: a block of
    its name or a legacy block (``bounds:``), a ``privacy:`` key only it reads (``split``), or its
    settings in a ``mechanism:`` block without ``kind``; None for no such mechanism or several
    (the keys of the others are then refused by the fold)."""
    privacy = as_block(data.get("privacy"))
    settings = set(block) - {"kind"}
    owners = []
    for name in mechanisms.STREAM:
        model = mechanisms.settings_type(name)
        if (
            any(key in data for key in (name, *model.legacy_blocks))
            or any(key in privacy for key in model.privacy_keys)
            or (settings and settings <= set(model.model_fields))
        ):
            owners.append(name)
    return owners[0] if len(owners) == 1 else None
