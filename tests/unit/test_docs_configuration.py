"""The configuration reference names every field and every variable the code reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import attrs

from memory_summary import LLMRef, SummaryConfig

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
SOURCES = [
    path
    for folder in ("domain", "actors", "adapters", "memory_summary")
    for path in sorted((ROOT / folder).rglob("*.py"))
]
VARIABLE = re.compile(r"(?:MEMORY_SUMMARY|OPENAI|ANTHROPIC)_[A-Z0-9_]*[A-Z0-9]")


def string_constants() -> set[str]:
    """Return the code's string literals, less those spelling its own Python names."""
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in SOURCES]
    nodes = [node for tree in trees for node in ast.walk(tree)]
    names = {node.id for node in nodes if isinstance(node, ast.Name)}
    return {
        node.value
        for node in nodes
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    } - names


def cli_options() -> list[str]:
    """Return the keys of the command line's ``CLI_OPTIONS``, wherever it is defined."""
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.AnnAssign | ast.Assign)
                and "CLI_OPTIONS"
                in [
                    t.id
                    for t in (
                        node.targets if isinstance(node, ast.Assign) else [node.target]
                    )
                    if isinstance(t, ast.Name)
                ]
                and isinstance(node.value, ast.Dict)
            ):
                return [ast.literal_eval(key) for key in node.value.keys if key]
    raise AssertionError("no CLI_OPTIONS in the sources")


def row_start(name: str) -> str:
    """Return how the table row of field ``name`` begins: its anchor, then its name."""
    return f'| <a id="{name}"></a>`{name}`'


def test_every_config_field_has_a_row_and_a_variable():
    for field in attrs.fields(SummaryConfig):
        assert row_start(field.name) in PAGE, field.name
        assert f"`MEMORY_SUMMARY_{field.name.upper()}`" in PAGE, field.name
    for field in attrs.fields(LLMRef):
        assert f"`{field.name}`" in PAGE, field.name


def test_every_command_line_option_has_a_variable():
    options = cli_options()

    assert "db" in options
    for option in options:
        assert f"`MEMORY_SUMMARY_CLI_{option.upper()}`" in PAGE, option


def test_every_variable_the_code_names_is_on_the_page():
    named = {value for value in string_constants() if VARIABLE.fullmatch(value)}

    assert "MEMORY_SUMMARY_PG_DSN" in named
    assert sorted(name for name in named if f"`{name}`" not in PAGE) == []


def test_the_page_names_no_variable_the_code_lacks():
    fields = {f"MEMORY_SUMMARY_{f.name.upper()}" for f in attrs.fields(SummaryConfig)}
    cli = {f"MEMORY_SUMMARY_CLI_{o.upper()}" for o in cli_options()}
    misspelt = {"MEMORY_SUMMARY_TRESHOLD"}  # the page's example of an unknown name
    known = fields | cli | string_constants() | misspelt

    on_page = set(re.findall(r"`(" + VARIABLE.pattern + r")`", PAGE))

    assert sorted(on_page - known) == []


def test_every_config_field_has_its_own_anchor():
    """``configuration.md#threshold`` lands on the field's row, and on nothing else."""
    anchors = re.findall(r'<a id="([^"]+)"></a>', PAGE)
    headings = {
        re.sub(r"[^a-z0-9_ -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in PAGE.splitlines()
        if line.startswith("#")
    }
    fields = [field.name for field in attrs.fields(SummaryConfig)]

    assert sorted(anchors) == sorted(fields)  # one each, and none for a field gone
    for name in fields:
        assert PAGE.count(f'id="{name}"') == 1, name
        assert name not in headings, name
        assert f"[`{name}`](#{name})" in PAGE, f"the variables table links {name}"
