"""The documentation's examples that need a server, a key or checks run as written.

The blocks come from the README and every page under docs/ (``docs_blocks.py``); the
ones marked ``<!-- run-by: test_name -->`` are run here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.docs_blocks import blocks

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def python_blocks() -> list[str]:
    """Return the code of every python block of the README and the docs pages."""
    return [block.code for block in blocks()]


def test_the_embedding_example_runs_and_compresses(tmp_path):
    example = next(block for block in python_blocks() if "SummaryEngine(store" in block)
    assert len(example.strip().splitlines()) <= 16

    result = run_block(example, tmp_path)

    assert result.returncode == 0, result.stderr
    system, blank, header, *summary, active = result.stdout.splitlines()
    assert (system, blank) == ("Hi.", "")
    assert header.startswith("Summary of the earlier conversation")
    assert any(line.startswith("- user: Question 0") for line in summary)
    assert active == "20 messages still active"


def run_block(block: str, cwd, env_extra: dict[str, str] | None = None):
    """Run a README code block in a fresh interpreter inside ``cwd``."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-c", block],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_the_anthropic_example_merges_the_summary_into_system(tmp_path):
    block = next(b for b in python_blocks() if "assemble_anthropic(" in b)

    result = run_block(block, tmp_path)

    assert result.returncode == 0, result.stderr
    merged, first = result.stdout.splitlines()
    assert merged == (
        "True Summary of the earlier conversation (older messages were archived):"
    )
    assert first == "{'role': 'user', 'content': 'Will it rain in Oslo on day 3?'}"


def test_the_sqlite_snippet_runs(tmp_path):
    block = next(
        b
        for b in python_blocks()
        if 'SqliteStore("chat.sqlite3")' in b and "SqliteArchive" in b
    )

    result = run_block(block, tmp_path, {})

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "chat.sqlite3").exists()


@pytest.mark.postgres
def test_the_postgres_snippet_runs(tmp_path):
    from tests.contract.stores import dispose, make_postgres, postgres_dsn

    dispose(make_postgres("memory_summary"))  # skips (or fails in CI) without a server
    block = next(b for b in python_blocks() if "PostgresStore(dsn)" in b)

    result = run_block(block, tmp_path, {"MEMORY_SUMMARY_PG_DSN": postgres_dsn()})

    assert result.returncode == 0, result.stderr
    dispose(make_postgres("memory_summary"))


@pytest.mark.redis
def test_the_redis_snippet_runs(tmp_path):
    from tests.redisserver import RedisServer

    block = next(b for b in python_blocks() if 'RedisStore(prefix="tenant-a:")' in b)
    with RedisServer("aof") as server:
        result = run_block(block, tmp_path, {"MEMORY_SUMMARY_REDIS_URL": server.url})

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 message in Redis"


def test_the_openai_snippet_runs_against_a_compatible_endpoint(tmp_path):
    from tests.openai_server import OpenAICompatibleServer

    block = next(b for b in python_blocks() if "OpenAIChatLLM(" in b)
    with OpenAICompatibleServer({"qwen2.5-7b-instruct": {}}) as server:
        result = run_block(
            block,
            tmp_path,
            {"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "qwen2.5-7b-instruct"},
        )

    assert result.returncode == 0, result.stderr


def test_the_local_model_snippet_builds_a_client(tmp_path):
    block = next(b for b in python_blocks() if "context_tokens=8192" in b)

    result = run_block(block + "\nprint(llm.context_length())", tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "8192"


def run_against_model_server(block: str, tmp_path):
    """Run a block with OPENAI_* pointing at the OpenAI-compatible test server."""
    from tests.openai_server import OpenAICompatibleServer

    with OpenAICompatibleServer({"test-model": {}}) as server:
        result = run_block(
            block,
            tmp_path,
            {
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_MODEL": "test-model",
                "OPENAI_API_KEY": "none",
            },
        )
    return result, [request["messages"] for request in server.requests]


def test_the_agents_sdk_example_keeps_the_session(tmp_path):
    pytest.importorskip("agents")
    block = next(b for b in python_blocks() if "SummarySession(" in b)

    result, requests = run_against_model_server(block, tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "4 items in the session"
    assert [m["role"] for m in requests[1]] == ["system", "user", "assistant", "user"]
    assert requests[1][1]["content"] == "Hi, I'm Alice."


def test_the_langchain_example_keeps_the_session(tmp_path):
    pytest.importorskip("langchain.agents")
    pytest.importorskip("langchain_openai")
    block = next(b for b in python_blocks() if "SummaryMiddleware(" in b)

    result, requests = run_against_model_server(block, tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "4 messages in the session"
    assert [m["role"] for m in requests[1]] == ["user", "assistant", "user"]
    assert requests[1][0]["content"] == "Hi, I'm Alice."


def test_the_openai_format_example_round_trips(tmp_path):
    example = next(b for b in python_blocks() if "assemble_openai([system" in b)

    result = run_block(example, tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_the_testing_kit_example_subclasses_the_contract(tmp_path):
    example = next(b for b in python_blocks() if "class TestRedisStore" in b)
    (tmp_path / "my_app").mkdir()
    (tmp_path / "my_app" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "my_app" / "stores.py").write_text(
        "from memory_summary.adapters import InMemoryStore\n\n\n"
        "class RedisStore(InMemoryStore):  # stands in for a real one\n"
        "    def __init__(self, url):\n"
        "        super().__init__()\n\n"
        "    def flushdb(self):\n"
        "        self.clear_all()\n\n"
        "    def close(self):\n"
        "        pass\n",
        encoding="utf-8",
    )
    (tmp_path / "test_redis_store.py").write_text(example, encoding="utf-8")

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout


def test_the_recall_agent_loop_finds_the_archived_turn(tmp_path):
    example = next(b for b in python_blocks() if "call_recall_tool(" in b)

    result = run_block(example, tmp_path)

    assert result.returncode == 0, result.stderr
    hit, answer = result.stdout.splitlines()
    assert hit.startswith("[id 1, archived, summary v")
    assert hit.endswith("User: My locker code is 4417.")
    assert answer == "Your locker code is 4417."


def test_the_health_example_reports_a_healthy_engine(tmp_path):
    block = next(b for b in python_blocks() if "engine.health()" in b)

    result = run_block(block, tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True", "False None"]
