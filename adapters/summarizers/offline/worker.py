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
request on its stdout; the child's own fd 1 goes to stderr, so a stray print cannot
corrupt a frame. The child starts at the first fold, runs in its own session (a
terminal's Ctrl-C goes to the host, which then closes it) and ends when its stdin
closes: when the summarizer is closed or collected, or when the host process dies.

Faults: a child that dies during a fold is replaced and the fold is asked again
once; a child that cannot start or dies twice raises ``WorkerUnavailable``, and the
summarizer then folds in the host's process (logged). A host that forks after the
child started (a pre-forking server) gets a child of its own in each process: a
pipe is never shared between two processes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import IO, Any

__all__ = ["FoldWorker", "WorkerUnavailable", "serve"]

log = logging.getLogger(__name__)

BOOT = (
    "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
    "from memory_summary.adapters.summarizers.offline.worker import serve; serve()"
)
"""The child's program: take the parent's import path, then serve folds."""

Request = tuple[list[tuple[str, str]], int]
"""One fold: the messages as ``(role, text)`` and ``max_tokens``."""


_DIED = (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError)
"""What a dead child, a closed pipe or a torn frame raises on our side."""


class WorkerUnavailable(RuntimeError):
    """The child process cannot start, or died twice in a row."""


class FoldWorker:
    """One child process that folds for one summarizer, one fold at a time.

    Args:
        count_tokens: the summarizer's counter; it must pickle (a module-level
            function, or an object whose class is importable), since the child
            counts with its own copy.
        context_tokens: the summarizer's context size, passed on.

    Raises:
        TypeError: ``count_tokens`` does not pickle.
    """

    def __init__(self, count_tokens: Callable[[str], int], context_tokens: int) -> None:
        try:
            self._setup = pickle.dumps((count_tokens, context_tokens))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise TypeError(
                f"count_tokens={count_tokens!r} does not pickle, so a worker process "
                "cannot count with it: pass a module-level function or a picklable "
                "callable, or fold in a thread (worker='thread')"
            ) from exc
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0  # the pid that started the child: after a fork, not ours
        self._stop: weakref.finalize[Any, Any] | None = None
        self._cpu_s = 0.0
        self._lock = threading.Lock()

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

    def fold(self, messages: Sequence[tuple[str, str]], max_tokens: int) -> str:
        """Return the child's fold of ``messages`` within ``max_tokens``.

        An exception the fold raised in the child is raised here.

        Raises:
            WorkerUnavailable: the child cannot start, or died twice.
        """
        request: Request = (list(messages), max_tokens)
        with self._lock:
            for attempt in (1, 2):
                process = self._running()
                try:
                    _send(_pipe(process.stdin), request)
                    kind, value, cpu_s = pickle.load(_pipe(process.stdout))
                except BaseException as exc:
                    self._discard()  # a reply may be in flight: never read it later
                    if not isinstance(exc, _DIED):
                        raise  # KeyboardInterrupt, say: the child was well
                    if attempt == 2:
                        raise WorkerUnavailable(
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
        """Close the child's stdin and wait for it to end (it ends at EOF)."""
        with self._lock:
            self._discard()

    def _running(self) -> subprocess.Popen[bytes]:
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
        if not sys.executable:
            raise WorkerUnavailable("sys.executable is empty: no Python to start")
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", BOOT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise WorkerUnavailable(f"cannot start {sys.executable}: {exc}") from exc
        try:
            stdin = _pipe(process.stdin)
            _send(stdin, list(sys.path))
            stdin.write(self._setup)
            stdin.flush()
            ready = pickle.load(_pipe(process.stdout))
        except _DIED as exc:
            _end(process)
            raise WorkerUnavailable(
                f"the fold worker did not start (exit code {process.returncode})"
            ) from exc
        if ready != ("ready", process.pid):
            _end(process)
            raise WorkerUnavailable(f"the fold worker said {ready!r}, not ready")
        self._process, self._owner = process, os.getpid()
        self._stop = weakref.finalize(self, _end, process)
        log.debug("fold worker %d started", process.pid)
        return process

    def _discard(self) -> None:
        process, self._process = self._process, None
        if self._stop is not None:
            self._stop.detach()
            self._stop = None
        if process is None:
            return
        if self._owner == os.getpid():
            _end(process)
        else:  # a forked copy of the parent's handle: drop our ends, leave the child
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:  # pragma: no cover - Popen was given PIPE
        raise OSError("no pipe")
    return stream


def _send(stream: IO[bytes], value: object) -> None:
    pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
    stream.flush()


def _end(process: subprocess.Popen[bytes]) -> None:
    """Close the child's stdin (it exits at EOF) and reap it; kill it if it lingers."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve() -> None:
    """The child's loop: read the setup, then fold each request until EOF."""
    stdin = sys.stdin.buffer
    # Frames go out on a copy of fd 1; fd 1 itself becomes stderr, so a stray print
    # (Python's or a C library's) cannot corrupt a frame.
    sys.stdout.flush()
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from memory_summary.domain import Message

    from .extractive import ExtractiveSummarizer

    count_tokens, context_tokens = pickle.load(stdin)
    summarizer = ExtractiveSummarizer(count_tokens, context_tokens=context_tokens)
    _send(stdout, ("ready", os.getpid()))
    while True:
        try:
            messages, max_tokens = pickle.load(stdin)
        except EOFError:
            return
        started = time.process_time()
        try:
            reply: tuple[str, object] = (
                "ok",
                summarizer.complete(
                    [Message(role, text) for role, text in messages],
                    max_tokens=max_tokens,
                ),
            )
        except Exception as exc:  # noqa: BLE001 - raised again in the parent
            reply = ("error", _portable(exc))
        _send(stdout, (*reply, time.process_time() - started))


def _portable(exc: Exception) -> Exception:
    """Return ``exc`` if it survives pickling, else a ``RuntimeError`` saying it."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to round-trip
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
