"""Stored text reaches the operator's terminal inert: `inspect`, `sessions`, `stats`.

Chat text is untrusted. Each command runs as a real console script, once with its
output piped and once on a pseudo-terminal (where rich styles its tables); neither
may carry an escape sequence, a C1 control or a bidi override taken from the store.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine, ToolCall
from memory_summary.adapters import SqliteStore
from memory_summary.terminal_text import shown
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.e2e.test_cli import run, script
from tests.property.test_terminal_text import acts_on_terminal

pytestmark = pytest.mark.e2e

CLEAR_SCREEN = "\x1b[2J\x1b[H"
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes "rm -rf ~" to the clipboard
HIDDEN_LINK = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
C1_CSI = "\x9b2J"  # CSI as one C1 byte: clears the screen on many terminals
BIDI = "\u202eexe.txt\u202c"  # Trojan Source: shown reversed
HOSTILE = (
    f"hello {CLEAR_SCREEN}{OSC52} see {HIDDEN_LINK} {C1_CSI} {BIDI} back\rspace\x08"
    "\u2028tag\U000e0041\u200b"
)
SESSION = f"evil{CLEAR_SCREEN}\u202eid"
MODEL = f"model{OSC52}"

# The session id as the reports show it: as text, JSON or not.
SHOWN_ID = re.compile(r"evil\\(x1b|u001b)\[2J\\(x1b|u001b)\[H\\u202eid")
# What rich itself writes on a terminal: SGR styles (bold headers), nothing else.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def acting_characters(output: str) -> list[str]:
    """Return what a terminal acts on in ``output`` (lines and rich's SGR aside)."""
    return sorted(
        {repr(c) for c in _SGR.sub("", output) if c != "\n" and acts_on_terminal(c)}
    )


class _Labelled(ScriptedSummarizer):
    label = MODEL  # how the summary's origin is reported


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "chat.sqlite3"
    store = SqliteStore(path)
    config = SummaryConfig(threshold=10, keep_recent=4)
    summary = f"The user said {HOSTILE}."
    try:
        with SummaryEngine(store, _Labelled(summary), config=config) as engine:
            for i in range(14):
                role = "user" if i % 2 == 0 else "assistant"
                store.save_message(SESSION, Message(role, f"{i}: {HOSTILE}"))
            assert engine.compress(SESSION).result(timeout=30).kind == "compressed"
            store.save_message(
                SESSION,
                Message(
                    "assistant",
                    "",
                    tool_calls=(
                        ToolCall(
                            "c1", f"run{CLEAR_SCREEN}", json.dumps({"q": HOSTILE})
                        ),
                    ),
                ),
            )
    finally:
        store.close()
    return path


COMMANDS = [
    ("inspect", SESSION),
    ("sessions",),
    ("sessions", "--json"),
    ("stats",),
    ("stats", "--json"),
]
IDS = ["inspect", "sessions", "sessions-json", "stats", "stats-json"]


def on_terminal(*args: str, columns: int = 120) -> tuple[int, str]:
    """Run the console script with a pseudo-terminal as stdout; return code, text."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SUMMARY_")
    }
    environ.update({"TERM": "xterm-256color", "COLUMNS": str(columns)})
    environ.pop("NO_COLOR", None)
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [*script(), *args],
        stdout=secondary,
        stderr=subprocess.PIPE,
        env=environ,
    )
    os.close(secondary)
    chunks: list[bytes] = []
    while True:
        readable, _, _ = select.select([primary], [], [], 60)
        if not readable:
            process.kill()
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    code = process.wait(timeout=60)
    assert process.stderr is not None
    process.stderr.close()
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_stored_text_is_shown_inert_in_a_pipe(hostile_db, command):
    result = run(*command, "--db", str(hostile_db))

    assert result.returncode == 0, result.stderr
    assert acting_characters(result.stdout) == []
    assert SHOWN_ID.search(result.stdout)  # shown, not dropped


@pytest.mark.skipif(sys.platform != "linux", reason="a Linux pseudo-terminal")
@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_stored_text_is_shown_inert_on_a_terminal(hostile_db, command):
    code, output = on_terminal(*command, "--db", str(hostile_db))

    assert code == 0, output
    assert acting_characters(output) == []
    assert SHOWN_ID.search(output)


def test_the_json_reports_still_hold_the_stored_values(hostile_db):
    listed = json.loads(run("sessions", "--json", "--db", str(hostile_db)).stdout)
    stats = json.loads(run("stats", "--json", "--db", str(hostile_db)).stdout)

    assert [s["session_id"] for s in listed["sessions"]] == [SESSION]
    assert [s["session_id"] for s in stats["sessions"]] == [SESSION]
    assert stats["sessions"][0]["model"] == MODEL


def test_inspect_shows_the_summary_model_and_tool_call_inert(hostile_db):
    result = run("inspect", SESSION, "--db", str(hostile_db))

    assert result.returncode == 0, result.stderr
    assert shown(f"session {SESSION}:") in result.stdout
    assert shown(MODEL) in result.stdout
    assert shown(f"run{CLEAR_SCREEN}(") in result.stdout


ARGUMENTS = {f"field_{n}": f"value number {n} of the request" for n in range(40)}


@pytest.fixture(scope="module")
def tool_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tools") / "chat.sqlite3"
    store = SqliteStore(path)
    try:
        store.save_message("s", Message("user", "hi"))
        store.save_message(
            "s",
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("c1", "lookup", json.dumps(ARGUMENTS, indent=2)),),
            ),
        )
        store.save_message("s", Message("tool", "x " * 400, tool_call_id="c1"))
    finally:
        store.close()
    return path


def _row(output: str, role: str) -> str:
    return next(line for line in output.splitlines() if f" {role} " in line)


def test_inspect_in_a_pipe_pads_no_row(tool_db):
    result = run("inspect", "s", "--db", str(tool_db))

    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line != line.rstrip()] == []
    assert len(_row(result.stdout, "user").split()) == 3  # id, role, "hi"


@pytest.mark.parametrize("where", ["pipe", "terminal"])
def test_inspect_cuts_tool_arguments_at_a_clean_place_with_an_ellipsis(tool_db, where):
    if where == "pipe":
        result = run("inspect", "s", "--db", str(tool_db))
        code, output = result.returncode, result.stdout
    else:
        code, output = on_terminal("inspect", "s", "--db", str(tool_db), columns=100)
        output = _SGR.sub("", output)

    assert code == 0, output
    row = _row(output, "assistant").rstrip()
    shown_call = row.split("assistant", 1)[1].strip()
    assert shown_call.endswith("…")
    kept = shown_call.removesuffix("…")
    whole = f"lookup({json.dumps(ARGUMENTS, ensure_ascii=False)})"
    assert whole.startswith(kept)  # the arguments' JSON on one line, cut...
    assert kept[-1] in " ,:"  # ...after a delimiter, not inside a word or a string
    if where == "terminal":
        assert len(row) <= 100
