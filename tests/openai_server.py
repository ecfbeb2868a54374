"""A small OpenAI-compatible server for tests: canned replies, streams, faults.

Each request to ``/v1/chat/completions`` takes the next scripted behaviour (the last
one repeats). Requests are recorded as parsed JSON.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs


@attrs.define
class Behaviour:
    """What the server does with one chat request."""

    text: str = "a summary"
    stream_break_after: int | None = None  # pieces sent before the connection drops
    status: int = 200
    delay_s: float = 0.0
    finish: bool = True


class OpenAICompatibleServer:
    """Serves on 127.0.0.1 on a free port; use as a context manager."""

    def __init__(self, models: dict[str, dict[str, object]] | None = None) -> None:
        self.models = (
            models if models is not None else {"test-model": {"max_model_len": 16384}}
        )
        self.script: list[Behaviour] = [Behaviour()]
        self.requests: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> OpenAICompatibleServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def then(self, *behaviours: Behaviour) -> None:
        """Replace the script: the next requests get these behaviours, in order."""
        with self._lock:
            self.script = list(behaviours)

    def _next(self, body: dict[str, object]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, payload: object) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    self._json(404, {"error": {"message": "not found"}})
                    return
                data = [
                    {"id": k, "object": "model", "owned_by": "test", **v}
                    for k, v in server.models.items()
                ]
                self._json(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                behaviour = server._next(body)
                if behaviour.delay_s:
                    time.sleep(behaviour.delay_s)
                if behaviour.status != 200:
                    self._json(
                        behaviour.status,
                        {
                            "error": {
                                "message": f"scripted {behaviour.status}",
                                "type": "server_error",
                            }
                        },
                    )
                    return
                if body.get("stream"):
                    self._stream(behaviour, body)
                else:
                    self._json(
                        200,
                        {
                            "id": "cmpl-1",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body.get("model"),
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {
                                        "role": "assistant",
                                        "content": behaviour.text,
                                    },
                                }
                            ],
                        },
                    )

            def _chunk(self, payload: str) -> None:
                data = payload.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _stream(self, behaviour: Behaviour, body: dict[str, object]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                pieces = behaviour.text.split(" ")
                for index, piece in enumerate(pieces):
                    if (
                        behaviour.stream_break_after is not None
                        and index >= behaviour.stream_break_after
                    ):
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(2)
                        return
                    last = index == len(pieces) - 1
                    event = {
                        "id": "cmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": piece + ("" if last else " ")},
                                "finish_reason": "stop"
                                if last and behaviour.finish
                                else None,
                            }
                        ],
                    }
                    self._chunk(f"data: {json.dumps(event)}\n\n")
                self._chunk("data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")

        return Handler
