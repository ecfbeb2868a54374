"""The one core of the summarizers' streams: deadline, cap, close from any thread.

A provider SDK (openai, anthropic; both on httpx2) hands out a stream of events over
one HTTP response. ``SDKStream`` wraps it for the engine: the request is sent on the
first ``next()``; a deadline closes it; a reply past its character cap is cut and its
connection closed; ``close()`` from another thread wakes a reader blocked on the
socket. A provider's face subclasses it and says how to read one event (``_read``),
how to word its errors (``_translate``) and what an early end means (``_ended_early``).
A stream the provider finished but said it stopped short (at ``max_tokens``, say:
``_unfinished``) raises at its end: a cut summary is never taken for a whole one. An
event ``_read`` cannot read (a gateway's shape) raises ``SummarizerError`` and closes
the stream.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from memory_summary.domain import SummarizerError, SummarizerTimeout, TokenUsage

if TYPE_CHECKING:
    from types import TracebackType

log = logging.getLogger(__name__)


class _Response(Protocol):
    @property
    def extensions(self) -> dict[str, object]: ...


class ClosableSDKStream(Protocol):
    """What both SDKs' ``Stream`` objects offer: their response, iteration, close."""

    @property
    def response(self) -> _Response: ...

    def __iter__(self) -> Iterator[object]: ...

    def close(self) -> None: ...


EventT = TypeVar("EventT")


def deadline_at(timeout_s: float | None) -> float | None:
    """Return the monotonic deadline ``timeout_s`` from now, or None."""
    return None if timeout_s is None else time.monotonic() + timeout_s


def cut_at_max_tokens(reason: str) -> SummarizerError:
    """Return the error for a reply the provider stopped at its ``max_tokens``."""
    return SummarizerError(
        f"the summarizer stopped its reply at max_tokens (finish reason {reason!r}): "
        "a summary cut short is not kept"
    )


def abort(sdk_stream: ClosableSDKStream) -> None:
    """Close the stream's connection so that a read blocked on another thread fails now.

    Closing a socket does not wake a thread blocked reading it (its pending poll keeps
    the connection open until data or the read timeout comes, and the server sees
    nothing): shut the socket down first, which wakes the reader and sends a FIN.
    Streams are sent with ``Connection: close``, so the socket is never a pooled one.
    """
    network = sdk_stream.response.extensions.get("network_stream")
    get_info = getattr(network, "get_extra_info", None)
    sock = get_info("socket") if callable(get_info) else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already shut down or closed
            # the base method: SSLSocket's would drop its TLS state under the reader
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
    sdk_stream.close()


class SDKStream(Generic[EventT]):
    """The text pieces of one streamed answer, closable from any thread.

    Iterating sends the request (the first ``next()``), then yields text pieces. It
    raises ``SummarizerError`` when the stream breaks or was closed and
    ``SummarizerTimeout`` at its deadline. A reply past ``max_chars`` ends early, cut
    to ``max_chars``, and its connection is closed. ``close()`` is idempotent and
    thread-safe: it shuts the connection down, so a ``next()`` blocked on another
    thread fails at once and the server sees the client leave and stops generating.
    """

    def __init__(
        self,
        open_stream: Callable[[], ClosableSDKStream],
        *,
        deadline: float | None,
        max_chars: int,
    ) -> None:
        self._open_stream = open_stream
        self._deadline = deadline
        self._max_chars = max_chars
        self._lock = threading.Lock()  # guards the four fields below
        self._sdk_stream: ClosableSDKStream | None = None
        self._closed_by: Literal["caller", "deadline"] | None = None
        self._ended = False  # read to its end, cut off, or failed: nothing to free
        self._timer: threading.Timer | None = None
        self._events: Iterator[object] | None = None
        self._chars = 0
        self._finished = False  # the provider said the answer is complete
        # the provider said it stopped the answer short (at max_tokens, say): raised
        # at the end, whatever text came before
        self._unfinished: SummarizerError | None = None
        self._usage: TokenUsage | None = None

    # -- what a provider's face says -------------------------------------------------

    def _read(self, event: EventT) -> str:
        """Return the text one event carries ("" for none); note finish and usage."""
        raise NotImplementedError

    def _translate(self, exc: Exception) -> Exception | None:
        """Return the engine's error for an SDK error, or None to raise it as is."""
        return None

    def _ended_early(self) -> SummarizerError:
        """Return the error for a stream that ended before the provider finished."""
        return SummarizerError("the summary stream ended before it finished")

    # -- the core ---------------------------------------------------------------------

    @property
    def usage(self) -> TokenUsage | None:
        """Return the tokens the provider reported for this call, once it sent them.

        Known after the stream is read to its end, None when the provider reported
        nothing or the stream ended early.
        """
        return self._usage

    def __iter__(self) -> SDKStream[EventT]:
        return self

    def __enter__(self) -> SDKStream[EventT]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the stream and free its connection; safe from any thread, repeatable."""
        self._close("caller")

    def __next__(self) -> str:
        while True:
            event = self._next_event()
            try:
                text = self._read(event)
            except Exception as exc:  # an event that is not what the provider documents
                sdk_stream = self._end()
                if sdk_stream is not None:
                    abort(sdk_stream)
                if isinstance(exc, SummarizerError):
                    raise
                raise SummarizerError(
                    f"the summary stream sent an event that cannot be read: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if text:
                return self._within_cap(text)

    def _next_event(self) -> EventT:
        """Return the next event; at the end raise StopIteration or the error."""
        self._raise_if_closed(None)
        if self._ended:  # read, cut off or failed: a stream is sent once
            raise StopIteration
        if self._events is None:
            self._events = iter(self._opened())
        try:
            event: EventT = next(self._events)  # type: ignore[assignment]
        except StopIteration:
            self._end()
            self._raise_if_closed(None)  # a shut-down socket may read as a clean end
            if self._finished:
                if self._unfinished is not None:
                    raise self._unfinished from None
                raise
            raise self._ended_early() from None
        # close() on another thread may surface any driver error here
        except Exception as exc:
            self._end()
            self._raise_if_closed(exc)
            translated = self._translate(exc)
            if translated is not None:
                raise translated from exc
            if isinstance(exc, SummarizerError):
                raise
            # no driver exception escapes: a transport error mid-stream is a break
            raise SummarizerError(
                f"the summary stream broke: {type(exc).__name__}: {exc}"
            ) from exc
        return event

    def _opened(self) -> ClosableSDKStream:
        """Send the request and arm the deadline; raise if closed meanwhile."""
        if self._deadline is not None:
            timer = threading.Timer(
                max(self._deadline - time.monotonic(), 0.0), self._close, ("deadline",)
            )
            timer.daemon = True
            with self._lock:
                self._timer = timer
            timer.start()
        try:
            sdk_stream = self._open_stream()
        except Exception:
            self._end()
            raise
        with self._lock:
            closed = self._closed_by is not None
            if not closed:
                self._sdk_stream = sdk_stream
        if closed:  # close() ran while the request was being sent
            abort(sdk_stream)
            self._raise_if_closed(None)
        return sdk_stream

    def _within_cap(self, text: str) -> str:
        """Return ``text`` cut to the reply cap; past it, stop reading the stream."""
        room = self._max_chars - self._chars
        if len(text) <= room:
            self._chars += len(text)
            return text
        log.warning(
            "reply passed %d chars; stopped reading it and closed the stream",
            self._max_chars,
        )
        self._chars = self._max_chars
        sdk_stream = self._end()  # later next() calls end the iteration
        if sdk_stream is not None:
            abort(sdk_stream)
        return text[:room]

    def _raise_if_closed(self, cause: Exception | None) -> None:
        closed_by = self._closed_by
        if closed_by == "deadline":
            raise SummarizerTimeout(
                "the summary stream ran past its deadline and was closed"
            ) from cause
        if closed_by == "caller":
            raise SummarizerError(
                "the summary stream was closed before it finished"
            ) from cause

    def _end(self) -> ClosableSDKStream | None:
        """Mark the stream over, disarm the deadline; return what is left to close."""
        with self._lock:
            self._ended = True
            timer, self._timer = self._timer, None
            sdk_stream, self._sdk_stream = self._sdk_stream, None
        if timer is not None:
            timer.cancel()
        return sdk_stream

    def _close(self, by: Literal["caller", "deadline"]) -> None:
        with self._lock:
            if self._closed_by is not None or self._ended:
                return
            self._closed_by = by
            timer, self._timer = self._timer, None
            sdk_stream = self._sdk_stream
        if timer is not None:
            timer.cancel()
        if by == "deadline":
            log.warning("summary stream ran past its deadline; closing it")
        if sdk_stream is not None:
            abort(sdk_stream)
