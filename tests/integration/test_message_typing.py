"""``mypy --strict`` catches a misused ``Message``: the constructor is typed honestly.

Runs mypy on a snippet; each line marked ``# error`` must be reported, and no other
line may be. mypy runs in a child process: in-process it leaves millions of objects
behind, and every later test of the run pays for them at each garbage collection.
"""

from __future__ import annotations

import re
import subprocess
import sys

SNIPPET = """\
from memory_summary import Message, ToolCall, messages_from_openai
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam

call = ToolCall("c1", "search", "{}")
Message("user", "hello")
Message("assistant", None, [call])
Message("assistant", None, refusal="I can't.")
Message("user", [{"type": "text", "text": "hi"}])
Message("developer", "Be brief.")
param: ChatCompletionMessageParam = {"role": "user", "content": "hi"}
messages_from_openai([param, ChatCompletionMessage(role="assistant", content="x")])
text: str = Message("user", "hi").text
Message("user", 42)  # error
Message("robot", "x")  # error
Message("user", b"bytes")  # error
Message("user", ["not a part"])  # error
Message("user", "x", metadata=[1])  # error
Message("user", "x", refusal=1)  # error
ToolCall("c1", None, "{}")  # error
Message.from_openai(42)  # error
content: str = Message("user", "hi").content  # error
"""


def test_mypy_strict_reports_exactly_the_misused_lines(tmp_path):
    path = tmp_path / "snippet.py"
    path.write_text(SNIPPET, encoding="utf-8")
    expected = {
        number
        for number, line in enumerate(SNIPPET.splitlines(), start=1)
        if line.endswith("# error")
    }

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    stdout, stderr = done.stdout, done.stderr

    reported = {
        int(m.group(1)) for m in re.finditer(r"snippet\.py:(\d+): error", stdout)
    }
    assert reported == expected, stdout + stderr
