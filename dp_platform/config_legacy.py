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
from dp_platform.config import as_block

__all__ = ["fold_mechanism_blocks"]


def fold_mechanism_blocks(data: dict[str, object]) -> dict[str, object]:
    """A campaign's raw keys with its mechanism blocks in the current shape: ``mechanism`` the
    chosen mechanism's block (its kind set), ``releases`` the added releases by name. A block
    of a mechanism that is not chosen is refused (ValueError naming the key), as is an unknown
    mechanism."""
    data = dict(data)
    chosen = data.get("mechanism", mechanisms.DEFAULT_STREAM)
    block = {"kind": chosen} if isinstance(chosen, str) else as_block(chosen)
    mode = data.pop("mode", None)
    if mode is not None and mode != mechanisms.DEFAULT_STREAM:
        if block.get("kind", mechanisms.DEFAULT_STREAM) != mechanisms.DEFAULT_STREAM:
            raise ValueError(f"mode: {mode} replaces the daily mechanism; leave mechanism out")
        block["kind"] = mode
    kind = block.setdefault("kind", mechanisms.DEFAULT_STREAM)
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
