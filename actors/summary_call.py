"""One deadline-bounded summarizer call, answered as an observation.

The call runs on the summarizer-call pool; the compression's thread waits for it in
slices of ``WAIT_SLICE_S``, watching the deadline, the engine's stop and the lease,
so a call that ignores its deadline is abandoned (its stream closed) without holding
the session. Every admission by the circuit breaker is answered: a success, a
failure, or (no answer came: a lost lease, a stop) handed back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError as FuturesCancelled
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Protocol

from memory_summary.domain import (
    Message,
    NativeRequest,
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
    SummaryReply,
)
from memory_summary.domain.compression_io import (
    BreakerRefused,
    CallFailed,
    Cancelled,
    Fenced,
    Observation,
    Replied,
    ThreadFailed,
)

from .breakers import BreakerBox
from .summary_model import CallHandle, ResolvedModel
from .workers import ThreadStartError

TEMPERATURE = 0.3  # seed: summaries are mechanical
WAIT_SLICE_S = 0.25
"""How often a compression waiting for its summarizer looks whether it must stop."""


class CallPool(Protocol):
    """Runs summarizer calls off the compression's thread (``workers.WorkerPool``)."""

    def submit(
        self, fn: Callable[..., SummaryReply], /, *args: object
    ) -> Future[SummaryReply]: ...


def summarize(
    resolved: ResolvedModel,
    request: Sequence[Message],
    budget: int,
    *,
    calls: CallPool,
    breakers: BreakerBox,
    timeout_s: float,
    is_cancelled: Callable[[], bool],
    lost: Callable[[], bool],
    native: NativeRequest | None = None,
) -> Observation:
    """Make one call; return what came of it.

    A failure or a context error is recorded by the breaker here; a reply is judged
    by the domain, whose next action carries the breaker's verdict.
    """
    if is_cancelled():
        return Cancelled()
    if not breakers.admit(resolved.llm):
        return BreakerRefused()
    answered = False
    try:
        if lost():
            return Fenced("lease")
        try:
            observed = _call(
                resolved, request, budget, calls, timeout_s, is_cancelled, lost, native
            )
        except SummarizerContextError as exc:
            answered = True
            breakers.succeeded(resolved.llm)  # the endpoint answered: it is up
            return CallFailed(str(exc), too_long=True)
        except SummarizerError as exc:
            if is_cancelled():  # the engine stops: a summarizer it closed says so
                return Cancelled()
            answered = True
            breakers.failed(resolved.llm)
            return CallFailed(str(exc))
        answered = isinstance(observed, Replied)
        return observed
    finally:
        if not answered:
            breakers.released(resolved.llm)


def _call(
    resolved: ResolvedModel,
    request: Sequence[Message],
    budget: int,
    calls: CallPool,
    timeout_s: float,
    is_cancelled: Callable[[], bool],
    lost: Callable[[], bool],
    native: NativeRequest | None,
) -> Observation:
    """Call off this thread and wait in slices, watching the lease and the stop.

    Raises:
        SummarizerError: the call failed or ran past its deadline.
    """
    began = time.monotonic()
    deadline = began + timeout_s
    handle = CallHandle()
    try:
        future = calls.submit(
            resolved.call, request, budget, TEMPERATURE, deadline, handle, native
        )
    except ThreadStartError as exc:  # no stop: the process is out of threads
        return ThreadFailed(str(exc))
    except RuntimeError:  # the pool is shut down: the engine is stopping
        return Cancelled()
    while True:
        remaining = deadline - time.monotonic()
        if lost():  # a lost lease ends the wait
            handle.close()
            return Fenced("lease", called=True)
        try:
            reply = future.result(timeout=max(min(remaining, WAIT_SLICE_S), 0))
        except FuturesCancelled:  # cancelled by the pool's shutdown
            return Cancelled()
        except FuturesTimeout as exc:
            if is_cancelled():
                handle.close()
                return Cancelled()
            if remaining <= WAIT_SLICE_S:
                handle.close()  # frees the connection; the thread ends with it
                future.cancel()
                raise SummarizerTimeout(f"no summary within {timeout_s:g} s") from exc
        else:
            # a worker process's start is no call's time (it is paid once)
            took = time.monotonic() - began - handle.startup_s
            return Replied(reply, max(took, 0.0))
