"""The library runs from the repository root, where its source folder shadows the wheel.

From the root, ``import memory_summary`` finds the source folder first; its
``domain/``, ``actors/`` and ``adapters/`` siblings must still import as
``memory_summary.domain`` and friends (``memory_summary/_checkout.py``). An installed
wheel is unaffected: ``tests/e2e/test_packaging.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def run_from_root(*args: str) -> subprocess.CompletedProcess[str]:
    # As a newcomer runs it: the current folder first on the path (no PYTHONSAFEPATH).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**env, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_subpackages_import_from_the_root_folders():
    probe = (
        "import memory_summary, memory_summary.domain as d\n"
        "import memory_summary.adapters.stores.sql.core"
        "\nimport memory_summary.actors as a\n"
        "print(memory_summary.__file__); print(d.__file__); print(a.__file__)\n"
        "print(d.SummaryConfig().threshold)"
    )

    result = run_from_root("-c", probe)

    assert result.returncode == 0, result.stderr
    package, domain, actors, threshold = result.stdout.splitlines()
    assert package == str(ROOT / "memory_summary" / "__init__.py")
    assert domain == str(ROOT / "domain" / "__init__.py")
    assert actors == str(ROOT / "actors" / "__init__.py")
    assert threshold == "30"


def test_python_m_memory_summary_runs_from_the_root():
    result = run_from_root("-m", "memory_summary", "--help")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: memory-summary")


def test_the_fastapi_example_builds_its_app_from_the_root(tmp_path):
    pytest.importorskip("fastapi")
    probe = (
        "from examples.fastapi_chat import create_app\n"
        f"app = create_app(db_path={str(tmp_path / 'chat.sqlite3')!r})\n"
        "print(type(app).__name__, app.state.engine.__module__)"
    )

    result = run_from_root("-c", probe)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["FastAPI", "memory_summary.aio"]


def test_the_first_docs_example_runs_from_the_root():
    from tests.e2e.test_readme import python_blocks

    example = next(block for block in python_blocks() if "SummaryEngine(store" in block)

    result = run_from_root("-c", example)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "20 messages still active"
