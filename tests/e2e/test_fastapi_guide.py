"""The FastAPI guide (docs/fastapi.md) runs offline as written.

Its python block is saved as ``fastapi_chat.py`` in an empty folder and served with
the guide's own command (``uvicorn --factory fastapi_chat:create_app``) in a fresh
process, with no OPENAI_* variable; a real HTTP client holds a conversation with it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.e2e.docs_blocks import ROOT, blocks

pytestmark = pytest.mark.e2e
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

GUIDE = ROOT / "docs" / "fastapi.md"
EXAMPLE = ROOT / "examples" / "fastapi_chat.py"


def guide_block() -> str:
    (block,) = [b for b in blocks() if b.page == GUIDE]
    return block.code


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_fastapi_guide_is_the_example_the_tests_run():
    example = EXAMPLE.read_text(encoding="utf-8")
    docstring, code = example.split('"""\n\n', 1)

    assert guide_block() == code
    assert "pip install 'memory-summary[openai]' fastapi uvicorn" in docstring
    assert "pip install 'memory-summary[openai]' fastapi uvicorn" in GUIDE.read_text(
        encoding="utf-8"
    )


def test_the_fastapi_guide_runs_offline_as_written(tmp_path):
    (tmp_path / "fastapi_chat.py").write_text(guide_block(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    port = free_port()
    command = ["uvicorn", "--factory", "fastapi_chat:create_app"]  # as the guide
    server = subprocess.Popen(
        [sys.executable, "-m", *command, "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in server.stderr:  # uvicorn logs its start on stderr
            if "Application startup complete" in line:
                break
        else:
            pytest.fail(f"the server exited: {server.wait()}")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            replies = [
                client.post("/chat/alice", json={"message": text}).json()
                for text in ("Remember the code K-7.", "Which code?")
            ]
    finally:
        server.terminate()
        _, logged = server.communicate(timeout=60)

    assert replies == [
        {"reply": "echo: Remember the code K-7."},
        {"reply": "echo: Which code?"},
    ]
    assert "Application shutdown complete" in logged  # the engine stopped cleanly
    assert "Traceback" not in logged
    assert (tmp_path / "chat.sqlite3").is_file()
