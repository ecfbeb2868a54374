"""``import memory_summary`` stays light: the heavy drivers load when first needed.

Each check runs in a fresh interpreter, so nothing imported by the test session
itself (pytest plugins, other tests) can hide or fake a result.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

pytestmark = pytest.mark.e2e

HEAVY = ("openai", "psycopg", "psycopg_pool", "redis", "tiktoken")


def loaded_after(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; return the heavy modules it loaded."""
    report = f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    probe = f"{code}\nimport json, sys\n{report}"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tempfile.gettempdir(),  # not the repository: its folders would shadow
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.splitlines()[-1])
    return loaded


def test_importing_the_package_loads_no_driver():
    assert loaded_after("import memory_summary, memory_summary.adapters") == []


def test_the_command_line_and_the_async_face_load_no_driver():
    assert loaded_after("import memory_summary.cli, memory_summary.aio") == []


def test_constructing_the_default_engine_loads_no_driver():
    code = (
        "from memory_summary import SummaryEngine\n"
        "from memory_summary.adapters import InMemoryStore\n"
        "engine = SummaryEngine(InMemoryStore())"
    )

    assert loaded_after(code) == []


def test_start_loads_only_the_tokenizer():
    # By design: start() loads the default summarizer's tokenizer (tiktoken), once,
    # so the first turns do not stall on it; openai and psycopg stay unloaded.
    code = (
        "from memory_summary import SummaryEngine\n"
        "from memory_summary.adapters import InMemoryStore\n"
        "engine = SummaryEngine(InMemoryStore()).start()\n"
        "engine.stop()"
    )

    assert loaded_after(code) == ["tiktoken"]


def test_the_optional_adapters_load_on_first_use():
    code = (
        "from memory_summary.adapters import OpenAIChatLLM, PostgresStore, RedisStore"
    )

    assert sorted(loaded_after(code)) == ["openai", "psycopg", "psycopg_pool", "redis"]
