"""A scripted chat model: OpenAI- and Anthropic-compatible, in process or on loopback.

``ScriptedChatModel`` answers chat requests with scripted replies (texts, tool calls,
errors; the last one repeats) or, with no script, a deterministic echo of the
request's last message. It answers an OpenAI chat completion request
(``chat_completion(body)``, or called like ``client.chat.completions.create``) with a
``ChatCompletion`` dict, and an Anthropic Messages request (``message(body)``) with a
``Message`` dict. Every reply reports usage: prompt tokens are ``count_tokens`` of the
request (a deterministic word count), completion tokens the words of the reply.

``ChatModelServer`` serves one on ``127.0.0.1`` on a free port (a context manager,
``base_url``) for the real SDKs:

- ``POST .../chat/completions``: OpenAI's, non-streaming and streaming (with a last
  usage chunk when ``stream_options.include_usage`` is set, as OpenAI does);
- ``POST .../messages``: Anthropic's, non-streaming and streaming;
- ``GET .../models``: the model's id.

Routes match on the path's end, so ``base_url`` (ending in ``/v1``) serves both
``OpenAI(base_url=server.base_url)`` and ``Anthropic(base_url=server.base_url)``.

Why about 480 lines: one fake model speaking two wire formats, each streaming and not,
and the loopback server that serves both.

Example:
    >>> model = ScriptedChatModel("Noted.", Reply(tool_calls=[("lookup", {"q": "x"})]))
    >>> reply = model(model="m", messages=[{"role": "user", "content": "Hi there"}])
    >>> reply["choices"][0]["message"]["content"], reply["usage"]["prompt_tokens"]
    ('Noted.', 3)
    >>> model(messages=[])["choices"][0]["message"]["tool_calls"][0]["function"]
    {'name': 'lookup', 'arguments': '{"q": "x"}'}
    >>> ScriptedChatModel().chat_completion(
    ...     {"messages": [{"role": "user", "content": "Hi"}]}
    ... )["choices"][0]["message"]["content"]
    'echo: Hi'
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

__all__ = [
    "ChatModelError",
    "ChatModelServer",
    "Failure",
    "Reply",
    "ScriptedChatModel",
    "count_tokens",
]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _calls(
    value: Sequence[tuple[str, Mapping[str, object]]],
) -> tuple[tuple[str, Mapping[str, object]], ...]:
    return tuple((str(name), dict(arguments)) for name, arguments in value)


@attrs.frozen
class Reply:
    """One scripted reply: text, tool calls (``(name, arguments)`` pairs) or both.

    ``prompt_tokens``, when set, is the usage reported instead of the counted one
    (a nearly full window, say).
    """

    text: str | None = None
    tool_calls: tuple[tuple[str, Mapping[str, object]], ...] = attrs.field(
        default=(), converter=_calls
    )
    prompt_tokens: int | None = None


@attrs.frozen
class Failure:
    """A scripted error: the HTTP status and message the API's error shape carries."""

    status: int = 500
    message: str = "scripted failure"


class ChatModelError(Exception):
    """A scripted ``Failure`` raised by an in-process call.

    Attributes:
        status: the HTTP status the server would answer.
        body: the error body, in the format of the API that was called.
    """

    def __init__(self, status: int, body: dict[str, object]) -> None:
        super().__init__(f"scripted chat model error {status}: {body}")
        self.status = status
        self.body = body


def _words(value: object) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, Mapping):
        return sum(_words(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_words(item) for item in value)
    return 0


def count_tokens(request: Mapping[str, object]) -> int:
    """Return the prompt tokens reported for a request: a deterministic word count.

    The whitespace-separated words of every string under the request's ``system``
    and ``messages`` (roles and block types included), so a longer request always
    counts more.
    """
    return _words(request.get("system")) + _words(request.get("messages"))


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping):
                value = part.get("text", part.get("content"))
                texts.append(_text_of(value))
        return " ".join(t for t in texts if t)
    return ""


def _echo(request: Mapping[str, object]) -> Reply:
    messages = request.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    text = _text_of(last.get("content")) if isinstance(last, Mapping) else ""
    return Reply(f"echo: {text}" if text else "echo")


class ScriptedChatModel:
    """A chat model that answers with scripted replies, in order; thread-safe.

    Args:
        script: the replies: a text, a ``Reply`` or a ``Failure``; after the last
            one, the last repeats. None: every request is answered with
            ``"echo: "`` and the text of the request's last message.
        model: the model id the replies name when a request names none.

    Attributes:
        requests: every request body received, in order.
    """

    def __init__(self, *script: str | Reply | Failure, model: str = "scripted") -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._script: list[Reply | Failure] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.then(*script)

    def then(self, *script: str | Reply | Failure) -> None:
        """Replace the script: the next requests get these replies, in order."""
        replies = [Reply(item) if isinstance(item, str) else item for item in script]
        for item in replies:
            if not isinstance(item, (Reply, Failure)):
                raise TypeError(
                    f"a scripted reply must be a str, Reply or Failure, got "
                    f"{type(item).__name__}"
                )
        with self._lock:
            self._script = replies

    def _next(self, request: Mapping[str, Any]) -> tuple[Reply | Failure, int]:
        with self._lock:
            self.requests.append(dict(request))
            number = next(self._ids)
            if not self._script:
                return _echo(request), number
            if len(self._script) > 1:
                return self._script.pop(0), number
            return self._script[0], number

    # -- OpenAI

    def __call__(self, **request: Any) -> dict[str, Any]:
        """Answer keyword arguments as ``client.chat.completions.create`` takes them."""
        return self.chat_completion(request)

    def chat_completion(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer an OpenAI chat completion request with a ``ChatCompletion`` dict.

        Raises:
            ChatModelError: the script's next reply is a ``Failure``.
        """
        reply, number = self._next(request)
        if isinstance(reply, Failure):
            raise ChatModelError(reply.status, _openai_error(reply))
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for index, (name, arguments) in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": _usage(request, reply, "prompt_tokens", "completion_tokens"),
        }

    # -- Anthropic

    def message(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer an Anthropic Messages request with a ``Message`` dict.

        Raises:
            ChatModelError: the script's next reply is a ``Failure``.
        """
        reply, number = self._next(request)
        if isinstance(reply, Failure):
            raise ChatModelError(reply.status, _anthropic_error(reply))
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content += [
            {
                "type": "tool_use",
                "id": f"toolu_{number}_{index}",
                "name": name,
                "input": dict(arguments),
            }
            for index, (name, arguments) in enumerate(reply.tool_calls)
        ]
        usage = _usage(request, reply, "input_tokens", "output_tokens")
        del usage["total_tokens"]
        return {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model") or self.model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }


def _usage(
    request: Mapping[str, Any], reply: Reply, prompt: str, completion: str
) -> dict[str, int]:
    asked = (
        count_tokens(request) if reply.prompt_tokens is None else reply.prompt_tokens
    )
    answered = _words(reply.text) + sum(
        _words(json.dumps(arguments)) for _, arguments in reply.tool_calls
    )
    return {prompt: asked, completion: answered, "total_tokens": asked + answered}


def _openai_error(failure: Failure) -> dict[str, object]:
    kind = _ERROR_TYPES.get(failure.status, "server_error")
    return {"error": {"message": failure.message, "type": kind, "code": None}}


def _anthropic_error(failure: Failure) -> dict[str, object]:
    kind = _ERROR_TYPES.get(failure.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": failure.message}}


def _sse(events: Sequence[tuple[str | None, object]]) -> bytes:
    lines = []
    for name, data in events:
        head = "" if name is None else f"event: {name}\n"
        body = data if isinstance(data, str) else json.dumps(data)
        lines.append(f"{head}data: {body}\n\n")
    return "".join(lines).encode()


def _openai_stream(completion: dict[str, Any], include_usage: bool) -> bytes:
    """The chunks of a completion: role, text, tool calls, finish, usage, [DONE]."""
    message = completion["choices"][0]["message"]
    head = {k: completion[k] for k in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        made: dict[str, Any] = {
            **head,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if include_usage:
            made["usage"] = None
        return made

    events: list[tuple[str | None, object]] = [
        (None, chunk({"role": "assistant", "content": ""}))
    ]
    words = (message["content"] or "").split(" ") if message["content"] else []
    events += [
        (None, chunk({"content": word if i == 0 else f" {word}"}))
        for i, word in enumerate(words)
    ]
    for index, call in enumerate(message.get("tool_calls", [])):
        events.append((None, chunk({"tool_calls": [{"index": index, **call}]})))
    events.append((None, chunk({}, completion["choices"][0]["finish_reason"])))
    if include_usage:
        last = {**head, "object": "chat.completion.chunk", "choices": []}
        events.append((None, {**last, "usage": completion["usage"]}))
    events.append((None, "[DONE]"))
    return _sse(events)


def _anthropic_stream(message: dict[str, Any]) -> bytes:
    """The events of a message: start, one block each, delta with usage, stop."""
    usage = message["usage"]
    started = {**message, "content": [], "stop_reason": None}
    started["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": 0}
    events: list[tuple[str | None, object]] = [
        ("message_start", {"type": "message_start", "message": started})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            empty = {**block, "input": {}}
            delta = {
                "type": "input_json_delta",
                "partial_json": json.dumps(block["input"]),
            }
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


class ChatModelServer:
    """Serves a ``ScriptedChatModel`` over HTTP on 127.0.0.1; a context manager.

    Args:
        model: the model to serve (default: a new echoing one).
        delay_s: how long each request waits before its answer (a model's
            latency), on the server's request thread.

    Attributes:
        model: the served ``ScriptedChatModel`` (its ``requests``, ``then``).
    """

    def __init__(
        self, model: ScriptedChatModel | None = None, *, delay_s: float = 0.0
    ) -> None:
        self.model = model if model is not None else ScriptedChatModel()
        self.delay_s = delay_s
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the ``base_url`` of either SDK's client."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ChatModelServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """Return the status, content type and body of one POST."""
        if self.delay_s:
            time.sleep(self.delay_s)
        anthropic = path.endswith("/messages")
        if not anthropic and not path.endswith("/chat/completions"):
            return 404, "application/json", b'{"error": {"message": "not found"}}'
        try:
            if anthropic:
                reply = self.model.message(body)
            else:
                reply = self.model.chat_completion(body)
        except ChatModelError as error:
            return error.status, "application/json", json.dumps(error.body).encode()
        if not body.get("stream"):
            return 200, "application/json", json.dumps(reply).encode()
        if anthropic:
            return 200, "text/event-stream", _anthropic_stream(reply)
        options = body.get("stream_options")
        asks = isinstance(options, Mapping) and options.get("include_usage") is True
        return 200, "text/event-stream", _openai_stream(reply, asks)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if not self.path.rstrip("/").endswith("/models"):
                    self._send(404, "application/json", b"{}")
                    return
                listed = {"id": server.model.model, "object": "model", "owned_by": "x"}
                data = json.dumps({"object": "list", "data": [listed]}).encode()
                self._send(200, "application/json", data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = None
                if not isinstance(body, dict):
                    failure = Failure(400, "the body is not a JSON object")
                    data = json.dumps(_openai_error(failure)).encode()
                    self._send(400, "application/json", data)
                    return
                self._send(*server._answer(self.path.split("?")[0], body))

        return Handler
