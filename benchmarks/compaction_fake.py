"""A loopback fake of three provider APIs that counts what each request sends.

Run as a script: it prints its port and serves until terminated. It answers
``/v1/chat/completions``, Anthropic's ``/v1/messages`` (a ``compaction`` block when
the request asks for one) and ``/v1/responses/compact`` (the user messages and one
``compaction`` item whose ``encrypted_content`` seals the summary), each with a
summary of about 200 tokens made of the request's own words. ``GET /stats`` returns
the calls, request and reply bytes and the tokens in and out (o200k over every text
field of the request, and over the summary); ``GET /reset`` zeroes them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from memory_summary.adapters import TiktokenCounter

COUNT = TiktokenCounter("o200k_base").count
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{5,}")
_SKIPPED = frozenset({"model", "type", "role", "id", "call_id", "signature"})


def unseal(sealed: str) -> str:
    """Return the summary an ``encrypted_content`` of this fake seals ("" if none)."""
    try:
        data = base64.b64decode(sealed, validate=True).decode()
    except ValueError:
        return ""
    return data[: len(data) // 2]


def texts(value: object, key: str = "") -> list[str]:
    """Return the text fields of a request body (not model names, types or ids).

    A compaction item counts as the summary it seals, as the provider reads it.
    """
    if isinstance(value, str):
        if key == "encrypted_content":
            return [unseal(value)]
        return [] if key in _SKIPPED else [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in texts(v, k)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v, key)]
    return []


def summary_of(body: dict[str, object]) -> str:
    """Return a summary of about 200 tokens: distinct long words of the request."""
    words: list[str] = []
    seen: set[str] = set()
    for text in texts(body.get("messages") or body.get("input") or []):
        for word in _WORD.findall(text):
            if word.lower() not in seen:
                seen.add(word.lower())
                words.append(word)
    chosen = words[-120:] or ["nothing"]
    return (
        "The conversation so far covered these topics: "
        + ", ".join(chosen)
        + ". No open task was recorded."
    )


class Counters:
    """What the fake received and sent since the last reset."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.calls = self.request_bytes = self.reply_bytes = 0
        self.tokens_in = self.tokens_out = 0

    def add(self, sent: int, received: int, tokens_in: int, tokens_out: int) -> None:
        with self.lock:
            self.calls += 1
            self.request_bytes += sent
            self.reply_bytes += received
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {
                "calls": self.calls,
                "request_bytes": self.request_bytes,
                "reply_bytes": self.reply_bytes,
                "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out,
            }


COUNTERS = Counters()


def answer(path: str, body: dict[str, object]) -> tuple[dict[str, object], int, int]:
    """Return the reply to ``body`` at ``path``, its tokens in and out."""
    tokens_in = sum(COUNT(t) for t in texts(body))
    summary = summary_of(body)
    tokens_out = COUNT(summary)
    if path.startswith("/v1/chat/completions"):
        return (
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": summary},
                    }
                ],
                "usage": {
                    "prompt_tokens": tokens_in,
                    "completion_tokens": tokens_out,
                    "total_tokens": tokens_in + tokens_out,
                },
            },
            tokens_in,
            tokens_out,
        )
    if path.startswith("/v1/responses/compact"):
        items = body.get("input")
        users = [
            i
            for i in (items if isinstance(items, list) else [])
            if isinstance(i, dict) and i.get("role") == "user"
        ]
        sealed = base64.b64encode(summary.encode() * 2).decode()
        item = {"id": "cmp_1", "type": "compaction", "encrypted_content": sealed}
        return (
            {
                "id": "r1",
                "object": "response.compaction",
                "created_at": 0,
                "output": [*users, item],
                "usage": {
                    "input_tokens": tokens_in,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": tokens_out,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": tokens_in + tokens_out,
                },
            },
            tokens_in,
            tokens_out,
        )
    compacting = "compaction" in body
    signature = base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()
    block = (
        {"type": "compaction", "content": summary, "signature": signature}
        if compacting
        else {"type": "text", "text": summary}
    )
    return (
        {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [block],
            "stop_reason": "compaction" if compacting else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        },
        tokens_in,
        tokens_out,
    )


class Handler(BaseHTTPRequestHandler):
    """Answers the three APIs and the counters."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, payload: object) -> int:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return len(data)

    def do_GET(self) -> None:
        if self.path == "/reset":
            with COUNTERS.lock:
                COUNTERS.reset()
        if self.path in ("/stats", "/reset"):
            self._json(200, COUNTERS.snapshot())
            return
        self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        reply, tokens_in, tokens_out = answer(self.path, json.loads(raw or b"{}"))
        sent = self._json(200, reply)
        COUNTERS.add(len(raw), sent, tokens_in, tokens_out)


def main() -> None:
    """Serve on a free loopback port, printed first."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
    sys.exit(0)
