"""The shape of the code base, checked: layers, the mechanism registry, and references.

- Imports go one way: ``assets/`` (Dagster) → ``dp_platform/`` (no Dagster); ``privacy/`` is the
  bottom and imports nothing of the platform above it; the ledger and the warehouse know budgets
  and tables, not mechanisms.
- Only a mechanism's own module and the registry name it (``dp_platform/mechanisms/``).
- Every reference to a document is to a file in this repository, and its ``#anchor`` exists.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dp_platform import mechanisms

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTATIONS = {*mechanisms.STREAM.values(), *mechanisms.CAMPAIGN_LEVEL.values()}


def _python_files(*parts: str) -> list[Path]:
    return sorted(p for part in parts for p in (ROOT / part).rglob("*.py"))


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module ``path`` imports (at any depth: functions, TYPE_CHECKING blocks too)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:  # `from dp_platform.mechanisms import adsbpc`
                yield node.lineno, f"{node.module}.{alias.name}"


def _violations(files: list[Path], forbidden) -> list[str]:
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line} imports {module}"
        for path in files
        for line, module in _imports(path)
        if forbidden(path, module)
    ]


def _under(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_library_never_imports_dagster_the_assets_or_the_tests() -> None:
    found = _violations(
        _python_files("dp_platform"),
        lambda _, module: _under(module, "dagster", "dagster_webserver", "assets", "tests"),
    )
    assert found == []


def test_the_dagster_layer_imports_the_library_never_the_tests() -> None:
    found = _violations(_python_files("assets"), lambda _, module: _under(module, "tests"))
    assert found == []
    # …and it does import the library: the check above is not vacuous
    assert any(
        _under(module, "dp_platform")
        for path in _python_files("assets")
        for _, module in _imports(path)
    )


# The one product module allowed to reach into Dagster's private modules: the UI's partition
# listing correction (its "bug still present" test is in tests/test_ui_metadata.py).
DAGSTER_PRIVATE_ALLOWED = {ROOT / "assets" / "dagster_fixes.py"}


def _private_dagster(module: str) -> bool:
    top, _, rest = module.partition(".")
    return top.startswith("dagster") and (rest.startswith("_") or top.startswith("dagster._"))


def test_no_product_module_imports_a_private_dagster_module() -> None:
    files = [p for p in _python_files("assets", "dp_platform") if p not in DAGSTER_PRIVATE_ALLOWED]
    assert _violations(files, lambda _, module: _private_dagster(module)) == []
    # the check sees one: the allowed correction does import dagster._core
    assert _violations(sorted(DAGSTER_PRIVATE_ALLOWED), lambda _, m: _private_dagster(m))


def test_no_product_code_puts_a_step_in_a_dagster_pool() -> None:
    """The one-writer rule is the warehouse's own lock (dp_platform/file_lock.py), not an op
    pool in processes Dagster does not supervise."""
    pattern = re.compile(r"\bpool\s*=")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _python_files("assets", "dp_platform")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == []
    assert pattern.search("@dg.asset(pool=WRITER)")  # the pattern finds what it is meant to
    assert "pools:" not in (ROOT / "dagster.yaml").read_text()


def test_privacy_imports_nothing_above_it() -> None:
    """privacy/ (noise, accounting, the primitives) may use the pure-NumPy clipping rule and
    itself; nothing that knows campaigns, stores or mechanisms."""
    allowed = ("dp_platform.privacy", "dp_platform.clipping")
    found = _violations(
        _python_files("dp_platform/privacy"),
        lambda _, module: _under(module, "dp_platform") and not _under(module, *allowed),
    )
    assert found == []
    assert (
        _violations(
            [ROOT / "dp_platform/clipping.py"], lambda _, module: _under(module, "dp_platform")
        )
        == []
    )


def test_the_ledger_and_the_warehouse_know_no_mechanism() -> None:
    files = [ROOT / "dp_platform/ledger.py", *_python_files("dp_platform/warehouse")]
    found = _violations(files, lambda _, module: _under(module, *IMPLEMENTATIONS))
    assert found == []


def test_mechanism_names_appear_only_in_their_modules_and_the_registry() -> None:
    """No string equal to a registered mechanism's name and no import of its module outside
    ``dp_platform/mechanisms/``: config, plans, ledger, daily loop, warehouse, commands and the
    Dagster layer ask the registry. The research harness, whose job is to compare named methods
    in tables, is a package of its own (``research/``) and not scanned."""
    names = set(mechanisms.names())
    exempt = (ROOT / "dp_platform/mechanisms",)
    found = []
    for path in _python_files("dp_platform", "assets"):
        if any(path.is_relative_to(folder) for folder in exempt):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} names {node.value!r}")
        found += _violations([path], lambda _, module: _under(module, *IMPLEMENTATIONS))
    assert found == []


def test_the_checks_above_see_a_violation() -> None:
    """The scanners are not vacuous: a planted import and a planted name are caught."""
    planted = ROOT / "tests" / "_planted_violation.py"
    planted.write_text(
        'import dagster\nfrom dp_platform.mechanisms import adsbpc\nKIND = "adsbpc"\n'
    )
    try:
        modules = {module for _, module in _imports(planted)}
        assert "dagster" in modules and "dp_platform.mechanisms.adsbpc" in modules
        assert _violations([planted], lambda _, m: _under(m, *IMPLEMENTATIONS))
    finally:
        planted.unlink()


# -- references ------------------------------------------------------------------------------

OUTSIDE = re.compile(
    r"\.\./shared|/work/shared|\bdesign\.md\b|\badsbpc\.md\b|\b[Ss]eed 00\d\b"
    r"|(?<![/\w])[\w-]+\.md §|the project spec"
)
DOC_LINK = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")
RELATIVE_LINK = re.compile(r"\]\(([\w-]+\.md)(?:#([\w-]+))?\)")
TEXT_SUFFIXES = {".py", ".md", ".sql", ".yaml", ".yml", ".toml", ".cfg", ".txt", ""}


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [
        ROOT / name
        for name in listed
        if Path(name).suffix in TEXT_SUFFIXES
        and (ROOT / name).is_file()
        and name != "tests/test_architecture.py"
    ]


def _anchors(document: Path) -> set[str]:
    """Explicit ``<a id>`` anchors and GitHub's heading slugs of a Markdown file."""
    text = document.read_text()
    anchors = set(re.findall(r'<a id="([\w-]+)"', text))
    for heading in re.findall(r"^#+\s+(.+?)\s*$", text, flags=re.MULTILINE):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return anchors


def test_no_reference_to_a_file_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:90]}"
        for path in _tracked_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_every_docs_reference_resolves_to_a_file_and_an_anchor() -> None:
    docs = ROOT / "docs"
    broken = []
    for path in _tracked_text_files():
        text = path.read_text(errors="replace")
        links = [(m.group(1), m.group(2)) for m in DOC_LINK.finditer(text)]
        if path.parent == docs:
            links += [(m.group(1), m.group(2)) for m in RELATIVE_LINK.finditer(text)]
        for name, anchor in links:
            target = docs / name
            if not target.is_file():
                broken.append(f"{path.relative_to(ROOT)}: docs/{name} does not exist")
            elif anchor and anchor not in _anchors(target):
                broken.append(f"{path.relative_to(ROOT)}: docs/{name}#{anchor} has no such anchor")
    assert broken == []


# A repository path named in the docs' prose (`dp_platform/mechanisms/adsbpc.py`, `tests/…`),
# which a reader will open: it must exist after every move.
NAMED_PATH = re.compile(r"`((?:dp_platform|assets|tests|examples)/[\w/.-]+\.(?:py|sql|yaml|md))`")


IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def test_every_path_the_docs_name_exists() -> None:
    missing = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        named = [ROOT / name for name in NAMED_PATH.findall(text)]
        named += [path.parent / image for image in IMAGE.findall(text)]  # figures are files too
        missing += [f"{path.relative_to(ROOT)}: {t}" for t in named if not t.exists()]
    assert missing == []


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("## 1. Event files", "1-event-files"),
        (
            "## 7. Generators and real data (`dp_platform.events`)",
            "7-generators-and-real-data-dp_platformevents",
        ),
    ],
)
def test_heading_slugs_follow_github(tmp_path, heading, slug) -> None:
    document = tmp_path / "d.md"
    document.write_text(f"# Title\n\n{heading}\n")
    assert slug in _anchors(document)


def test_the_package_map_exports_resolve_and_importing_it_stays_cheap() -> None:
    import dp_platform

    assert set(dp_platform.__all__) == set(dp_platform._PUBLIC)
    for name in dp_platform.__all__:
        assert getattr(dp_platform, name).__name__ == name
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, dp_platform; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert "numpy" not in loaded and "dp_platform.ledger" not in loaded
