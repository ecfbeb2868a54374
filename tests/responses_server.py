"""A small OpenAI Responses server for tests: compaction items sealed per key.

``POST /v1/responses/compact`` answers as OpenAI documents: ``output`` is the
request's user messages followed by one ``compaction`` item whose
``encrypted_content`` is sealed with the server's ``key``, ``account`` and the
request's ``model`` (an HMAC over them and the item's body). ``POST /v1/responses``
answers a short assistant message. Either endpoint opens every ``compaction`` item
in its input: an item sealed under another key (a rotation), another account, for
another model, or changed on the way (corrupted) gets OpenAI's 400
``invalid_encrypted_content``, as real servers answer. ``script`` overrides an
answer (a status and body) for the next requests, the last one repeating.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

INVALID_ENCRYPTED_CONTENT = {
    "error": {
        "message": "The encrypted content for item cmp_1 could not be verified.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "invalid_encrypted_content",
    }
}


@attrs.define
class Answer:
    """What the server does with one request (None fields: the default answer)."""

    status: int = 200
    error: object = None
    output: object = None  # a compaction's ``output`` as given
    usage: object = None  # a compaction's ``usage`` as given


def seal(key: str, account: str, model: str, body: str) -> str:
    """Return the ``encrypted_content`` of ``body`` for these key, account, model."""
    mac = hmac.new(key.encode(), f"{account}|{model}|{body}".encode(), hashlib.sha256)
    payload = json.dumps({"body": body, "mac": mac.hexdigest()})
    return base64.b64encode(payload.encode()).decode()


def opens(key: str, account: str, model: str, sealed: object) -> bool:
    """Tell whether ``sealed`` was sealed by ``seal`` with these."""
    try:
        data = json.loads(base64.b64decode(str(sealed), validate=True))
        expected = seal(key, account, model, data["body"])
    except (ValueError, KeyError, TypeError):
        return False
    return hmac.compare_digest(expected, str(sealed))


class ResponsesServer:
    """Serves on 127.0.0.1 on a free port; use as a context manager."""

    def __init__(self, key: str = "k1", account: str = "acct-1") -> None:
        self.key = key
        self.account = account
        self.script: list[Answer] = [Answer()]
        self.requests: list[tuple[str, dict[str, object]]] = []
        self.request_bytes: list[int] = []
        self._lock = threading.Lock()
        self._count = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ResponsesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def then(self, *answers: Answer) -> None:
        """Replace the script: the next requests get these answers, in order."""
        with self._lock:
            self.script = list(answers)

    def compactions(self) -> list[dict[str, object]]:
        """Return the bodies of the compaction requests, in order."""
        return [body for path, body in self.requests if path.endswith("/compact")]

    def _next(self, path: str, body: dict[str, object], size: int) -> Answer:
        with self._lock:
            self.requests.append((path, body))
            self.request_bytes.append(size)
            self._count += 1
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _refuses(self, body: dict[str, object]) -> bool:
        items = body.get("input")
        model = str(body.get("model"))
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") == "compaction":
                sealed = item.get("encrypted_content")
                if not opens(self.key, self.account, model, sealed):
                    return True
        return False

    def _compacted(self, body: dict[str, object]) -> dict[str, object]:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]  # type: ignore[attr-defined]
        users = [i for i in items if i.get("role") == "user"]
        words = sum(len(json.dumps(i).split()) for i in items)
        with self._lock:
            number = self._count
        sealed = seal(self.key, self.account, str(body.get("model")), f"s{number}")
        item = {
            "id": f"cmp_{number}",
            "type": "compaction",
            "encrypted_content": sealed,
        }
        return {
            "id": f"resp_{number}",
            "object": "response.compaction",
            "created_at": 0,
            "output": [*users, item],
            "usage": {
                "input_tokens": words,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 40,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": words + 40,
            },
        }

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

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length) or b"{}"
                body = json.loads(raw)
                path = self.path.rstrip("/")
                answer = server._next(path, body, len(raw))
                if answer.status != 200:
                    self._json(answer.status, answer.error or {"error": {}})
                    return
                if server._refuses(body):
                    self._json(400, INVALID_ENCRYPTED_CONTENT)
                    return
                if path == "/v1/responses/compact":
                    reply = server._compacted(body)
                    if answer.output is not None:
                        reply["output"] = answer.output
                    if answer.usage is not None:
                        reply["usage"] = answer.usage
                    self._json(200, reply)
                    return
                if path == "/v1/responses":
                    self._json(200, _response(body))
                    return
                self._json(404, {"error": {"message": "not found"}})

        return Handler


def _response(body: dict[str, object]) -> dict[str, object]:
    return {
        "id": "resp_x",
        "object": "response",
        "created_at": 0,
        "model": body.get("model"),
        "status": "completed",
        "output": [
            {
                "id": "msg_x",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 11,
        },
    }
