"""The FastAPI example (examples/fastapi_chat.py) under a real ASGI server.

uvicorn serves the example on a loopback socket bound before it starts (a client
waits in the listen backlog, no polling); the model is the OpenAI-compatible test
server; a real HTTP client drives it.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory_summary import CompressRequested, SummaryConfig
from tests.openai_server import Behaviour, OpenAICompatibleServer

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx2")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fastapi_chat.py"
SUMMARY_HEADER = "Summary of the earlier conversation"


def load_example():
    """Import the example file (registered, so pydantic resolves its annotations)."""
    spec = importlib.util.spec_from_file_location("fastapi_chat_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def model_server(monkeypatch) -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer({"test-model": {"max_model_len": 8192}}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "test-model")
        monkeypatch.setenv("OPENAI_API_KEY", "none")
        yield server


@contextmanager
def serving(app) -> Iterator[httpx.Client]:
    """Serve ``app`` with uvicorn in a thread; yield a client bound to it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listener]}, daemon=True
    )
    thread.start()
    port = listener.getsockname()[1]
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
    assert not thread.is_alive()


def say(client, session_id: str, content: object) -> dict[str, object]:
    turn = {"messages": [{"role": "user", "content": content}]}
    response = client.post(f"/chat/{session_id}", json=turn)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_chat_endpoint_assembles_the_summary_and_reports_usage(
    model_server, tmp_path
):
    usage = {"prompt_tokens": 1000, "completion_tokens": 5, "total_tokens": 1005}
    model_server.then(Behaviour(text="Noted.", usage=usage))
    config = SummaryConfig(threshold=6, keep_recent=2)
    app = load_example().create_app(str(tmp_path / "chat.sqlite3"), config=config)

    with serving(app) as client:
        answers = [say(client, "alice", f"Remember code K-{n}.") for n in range(3)]
        assert app.state.engine.engine.wait_idle(timeout=10)
        say(client, "alice", "Which codes?")

    assert answers[0] == {
        "message": {"role": "assistant", "content": "Noted."},
        "usage": usage,
    }
    first, last = (r["messages"] for r in model_server.requests[::3])
    assert first == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Remember code K-0."},
    ]
    assert last[0] == first[0]
    assert last[1]["role"] == "system"
    assert last[1]["content"].startswith(SUMMARY_HEADER)
    assert "K-0" in last[1]["content"]
    assert last[-1] == {"role": "user", "content": "Which codes?"}
    assert len(last) < 2 + 7  # the folded turns left the request


def test_a_nearly_full_window_compresses_before_the_next_turn(model_server, tmp_path):
    usage = {"prompt_tokens": 7000, "completion_tokens": 5, "total_tokens": 7005}
    model_server.then(Behaviour(text="Noted.", usage=usage))
    config = SummaryConfig(threshold=30, keep_recent=2)
    app = load_example().create_app(
        str(tmp_path / "chat.sqlite3"), context_tokens=8192, config=config
    )
    events: list[object] = []
    app.state.engine.subscribe(events.append)

    with serving(app) as client:
        for n in range(2):
            say(client, "bob", f"Remember code K-{n}.")
            assert app.state.engine.engine.wait_idle(timeout=10)
        say(client, "bob", "Which codes?")

    assert CompressRequested("bob", "auto", 7000 / 8192) in events
    request = model_server.requests[-1]["messages"]
    assert request[1]["content"].startswith(SUMMARY_HEADER)
    assert "K-0" in request[1]["content"]


def test_content_parts_reach_the_model_unchanged(model_server, tmp_path):
    app = load_example().create_app(str(tmp_path / "chat.sqlite3"))
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "https://x/cat.png"}},
    ]

    with serving(app) as client:
        say(client, "carol", parts)
        say(client, "carol", "And now?")

    second = model_server.requests[-1]["messages"]
    assert second[1] == {"role": "user", "content": parts}
    assert second[2] == {"role": "assistant", "content": "a summary"}
