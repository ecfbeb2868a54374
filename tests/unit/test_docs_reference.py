"""The API reference shows every store and summarizer, and documents their parameters.

The reference pages are generated from the docstrings (mkdocstrings, google style): a
public adapter missing from them, or a constructor parameter its docstring's ``Args``
section lacks, is a gap a reader meets only in the guides' prose.
"""

from __future__ import annotations

import configparser
import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import memory_summary.adapters as adapters

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: ([\w.]+)$", re.M)
SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters):\s*$")


def documented_objects() -> set[str]:
    """Return the dotted names the reference pages render (``::: name``)."""
    return {
        name
        for page in REFERENCE.glob("*.md")
        for name in DIRECTIVE.findall(page.read_text(encoding="utf-8"))
    }


def args_section(docstring: str) -> list[str]:
    """Return the parameter names a google-style ``Args:`` section documents."""
    lines = inspect.cleandoc(docstring).splitlines()
    names: list[str] = []
    for i, line in enumerate(lines):
        section = SECTION.match(line)
        if section is None:
            continue
        indent = len(section[1])
        entry_indent = None
        for entry in lines[i + 1 :]:
            if not entry.strip():
                continue
            depth = len(entry) - len(entry.lstrip())
            if depth <= indent:
                break
            entry_indent = entry_indent or depth
            if depth == entry_indent:
                found = re.match(r"\s*\*{0,2}(\w+)(?: \([^)]*\))?:(?:\s|$)", entry)
                assert found, f"not an Args entry: {entry!r}"
                names.append(found[1])
    return names


def parameters(obj: Callable[..., object]) -> list[str]:
    """Return the names a caller passes: a class's constructor's, or a function's."""
    return [
        p.name
        for p in inspect.signature(obj).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def docstring_of(obj: Callable[..., object]) -> str:
    """Return the docstring the reference renders: a class's own plus its __init__'s."""
    if inspect.isclass(obj):
        init = obj.__dict__.get("__init__")
        return (obj.__doc__ or "") + "\n\n" + ((init and init.__doc__) or "")
    return obj.__doc__ or ""


def test_args_section_reads_google_style_entries():
    doc = """Summary.

    Args:
        path: the file; a long description
            that goes on.
        *parts (str): more.
        pool_size: connections.

    Raises:
        StoreError: never a parameter.
    """

    assert args_section(doc) == ["path", "parts", "pool_size"]


def test_every_public_adapter_is_on_a_reference_page():
    shown = documented_objects()

    missing = [
        name
        for name in adapters.__all__
        if f"memory_summary.adapters.{name}" not in shown
    ]

    assert missing == []


@pytest.mark.parametrize("name", adapters.__all__)
def test_every_parameter_of_a_public_adapter_is_documented(name):
    obj = getattr(adapters, name)
    expected = parameters(obj)

    documented = args_section(docstring_of(obj))

    assert sorted(set(expected) - set(documented)) == [], f"{name}: undocumented"
    assert sorted(set(documented) - set(expected)) == [], f"{name}: not parameters"


def test_the_docs_extra_brings_a_signature_formatter():
    """mkdocstrings formats separate signatures with Black or Ruff, else not at all."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    extras = config["options.extras_require"]

    for extra in ("docs", "dev"):
        requirements = [line.strip() for line in extras[extra].splitlines()]
        assert any(re.match(r"(ruff|black)\b", line) for line in requirements), extra
