"""An offline, deterministic summarizer that extracts instead of writing: not an LLM.

It is the embedded default when no endpoint is configured, so the library works with no
key and no network. It reads the tagged request ``memory_summary.domain.prompt`` builds
and keeps *facts*: short fragments quoted from the messages, each ranked by salience.

- Salience: a fragment scores its strongest kind (``WEIGHTS``: identifiers, contacts
  and paths 8; dates, names, decisions and constraints 7; quantities, errors and
  proper nouns 6; stated goals 5; open tasks 4; bare numbers, personal statements and
  tool outcomes 3; questions and requests 2; anything else 1), plus one per further
  kind (at most 3), plus the speaker's (user +2, assistant, system and a tool's
  result +1, tool calls -3). A tool result gives its first line only, its outcome;
  a first line that is one item of a list (search hits) scores 1. Chatter alone
  (greetings, thanks, filler) scores 0.
- Merge by fact: the previous summary is parsed back into facts (its own sections and
  bullets, or a foreign summary's sentences; the engine's pinned section is the
  engine's). A new fact already contained in a kept one is dropped, one that contains
  a kept one replaces it in place, and one that restates a kept fact with one value
  changed ("budget is 800 EUR" after "budget is 500 EUR") supersedes it. Older facts
  stay otherwise.
- Budget: over ``max_tokens`` (counted exactly with ``count_tokens``), the lowest
  score goes first; a fact whose identifiers an earlier fact already carries scores
  as if it had none. Among equal scores, facts below ``HIGH_SCORE`` drop oldest
  first and salient ones newest first: first come, first kept. Chatter goes whenever
  anything else is left, and past ``LOW_SHARE`` of the budget only salient facts
  stay, so a summary is no longer than what it holds is worth.
- Output: short sections in the session's locale (its transcript labels, else its
  previous summary, else its system prompt): ``Goals:``/``Decisions:``/``Facts:``/
  ``Open tasks:``, ``目标：``/``决定：``/``事实：``/``待办：``, only the non-empty
  ones, each line ``- <speaker>: <fragment>`` with the fragment quoted from a
  message. Summarizing its own summary with nothing new returns it unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import attrs

from memory_summary.domain import Message, cut_chars, normalize_text, pinned_section
from memory_summary.domain.config import Locale
from memory_summary.domain.injection import TRUNCATION_SUFFIXES
from memory_summary.domain.prompt import (
    CONVERSATION_TAG,
    FENCE_TAGS,
    NEUTRAL_OPEN,
    PREVIOUS_TAG,
    TASK_STATE_TAG,
)
from memory_summary.domain.render import LABELS

Kind = Literal[
    "identifier", "contact", "path", "date", "quantity", "number", "name", "proper",
    "decision", "constraint", "error", "goal", "task", "personal", "outcome",
    "question", "plain", "listing",
]  # fmt: skip
Role = Literal["user", "assistant", "system", "call", "tool"]
Section = Literal["goals", "facts", "decisions", "tasks"]

LABEL = "extractive (offline, not an LLM)"
LINE_CHARS = 160
ENTRY_CHARS = 65_536  # read of one message: about the 16k-token context it reports
SCAN_CHARS = 262_144  # read of one whole request
MAX_FACTS_PER_ENTRY = 16
HIGH_SCORE = 8
LOW_SHARE = 0.7  # past this share of the budget, only salient facts are added
WEIGHTS: dict[Kind, int] = {
    "identifier": 8, "contact": 8, "path": 8, "date": 7, "decision": 7,
    "constraint": 7, "name": 7, "quantity": 6, "error": 6, "goal": 5, "task": 4,
    "proper": 6, "number": 3, "personal": 3, "outcome": 3, "question": 2, "plain": 1,
    "listing": 0,
}  # fmt: skip
ROLE_BONUS: dict[Role | None, int] = {
    "user": 2, "assistant": 1, "system": 1, "call": -3, "tool": 1, None: 1,
}  # fmt: skip
IDENTIFYING: frozenset[Kind] = frozenset(
    {"identifier", "contact", "path", "date", "quantity", "name"}
)
HEADERS: dict[Locale, dict[Section, str]] = {
    "en": {
        "goals": "Goals:",
        "decisions": "Decisions:",
        "facts": "Facts:",
        "tasks": "Open tasks:",
    },
    "zh": {
        "goals": "目标：",
        "decisions": "决定：",
        "facts": "事实：",
        "tasks": "待办：",
    },
}
SPEAKERS: dict[Locale, dict[Role, str]] = {
    "en": {
        "user": "user",
        "assistant": "assistant",
        "system": "system",
        "call": "call",
        "tool": "tool",
    },
    "zh": {
        "user": "用户",
        "assistant": "助手",
        "system": "系统",
        "call": "调用",
        "tool": "工具",
    },
}
COLONS: dict[Locale, str] = {"en": ": ", "zh": "："}

_MONTHS = (
    r"(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)"
)
_UNITS = (
    r"(?:kg|kilograms?|kilos?|g|grams?|mg|lbs?|pounds?|km|kilomet(?:re|er)s?|m²|sqm|"
    r"square met(?:re|er)s?|m|met(?:re|er)s?|cm|mm|mi|miles?|ft|feet|GB|gigabytes?|MB|"
    r"KB|TB|GiB|MiB|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs|hours?|days?|"
    r"weeks?|months?|years?|%|°C|°F|EUR|USD|GBP|JPY|CNY|RMB|euros?|dollars?|kWh|W|kW|"
    r"V|Hz|MHz|GHz|rpm|px|pt|requests|users|people|"
    r"欧元|美元|英镑|日元|人民币|元|块|公斤|千克|克|公里|千米|平方米|平米|米|厘米|毫米|"
    r"天|小时|分钟|秒|年|个月|周|岁|人|件|台|页|条|次|个|星)"
)
# Bounded quantifiers throughout: a megabyte of hostile text stays linear.
# Order matters: earlier patterns claim their text (a URL's path is no file path).
_SPAN_PATTERNS: tuple[tuple[Kind, str], ...] = (
    ("contact", r"https?://[^\s<>\"'`)\]}，。；]{1,300}"),
    ("contact", r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}"),
    ("path", r"(?<![\w/.])(?:~|\.{1,2})?/(?:[\w.@-]{1,80}/){0,20}[\w.@-]{1,80}"),
    ("path", r"\b[A-Za-z]:\\(?:[\w. -]{1,80}\\){0,20}[\w.-]{1,80}"),
    ("path", r"\b(?:[\w-]{1,80}/){1,20}[\w-]{1,80}\.[A-Za-z0-9]{1,6}\b"),
    (
        "path",
        r"\b[\w-]{1,80}\.(?:py|js|ts|json|ya?ml|toml|md|txt|csv|sql|sh|cfg|ini|log|"
        r"html|css|go|rs|java|cpp|rb|xml|pdf|docx?|xlsx?|png|jpe?g)\b",
    ),
    ("date", r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"),
    ("date", rf"\b\d{{1,2}} {_MONTHS}(?: \d{{4}})?\b"),
    ("date", rf"\b{_MONTHS} \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"),
    ("date", r"\d{4}年\d{1,2}月(?:\d{1,2}[日号])?|\d{1,2}月\d{1,2}[日号]"),
    ("date", r"\b\d{1,2}:\d{2}(?: ?(?:am|pm|AM|PM|UTC|GMT))?\b"),
    ("date", r"\b\d{1,2} ?(?:am|pm)\b"),
    ("identifier", r"#\d{3,20}\b"),
    ("identifier", r"\b[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\b"),
    ("identifier", r"\b[A-Z][A-Z0-9]{0,20}(?:[-_][A-Z0-9]{1,20}){1,6}\b"),
    (
        "identifier",
        r"\b(?=[A-Za-z0-9]{0,39}\d)(?=[A-Za-z0-9]{0,39}[A-Z])[A-Za-z0-9]{5,40}\b",
    ),
    ("identifier", r"\b(?=[0-9a-f]{0,39}\d)(?=[0-9a-f]{0,39}[a-f])[0-9a-f]{7,40}\b"),
    ("identifier", r"\b(?:HTTP|[Ee]rror|[Cc]ode|[Ss]tatus) ?[1-5]\d\d\b"),
    (
        "identifier",
        r"(?i:\b(?:order|ticket|invoice|booking|reservation|confirmation|reference|"
        r"account|tracking|case|flight|issue)(?: (?:number|no\.?|id|code))? ?[:#]? ?)"
        r"[A-Za-z]{0,4}\d[\w-]{1,30}",
    ),
    (
        "identifier",
        r"(?:订单|工单|单号|编号|发票|账号|航班|房间|座位|验证码|版本)(?:号码?)?"
        r"[ :：是为]{0,2}[A-Za-z0-9][\w-]{2,30}",
    ),
    ("identifier", r"(?<![\d.])\d{5,20}(?![\d.])"),
    ("identifier", r"\b[a-z][a-z0-9]{0,30}(?:_[a-z0-9]{1,30}){1,8}\b"),  # snake_case
    ("identifier", r"\b[a-z][a-z0-9]{1,30}(?:[A-Z][a-z0-9]{1,30}){1,6}\b"),  # camelCase
    ("quantity", r"[$€£¥] ?\d[\d,]{0,20}(?:\.\d{1,6})?"),
    ("quantity", rf"\d[\d,]{{0,20}}(?:\.\d{{1,6}})? ?{_UNITS}(?![A-Za-z])"),
    ("number", r"\d[\d,.]{0,20}"),
)
_SPANS = tuple((kind, re.compile(pattern)) for kind, pattern in _SPAN_PATTERNS)
_NAME = re.compile(r"\b[A-Z][a-z]{1,20}(?:[ -][A-Z][a-z]{1,20}){1,3}\b")
_PROPER = re.compile(r"(?<=[a-z0-9,;:] )[A-Z][a-z]{2,20}\b")
_SURNAMES = (
    "欧阳|司马|诸葛|上官|东方|皇甫|令狐|慕容|公孙|端木|西门|南宫|尉迟|长孙|宇文|"
    "[王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋"
    "蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷"
    "侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤葛柏俞施倪齐季伍裴温樊兰殷易常乔康祝"
    "庞闵华单洪纪舒喻荣鲍翟祁包左岳项褚穆霍詹]"
)
_NOT_GIVEN = "的了是在吗呢吧啊也都就和与给个们些"
# A Chinese name after a cue word, ending where the sentence pauses or a verb follows.
_CJK_NAME = re.compile(
    rf"(?:叫|是|给|找|问|由|请|和|跟|联系|告诉|让|名字(?:是|叫))"
    rf"((?:{_SURNAMES})[^\W\d_{_NOT_GIVEN}a-zA-Z]{{1,2}})"
    r"(?=[，。！？、；,.!?;\s]|$|负责|来|说|会|审批)"
)
_CJK_PLACE = re.compile(
    r"(?<![正现存实所])(?:在|到|去|来自|位于|住在|搬到|飞往|前往)"
    r"([\u4e00-\u9fff]{2,4}?)"
    r"(?=[，。！？、；]|举办|举行|工作|生活|开会|见面|出差|旅行|旅游|的办公室)"
)
_NOT_NAMES = frozenset(
    """I The This That These Those It We You They He She My Our Your Not Just Sorry
    Please Thanks Hi Hello Hey Yes No Ok Okay And But So If When Then Here There What
    Which Who How Why Let Also Great Sure Good Noted""".split()  # noqa: SIM905
)


def _cue(english: str, chinese: str) -> re.Pattern[str]:
    """Return a pattern of whole English phrases or Chinese ones, ``|``-separated."""
    return re.compile(rf"\b(?:{english})\b|{chinese}" if english else chinese)


# Cues are matched in lower case, with typographic apostrophes made plain.
_CUES: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    (
        "decision",
        _cue(
            r"(?:we|i)(?:'ve| have)? decided|decided|decision|let's (?:go with|use|"
            r"pick|choose|book)|go(?:ing)? with|(?:we|i)'ll (?:use|go with|"
            r"take|book|pick)|chose|chosen|settled on|agreed|opt(?:ed)? for|confirmed|"
            r"booked",
            "决定|就用|就选|选定|选了|确定|定了|同意|采用|敲定|确认|订好",
        ),
    ),
    (
        "constraint",
        _cue(
            r"must|mustn't|never|always|at (?:most|least)|"
            r"no (?:more|later|earlier|less) than|don't|do not|shouldn't|should not|"
            r"only|required|requires|mandatory|"
            r"avoid|allergic|deadline|limit|maximum|minimum|budget|strictly",
            "不要|必须|不能|不可|务必|一定要|至少|最多|不超过|不少于|只能|禁止|千万别|别忘"
            "|过敏|截止|期限|预算|上限",
        ),
    ),
    (
        "error",
        _cue(
            r"error|errors|errored|fail|fails|failed|failing|failure|exception|"
            r"traceback|crash|crashed|crashes|timeout|timed out|refused|denied|"
            r"not found|broken|bug|warning|invalid|unable|can't|cannot|doesn't work|"
            r"does not work",
            "错误|失败|异常|报错|崩溃|超时|无法|找不到|故障|出错|警告|无效",
        ),
    ),
    (
        "goal",
        _cue(
            r"i (?:want|need|would like|am trying|am looking for|plan|hope|wish)|"
            r"i'd like|i'm (?:trying|looking for|planning)|help me|my goal|"
            r"(?:we|i) (?:need|want) to",
            "我想|我要|我需要|我打算|我希望|我准备|帮我|目标",
        ),
    ),
    (
        "question",
        _cue(
            r"what|which|where|when|why|how|who|can you|could you|would you|please",
            r"[?？]\W*$|吗|呢|什么|哪|请你|请帮|能不能|能否|如何|怎么|怎样",
        ),
    ),
    (
        "task",
        _cue(
            r"todo|to-do|next steps?|remaining|still (?:need|have) to|need to|have to|"
            r"follow[- ]up|pending|not (?:yet|done)|(?:i|we)'ll|(?:i|we) will|"
            r"tomorrow|later|remind",
            "待办|下一步|接下来|还需要|还要|之后|稍后|明天|提醒|未完成",
        ),
    ),
    (
        "personal",
        _cue(
            r"(?:i|we) (?:prefer|like|love|hate|dislike|enjoy|live|work|am|have|own|"
            r"use)|i'm|i've|my|our|favou?rite",
            "我(?:叫|是|喜欢|偏好|讨厌|住|在|有|的|们的)|名字|偏好|喜欢",
        ),
    ),
)
_CHATTER = _cue(
    r"hi|hello|hey|thanks?|thank you(?: (?:so|very) much)?|thx|ok|okay|cool|great|"
    r"nice|awesome|perfect|sure|of course|yes|yeah|yep|no problem|you're welcome|"
    r"got it|noted|sounds good|good|alright|all right|bye|goodbye|see you|cheers|wow|"
    r"haha|lol|no|nope|right|indeed|absolutely|(?:glad|happy) to help|anything else|"
    r"let me (?:check|see|look)|one moment|here you go|i see|i understand|"
    r"makes sense|good (?:morning|night|evening)|(?:that|this|it) (?:works|helps)|"
    r"will do|how are you|how's it going|there|a lot|again|so|very|much|everyone|"
    r"all|then|now|too|oh|ah|well|just|really|you|guys|folks",
    "你好吗?|您好|谢谢你?|多谢|好的|好吧|嗯+|行|可以|没问题|不客气|明白了?|知道了|收到"
    "|太好了|太棒了|再见|哈哈+|是的|当然",
)
_SENTENCE_END = re.compile(r"(?<=[^\d\s][.!?])\s+|(?<=[\u3002\uff01\uff1f])")
_LIST_ITEM = re.compile(r"(?:[-*\u2022]|\d{1,3}[.)])\s|\d{1,3}、")
_WORDY = re.compile(r"[^\W_]")
_CONTENT = re.compile(r"[a-z][a-z']+|[\u4e00-\u9fff]")
_VALUE = re.compile(r"\d[\d,.:/-]{0,30}\d|\d")
_STOP = frozenset(
    """a an the is are was were be been am to of in on at for and or but it its this
    that with as by my our your i we you me us do does did have has had so now
    actually instead changed change rather no longer anymore 的 了 是 我 你 们 在
    把 也 就 都 其 实 改 成 为 不 再""".split()  # noqa: SIM905
)
_CORRECTION = re.compile(
    r"\b(?:actually|instead|changed?|rather|correction|no longer|anymore|update)\b"
    r"|其实|改成|改为|改到|更正|不再|换成"
)


@attrs.frozen
class Salience:
    """What a fragment holds: its ``score``, its kinds and its identifiers."""

    score: int
    kinds: frozenset[Kind]
    identifiers: tuple[tuple[Kind, str], ...]


@attrs.frozen
class Fact:
    """One kept fragment, who said it, and where it goes."""

    text: str
    role: Role | None
    tool: str
    section: Section
    salience: Salience
    words: frozenset[str] = attrs.field(eq=False)  # content words, for supersession
    measures: tuple[str, ...] = attrs.field(eq=False)  # its quantities and dates
    numbers: tuple[str, ...] = attrs.field(eq=False)  # its other numbers


def utf8_bytes(text: str) -> int:
    """Return the UTF-8 length: never less than the token count, so a safe default."""
    return len(text.encode("utf-8"))


def _score(kinds: frozenset[Kind], role: Role | None) -> int:
    if not kinds:
        return 0  # chatter
    weights = sorted((WEIGHTS[k] for k in kinds if k != "listing"), reverse=True)
    extra = min(sum(1 for weight in weights[1:] if weight >= 3), 3)
    if "listing" in kinds:
        return 1  # one hit of a tool's many: detail, whatever it holds
    return max(weights[0] + extra + ROLE_BONUS[role], 1)


def _names(text: str) -> Iterator[tuple[Kind, str]]:
    for match in _NAME.finditer(text):
        words = match.group().split(" ")
        while words and words[0] in _NOT_NAMES:
            words.pop(0)
        if len(words) >= 2:
            yield "name", " ".join(words)
        elif words:
            yield "proper", words[0]
    for match in _PROPER.finditer(text):
        if match.group() not in _NOT_NAMES:
            yield "proper", match.group()
    for match in _CJK_NAME.finditer(text):
        yield "name", match.group(1)
    for match in _CJK_PLACE.finditer(text):
        yield "proper", match.group(1)


def salience_of(text: str, role: Role | None = "user") -> Salience:
    """Return the salience of one fragment said by ``role``.

    >>> salience_of("Thanks!").score, salience_of("My order is ORD-2041.").score
    (0, 11)
    """
    claimed: list[tuple[int, int]] = []
    found: dict[str, tuple[Kind, str]] = {}
    for kind, pattern in _SPANS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < b and a < end for a, b in claimed):
                continue
            claimed.append((start, end))
            found.setdefault(match.group().casefold(), (kind, match.group()))
    for kind, name in _names(text):
        found.setdefault(name.casefold(), (kind, name))
    kinds: set[Kind] = {kind for kind, _ in found.values()}
    lowered = text.lower().replace("\u2019", "'")
    if kinds or _WORDY.search(_CHATTER.sub(" ", lowered)):  # not chatter alone
        kinds.update(kind for kind, cue in _CUES if cue.search(lowered))
        if role not in ("user", None):
            kinds -= {"goal", "question"}  # only the user sets goals
        kinds.add("outcome" if role == "tool" else "plain")
        if role == "tool" and _LIST_ITEM.match(text):
            kinds.add("listing")  # one hit of many: no outcome of its own
        if len(kinds) > 1:
            kinds -= {"outcome", "plain"}  # the fallback kinds, when nothing else
        if kinds == {"listing"}:
            kinds.add("outcome")
    identifiers = tuple(
        (kind, value) for kind, value in found.values() if kind in IDENTIFYING
    )
    frozen = frozenset(kinds)
    return Salience(_score(frozen, role), frozen, identifiers)


def _section_of(salience: Salience) -> Section:
    if "decision" in salience.kinds:
        return "decisions"
    if salience.kinds & {"goal", "question"}:
        return "goals"
    if "task" in salience.kinds:
        return "tasks"
    return "facts"


def _fact(text: str, role: Role | None, tool: str, section: Section | None) -> Fact:
    """Return the fact of one fragment; its salience is read from the fragment alone."""
    salience = salience_of(text, role)
    lowered = text.lower()
    words = frozenset(_CONTENT.findall(_CORRECTION.sub(" ", lowered))) - _STOP
    measures = tuple(
        value for kind, value in salience.identifiers if kind in ("quantity", "date")
    )
    rest = text
    for measure in measures:
        rest = rest.replace(measure, " ")
    return Fact(
        text,
        role,
        tool,
        section or _section_of(salience),
        salience,
        words,
        measures,
        tuple(_VALUE.findall(rest)),
    )


_FENCE_ONLY = re.compile(
    rf"^{NEUTRAL_OPEN}\s*/?\s*(?:{'|'.join(FENCE_TAGS)})\s*>$", re.IGNORECASE
)


def _fragment(sentence: str) -> str:
    """Return ``sentence`` as one line of at most LINE_CHARS, around what matters.

    A longer sentence is cut to a window that starts shortly before its first match
    of the weightiest kind it holds.
    """
    text = " ".join(sentence.split())
    if _FENCE_ONLY.match(text):  # a disarmed fence tag quoted in a message: no fact
        return ""
    if len(text) <= LINE_CHARS:
        return text
    found = ((WEIGHTS[kind], pattern.search(text)) for kind, pattern in _SPANS)
    spans = [(-weight, match.start()) for weight, match in found if match]
    at = min(spans, default=(0, 0))[1]
    start = max(at - 30, 0)
    if start == 0:
        return cut_chars(text, LINE_CHARS)
    space = text.find(" ", start, at)
    start = space + 1 if space >= 0 else start
    return "\u2026" + cut_chars(text[start:], LINE_CHARS - 1)


def _sentences(body: str) -> list[str]:
    return [
        piece
        for line in body.splitlines()
        for piece in _SENTENCE_END.split(line)
        if piece.strip()
    ]


# -- reading the request -------------------------------------------------------------


def _label_pattern() -> re.Pattern[str]:
    speakers = "|".join(
        re.escape(label)
        for labels in LABELS.values()
        for label in (labels.user, labels.assistant, labels.system)
    )
    calls = "|".join(re.escape(labels.call) for labels in LABELS.values())
    results = "|".join(re.escape(labels.tool_result) for labels in LABELS.values())
    return re.compile(
        rf"^(?:(?P<speaker>{speakers}): ?|(?P<call>{calls}) (?P<name>[^\s(]{{0,80}})\("
        rf"|(?P<result>{results})\((?P<tool>[^\n]{{0,80}}?)\): ?)"
    )


_ENTRY = _label_pattern()
_ROLES: dict[str, Role] = {}
for _labels in LABELS.values():
    _ROLES.update(
        {_labels.user: "user", _labels.assistant: "assistant", _labels.system: "system"}
    )


def _sections_of(request: str) -> tuple[str, str]:
    """Return the previous summary and the conversation of a request.

    The first ``<previous_summary>`` opening the request and the last
    ``</conversation>`` close them: tags quoted inside messages stay message text.
    """
    previous, rest = "", request
    opening = f"<{PREVIOUS_TAG}>\n"
    closing = f"\n</{PREVIOUS_TAG}>\n\n<{CONVERSATION_TAG}>\n"
    if request.startswith(opening) and closing in request:
        previous, _, rest = request[len(opening) :].partition(closing)
        rest = f"<{CONVERSATION_TAG}>\n" + rest
    opening, closing = f"<{CONVERSATION_TAG}>\n", f"\n</{CONVERSATION_TAG}>"
    if not rest.startswith(opening) or closing not in rest:
        return previous, rest  # not our request format: extract from all of it
    body = rest[len(opening) :]
    state = f"{closing}\n\n<{TASK_STATE_TAG}>\n"
    end = body.rfind(state) if state in body else body.rfind(closing)
    return previous, body[:end]


def _entries(
    conversation: str,
) -> Iterator[tuple[Role | None, str, str, Locale | None]]:
    """Yield each transcript entry: role, tool name, body, and its labels' locale."""
    role: Role | None = None
    locale: Locale | None = None
    tool, lines = "", list[str]()
    for raw in conversation.splitlines():
        match = _ENTRY.match(raw)
        if match is None:
            lines.append(raw)
            continue
        if lines:
            yield role, tool, "\n".join(lines), locale
        label = match.group("speaker") or match.group("call") or match.group("result")
        locale = "en" if label.isascii() else "zh"
        body = raw[match.end() :]
        if match.group("speaker"):
            role, tool = _ROLES[label], ""
        elif match.group("call"):
            role, tool = "call", match.group("name")
            body = body[:-1] if body.endswith(")") else body
        else:
            role, tool = "tool", match.group("tool")
        lines = [body]
    if lines:
        yield role, tool, "\n".join(lines), locale


def _tool_name(name: str) -> str:
    return re.sub(r"[^\w.-]", "", name)[:40] or "?"


def _new_facts(conversation: str) -> tuple[list[Fact], dict[Locale, int]]:
    """Return the facts of the transcript, and how many entries each locale labels."""
    facts: list[Fact] = []
    labelled: dict[Locale, int] = {"en": 0, "zh": 0}
    for role, tool, body, locale in _entries(conversation[:SCAN_CHARS]):
        if locale is not None:
            labelled[locale] += 1
        candidates: list[Fact] = []
        body = body[:ENTRY_CHARS]
        sentences = _sentences(body)
        if role == "tool":  # a result's first line is its outcome; the rest, detail
            sentences = [next((x for x in body.splitlines() if x.strip()), "")]
        for number, sentence in enumerate(sentences):
            text = _fragment(sentence)
            if not text:
                continue
            fact = _fact(text, role, _tool_name(tool) if tool else "", None)
            if number == 0 or fact.salience.kinds - {"plain", "outcome"}:
                candidates.append(fact)  # the first sentence, then telling ones
        best = sorted(
            range(len(candidates)), key=lambda i: (-candidates[i].salience.score, i)
        )[:MAX_FACTS_PER_ENTRY]
        facts.extend(candidates[i] for i in sorted(best))
    return facts, labelled


_HEADER_SECTIONS = {
    header: section
    for headers in HEADERS.values()
    for section, header in headers.items()
}
_SUFFIX_LINES = frozenset(suffix.strip() for suffix in TRUNCATION_SUFFIXES.values())
_SPEAKER = re.compile(
    r"^(?:(?P<role>user|assistant|system|User|Assistant|System|用户|助手|系统)"
    r"|(?P<kind>call|tool|调用|工具) (?P<tool>[\w.-]{1,40}))(?:: |：)"
)
_PARSED_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "call": "call",
    "tool": "tool",
    **{name.lower(): role for name, role in _ROLES.items()},
    "调用": "call",
    "工具": "tool",
}


def _previous_facts(previous: str) -> tuple[list[Fact], Locale | None]:
    """Return the facts of a previous summary (ours or not), and its headers' locale."""
    body = pinned_section(pinned_section(previous, "en")[0], "zh")[0]  # the engine's
    facts: list[Fact] = []
    section: Section = "facts"
    locale: Locale | None = None
    for raw in body[:SCAN_CHARS].splitlines():
        line = raw.strip()
        if not line or line in _SUFFIX_LINES:
            continue
        if line in _HEADER_SECTIONS:
            section = _HEADER_SECTIONS[line]
            locale = "en" if line.isascii() else "zh"
            continue
        if line[:2] in ("- ", "* ", "\u2022 "):
            text = line[2:].strip()
            match = _SPEAKER.match(text)
            role: Role | None = None
            tool = ""
            if match:
                role = _PARSED_ROLES[
                    (match.group("role") or match.group("kind")).lower()
                ]
                tool = match.group("tool") or ""
                text = text[match.end() :]
            facts.append(_fact(_fragment(text), role, tool, section))
            continue
        facts.extend(  # a foreign summary: its sentences
            _fact(_fragment(sentence), None, "", section)
            for sentence in _sentences(line)
        )
    return [fact for fact in facts if fact.text], locale


# -- merging and fitting -------------------------------------------------------------


def _key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".,;:!?\u3002\uff01\uff1f\u2026")


def _supersedes(new: Fact, old: Fact) -> bool:
    """Tell whether ``new`` restates ``old`` with one quantity or date changed.

    Other numbers must match: "Question 2" after "Question 1" is another question.
    """
    if new.role != old.role or not new.words or new.numbers != old.numbers:
        return False
    if len(new.measures) != len(old.measures):
        return False
    if sum(a != b for a, b in zip(new.measures, old.measures, strict=True)) != 1:
        return False
    subjects = {v for k, v in new.salience.identifiers if k in ("identifier", "name")}
    if subjects != {
        v for k, v in old.salience.identifiers if k in ("identifier", "name")
    }:
        return False
    overlap = len(new.words & old.words) / len(new.words | old.words)
    return overlap >= (0.5 if _CORRECTION.search(new.text.lower()) else 0.75)


def merged_facts(older: Sequence[Fact], newer: Sequence[Fact]) -> list[Fact]:
    """Return ``older`` then ``newer``, each fact once (module docstring: merge)."""
    facts: list[Fact] = []
    keys: list[str] = []
    for fact in [*older, *newer]:
        key = _key(fact.text)
        if not key or any(key in kept for kept in keys):
            continue
        grown = [i for i, kept in enumerate(keys) if kept in key]
        if grown:  # it says more than kept facts: it takes the first one's place
            facts[grown[0]], keys[grown[0]] = fact, key
            for index in reversed(grown[1:]):
                del facts[index], keys[index]
            continue
        stale = [i for i, kept in enumerate(facts) if _supersedes(fact, kept)]
        for index in reversed(stale):
            del facts[index], keys[index]
        facts.append(fact)
        keys.append(key)
    return facts


def _effective_scores(facts: Sequence[Fact]) -> list[int]:
    """Return each fact's score, identifiers credited only to their first carrier."""
    seen: set[str] = set()
    scores = []
    for fact in facts:
        own = {value.casefold() for _, value in fact.salience.identifiers}
        if own and own <= seen:
            kinds = fact.salience.kinds - IDENTIFYING or frozenset({"plain"})
            scores.append(_score(kinds, fact.role))
        else:
            scores.append(fact.salience.score)
        seen |= own
    return scores


def _line(fact: Fact, locale: Locale) -> str:
    if fact.role is None:
        return f"- {fact.text}"
    speaker = SPEAKERS[locale][fact.role]
    if fact.role in ("call", "tool"):
        speaker = f"{speaker} {fact.tool or '?'}"
    return f"- {speaker}{COLONS[locale]}{fact.text}"


def _render(facts: Sequence[Fact], alive: Sequence[bool], locale: Locale) -> str:
    blocks = []
    for section, header in HEADERS[locale].items():
        lines = [
            _line(fact, locale)
            for fact, keep in zip(facts, alive, strict=True)
            if keep and fact.section == section
        ]
        if lines:
            blocks.append("\n".join([header, *lines]))
    return "\n".join(blocks)


def fitted_text(
    facts: Sequence[Fact],
    locale: Locale,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> str:
    """Return the sections of ``facts``, dropping the least salient over ``max_tokens``.

    Among equal scores a fact below ``HIGH_SCORE`` goes oldest first, a salient one
    newest first (module docstring: budget). The result counts at most ``max_tokens``.
    """
    if max_tokens <= 0 or not facts:
        return ""
    scores = _effective_scores(facts)
    order = sorted(
        range(len(facts)),
        key=lambda i: (scores[i], i if scores[i] < HIGH_SCORE else -i),
    )
    costs = [count_tokens(_line(fact, locale) + "\n") for fact in facts]
    header_costs = {s: count_tokens(h + "\n") for s, h in HEADERS[locale].items()}
    in_section = dict.fromkeys(header_costs, 0)
    for fact in facts:
        in_section[fact.section] += 1
    total = sum(costs) + sum(header_costs[s] for s, n in in_section.items() if n)
    alive = [True] * len(facts)
    dropped = 0

    def drop_next() -> None:
        nonlocal total, dropped
        index = order[dropped]
        dropped += 1
        alive[index] = False
        section = facts[index].section
        in_section[section] -= 1
        total -= costs[index] + (0 if in_section[section] else header_costs[section])

    while total > max_tokens and dropped < len(facts):
        drop_next()
    salient = any(scores[i] > 0 for i in order[dropped:])
    while dropped < len(facts) - 1 and (  # the last fact stays while it fits
        (salient and scores[order[dropped]] == 0)  # chatter, when anything else is left
        or (total > max_tokens * LOW_SHARE and scores[order[dropped]] < HIGH_SCORE)
    ):
        drop_next()
    text = _render(facts, alive, locale)
    while text and count_tokens(text) > max_tokens:  # joins can merge tokens
        drop_next()
        text = _render(facts, alive, locale)
    return text or _squeezed(_line(facts[order[-1]], locale), max_tokens, count_tokens)


def _squeezed(line: str, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """Return the longest cut of ``line`` within ``max_tokens``, or ``""``."""
    low, high = 0, len(line)
    while low < high:  # the longest prefix length whose cut fits
        middle = (low + high + 1) // 2
        if count_tokens(cut_chars(line, middle)) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    text = cut_chars(line, low)
    return text if len(text) > 3 and count_tokens(text) <= max_tokens else ""


_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


def _locale_of(
    labelled: dict[Locale, int], previous: Locale | None, system: str
) -> Locale:
    """Return the session's locale: its transcript labels, then its summary, prompt."""
    if labelled["zh"] != labelled["en"]:
        return "zh" if labelled["zh"] > labelled["en"] else "en"
    if previous is not None:
        return previous
    head = system[:4000]
    return "zh" if len(_CJK.findall(head)) * 4 > len(_LATIN.findall(head)) else "en"


class ExtractiveSummarizer:
    r"""A summarizer that keeps the most salient fragments, within ``max_tokens``.

    Args:
        count_tokens: the counter ``max_tokens`` is measured with; the default, UTF-8
            length, is an upper bound of every tokenizer's count.
        context_tokens: the input size it reports as its context length.

    >>> summarizer = ExtractiveSummarizer()
    >>> text = "<conversation>\\nUser: I live in Oslo. Hi!\\n</conversation>"
    >>> summarizer.complete([Message("user", text)], max_tokens=100)
    'Facts:\n- user: I live in Oslo.'
    """

    label = LABEL

    def __init__(
        self,
        count_tokens: Callable[[str], int] = utf8_bytes,
        *,
        context_tokens: int = 16384,
    ) -> None:
        self._count_tokens = count_tokens
        self._context_tokens = context_tokens

    def context_length(self, model: str | None = None) -> int | None:
        return self._context_tokens

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> str:
        request = next((m.text for m in reversed(messages) if m.role == "user"), "")
        system = next((m.text for m in messages if m.role == "system"), "")
        previous, conversation = _sections_of(normalize_text(request))
        older, summary_locale = _previous_facts(previous)
        newer, labelled = _new_facts(conversation)
        locale = _locale_of(labelled, summary_locale, normalize_text(system))
        facts = merged_facts(older, newer)
        return fitted_text(facts, locale, max_tokens, self._count_tokens)
