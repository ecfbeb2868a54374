"""A small server speaking Anthropic's Messages API for tests: replies, streams, faults.

Each ``POST /v1/messages`` takes the next scripted behaviour (the last one repeats);
requests and their headers are recorded. A stream is the API's SSE event sequence:
``message_start`` (with the input usage), ``content_block_start``, a ``ping``, one
``content_block_delta`` per word, ``content_block_stop``, ``message_delta`` (stop
reason and output usage), ``message_stop``. Faults: HTTP errors in the API's error
shape (529 overloaded, 400 prompt too long...), an ``error`` event inside the stream,
a connection cut midway, a stream without ``message_stop``, and pings or text that
never end until the client leaves (recorded in ``disconnected``). What gateways and
local servers send too: a ``message_start`` without usage, a ``message_delta`` whose
usage is null, a 200 answer whose body is not JSON; and a reply cut at ``max_tokens``.
On-demand compaction: a request with a top-level ``compaction`` gets the scripted
``compaction`` block alone (``stop_reason`` ``"compaction"`` unless one is scripted),
sent as given (null content, unknown fields, a block that is not one).
"""

from __future__ import annotations

import json
import select
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

_TICK_S = 0.05

OVERLOADED = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
}
PROMPT_TOO_LONG = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 212043 tokens > 200000 maximum",
    },
}


@attrs.define
class Behaviour:
    """What the server does with one request."""

    text: str = "a summary"
    status: int = 200
    error: object = None  # the JSON body of a non-200 answer
    headers: dict[str, str] = attrs.field(factory=dict)  # of a non-200 answer
    delay_s: float = 0.0  # before the headers
    break_after: int | None = None  # words streamed before the connection drops
    finish: bool = True  # False: no message_delta / message_stop
    stream_error: object = None  # an error event after the text
    pings_s: float | None = None  # after the text: pings until the client leaves
    endless: bool = False  # after the text: more text until the client leaves
    input_tokens: int = 120
    cache_read: int = 0
    cache_write: int = 0
    stop_reason: str = "end_turn"  # "max_tokens": the reply was cut at its budget
    start_usage: bool = True  # False: message_start's message has no usage
    delta_usage: object = "counts"  # message_delta's usage: the counts, or as given
    raw_body: bytes | None = None  # a 200 answer's body sent as is (not JSON)
    raw_type: str = "application/json"  # the Content-Type sent with raw_body
    compaction: object = None  # the block a compaction request gets, as given
    iterations: object = None  # usage.iterations of a 200 answer, when given


class AnthropicServer:
    """Serves on 127.0.0.1 on a free port; use as a context manager."""

    def __init__(self) -> None:
        self.script: list[Behaviour] = [Behaviour()]
        self.requests: list[dict[str, object]] = []
        self.headers: list[dict[str, str]] = []
        self.streaming = threading.Event()  # a never-ending stream has begun
        self.disconnected = threading.Event()  # a client left a never-ending stream
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(_TICK_S,), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def then(self, *behaviours: Behaviour) -> None:
        """Replace the script: the next requests get these behaviours, in order."""
        with self._lock:
            self.script = list(behaviours)

    def _next(self, body: dict[str, object], headers: dict[str, str]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _json(
                self, status: int, payload: object, headers: dict[str, str]
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                behaviour = server._next(
                    body, {k.lower(): v for k, v in self.headers.items()}
                )
                if behaviour.delay_s:
                    time.sleep(behaviour.delay_s)
                if behaviour.status != 200:
                    error = behaviour.error or {
                        "type": "error",
                        "error": {
                            "type": "api_error",
                            "message": f"scripted {behaviour.status}",
                        },
                    }
                    self._json(behaviour.status, error, behaviour.headers)
                    return
                if body.get("stream"):
                    self._stream(behaviour, body)
                    return
                if behaviour.raw_body is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", behaviour.raw_type)
                    self.send_header("Content-Length", str(len(behaviour.raw_body)))
                    self.end_headers()
                    self.wfile.write(behaviour.raw_body)
                    return
                compacting = "compaction" in body and behaviour.compaction is not None
                self._json(
                    200,
                    {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model"),
                        "content": (
                            [behaviour.compaction]
                            if compacting
                            else [{"type": "text", "text": behaviour.text}]
                        ),
                        "stop_reason": (  # a compaction's, unless scripted
                            "compaction"
                            if compacting and behaviour.stop_reason == "end_turn"
                            else behaviour.stop_reason
                        ),
                        "stop_sequence": None,
                        "usage": {
                            **_input_usage(behaviour),
                            "output_tokens": len(behaviour.text.split(" ")),
                            **(
                                {"iterations": behaviour.iterations}
                                if behaviour.iterations is not None
                                else {}
                            ),
                        },
                    },
                    {},
                )

            def _chunk(self, payload: str) -> None:
                data = payload.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _event(self, name: str, data: dict[str, object]) -> None:
                self._chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n")

            def _delta(self, text: str) -> None:
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": text},
                    },
                )

            def _stream(self, behaviour: Behaviour, body: dict[str, object]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._event(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": "msg_1",
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model"),
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            **(
                                {
                                    "usage": {
                                        **_input_usage(behaviour),
                                        "output_tokens": 1,
                                    }
                                }
                                if behaviour.start_usage
                                else {}
                            ),
                        },
                    },
                )
                self._event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                self._event("ping", {"type": "ping"})
                words = behaviour.text.split(" ")
                for index, word in enumerate(words):
                    if (
                        behaviour.break_after is not None
                        and index >= behaviour.break_after
                    ):
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(2)
                        return
                    self._delta(word + ("" if index == len(words) - 1 else " "))
                if behaviour.endless:
                    self._until_client_leaves(lambda: self._delta(" more"), 0)
                    return
                if behaviour.pings_s is not None:
                    self._until_client_leaves(
                        lambda: self._event("ping", {"type": "ping"}), behaviour.pings_s
                    )
                    return
                if behaviour.stream_error is not None:
                    self._event("error", behaviour.stream_error)  # type: ignore[arg-type]
                elif behaviour.finish:
                    self._event(
                        "content_block_stop", {"type": "content_block_stop", "index": 0}
                    )
                    self._event(
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {
                                "stop_reason": behaviour.stop_reason,
                                "stop_sequence": None,
                            },
                            "usage": (
                                {"output_tokens": len(words)}
                                if behaviour.delta_usage == "counts"
                                else behaviour.delta_usage
                            ),
                        },
                    )
                    self._event("message_stop", {"type": "message_stop"})
                self.wfile.write(b"0\r\n\r\n")

            def _until_client_leaves(
                self, send: Callable[[], None], interval_s: float
            ) -> None:
                self.close_connection = True
                next_send = time.monotonic()
                while not server._stopping.is_set():
                    if time.monotonic() >= next_send:
                        try:
                            send()
                        except OSError:
                            server.disconnected.set()
                            return
                        server.streaming.set()
                        next_send = time.monotonic() + interval_s
                    wait_s = min(_TICK_S, max(next_send - time.monotonic(), 0.0))
                    readable, _, _ = select.select([self.connection], [], [], wait_s)
                    if readable and self._client_left():
                        server.disconnected.set()
                        return

            def _client_left(self) -> bool:
                try:
                    return self.connection.recv(1) == b""
                except OSError:
                    return True

        return Handler


def _input_usage(behaviour: Behaviour) -> dict[str, int]:
    return {
        "input_tokens": behaviour.input_tokens,
        "cache_read_input_tokens": behaviour.cache_read,
        "cache_creation_input_tokens": behaviour.cache_write,
    }
