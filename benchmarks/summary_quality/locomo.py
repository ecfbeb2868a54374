"""Read LoCoMo conversations (long two-person chats with annotated questions).

LoCoMo (Maharana et al., 2024; CC BY-NC 4.0) is not part of this project: benchmarks
take its path (``default_locomo_path``) and skip without it. A file is a JSON list of
conversations, each with ``conversation`` (``speaker_a``, ``speaker_b``,
``session_N_date_time`` and ``session_N``: turns ``{speaker, dia_id, text}``, some with
a ``blip_caption`` of a shared photo) and ``qa`` (``{question, answer, evidence,
category}``; category 5 questions are adversarial, their answer absent by design).

``LocomoConversation.messages`` replays a conversation as ``Message``s: the first
speaker as ``user``, the second as ``assistant``, each message naming its speaker
(``name``), dated by its session (``timestamp``, ``metadata["date"]``) and carrying its
turn id (``metadata["dia_id"]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import attrs

from memory_summary.domain import Message

CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
DEFAULT_PATH = Path("..") / "shared" / "datasets" / "locomo" / "locomo-dev.json"
DatePrefix = Literal["none", "session", "every"]
_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")
_DATE = re.compile(
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>am|pm)\s+on\s+(?P<day>\d{1,2})\s+"
    r"(?P<month>[A-Za-z]+),?\s+(?P<year>\d{4})",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december"),
        start=1,
    )
}  # fmt: skip


class LocomoError(ValueError):
    """A LoCoMo file that cannot be read: names what is wrong and where."""


@attrs.frozen
class LocomoTurn:
    """One turn: who said what, and the caption of a photo it shared, if any."""

    dia_id: str
    speaker: str
    text: str
    caption: str = ""

    @property
    def said(self) -> str:
        """Return the turn's text with its photo's caption, as the replay writes it."""
        if not self.caption:
            return self.text
        return f"{self.text} [shares a photo: {self.caption}]".strip()


@attrs.frozen
class LocomoSession:
    """One session: its number, its date as the dataset writes it, and its turns."""

    number: int
    date: str
    turns: tuple[LocomoTurn, ...]

    @property
    def day(self) -> str:
        """Return the session's day (``8 May 2023``), or its raw date if unparsed."""
        parsed = parse_session_date(self.date)
        return f"{parsed.day} {parsed:%B %Y}" if parsed else self.date


@attrs.frozen
class LocomoQuestion:
    """One annotated question.

    Attributes:
        question: the question.
        answer: its answer as text (adversarial questions: the answer they tempt).
        category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
        evidence: the ids of the turns that hold the answer.
    """

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]

    @property
    def category_name(self) -> str:
        """Return the category's name (``CATEGORIES``)."""
        return CATEGORIES.get(self.category, str(self.category))


@attrs.frozen
class LocomoConversation:
    """A conversation: its two speakers, its sessions in order, and its questions."""

    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]

    @property
    def turns(self) -> list[LocomoTurn]:
        """Return every turn in order."""
        return [turn for session in self.sessions for turn in session.turns]

    def speaker_of(self, dia_id: str) -> str | None:
        """Return who said turn ``dia_id``, or None when it is no turn of this one."""
        for turn in self.turns:
            if turn.dia_id == dia_id:
                return turn.speaker
        return None

    def messages(self, *, dates: DatePrefix = "session") -> list[Message]:
        """Return the conversation as messages, oldest first.

        Args:
            dates: where the session's day appears in the text: ``"session"`` before
                the first message of each session (``[8 May 2023] ...``), ``"every"``
                before every message, ``"none"`` nowhere (it is in the metadata and
                the timestamp either way).
        """
        if dates not in ("none", "session", "every"):
            raise ValueError(f"dates must be none, session or every, not {dates!r}")
        messages = []
        for session in self.sessions:
            parsed = parse_session_date(session.date)
            stamp = parsed.timestamp() if parsed else None
            for position, turn in enumerate(session.turns):
                prefix = dates == "every" or (dates == "session" and position == 0)
                text = f"[{session.day}] {turn.said}" if prefix else turn.said
                messages.append(
                    Message(
                        "user" if turn.speaker == self.speakers[0] else "assistant",
                        text,
                        name=turn.speaker,
                        timestamp=stamp,
                        metadata={
                            "dia_id": turn.dia_id,
                            "speaker": turn.speaker,
                            "session": session.number,
                            "date": session.date,
                        },
                    )
                )
        return messages


def parse_session_date(text: str) -> datetime | None:
    """Return a session's date (``1:56 pm on 8 May, 2023``) in UTC, or None.

    >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    """
    match = _DATE.search(text)
    if not match or match["month"].lower() not in _MONTHS:
        return None
    hour = int(match["hour"]) % 12 + (12 if match["half"].lower() == "pm" else 0)
    try:
        return datetime(
            int(match["year"]),
            _MONTHS[match["month"].lower()],
            int(match["day"]),
            hour,
            int(match["minute"]),
            tzinfo=timezone.utc,
        )
    except ValueError:
        return None


def default_locomo_path() -> Path | None:
    """Return ``../shared/datasets/locomo/locomo-dev.json`` if it exists, else None."""
    return DEFAULT_PATH if DEFAULT_PATH.is_file() else None


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Read a LoCoMo JSON file (a list of conversations).

    Raises:
        LocomoError: the file is not JSON or not LoCoMo's shape; names where.
        OSError: the file cannot be read.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LocomoError(f"{path}: not JSON ({exc})") from exc
    return parse_locomo(data, source=str(path))


def parse_locomo(data: object, *, source: str = "data") -> list[LocomoConversation]:
    """Return the conversations of LoCoMo data already decoded from JSON.

    Raises:
        LocomoError: ``data`` is not a list of LoCoMo conversations; names where.
    """
    if not isinstance(data, list):
        raise LocomoError(f"{source}: expected a list of conversations")
    return [
        _conversation(item, f"{source}[{index}]") for index, item in enumerate(data)
    ]


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise LocomoError(f"{where}: expected an object")
    return value


def _text(value: object, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise LocomoError(f"{where}: expected text")
    return str(value)


def _conversation(item: object, where: str) -> LocomoConversation:
    data = _mapping(item, where)
    body = _mapping(data.get("conversation"), f"{where}.conversation")
    speakers = (
        _text(body.get("speaker_a"), f"{where}.conversation.speaker_a"),
        _text(body.get("speaker_b"), f"{where}.conversation.speaker_b"),
    )
    numbers = sorted(
        int(match[1]) for key in body if (match := _SESSION.fullmatch(key))
    )
    sessions = tuple(
        _session(body, number, f"{where}.conversation.session_{number}")
        for number in numbers
    )
    questions = data.get("qa", [])
    if not isinstance(questions, list):
        raise LocomoError(f"{where}.qa: expected a list")
    return LocomoConversation(
        sample_id=_text(data.get("sample_id", where), f"{where}.sample_id"),
        speakers=speakers,
        sessions=tuple(session for session in sessions if session.turns),
        questions=tuple(
            _question(q, f"{where}.qa[{i}]") for i, q in enumerate(questions)
        ),
    )


def _session(body: Mapping[str, Any], number: int, where: str) -> LocomoSession:
    turns = body[f"session_{number}"]
    if not isinstance(turns, list):
        raise LocomoError(f"{where}: expected a list of turns")
    date = body.get(f"session_{number}_date_time", "")
    return LocomoSession(
        number=number,
        date=_text(date, f"{where}_date_time"),
        turns=tuple(_turn(turn, f"{where}[{i}]") for i, turn in enumerate(turns)),
    )


def _turn(item: object, where: str) -> LocomoTurn:
    turn = _mapping(item, where)
    caption = turn.get("blip_caption") or ""
    return LocomoTurn(
        dia_id=_text(turn.get("dia_id"), f"{where}.dia_id"),
        speaker=_text(turn.get("speaker"), f"{where}.speaker"),
        text=_text(turn.get("text", ""), f"{where}.text"),
        caption=_text(caption, f"{where}.blip_caption"),
    )


def _question(item: object, where: str) -> LocomoQuestion:
    qa = _mapping(item, where)
    category = qa.get("category")
    if isinstance(category, bool) or not isinstance(category, int):
        raise LocomoError(f"{where}.category: expected an integer")
    answer = qa.get("answer", qa.get("adversarial_answer", ""))
    evidence = qa.get("evidence", [])
    if not isinstance(evidence, Sequence) or isinstance(evidence, str):
        raise LocomoError(f"{where}.evidence: expected a list of turn ids")
    ids = [found for e in evidence for found in _DIA_ID.findall(str(e))]
    return LocomoQuestion(
        question=_text(qa.get("question", ""), f"{where}.question"),
        answer="" if answer is None else _text(answer, f"{where}.answer"),
        category=category,
        evidence=tuple(dict.fromkeys(ids)),
    )
