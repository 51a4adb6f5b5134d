"""The library's and the Dagster layer's modules form no import circle, and the product never
imports the research code.

A circle makes import order matter (a name is missing while its module is half-loaded) and
ties modules so that none can be understood, tested or moved alone. Type-only
(``if TYPE_CHECKING:``) and function-local imports count too: they hide a circle, not break
it. ``dp_research`` (the research harness) builds on the platform, never the other way round.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "dp_platform"


def _modules(package: str) -> dict[str, Path]:
    """Dotted module name → file, for every module of ``package`` (a package is its
    ``__init__``)."""
    modules = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every name ``path`` imports, anywhere in the file. ``from pkg import name`` is
    ``pkg.name`` when that is a module of ``modules``, else ``pkg``."""
    in_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if in_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            names = [f"{origin}.{alias.name}" for alias in node.names]
            yield from (name for name in names if name in modules)
            if any(name not in modules for name in names):
                yield origin


def import_graph(package: str = PACKAGE) -> dict[str, set[str]]:
    """Module → the modules of ``package`` it imports (itself excluded); a name inside a
    module (``pkg.mod.Class``) is an edge to its module."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        for name in _imported(module, path, modules):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _describe(component: list[str], graph: dict[str, set[str]]) -> str:
    members = set(component)
    edges = "; ".join(
        f"{module} -> {', '.join(sorted(graph[module] & members))}" for module in component
    )
    return f"{len(component)} modules: {edges}"


@pytest.mark.parametrize("package", [PACKAGE, "assets"])
def test_no_import_circle(package: str) -> None:
    """The library, and the Dagster layer above it (e.g. a command module and the module it
    runs must not import each other, even inside functions)."""
    graph = import_graph(package)
    found = [_describe(component, graph) for component in cycles(graph)]
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_scanner_sees_a_circle() -> None:
    """Not vacuous: a two-module circle and a longer one are found, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_scanner_counts_every_kind_of_import() -> None:
    """Type-only, function-local and relative imports are edges; ``from pkg import module``
    is an edge to the module, not to the package."""
    graph = import_graph()
    # function-local: `from dp_platform.validity import check` inside check_attribution
    assert "dp_platform.validity" in graph["dp_platform.config"]
    # type-only: the registry names the mechanism protocols under TYPE_CHECKING
    assert "dp_platform.mechanisms.base" in graph["dp_platform.mechanisms"]


def test_the_product_never_imports_the_research_package() -> None:
    found = []
    for package in (PACKAGE, "assets"):
        modules = _modules(package)
        for module, path in modules.items():
            found += [
                f"{path.relative_to(ROOT)} imports {name}"
                for name in _imported(module, path, modules)
                if name == "dp_research" or name.startswith("dp_research.")
            ]
    assert found == []
