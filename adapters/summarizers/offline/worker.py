"""The offline fold in a child process: texts in, text out.

``ExtractiveSummarizer(worker="process")`` folds here. A fold is milliseconds of pure
Python: on an engine thread it holds the GIL that the host's event loop and request
threads need, so a server's turns queue behind it; in a child process it holds a GIL
of its own, and the engine thread that asked only waits on a pipe.

The child is a plain ``python -c`` that imports this module, not ``multiprocessing``:
nothing re-imports the host's ``__main__``, so a script without an
``if __name__ == "__main__"`` guard is safe, and nothing depends on the start
method. The parent sends pickled frames on the child's stdin (its ``sys.path``, then
the counter and context size, then one request per fold) and reads one reply per
request on its stdout, framed (``FRAME``: a mark and the length, at most
``MAX_REPLY_BYTES``); the child's own fd 1 goes to stderr, so a stray print cannot
corrupt a frame, and bytes that are no frame (or no pickle) count as a dead child.
The child starts at the first fold, runs in its own session (a terminal's Ctrl-C
goes to the host, which then closes it) and ends when its stdin closes: when the
summarizer is closed or collected, or when the host process dies.

Faults: a child that dies during a fold is replaced and the fold is asked again
once; a child that cannot start (no Python to run: a frozen app; a child that exits
or says nothing within ``READY_S``) raises ``WorkerUnavailable``, and the summarizer
folds that request in the host's process (logged) and tries a child again later. Two
children that die on the same fold raise ``WorkerDied``: the request itself may be
what kills them (the kernel's OOM killer, say), so the summarizer refuses that fold
rather than run it in the host, and the next fold starts another child. A fold given
a deadline (``timeout_s``: the engine gives its own) never waits past it, to write
the request or to read the reply: a child that has not answered by then (stopped,
wedged) is killed, ``FoldTimeout`` is raised, and the next fold starts another.
``close()`` is final: it kills the child at once (a fold it cuts short raises
``WorkerUnavailable``, as does any later one) and no child starts again. A host
that forks after the child started (a pre-forking server) drops, in the new process,
its copies of the pipes (so the child still sees its stdin close with its real host)
and starts a child of its own there. POSIX only
(``start_new_session``, waiting on a pipe); each child holds its own tokenizer
(about 100 MB with o200k_base), loaded before it says it is ready.

Why about 530 lines: one concept, one child process and both ends of its pipe
(start, framed replies read within a deadline, faults, fork, exit).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import selectors
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

if TYPE_CHECKING:
    from memory_summary.domain import Message

    from .extractive import ExtractiveSummarizer

__all__ = ["FoldTimeout", "FoldWorker", "WorkerDied", "WorkerUnavailable", "serve"]

log = logging.getLogger(__name__)

BOOT = (
    "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
    "from memory_summary.adapters.summarizers.offline.worker import serve; serve()"
)
"""The child's program (run with ``-I``: no current directory on its path, no
``PYTHON*`` variables): take the parent's import path, then serve folds."""
READY_S = 60.0
"""How long a starting child may take to say it is ready (imports, first counter)."""

FRAME = struct.Struct(">4sQ")
"""A reply's head: the mark ``FRAME_MARK``, then the pickle's length in bytes."""
FRAME_MARK = b"MSfw"
MAX_REPLY_BYTES = 1 << 30
"""The longest reply the parent reads: a longer length is no reply of ours."""

Request = tuple[list[tuple[str, str]], int]
"""One fold: the messages as ``(role, text)`` and ``max_tokens``."""


_DIED = (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError)
"""What a dead child, a closed pipe or a torn frame raises on our side."""


class WorkerUnavailable(RuntimeError):
    """The child process cannot start, or died twice in a row."""


class FoldTimeout(WorkerUnavailable):
    """The child gave no answer within the fold's deadline; it was killed."""


class WorkerDied(WorkerUnavailable):
    """Two children in a row died on this fold: the request itself may kill them."""


class FoldWorker:
    """One child process that folds for one summarizer, one fold at a time.

    Args:
        count_tokens: the summarizer's counter; it must pickle by reference to an
            importable module (a function or a picklable callable not defined in the
            host's ``__main__``), since the child counts with its own copy.
        context_tokens: the summarizer's context size, passed on.

    Raises:
        TypeError: ``count_tokens`` does not pickle, or lives in ``__main__``.
    """

    def __init__(self, count_tokens: Callable[[str], int], context_tokens: int) -> None:
        module = getattr(count_tokens, "__module__", None)
        if module == "__main__" or type(count_tokens).__module__ == "__main__":
            raise TypeError(
                f"count_tokens={count_tokens!r} is defined in __main__, which a "
                "worker process does not import: define it in a module"
            )
        try:
            self._setup = pickle.dumps((count_tokens, context_tokens))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise TypeError(
                f"count_tokens={count_tokens!r} does not pickle, so a worker process "
                "cannot count with it: pass a module-level function or a picklable "
                "callable, or fold in a thread (worker='thread')"
            ) from exc
        self._process: subprocess.Popen[bytes] | None = None
        self._starting: subprocess.Popen[bytes] | None = None  # before it is ready
        self._owner = 0  # the pid that started the child: after a fork, not ours
        self._stop: weakref.finalize[Any, Any] | None = None
        self._cpu_s = 0.0
        self._startups = threading.local()  # seconds each thread spent starting
        self._lock = threading.Lock()  # one fold, or one start, at a time
        self._closed = False
        _WORKERS.add(self)

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs in this process's hands, else None."""
        process = self._process
        if process is None or self._owner != os.getpid() or process.poll() is not None:
            return None
        return process.pid

    @property
    def cpu_s(self) -> float:
        """CPU seconds the child spent folding (its own clock, summed over folds)."""
        return self._cpu_s

    @property
    def startup_s(self) -> float:
        """Wall-clock seconds the calling thread spent starting children, summed.

        Per thread: a fold that waited while another thread's fold started the child
        is not charged that start (it waited for it as for any fold before it).
        """
        return getattr(self._startups, "seconds", 0.0)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called: no child starts any more."""
        return self._closed

    def fold(
        self,
        messages: Sequence[tuple[str, str]],
        max_tokens: int,
        *,
        timeout_s: float | None = None,
    ) -> str:
        """Return the child's fold of ``messages`` within ``max_tokens``.

        An exception the fold raised in the child is raised here. ``timeout_s``
        bounds the wait for the child's answer, counted from when the child runs
        (None: no bound; starting a child has its own, ``READY_S``).

        Raises:
            FoldTimeout: no answer within ``timeout_s``; the child was killed.
            WorkerUnavailable: closed, or the child cannot start, or died twice.
        """
        request: Request = (list(messages), max_tokens)
        deadline: float | None = None
        with self._lock:
            for attempt in (1, 2):
                before = time.monotonic()
                process = self._running()
                # Counted from a running child: a start is bounded by READY_S, and a
                # deadline that counted it would end every child it started; a
                # second child gets what the first left, plus its own start.
                if timeout_s is not None:
                    started = time.monotonic()
                    deadline = (
                        started + timeout_s
                        if deadline is None
                        else deadline + (started - before)
                    )
                try:
                    _send(_pipe(process.stdin), request, deadline)
                    kind, value, cpu_s = _receive(_pipe(process.stdout), deadline)
                except BaseException as exc:
                    late = isinstance(exc, FoldTimeout)
                    self._discard(kill=late)  # a reply may be in flight: never read it
                    if late:
                        raise
                    if not isinstance(exc, _DIED):
                        raise  # KeyboardInterrupt, say: the child was well
                    if self._closed:
                        raise WorkerUnavailable("the fold worker is closed") from exc
                    if attempt == 2:
                        raise WorkerDied(
                            f"the fold worker died twice ({exc!r})"
                        ) from exc
                    log.warning("the fold worker died (%r): starting another", exc)
                    continue
                self._cpu_s += cpu_s
                if kind == "error":
                    raise value
                return str(value)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """End the child now, started or starting; final and idempotent.

        Never waits for a fold: the child is killed, and the fold's thread sees its
        pipe close, drops it and raises ``WorkerUnavailable``.
        """
        self._closed = True
        for process in (self._process, self._starting):
            if process is not None and self._owner == os.getpid():
                with contextlib.suppress(OSError):
                    process.kill()
        if self._lock.acquire(timeout=5):  # the fold's thread lets go at once
            try:
                self._discard()
            finally:
                self._lock.release()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._closed:
            raise WorkerUnavailable("the fold worker is closed")
        process = self._process
        if (
            process is not None
            and self._owner == os.getpid()
            and process.poll() is None
        ):
            return process
        self._discard()
        return self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        began = time.monotonic()
        try:
            return self._started()
        finally:
            took = time.monotonic() - began
            self._startups.seconds = getattr(self._startups, "seconds", 0.0) + took

    def _started(self) -> subprocess.Popen[bytes]:
        if not sys.executable or getattr(sys, "frozen", False):
            raise WorkerUnavailable("no Python interpreter to start (a frozen app?)")
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", BOOT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise WorkerUnavailable(f"cannot start {sys.executable}: {exc}") from exc
        self._owner = os.getpid()
        self._starting = process  # from here close() kills it
        try:
            if self._closed:
                raise OSError("closed while starting")
            stdin, stdout = _pipe(process.stdin), _pipe(process.stdout)
            os.set_blocking(stdin.fileno(), False)  # writes wait in _write, bounded
            deadline = time.monotonic() + READY_S
            _send(stdin, list(sys.path), deadline)
            _write(stdin.fileno(), self._setup, deadline)
            ready = _receive(stdout, deadline)
            if self._closed:
                raise OSError("closed while starting")
        except FoldTimeout as exc:
            self._starting = None
            _end(process, kill=True)
            raise WorkerUnavailable(
                f"the fold worker did not start: no answer within {READY_S:.0f} s"
            ) from exc
        except _DIED as exc:
            self._starting = None
            _end(process, kill=True)
            if self._closed:
                raise WorkerUnavailable("the fold worker is closed") from exc
            raise WorkerUnavailable(
                f"the fold worker did not start ({exc!r}; exit code "
                f"{process.returncode})"
            ) from exc
        if ready != ("ready", process.pid):
            self._starting = None
            _end(process, kill=True)
            raise WorkerUnavailable(f"the fold worker said {ready!r}, not ready")
        self._process = process  # before _starting clears: close() always sees one
        self._starting = None
        if self._closed:
            raise WorkerUnavailable("the fold worker is closed")  # fold() discards it
        self._stop = weakref.finalize(self, _kill, process)
        log.debug("fold worker %d started", process.pid)
        return process

    def _discard(self, *, kill: bool = False) -> None:
        """Drop the child (under ``_lock``): end it if ours (``kill``: at once)."""
        process, self._process = self._process, None
        if self._stop is not None:
            self._stop.detach()
            self._stop = None
        if process is not None and self._owner == os.getpid():
            _end(process, kill=kill or self._closed)

    def _forked(self) -> None:
        """In a child of ``os.fork``: let the parent's child go, start afresh.

        The inherited pipe ends are pointed at /dev/null (``dup2``), not closed, so
        no later file takes their numbers; their stream objects are kept and never
        closed here (a parent thread may have held their locks at the fork, and
        closing them would wait forever). The child now sees its stdin close with
        its real host alone.
        """
        inherited = [p for p in (self._process, self._starting) if p is not None]
        self._process = self._starting = None
        if self._stop is not None:
            self._stop.detach()
            self._stop = None
        self._lock = threading.Lock()  # another thread may have held it at the fork
        for process in inherited:
            _INHERITED.append(process)  # never reaped from here: not our child
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError, ValueError):
                        _to_devnull(stream.fileno())


_WORKERS: weakref.WeakSet[FoldWorker] = weakref.WeakSet()
_INHERITED: list[subprocess.Popen[bytes]] = []


def _after_fork() -> None:
    for worker in list(_WORKERS):
        worker._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:  # pragma: no cover - Popen was given PIPE
        raise OSError("no pipe")
    return stream


def _send(stream: IO[bytes], value: object, deadline: float | None) -> None:
    """Write ``value``, pickled, to the child's stdin (a non-blocking pipe)."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    _write(stream.fileno(), data, deadline)


def _write(fd: int, data: bytes, deadline: float | None) -> None:
    """Write all of ``data`` to ``fd`` by ``deadline`` (monotonic; None: no bound).

    Raises:
        FoldTimeout: the child read too little of it in time (stopped, wedged).
        OSError: the pipe broke (the child died).
    """
    view = memoryview(data)
    with selectors.DefaultSelector() as waiting:  # any fd number, not select()
        waiting.register(fd, selectors.EVENT_WRITE)
        while view:
            if not waiting.select(_left(deadline)):
                raise FoldTimeout("the fold worker took no request in time")
            with contextlib.suppress(BlockingIOError):
                view = view[os.write(fd, view) :]


def _receive(stream: IO[bytes], deadline: float | None) -> Any:
    """Read one framed reply from the child's stdout by ``deadline``; unpickle it.

    Reads the pipe's fd itself, never through the stream's buffer.

    Raises:
        FoldTimeout: the whole frame did not come in time.
        EOFError: the child closed its stdout (it died).
        pickle.UnpicklingError: the bytes are no frame, or no pickle.
    """
    fd = stream.fileno()
    with selectors.DefaultSelector() as waiting:
        waiting.register(fd, selectors.EVENT_READ)
        mark, size = FRAME.unpack(_read(fd, FRAME.size, deadline, waiting))
        if mark != FRAME_MARK or size > MAX_REPLY_BYTES:
            raise pickle.UnpicklingError(f"no reply frame: {mark!r}, {size} bytes")
        data = _read(fd, size, deadline, waiting)
    try:
        return pickle.loads(data)
    except Exception as exc:  # any torn pickle: the child is dropped
        raise pickle.UnpicklingError(f"a torn reply: {exc!r}") from exc


def _read(
    fd: int, size: int, deadline: float | None, waiting: selectors.BaseSelector
) -> bytes:
    """Read exactly ``size`` bytes of ``fd`` by ``deadline``, as they come."""
    data = bytearray()
    while len(data) < size:
        if not waiting.select(_left(deadline)):
            raise FoldTimeout("the fold worker gave no answer in time")
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the fold worker closed its pipe")
        data += chunk
    return bytes(data)


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (0 once past); None waits without end."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def _reply(stream: IO[bytes], value: object) -> None:
    """In the child: write ``value`` as one frame (``FRAME``, then the pickle)."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(FRAME.pack(FRAME_MARK, len(data)))
    stream.write(data)
    stream.flush()


def _end(process: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    """Close the child's stdin (it exits at EOF) and reap it; kill it if it lingers.

    The caller holds the fold lock, so no thread reads its stdout meanwhile.
    """
    if kill:
        with contextlib.suppress(OSError):
            process.kill()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        with contextlib.suppress(OSError):
            process.stdout.close()


def _kill(process: subprocess.Popen[bytes]) -> None:
    """At collection or exit: kill the child and reap it, then close its pipes.

    A daemon thread may be blocked on the child's pipes (reading its reply, or
    writing to a stopped child): the kill ends that wait first, so closing the
    streams afterwards never waits for it.
    """
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.close()


def _to_devnull(fd: int) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def serving_summarizer(
    count_tokens: Callable[[str], int], context_tokens: int
) -> ExtractiveSummarizer:
    """The child's summarizer: alone with its GIL, it never hands it over."""
    from .extractive import ExtractiveSummarizer

    return ExtractiveSummarizer(
        count_tokens, context_tokens=context_tokens, hand_over_s=None
    )


def serve() -> None:
    """The child's loop: read the setup, then fold each request until EOF."""
    stdin = sys.stdin.buffer
    # Frames go out on a copy of fd 1; fd 1 itself becomes stderr, so a stray print
    # (Python's or a C library's) cannot corrupt a frame.
    sys.stdout.flush()
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    count_tokens, context_tokens = pickle.load(stdin)
    summarizer = serving_summarizer(count_tokens, context_tokens)
    # The tokenizer loads now, within READY_S, not within the first fold's deadline
    # (a fold cut short by it would end this child, and the next child the same way).
    with contextlib.suppress(Exception):  # a counter that fails says so at a fold
        count_tokens("ready")
    _reply(stdout, ("ready", os.getpid()))
    while True:
        try:
            messages, max_tokens = pickle.load(stdin)
        except EOFError:
            stdout.close()
            return
        started = time.process_time()
        try:
            reply: tuple[str, object] = (
                "ok",
                summarizer.complete(
                    cast("list[Message]", [Said(r, t) for r, t in messages]),
                    max_tokens=max_tokens,
                ),
            )
        except Exception as exc:  # noqa: BLE001 - raised again in the parent
            reply = ("error", _portable(exc))
        _reply(stdout, (*reply, time.process_time() - started))


class Said(NamedTuple):
    """A message as a fold reads it: its role and its text, whatever else it had."""

    role: str
    text: str


def _portable(exc: Exception) -> Exception:
    """Return ``exc`` if it survives pickling, else a ``RuntimeError`` saying it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to round-trip
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
