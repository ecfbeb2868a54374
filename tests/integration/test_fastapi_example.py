"""The FastAPI example (examples/fastapi_chat.py) under a real ASGI server.

uvicorn serves the example on a loopback socket bound before it starts (a client
waits in the listen backlog, no polling); the model is the testing kit's scripted
chat model (the example's own when OPENAI_BASE_URL is unset); a real HTTP client
drives it, 20 sessions at once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory_summary import Compressing, SummaryConfig
from memory_summary.testing import ChatModelServer, Reply

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fastapi_chat.py"
SUMMARY_HEADER = "Summary of the earlier conversation"
SESSIONS = 20
TURNS = 6


def load_example():
    """Import the example file (registered, so pydantic resolves its annotations)."""
    spec = importlib.util.spec_from_file_location("fastapi_chat_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def offline(monkeypatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def model_server(monkeypatch) -> Iterator[ChatModelServer]:
    with ChatModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "test-model")
        monkeypatch.setenv("OPENAI_API_KEY", "none")
        yield server


@contextmanager
def serving(app) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread; yield its base URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listener]}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
    assert not thread.is_alive()


def say(base_url: str, session_id: str, text: str) -> str:
    with httpx.Client(base_url=base_url, timeout=60) as client:
        response = client.post(f"/chat/{session_id}", json={"message": text})
    assert response.status_code == 200, response.text
    return response.json()["reply"]


async def chat_at_once(base_url: str, sessions: int, turns: int) -> dict[str, list]:
    """Run ``sessions`` conversations concurrently; return each one's replies."""
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:

        async def talk(session: str) -> list[str]:
            replies = []
            for turn in range(turns):
                response = await client.post(
                    f"/chat/{session}", json={"message": f"{session} code K-{turn}"}
                )
                assert response.status_code == 200, response.text
                replies.append(response.json()["reply"])
            return replies

        names = [f"s{n}" for n in range(sessions)]
        replies = await asyncio.gather(*(talk(name) for name in names))
    return dict(zip(names, replies, strict=True))


def test_twenty_sessions_at_once_get_their_answers_and_are_compressed(
    offline, tmp_path
):
    config = SummaryConfig(threshold=6, keep_recent=2)
    app = load_example().create_app(str(tmp_path / "chat.sqlite3"), config=config)
    done: list[Compressing] = []
    app.state.engine.subscribe(
        lambda e: done.append(e) if isinstance(e, Compressing) else None
    )

    with serving(app) as base_url:
        replies = asyncio.run(chat_at_once(base_url, SESSIONS, TURNS))
        assert app.state.engine.engine.wait_idle(timeout=30)
        history = app.state.engine.engine.memory.get_history("s7")

    assert replies == {
        f"s{n}": [f"echo: s{n} code K-{t}" for t in range(TURNS)]
        for n in range(SESSIONS)
    }
    written = {
        e.session_id
        for e in done
        if e.status == "done"
        and e.outcome is not None
        and e.outcome.kind == "compressed"
    }
    assert written == {f"s{n}" for n in range(SESSIONS)}
    assert len(history) < 2 * TURNS  # the folded turns left the active history
    assert history[-1].text == f"echo: s7 code K-{TURNS - 1}"


def test_the_model_gets_the_summary_and_the_active_history(model_server, tmp_path):
    model_server.model.then("Noted.")
    config = SummaryConfig(threshold=6, keep_recent=2)
    app = load_example().create_app(str(tmp_path / "chat.sqlite3"), config=config)

    with serving(app) as base_url:
        for n in range(3):
            assert say(base_url, "alice", f"Remember code K-{n}.") == "Noted."
        assert app.state.engine.engine.wait_idle(timeout=10)
        say(base_url, "alice", "Which codes?")

    first, last = (r["messages"] for r in model_server.model.requests[::3])
    assert first == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Remember code K-0."},
    ]
    assert last[0]["role"] == "system"
    assert last[0]["content"].startswith("You are a helpful assistant.")
    assert SUMMARY_HEADER in last[0]["content"]
    assert "K-0" in last[0]["content"]
    assert last[-1] == {"role": "user", "content": "Which codes?"}
    assert len(last) < 1 + 7  # the folded turns left the request
    assert {r["model"] for r in model_server.model.requests} == {"test-model"}


def test_a_nearly_full_window_compresses_before_the_next_turn(
    model_server, monkeypatch, tmp_path
):
    model_server.model.then(Reply("Noted.", prompt_tokens=120_000))  # of 128,000
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4o")
    config = SummaryConfig(threshold=30, keep_recent=2)
    app = load_example().create_app(str(tmp_path / "chat.sqlite3"), config=config)

    with serving(app) as base_url:
        for n in range(2):
            say(base_url, "bob", f"Remember code K-{n}.")
            assert app.state.engine.engine.wait_idle(timeout=10)
        say(base_url, "bob", "Which codes?")

    request = model_server.model.requests[-1]["messages"]
    assert SUMMARY_HEADER in request[0]["content"]
    assert "K-0" in request[0]["content"]
