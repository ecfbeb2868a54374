"""STYLE's size rule: a module over about 400 lines says why at its top, truthfully.

The reason is a sentence of the module's docstring with its size in it ("about 610
lines"); the number must be within 5% (at least 15 lines) of the file's length, so a
reason that drifts with the code fails here instead of misleading the next reader.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("domain", "actors", "adapters", "memory_summary")
LIMIT = 400
SIZE = re.compile(r"[Aa]bout (\d[\d,]*) lines")


def modules() -> list[Path]:
    return sorted(p for f in FOLDERS for p in (ROOT / f).rglob("*.py"))


def stated_size(path: Path) -> int | None:
    """The size the module's docstring gives itself, or None."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    found = SIZE.search(doc)
    return int(found.group(1).replace(",", "")) if found else None


def test_the_rule_reads_the_size_a_docstring_states(tmp_path):
    module = tmp_path / "big.py"
    module.write_text('"""Big.\n\nWhy about 1,210 lines: one concept."""\n')

    assert stated_size(module) == 1210
    module.write_text('"""Big, with no reason."""\n')
    assert stated_size(module) is None


@pytest.mark.parametrize(
    "path", modules(), ids=lambda p: str(p.relative_to(ROOT)).replace("/", ".")
)
def test_a_module_over_400_lines_states_its_size_and_why(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines <= LIMIT:
        return
    stated = stated_size(path)

    assert stated is not None, (
        f"{lines} lines with no reason at the top: split it or say why "
        f"('Why about {lines} lines: ...')"
    )
    assert abs(stated - lines) <= max(15, lines // 20), (
        f"the docstring says about {stated} lines; the file has {lines}"
    )
