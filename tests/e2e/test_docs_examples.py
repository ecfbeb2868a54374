"""Every python block of the README and the docs runs, or is compiled and checked.

The markers are described in ``tests/e2e/docs_blocks.py``; ``test_readme.py`` runs the
blocks marked ``run-by``.
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.e2e.docs_blocks import ROOT, Block, blocks
from tests.e2e.test_readme import run_block

pytestmark = pytest.mark.e2e
ALL = blocks()
README = ROOT / "README.md"


def where(block: Block) -> str:
    return block.where


@pytest.mark.parametrize("block", [b for b in ALL if b.marker is None], ids=where)
def test_the_block_runs_as_written(block, tmp_path):
    result = run_block(block.code, tmp_path)

    assert result.returncode == 0, f"{block.where}\n{result.stderr}"


@pytest.mark.parametrize("block", ALL, ids=where)
def test_the_block_compiles(block):
    compile(block.code, block.where, "exec")


def test_every_marked_block_says_who_runs_it_or_why_not():
    tests = "\n".join(
        path.read_text(encoding="utf-8")
        for path in (ROOT / "tests" / "e2e").glob("test_*.py")
    )
    for block in (b for b in ALL if b.marker is not None):
        assert block.note, f"{block.where}: the marker needs a reason"
        if block.marker == "run-by":
            assert f"def {block.note}(" in tests, f"{block.where}: no {block.note}"


def test_the_library_imports_of_every_block_resolve(tmp_path):
    """Blocks that are not run still import only names the library has.

    The integrations are left to their run-by tests: importing the frameworks is slow.
    """
    imports = set()
    for block in ALL:
        for node in ast.parse(block.code).body:
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
            elif isinstance(node, ast.Import):
                module = node.names[0].name
            else:
                continue
            if module.startswith("memory_summary"):
                imports.add(ast.unparse(node))
    probe = "\n".join(sorted(i for i in imports if ".integrations" not in i))

    result = run_block(probe, tmp_path)

    assert result.returncode == 0, result.stderr


def test_the_readme_is_short_and_keeps_its_two_commands():
    text = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")

    assert len(text.encode()) <= 6 * 1024
    assert "pip install . && .venv/bin/memory-summary demo" in text
    install = re.search(r"pip install (-e '\.\[dev\]' --config-settings \S+)", text)
    assert install is not None
    assert f"pip install -q {install[1]}" in ci
    assert ".venv/bin/pytest" in text


def test_every_docs_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [
        page.relative_to(ROOT / "docs").as_posix()
        for page in (ROOT / "docs").rglob("*.md")
        if "_ext" not in page.parts
    ]

    assert [page for page in pages if f": {page}\n" not in nav] == []


def test_the_docs_link_only_to_pages_that_exist():
    for page in [README, *(ROOT / "docs").rglob("*.md")]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", text):
            assert (page.parent / target).is_file(), f"{page}: {target}"
