"""An offline, deterministic summarizer that extracts instead of writing: not an LLM.

It is the embedded default when no endpoint is configured, so the library works with no
key and no network. It reads the tagged request ``memory_summary.domain.prompt`` builds
and keeps *facts*: short fragments quoted from the messages, each ranked by salience.

- Salience (``salience``): a fragment scores its strongest kind (``WEIGHTS``:
  identifiers, contacts and paths 8; dates, names, decisions and constraints 7;
  quantities (a number in digits or words before a unit: "3 kg", "three years"),
  errors and proper nouns (and quoted titles) 6; stated goals and
  personal statements (what someone did, has, likes or plans) 5; open tasks 4; bare
  numbers and tool outcomes 3; questions and requests 2; anything else 1), plus one
  per further kind (at most 3), plus the speaker's (user +2, assistant, system and a
  tool's result +1, a personal statement +2 from either side, tool calls -3). A tool
  result gives its first line, its outcome, and later lines that are no list items; a
  first line that is one item of a list (search hits) scores 1. Advice ("don't give
  up") is no constraint; a decision is the speaker's ("you chose pottery", "a big
  decision" are none); only the user states goals, and in a dated transcript
  (people talking) no one does: a wish there is a personal statement. Chatter
  alone (greetings, thanks, filler) scores 0.
- Dialogue (``dialogue``): what a person says is read sentence by sentence; chatter
  (greetings, thanks, praise, praise of the other as the subject, cheering the
  other on, pointing at a picture, questions to the other with or without "you",
  the assistant's questions) is no fact, a kept sentence is compacted to its
  content words, a closing caption of a shared photo (``[shares a photo: …]``)
  is one fragment (``photo: …``), and a message's opening ``[date]``
  dates the facts that follow it (a transcript that opens without one goes on from
  the latest day of the previous summary).
- Host instructions (the request's ``host_instructions`` section): a fact naming one
  of their terms scores ``INSTRUCTED_BONUS`` more.
- Merge by fact (``fitting``): the previous summary is parsed back into facts (its own
  sections, date lines and bullets, or a foreign summary's sentences; the engine's
  pinned section is the engine's). A new fact already contained in a kept one is
  dropped, one that contains a kept one replaces it in place, and one that restates
  a kept fact with one value changed ("budget is 800 EUR" after "budget is 500 EUR")
  supersedes it. Older facts stay otherwise.
- Fold (``domain.clause_fold``): facts of one speaker, tool, section and day that
  differ only by one value or by a few words fold into one that keeps the range or
  the set ("Step 1\u201334, please keep within budget"); a tool's repeated calls fold
  their arguments into each key's distinct values (``domain.argument_fold``:
  "todos: flights, hotel"). The next compression reads the fold back and widens
  it, never unfolds it.
- Budget: over ``max_tokens`` (counted exactly with ``count_tokens``), the lowest
  score goes first; a fact whose identifiers an earlier fact already carries scores
  as if it had none; a fact of the shape of an earlier one (other values, not
  folded) that names nothing new is a repeat: it scores at most 1; one most of
  whose content words earlier facts already say is a restatement: it ranks two
  points lower (``fitting.NOVEL_PENALTY``); a dated one that tells no event and
  names nothing, a view or a feeling ("love how art heals"), ranks one point lower
  (``fitting.VIEW_PENALTY``), and three when it is said to the other ("love the
  scarf you gave me") or promises within the talk ("I'll send you the video")
  (``fitting.ADDRESS_PENALTY``). Among equal ranks repeats go first,
  then restatements: topics before repetitions; then what someone did (a past
  action, ``salience.is_event``: "went camping with the kids") outlasts a view or
  a feeling. Then, among equal ranks, facts below ``HIGH_SCORE`` drop oldest first
  and salient ones newest first: first come, first kept. Chatter goes whenever
  anything else is left, and past ``LOW_SHARE`` of the budget only facts scoring
  ``FILL_SCORE`` or more stay, so a summary is no longer than what it holds is
  worth.
- Output: short sections in the session's locale (its transcript labels, else its
  previous summary, else its system prompt): ``Goals:``/``Decisions:``/``Facts:``/
  ``Open tasks:``, ``目标：``/``决定：``/``事实：``/``待办：``, only the non-empty
  ones (a dated transcript is a diary: its new facts all go under ``Facts:``, so
  that each day is written once; sections read back from a previous summary
  stay); in each, one line per known day, ``[9 May] <speaker>: <fact>; <fact> |
  <speaker>: <fact>`` (``[9 May]``: a day of the year the section's previous day
  line names leaves it out; the next compression reads it back in full; a date
  alone on its line, with bullets below, reads back too), then bullets
  ``- <speaker>: <fact>; <fact>`` for undated facts (one speaker's share one).
  Summarizing its own summary with nothing new returns it unchanged.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Literal

from memory_summary.domain import (
    Message,
    SummarizerError,
    SummarizerTimeout,
    normalize_text,
)
from memory_summary.domain.config import Locale

from .dialogue import latest_day
from .fact_reading import folded_facts, new_facts, previous_facts
from .fitting import HIGH_SCORE, fitted_text, merged_facts
from .host_instructions import CJK, INSTRUCTED_BONUS, instructed, instructions_of
from .pacing import HAND_OVER_S, checked_interval, never, pacer
from .salience import salience_of
from .transcript import sections_of
from .worker import FoldTimeout, FoldWorker, WorkerDied, WorkerUnavailable

__all__ = [
    "HIGH_SCORE",
    "INSTRUCTED_BONUS",
    "ExtractiveSummarizer",
    "fitted_text",
    "merged_facts",
    "salience_of",
    "utf8_bytes",
]

log = logging.getLogger(__name__)

Worker = Literal["thread", "process"]
"""Where a fold runs: on the calling thread, or in one child process."""
WORKERS: tuple[Worker, ...] = ("thread", "process")

WORKER_RETRY_S = 60.0
"""After the worker could not fold, folds run in-process this long, then it is tried."""

LABEL = "extractive (offline, not an LLM)"
COUNT_CACHE_SIZE = 8192
_LATIN = re.compile(r"[A-Za-z]")


def utf8_bytes(text: str) -> int:
    """Return the UTF-8 length: never less than the token count, so a safe default."""
    return len(text.encode("utf-8"))


def _locale_of(
    labelled: dict[Locale, int], previous: Locale | None, system: str
) -> Locale:
    """Return the session's locale: its transcript labels, then its summary, prompt."""
    if labelled["zh"] != labelled["en"]:
        return "zh" if labelled["zh"] > labelled["en"] else "en"
    if previous is not None:
        return previous
    head = system[:4000]
    return "zh" if len(CJK.findall(head)) * 4 > len(_LATIN.findall(head)) else "en"


class ExtractiveSummarizer:
    r"""A summarizer that keeps the most salient fragments, within ``max_tokens``.

    Args:
        count_tokens: the counter ``max_tokens`` is measured with; the default
            (``utf8_bytes``, the UTF-8 length) is an upper bound of every tokenizer's
            count.
        context_tokens: the input size it reports as its context length.
        worker: where a fold runs. ``"thread"`` (the default): on the engine thread
            that asks, in the host's process. ``"process"``: in one child process
            (``worker``), so a fold's CPU never holds the GIL the host's event loop
            and request threads need; ``count_tokens`` must then pickle, from a
            module other than ``__main__``. When no child can start, the fold
            runs in-process (logged) and a child is tried again after
            ``WORKER_RETRY_S``; when two children die on one fold, that fold is
            refused (``SummarizerError``: it could end the host too) and the
            next one starts another child. ``close()`` ends the child for good (so does
            collecting the summarizer, or the host's exit). POSIX only.
        hand_over_s: a fold in this process hands the GIL over to any thread
            waiting for it after about this many seconds of work (``pacing``);
            None: never (the worker process's own folds).

    Raises:
        ValueError: ``worker`` is neither ``"thread"`` nor ``"process"``.
        ConfigError: ``hand_over_s`` is not a finite int or float above 0, nor None
            (a ``ValueError`` too).
        TypeError: ``worker="process"`` with a ``count_tokens`` that does not pickle.

    >>> summarizer = ExtractiveSummarizer()
    >>> text = "<conversation>\nUser: I live in Oslo. Hi!\n</conversation>"
    >>> summarizer.complete([Message("user", text)], max_tokens=100)
    'Facts:\n- user: live in Oslo'
    """

    label = LABEL

    def __init__(
        self,
        count_tokens: Callable[[str], int] = utf8_bytes,
        *,
        context_tokens: int = 16384,
        worker: Worker = "thread",
        hand_over_s: float | None = HAND_OVER_S,
    ) -> None:
        if worker not in WORKERS:
            raise ValueError(f"worker={worker!r}: expected one of {WORKERS}")
        self._hand_over_s = checked_interval(hand_over_s)
        self._count_tokens = count_tokens
        self._context_tokens = context_tokens
        self._counts: dict[str, int] = {}
        self._folding = threading.Lock()
        self._worker = (
            FoldWorker(count_tokens, context_tokens) if worker == "process" else None
        )
        self._worker_after = 0.0  # monotonic time before which folds stay here
        _SUMMARIZERS.add(self)

    @property
    def worker_pid(self) -> int | None:
        """The fold worker's process id while it runs (``worker="process"``)."""
        return None if self._worker is None else self._worker.pid

    @property
    def startup_s(self) -> float:
        """Seconds the calling thread spent starting fold workers, summed.

        Per thread (``FoldWorker.startup_s``); 0 with ``worker="thread"``.
        """
        return 0.0 if self._worker is None else self._worker.startup_s

    def close(self) -> None:
        """End the fold worker now, if any: final and idempotent.

        With ``worker="process"``, a fold the worker was doing, and any later one,
        raises ``SummarizerError`` (the engine closes its own summarizer at
        ``stop()``, when nothing may commit); with ``"thread"`` nothing changes.
        """
        if self._worker is not None:
            self._worker.close()

    def context_length(self, model: str | None = None) -> int | None:
        """Return ``context_tokens``, whatever the model."""
        return self._context_tokens

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float = 0.0,
        timeout_s: float | None = None,
    ) -> str:
        """Return the facts of the summarizer request in ``messages``, within budget.

        Reads the engine's request (the previous summary, the conversation, the
        host's instructions) and keeps the most salient fragments, merged with the
        previous summary's, that fit ``max_tokens``. ``model`` and ``temperature``
        change nothing: the same request gives the same summary.

        A fold is milliseconds of pure Python on an engine thread, so it is kind to
        the host's threads (an event loop) that share the GIL: folds run one at a
        time (the GIL would run them one at a time anyway; side by side they only
        multiply the threads a waiting host thread queues behind), and each hands
        the GIL to any thread waiting for it after about ``hand_over_s`` of work,
        at its next entry, sentence, line or fact (``pacing``: a 300 µs sleep),
        where that thread would otherwise wait up to a switch interval (5 ms) each
        time it wants the GIL back. With ``worker="process"`` the fold runs in the child
        and this thread only waits on a pipe, at most ``timeout_s`` seconds (the
        engine passes its summarizer deadline; None: no bound); a fold in this
        process is never cut short.

        Raises:
            ValueError: ``timeout_s`` is not a positive number of seconds.
            SummarizerTimeout: the worker gave no answer within ``timeout_s`` (it
                was killed; the next fold starts another), or the fold waited that
                long for the one before it.
            SummarizerError: the summarizer is closed (``worker="process"``), or
                two children died on this fold (it is not run in the host).
        """
        if timeout_s is not None and not timeout_s > 0:  # NaN and negatives too
            raise ValueError(f"timeout_s={timeout_s!r}: expected seconds > 0 or None")
        if timeout_s is not None and timeout_s >= threading.TIMEOUT_MAX:
            timeout_s = None  # longer than any wait can be: no bound
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if not self._folding.acquire(timeout=-1 if timeout_s is None else timeout_s):
            raise SummarizerTimeout(
                f"no fold within {timeout_s:g} s: the one before it took as long"
            )
        try:
            return self._fold(messages, max_tokens, timeout_s, deadline)
        finally:
            self._folding.release()

    def _fold(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        timeout_s: float | None,
        deadline: float | None,
    ) -> str:
        """Fold in the worker when it may, else here (``_folding`` is held)."""
        worker = self._worker
        if worker is not None and worker.closed:
            raise SummarizerError("the summarizer is closed (its worker ended)")
        if worker is not None and time.monotonic() >= self._worker_after:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:  # waited out the fold before it
                raise SummarizerTimeout(f"no fold within {timeout_s:g} s")
            texts = [(m.role, m.text) for m in messages]
            try:
                return worker.fold(texts, max_tokens, timeout_s=left)
            except FoldTimeout as exc:  # the deadline passed: no fold here either
                raise SummarizerTimeout(
                    f"the fold worker gave no answer within {timeout_s:g} s "
                    "(it was ended; the next fold starts another)"
                ) from exc
            except WorkerUnavailable as exc:
                if worker.closed:  # closed while folding: nobody waits for it
                    raise SummarizerError("the summarizer is closed") from exc
                if isinstance(exc, WorkerDied):  # never here: it may kill the host
                    raise SummarizerError(
                        f"{exc}: this fold is not run in the host's process, where "
                        "what ended both children could end the host"
                    ) from exc
                log.warning(
                    "%s: folding in this process, and for %.0f s",
                    exc,
                    WORKER_RETRY_S,
                )
                self._worker_after = time.monotonic() + WORKER_RETRY_S
        return self._complete(messages, max_tokens)

    def _complete(self, messages: Sequence[Message], max_tokens: int) -> str:
        request = next((m.text for m in reversed(messages) if m.role == "user"), "")
        system = next((m.text for m in messages if m.role == "system"), "")
        request, instructions = instructions_of(normalize_text(request))
        previous, conversation = sections_of(request)
        pace = never if self._hand_over_s is None else pacer(self._hand_over_s)
        older, summary_locale = previous_facts(previous, pace)
        last_day = latest_day([fact.date for fact in older])
        newer, labelled = new_facts(conversation, last_day, pace)
        locale = _locale_of(labelled, summary_locale, normalize_text(system))
        merged = merged_facts(older, newer, pace)
        facts = instructed(folded_facts(merged, pace), instructions)
        pace()
        return fitted_text(facts, locale, max_tokens, self._count, pace)

    def _count(self, text: str) -> int:
        """Return ``count_tokens(text)``, remembered: most facts come back each call."""
        counts = self._counts
        found = counts.get(text)
        if found is None:
            if len(counts) >= COUNT_CACHE_SIZE:
                counts.clear()
            found = counts[text] = self._count_tokens(text)
        return found


_SUMMARIZERS: weakref.WeakSet[ExtractiveSummarizer] = weakref.WeakSet()


def _after_fork() -> None:
    """In a child of ``os.fork``: a fold another thread held at the fork is not ours."""
    for summarizer in list(_SUMMARIZERS):
        summarizer._folding = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
