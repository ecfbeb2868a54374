"""Every runnable example in the README runs as written."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(
        r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL
    )


def test_the_embedding_example_runs_and_compresses(tmp_path):
    example = next(block for block in python_blocks() if "SummaryEngine(store" in block)
    assert len(example.strip().splitlines()) <= 16

    result = subprocess.run(
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    header, active = result.stdout.splitlines()
    assert header.startswith("Summary of the earlier conversation")
    assert active == "20 messages still active"


@pytest.mark.parametrize("block", [b for b in python_blocks() if b.startswith("from")])
def test_every_import_example_imports(block, tmp_path):
    tree = ast.parse(block)
    imports = "\n".join(
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
    )
    result = subprocess.run(
        [sys.executable, "-c", imports],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )

    assert result.returncode == 0, result.stderr
