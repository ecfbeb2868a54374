"""A small OpenAI-compatible server for tests: canned replies, streams, faults.

Each request to ``/v1/chat/completions`` takes the next scripted behaviour (the last
one repeats). Requests are recorded as parsed JSON. Streams that never end on their own
(keep-alive comments, endless text) run until the client leaves, which the server
records in ``disconnected``.

Usage is reported as OpenAI does: in a non-streamed reply always, in a stream only when
the request asks with ``stream_options.include_usage`` (then a last chunk with no
choices carries it). Prompt tokens are the words of the request's messages, completion
tokens the pieces streamed; every report is recorded in ``usage_sent``.
"""

from __future__ import annotations

import json
import select
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

_TICK_S = 0.05  # how often a waiting stream checks for the client leaving

# What real servers answer to a prompt longer than the model's context.
OPENAI_CONTEXT_ERROR = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, "
        "your messages resulted in 130011 tokens. Please reduce the length of the "
        "messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
VLLM_CONTEXT_ERROR = {  # vLLM puts the error at the top level
    "object": "error",
    "message": "This model's maximum context length is 4096 tokens. However, you "
    "requested 5120 tokens (4096 in the messages, 1024 in the completion). Please "
    "reduce the length of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
LLAMA_CPP_CONTEXT_ERROR = {
    "error": {
        "code": 400,
        "message": "request (4476 tokens) exceeds the available context size "
        "(4096 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 4476,
        "n_ctx": 4096,
    }
}
LLAMA_CPP_PYTHON_CONTEXT_ERROR = {
    "error": {
        "message": "Requested tokens (3000) exceed context window of 2048",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}
OLLAMA_CONTEXT_ERROR = {
    "error": {
        "message": "input length exceeds the context length",
        "type": "api_error",
        "param": None,
        "code": None,
    }
}
TGI_CONTEXT_ERROR = {
    "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be "
    "<= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`",
    "error_type": "validation",
}


@attrs.define
class Behaviour:
    """What the server does with one chat request."""

    text: str = "a summary"
    stream_break_after: int | None = None  # pieces sent before the connection drops
    status: int = 200
    error: object = None  # the JSON body of a non-200 answer (default: a 5xx shape)
    delay_s: float = 0.0  # before the headers
    finish: bool = True
    stream_events: bool = True  # False: a 200 stream that ends with no event at all
    stream_error: object = None  # an error event sent after the text, in the stream
    keepalive_s: float | None = None  # after the text: comments until the client leaves
    endless: bool = False  # after the text: more text until the client leaves
    report_usage: bool = True  # False: never report usage, even when asked
    reject_stream_options: bool = False  # a 400 for a request with stream_options
    usage: object = None  # the "usage" of a reply not streamed (None: counted words)
    finish_reason: str = "stop"  # "length": the reply was cut at max_tokens


REJECTED_STREAM_OPTIONS = {
    "error": {
        "message": "Unrecognized request argument supplied: stream_options",
        "type": "invalid_request_error",
        "param": "stream_options",
        "code": None,
    }
}


def usage_of(body: dict[str, object], completion_tokens: int) -> dict[str, int]:
    """Return the usage the server reports for a request and its reply's pieces."""
    messages = body.get("messages")
    prompt = sum(
        len(str(m.get("content") or "").split())
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict)
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


class OpenAICompatibleServer:
    """Serves on 127.0.0.1 on a free port; use as a context manager."""

    def __init__(self, models: dict[str, dict[str, object]] | None = None) -> None:
        self.models = (
            models if models is not None else {"test-model": {"max_model_len": 16384}}
        )
        self.script: list[Behaviour] = [Behaviour()]
        self.requests: list[dict[str, object]] = []
        self.headers: list[dict[str, str]] = []
        self.streaming = threading.Event()  # a never-ending stream has begun
        self.disconnected = threading.Event()  # a client left a never-ending stream
        self.sent_bytes = 0  # body bytes of the never-ending streams
        self.usage_sent: list[dict[str, int]] = []
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
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> OpenAICompatibleServer:
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

    def _usage(self, body: dict[str, object], completion_tokens: int) -> dict[str, int]:
        usage = usage_of(body, completion_tokens)
        with self._lock:
            self.usage_sent.append(usage)
        return usage

    def _sent(self, size: int) -> None:
        with self._lock:
            self.sent_bytes += size

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
                behaviour = server._next(
                    body, {k.lower(): v for k, v in self.headers.items()}
                )
                if behaviour.delay_s:
                    time.sleep(behaviour.delay_s)
                if behaviour.reject_stream_options and "stream_options" in body:
                    self._json(400, REJECTED_STREAM_OPTIONS)
                    return
                if behaviour.status != 200:
                    error = behaviour.error or {
                        "error": {
                            "message": f"scripted {behaviour.status}",
                            "type": "server_error",
                        }
                    }
                    self._json(behaviour.status, error)
                    return
                if body.get("stream"):
                    self._stream(behaviour, body)
                else:
                    usage = behaviour.usage
                    if usage is None and behaviour.report_usage:
                        usage = server._usage(body, len(behaviour.text.split(" ")))
                    reply: dict[str, object] = {
                        "id": "cmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": behaviour.finish_reason,
                                "message": {
                                    "role": "assistant",
                                    "content": behaviour.text,
                                },
                            }
                        ],
                    }
                    if usage is not None:
                        reply["usage"] = usage
                    self._json(200, reply)

            def _chunk(self, payload: str) -> int:
                data = payload.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                return len(data)

            def _event(
                self,
                body: dict[str, object],
                text: str | None,
                finish: bool,
                finish_reason: str = "stop",
            ) -> int:
                delta = {} if text is None else {"content": text}
                event: dict[str, object] = {
                    "id": "cmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "delta": delta,
                            "finish_reason": finish_reason if finish else None,
                        }
                    ],
                }
                if _asks_usage(body):
                    event["usage"] = None  # as OpenAI: null until the last chunk
                return self._chunk(f"data: {json.dumps(event)}\n\n")

            def _usage_event(self, body: dict[str, object], pieces: int) -> int:
                event = {
                    "id": "cmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [],
                    "usage": server._usage(body, pieces),
                }
                return self._chunk(f"data: {json.dumps(event)}\n\n")

            def _stream(self, behaviour: Behaviour, body: dict[str, object]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if not behaviour.stream_events:  # llama.cpp: prompt over its context
                    self.wfile.write(b"0\r\n\r\n")
                    return
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
                    self._event(body, piece + ("" if last else " "), finish=False)
                if behaviour.endless:
                    text = behaviour.text or "x"
                    self._until_client_leaves(lambda: self._event(body, text, False), 0)
                    return
                if behaviour.keepalive_s is not None:
                    self._until_client_leaves(
                        lambda: self._chunk(": keep-alive\n\n"), behaviour.keepalive_s
                    )
                    return
                if behaviour.stream_error is not None:
                    self._chunk(f"data: {json.dumps(behaviour.stream_error)}\n\n")
                elif behaviour.finish:
                    self._event(body, None, True, behaviour.finish_reason)
                    if behaviour.report_usage and _asks_usage(body):
                        self._usage_event(body, len(pieces))
                self._chunk("data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")

            def _until_client_leaves(
                self, send: Callable[[], int], interval_s: float
            ) -> None:
                """Call ``send`` every ``interval_s`` until the client disconnects."""
                self.close_connection = True
                next_send = time.monotonic()
                while not server._stopping.is_set():
                    if time.monotonic() >= next_send:
                        try:
                            server._sent(send())
                        except OSError:  # the client reset the connection
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
                """Return whether the readable connection was closed by the client."""
                try:
                    return self.connection.recv(1) == b""
                except OSError:
                    return True

        return Handler


def _asks_usage(body: dict[str, object]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True
