"""Reading a catalogue: YAML text → validated models (config.py), every failure one line.

The loader is where the catalogue meets the mechanism registry (dp_platform/mechanisms/): it
gives the models the registry's answers (:class:`RegisteredMechanisms`) as validation context,
so a campaign's ``mechanism`` block is read as its mechanism's own settings and older shapes
are folded (config_legacy.py). A duplicate key, bad encoding or bad YAML is refused with its
line, and a validation error with the path of the field and the rule it broke.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from dp_platform import mechanisms
from dp_platform.config import CampaignConfig, Catalogue, MechanismSettings
from dp_platform.config_legacy import fold_mechanism_blocks, mechanism_defaulted
from dp_platform.errors import ConfigError

__all__ = [
    "RegisteredMechanisms",
    "load_catalogue",
    "parse_campaign",
    "parse_catalogue",
]


class RegisteredMechanisms:
    """The registry's answers to the catalogue models (config.MechanismBlocks), asked when a
    campaign is validated (a mechanism registered later, as tests do, is known)."""

    def fold(self, campaign: dict[str, object]) -> dict[str, object]:
        return fold_mechanism_blocks(campaign)

    def defaulted(self, campaign: dict[str, object]) -> bool:
        return mechanism_defaulted(campaign)

    def settings_type(self, kind: str) -> type[MechanismSettings]:
        return mechanisms.settings_type(kind)

    def release_type(self, name: str) -> type[MechanismSettings]:
        return mechanisms.campaign_level(name).settings


_MECHANISMS = RegisteredMechanisms()


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
    """Validate a catalogue given as plain data (the parsed YAML); campaigns' breakdown names
    resolve against its ``dimensions:``."""
    dimensions = data.get("dimensions") if isinstance(data, dict) else None
    try:
        return Catalogue.model_validate(
            data, context={"dimensions": dimensions or {}, "mechanisms": _MECHANISMS}
        )
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


def parse_campaign(data: object) -> CampaignConfig:
    """Validate one campaign given as plain data."""
    try:
        return CampaignConfig.model_validate(data, context={"mechanisms": _MECHANISMS})
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None


class _DuplicateKey(Exception):
    def __init__(self, key: object, first_line: int, second_line: int) -> None:
        super().__init__(key, first_line, second_line)
        self.key, self.first_line, self.second_line = key, first_line, second_line


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping: YAML keeps the last value
    silently, so the privacy officer reviewing the file could read another ρ than the one spent."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_line: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges are overridden by design
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first_line:
                    raise _DuplicateKey(key, first_line[key], line)
                first_line[key] = line
            except TypeError:  # an unhashable key: SafeLoader refuses it below with its mark
                break
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> object:
        """A date-shaped value that is no date (2026-13-01) is a YAML error with its line."""
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as error:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a date ({error})", node.start_mark
            ) from None


_UniqueKeyLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", _UniqueKeyLoader.construct_yaml_timestamp
)


def _yaml_problem(error: yaml.YAMLError) -> str:
    """One line: where the YAML broke and why (PyYAML's own text spans several lines)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        problem = " ".join(f"{error.context or ''} {error.problem or ''}".split())
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return " ".join(str(error).split())


def _read_text(path: Path) -> str:
    """The file as UTF-8 text; every way of failing is one ConfigError naming the path."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a catalogue file") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} on line {line}); save the "
            "catalogue as UTF-8"
        ) from None


def load_catalogue(path: str | Path) -> Catalogue:
    """Read and validate a YAML catalogue; a missing file, bad encoding, bad YAML or a key
    written twice is a one-line ConfigError too."""
    path = Path(path)
    text = _read_text(path)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: safe
    except _DuplicateKey as duplicate:
        raise ConfigError(
            f"{path}: key {duplicate.key!r} is written twice in one mapping (lines "
            f"{duplicate.first_line} and {duplicate.second_line}); keep one"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({_yaml_problem(error)})") from None
    return parse_catalogue(data)
