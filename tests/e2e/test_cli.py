"""The real ``memory-summary`` console script, run in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def script() -> list[str]:
    found = shutil.which("memory-summary", path=str(Path(sys.executable).parent))
    assert found, "the console script is not installed next to this interpreter"
    return [found]


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SUMMARY_")
    }
    environ.update(env or {})
    return subprocess.run(
        [*script(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        cwd=cwd,
    )


def test_config_check_prints_the_effective_defaults():
    result = run("config", "check")

    assert result.returncode == 0
    assert "configuration OK (defaults" in result.stdout
    assert re.search(r"^\s*keep_recent\s+20$", result.stdout, re.M), result.stdout


def test_config_check_reads_a_toml_file_and_environment_overrides(tmp_path):
    path = tmp_path / "summary.toml"
    path.write_text(
        '[memory_summary]\nkeepRecent = 10\nlocale = "zh"\n', encoding="utf-8"
    )

    result = run(
        "config", "check", str(path), "--json", env={"MEMORY_SUMMARY_THRESHOLD": "50"}
    )

    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert (values["keep_recent"], values["locale"], values["threshold"]) == (
        10,
        "zh",
        50,
    )


def test_a_bad_key_exits_3_with_a_suggestion(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("keepRecnt = 5\n", encoding="utf-8")

    result = run("config", "check", str(path))

    assert result.returncode == 3
    assert "did you mean 'keepRecent'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_toml_and_missing_files_say_what_is_wrong(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("threshold = = 3\n", encoding="utf-8")

    assert "valid TOML" in run("config", "check", str(broken)).stderr
    missing = run("config", "check", str(tmp_path / "nope.toml"))
    assert missing.returncode == 3
    assert "an existing TOML file" in missing.stderr


def test_no_command_prints_help_and_exits_2():
    result = run()

    assert result.returncode == 2
    assert "usage: memory-summary" in result.stderr


def test_version_and_module_entry_point_agree(tmp_path):
    from_script = run("--version").stdout
    from_module = subprocess.run(
        [sys.executable, "-m", "memory_summary", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=True,
    ).stdout

    assert from_script == from_module
    assert from_script.startswith("memory-summary 0.")


def test_demo_runs_offline_and_reports_what_it_saved(tmp_path):
    db = tmp_path / "demo.sqlite3"

    result = run(
        "demo",
        "--sessions",
        "6",
        "--turns",
        "25",
        "--db",
        str(db),
        cwd=tmp_path,
        env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""},
    )

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "extractive (offline, not an LLM)" in out
    assert "turns             150" in out
    compressions = int(out.split("compressions")[1].split()[0])
    assert compressions > 0
    saved = int(out.split("% saved")[0].rsplit("(", 1)[1])
    assert saved > 20
    assert str(db) in out
    assert f"  {hint_command()} inspect s0 --db {db}" in out  # runs from this shell
    assert "sessions 6/6" in result.stderr  # the progress display's last line
    assert "What the summaries kept" in out
    for session in ("s0", "s1", "s2"):  # s2 is Chinese
        assert f"  {session}  " in out
    assert out.count("asked about") == out.count("facts stated") == 3
    redundancy = float(out.split("redundancy")[1].split("%")[0])
    assert redundancy <= 5.0


def test_inspect_compress_and_clear_work_on_the_demo_database(tmp_path):
    db = str(tmp_path / "demo.sqlite3")
    assert (
        run(
            "demo", "--sessions", "2", "--turns", "20", "--db", db, "--quiet"
        ).returncode
        == 0
    )

    inspected = run("inspect", "s0", "--db", db)
    assert inspected.returncode == 0, inspected.stderr
    assert "session s0:" in inspected.stdout
    assert "summary: covers messages through id" in inspected.stdout

    compressed = run("compress", "s0", "--db", db)
    assert compressed.returncode == 0
    assert "session s0:" in compressed.stdout

    assert "skipped" in run("clear", "s0", "--types", "history", "--db", db).stdout
    cleared = run("clear", "--all", "--db", db)
    assert "cleared 2 summaries" in cleared.stdout
    assert "summary: none" in run("inspect", "s0", "--db", db).stdout


def hint_command() -> str:
    """Return the command the CLI's hints should print from this test's shell."""
    (path,) = script()
    on_path = shutil.which("memory-summary")
    if on_path and Path(on_path).resolve() == Path(path).resolve():
        return "memory-summary"
    return path


def test_commands_on_a_missing_database_say_what_to_do(tmp_path):
    result = run("inspect", "s0", "--db", str(tmp_path / "none.sqlite3"))

    assert result.returncode == 3
    assert f"run `{hint_command()} demo`" in result.stderr
    assert not (tmp_path / "none.sqlite3").exists()
    neither = run("clear", "--db", str(tmp_path / "x"))
    assert neither.returncode == 2
    assert "one of the arguments session --all is required" in neither.stderr


def test_every_command_has_help():
    for command in ("demo", "inspect", "compress", "clear", "config"):
        result = run(command, "--help")
        assert result.returncode == 0
        assert "usage: memory-summary" in result.stdout


def test_cli_options_come_from_the_config_file_and_environment(tmp_path):
    config = tmp_path / "ms.toml"
    config.write_text(
        "[memory_summary]\nkeepRecent = 10\n\n"
        "[memory_summary.cli]\nsessions = 2\nturns = 12\n"
        f'db = "{tmp_path / "from-file.sqlite3"}"\n',
        encoding="utf-8",
    )

    result = run(
        "demo",
        "--config",
        str(config),
        "--quiet",
        env={"MEMORY_SUMMARY_CLI_TURNS": "15"},
    )

    assert result.returncode == 0, result.stderr
    assert "sessions          2" in result.stdout
    assert "turns             30" in result.stdout  # the environment beat the file
    assert (tmp_path / "from-file.sqlite3").exists()
    inspected = run("inspect", "s0", "--config", str(config)).stdout
    assert re.search(r"session s0: [1-9]\d* active", inspected), inspected


def test_a_bad_cli_option_in_the_config_file_is_reported(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[memory_summary.cli]\nsesions = 2\n", encoding="utf-8")

    result = run("demo", "--config", str(config))

    assert result.returncode == 3
    assert "cli.sesions" in result.stderr


def test_demo_uses_an_openai_compatible_endpoint_when_given(tmp_path):
    from tests.openai_server import Behaviour, OpenAICompatibleServer

    with OpenAICompatibleServer() as server:
        server.then(Behaviour(text="The user planned a trip step by step."))
        result = run(
            "demo",
            "--sessions",
            "2",
            "--turns",
            "15",
            "--quiet",
            "--db",
            str(tmp_path / "llm.sqlite3"),
            "--base-url",
            server.base_url,
            "--model",
            "test-model",
        )

    assert result.returncode == 0, result.stderr
    assert "summarizer        test-model" in result.stdout
    assert any(body.get("stream") for body in server.requests)


@pytest.mark.parametrize("raw", ["{not json", '"a string"', '{"text": 5}'])
def test_inspect_and_compress_survive_a_corrupt_summary_record(tmp_path, raw):
    import sqlite3

    from memory_summary import Message
    from memory_summary.adapters import SqliteStore

    db = tmp_path / "chat.sqlite3"
    store = SqliteStore(db)
    for i in range(30):
        store.save_message("s1", Message("user", f"Question {i} about the weather."))
    store.close()
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO metadata (namespace, key, data) VALUES ('summary', 's1', ?)",
            (raw,),
        )

    inspected = run("inspect", "s1", "--db", str(db))
    compressed = run("compress", "s1", "--db", str(db))
    after = run("inspect", "s1", "--db", str(db))

    assert inspected.returncode == 0, inspected.stderr
    assert "summary: none" in inspected.stdout
    assert compressed.returncode == 0, compressed.stderr
    assert "compressed" in compressed.stdout
    assert after.returncode == 0, after.stderr
    # the new summary, compacted, its ten questions folded into one
    assert "Question 0\u20139 about weather" in after.stdout
    assert "Traceback" not in inspected.stderr + compressed.stderr + after.stderr


def test_inspect_shows_ranges_archived_without_a_summary(tmp_path):
    from memory_summary.adapters import SqliteStore

    db = tmp_path / "chat.sqlite3"
    store = SqliteStore(db)
    record = {
        "text": "",
        "covered_through_id": None,
        "tokens": 0,
        "generation": "g1",
        "unsummarized": [[1, 8], [12, 20]],
    }
    store.save_metadata("summary", "s1", record)
    store.close()

    result = run("inspect", "s1", "--db", str(db))

    assert result.returncode == 0, result.stderr
    assert "unsummarized: ids 1-8, 12-20" in result.stdout


def test_compress_says_why_a_tool_group_holds_every_message(tmp_path):
    from memory_summary import Message, ToolCall
    from memory_summary.adapters import SqliteStore

    db = tmp_path / "chat.sqlite3"
    config = tmp_path / "keep4.toml"
    config.write_text("[memory_summary]\nthreshold = 5\nkeep_recent = 4\n")
    store = SqliteStore(db)
    try:
        calls = tuple(ToolCall(f"c{i}", "look", f'{{"q": {i}}}') for i in range(8))
        store.save_message("g", Message("assistant", "", tool_calls=calls))
        for i in range(8):
            store.save_message(
                "g", Message("tool", f"result {i}", tool_call_id=f"c{i}")
            )
        store.save_message("g", Message("user", "thanks"))
    finally:
        store.close()

    result = run("compress", "g", "--db", str(db), "--config", str(config))

    assert result.returncode == 0, result.stderr
    assert "skipped (nothing to compress: messages 1 to 9 are one tool-call group" in (
        result.stdout
    )
    assert "8 result(s)" in result.stdout
    assert "newest 4 messages kept (keep_recent)" in result.stdout


def test_compress_says_when_keep_recent_keeps_every_message(tmp_path):
    db = str(tmp_path / "demo.sqlite3")
    assert run("demo", "--sessions", "1", "--turns", "3", "--db", db).returncode == 0

    result = run("compress", "s0", "--db", db)

    assert result.returncode == 0, result.stderr
    assert "active message(s), and keep_recent keeps the newest 20" in result.stdout


def test_help_escapes_a_configured_value_an_ascii_terminal_cannot_print():
    result = run(
        "demo",
        "--help",
        env={"PYTHONIOENCODING": "ascii", "MEMORY_SUMMARY_CLI_MODEL": "\u00e9\u4e2d"},
    )

    assert result.returncode == 0, result.stderr
    assert "\\xe9\\u4e2d" in result.stdout
