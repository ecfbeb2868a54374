"""How salient a fragment is: the kinds it holds and its score (extractive summarizer).

A fragment scores its strongest kind (``WEIGHTS``), plus one per further kind (at most
3), plus the speaker's bonus (``ROLE_BONUS``); chatter alone scores 0. See
``extractive`` for the whole summarizer.

About 475 lines: the patterns of every kind stay together, with what lets a search
skip the ones a text cannot match (``spans_for``, ``Cue``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Literal

import attrs

from memory_summary.domain.lexicon import MONTHS as _MONTHS
from memory_summary.domain.lexicon import NUMBER_WORDS as _NUMBER_WORDS
from memory_summary.domain.lexicon import UNITS as _UNITS

Kind = Literal[
    "identifier", "contact", "path", "date", "quantity", "number", "name", "proper",
    "decision", "constraint", "error", "goal", "task", "personal", "outcome",
    "question", "plain", "listing",
]  # fmt: skip
Role = Literal["user", "assistant", "system", "call", "tool"]

WEIGHTS: dict[Kind, int] = {
    "identifier": 8, "contact": 8, "path": 8, "date": 7, "decision": 7,
    "constraint": 7, "name": 7, "quantity": 6, "error": 6, "goal": 5, "task": 4,
    "proper": 6, "number": 3, "personal": 5, "outcome": 3, "question": 2, "plain": 1,
    "listing": 0,
}  # fmt: skip
ROLE_BONUS: dict[Role | None, int] = {
    "user": 2, "assistant": 1, "system": 1, "call": -3, "tool": 1, None: 1,
}  # fmt: skip
IDENTIFYING: frozenset[Kind] = frozenset(
    {"identifier", "contact", "path", "date", "quantity", "name"}
)


def _spelled_number() -> str:
    """Return a pattern of one of ``NUMBER_WORDS``, its first letter in either case.

    It opens with the class of the first letters, so a search skips in C the
    characters no number word starts with (a case-blind alternation, tried at every
    position, took about six times as long); the rest of each word follows its
    first letter (``(?<=[Tt])(?:wo|hree|…)``).
    """
    rests: dict[str, list[str]] = {}
    for word in _NUMBER_WORDS:
        rests.setdefault(word[0], []).append(word[1:])
    firsts = "".join(f"{c.upper()}{c}" for c in rests)
    after = "|".join(
        f"(?<=[{c.upper()}{c}])(?:{'|'.join(words)})" for c, words in rests.items()
    )
    ones = "|".join(_NUMBER_WORDS[:8])  # two to nine
    return rf"[{firsts}](?<![\w][{firsts}])(?:{after})(?:-(?:one|{ones}))?"


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
    ("identifier", r"(?<![\w#])\d{3,12}#[A-Za-z0-9]{0,4}"),  # a door code: 4821#B
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
    (  # "three years", "Twenty-five minutes"
        "quantity",
        rf"{_spelled_number()} {_UNITS}(?![A-Za-z])",
    ),
    ("number", r"\d[\d,.]{0,20}"),
)
SPANS = tuple((kind, re.compile(pattern)) for kind, pattern in _SPAN_PATTERNS)
# What a text must hold for each of ``_SPAN_PATTERNS`` to match in it: one of these
# marks (a character, ``digit``: a decimal digit as ``\d`` reads it, ``cjk``: a
# character outside ASCII); none for anything. Most fragments hold no digit: their
# search skips more than half the patterns.
_D, _NO = ("digit",), ()
_SPAN_NEEDS: tuple[tuple[str, ...], ...] = (
    ("/",), ("@",), ("/",), ("\\",), ("/",), (".",),  # contacts and paths
    _D, _D, _D, ("cjk",), _D, _D,  # dates
    ("#",), _D, ("-",), ("-", "_"), _D, _D, _D, _D, ("cjk",), _D, ("_",), _NO,  # ids
    _D, _D, _NO, _D,  # quantities (one in words) and numbers
)  # fmt: skip
if len(_SPAN_NEEDS) != len(_SPAN_PATTERNS):  # pragma: no cover: a pattern was added
    raise AssertionError("_SPAN_NEEDS must name what each span pattern needs")
_DIGIT = re.compile(r"\d")


def spans_for(text: str) -> tuple[tuple[Kind, re.Pattern[str]], ...]:
    """Return the ``SPANS`` that can match in ``text``, in order (``_SPAN_NEEDS``)."""
    return _spans_holding(
        _DIGIT.search(text) is not None,
        not text.isascii(),
        *(mark in text for mark in _MARKS),
    )


_MARKS = ("/", "@", "\\", ".", "-", "_", "#")


@functools.cache
def _spans_holding(
    digit: bool, cjk: bool, *marks: bool
) -> tuple[tuple[Kind, re.Pattern[str]], ...]:
    held = {mark for mark, held in zip(_MARKS, marks, strict=True) if held}
    held |= {"digit"} if digit else set()
    held |= {"cjk"} if cjk else set()
    return tuple(
        span
        for span, needs in zip(SPANS, _SPAN_NEEDS, strict=True)
        if not needs or held.intersection(needs)
    )


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
    r"(?=[，。！？、；]|$|举办|举行|工作|生活|开会|见面|出差|旅行|旅游|的办公室)"
)
_TITLE = re.compile(
    r"[\"\u201c\u300c\u300a]([A-Z0-9\u4e00-\u9fff][^\"\u201d\u300d\u300b\n]{1,60})[\"\u201d\u300d\u300b]"
)
_NOT_NAMES = frozenset(
    """I The This That These Those It We You They He She My Our Your Not Just Sorry
    Please Thanks Hi Hello Hey Yes No Ok Okay And But So If When Then Here There What
    Which Who How Why Let Also Great Sure Good Noted""".split()  # noqa: SIM905
)


def _cue(english: str, chinese: str) -> Cue:
    """Return a pattern of whole English phrases or Chinese ones, ``|``-separated."""
    return Cue(
        re.compile(rf"\b(?:{english})\b|{chinese}" if english else chinese),
        re.compile(
            "|".join([rf"\b(?:{english})\b"] * bool(english) + _ascii_branches(chinese))
        ),
    )


@attrs.frozen
class Cue:
    """A cue's pattern, and the same without the branches ASCII text cannot match.

    Each Chinese branch costs a test at every place of a text; most texts are ASCII.
    """

    pattern: re.Pattern[str]
    ascii: re.Pattern[str]


def _ascii_branches(pattern: str) -> list[str]:
    """Return the top-level branches of ``pattern`` that ASCII text can match.

    A branch that opens with a character outside ASCII (not made optional) cannot.
    """
    branches, depth, start = [], 0, 0
    for at, char in enumerate(pattern):
        if char in "([":
            depth += 1
        elif char in ")]" and pattern[at - 1] != "\\":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:at])
            start = at + 1
    branches.append(pattern[start:])
    return [
        branch
        for branch in branches
        if branch[:1].isascii() or branch[1:2] in ("?", "*", "{")
    ]


_SPECIFIC: frozenset[Kind] = IDENTIFYING | {"identifier", "proper", "number"}
_FIRST_PERSON = re.compile(r"\b(?:i|we|my|our|me|us|i'm|i've|i'll|we'll)\b")
# Advice and encouragement to the other person, or a guess about them: no rule.
_ADVICE = re.compile(
    r"\byou(?:r|rs|rself|'re|'ll|'ve)?\b|^(?:don't|do not|never|keep|remember|stay|"
    r"believe|have faith|enjoy|take)\b|\bmust(?:'ve| have)?(?: been| be)?\b"
)
# What may come before a compacted fact's verb: "yesterday, got …", "guess what - …".
_WHEN = (
    r"(?:yesterday|today|tonight|recently|lately|finally|last \w+|this \w+|"
    r"next \w+|(?:a few|few|two|three) \w+ ago|in (?:the )?meantime|guess what|also|"
    r"so|and|but|then|oh|well|actually|anyway|just)"
)
# Words that make a rule without a number or a name ("must", "deadline"); "don't",
# "never", "only" and "always" need one ("never deploy on Fridays").
_RULE = re.compile(
    r"\b(?:must|mustn't|required|requires|mandatory|deadline|budget|allergic|"
    r"limit|maximum|minimum|strictly|forbidden|at (?:most|least)|no (?:more|later|"
    r"earlier|less) than)\b"
)
# What a person did, has or plans; a compacted fact opens with it ("went to …").
_DOING = (
    r"(?:prefer|like|love|hate|dislike|enjoy|live|work|am|have|own|use|\w{2,}ed|"
    r"went|got|took|made|saw|met|began|bought|found|won|lost|ran|read|wrote|gave|"
    r"did|left|grew|drew|flew|sang|became|taught|built|sold|kept|brought|caught|"
    r"felt|heard|spent|paid|rode|swam|broke|chose|fell|wore|do|go|play|plan|want|"
    r"volunteer|teach|study|collect|paint|write|run|had|been)"
)
# Cues are matched in lower case, with typographic apostrophes made plain.
_CUES: tuple[tuple[Kind, Cue], ...] = (
    (
        "decision",
        _cue(
            r"(?<!you )(?:decided|chose|chosen|settled on|agreed|opt(?:ed)? for|"
            r"confirmed|booked)|let's (?:go with|use|pick|choose|book)|go(?:ing)? with|"
            r"(?:we|i)'ll (?:use|go with|take|book|pick)",
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
            r"not found|broken|bug|warning|invalid|unable|can't(?! wait)|cannot|"
            r"doesn't work|"
            r"does not work",
            "错误|失败|异常|报错|崩溃|超时|无法|找不到|故障|出错|警告|无效",
        ),
    ),
    (
        "goal",
        _cue(
            r"i (?:want|need|would like|am trying|am looking for|plan|hope|wish)|"
            r"i'd like|i'm (?:trying|looking for|planning)|help me|my goal|"
            r"^(?:want|need|trying|looking for|planning|hoping) to|"
            r"(?:we|i) (?:need|want) to",
            "我想|我要|我需要|我打算|我希望|我准备|帮我|目标",
        ),
    ),
    (
        "question",
        _cue(
            r"^(?:what|which|where|why|how|who)|can you|could you|would you|please",
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
            rf"(?:i|we) (?:(?:just|also|finally|recently|already|even|still|"
            rf"really|have|had|'ve) )?{_DOING}|^(?:{_WHEN}[\s,:-]+)*{_DOING}|i'm|"
            r"i've|my|"
            r"favou?rite",
            "我(?:叫|是|喜欢|偏好|讨厌|住|在|有|的|们的)|我(?<=^我)(?![^。！]*[吗？?])|名字|偏好|喜欢",
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
# What happened to whoever speaks: a past action of "I" or "we", or one a compacted
# fact opens with ("went camping with the kids"). Among facts of equal rank it is
# kept before a feeling, a wish or a view ("fitting.fitted_text").
_EVENT = re.compile(
    r"(?:\b(?:i|we)(?: \w+)? |^)(?:went|took|got|made|bought|saw|met|found|won|"
    r"joined|started|visited|tried|signed|finished|applied|attended|adopted|lost|"
    r"built|launched|painted|ran)\b",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[^\d\s][.!?])\s+|(?<=[\u3002\uff01\uff1f])")
LIST_ITEM = re.compile(r"(?:[-*\u2022]|\d{1,3}[.)])\s|\d{1,3}、")
_WORDY = re.compile(r"[^\W_]")


@attrs.frozen
class Salience:
    """What a fragment holds: its ``score``, its kinds and its identifiers."""

    score: int
    kinds: frozenset[Kind]
    identifiers: tuple[tuple[Kind, str], ...]


def score(kinds: frozenset[Kind], role: Role | None) -> int:
    """Return the score of a fragment of ``kinds`` said by ``role`` (0: chatter).

    What a person says of themselves scores alike from either side of a chat: in a
    two-person conversation the assistant role is a person too.
    """
    if not kinds:
        return 0  # chatter
    weights = sorted((WEIGHTS[k] for k in kinds if k != "listing"), reverse=True)
    extra = min(sum(1 for weight in weights[1:] if weight >= 3), 3)
    if "listing" in kinds:
        return 1  # one hit of a tool's many: detail, whatever it holds
    bonus = ROLE_BONUS[role]
    if role == "assistant" and "personal" in kinds:
        bonus = ROLE_BONUS["user"]
    return max(weights[0] + extra + bonus, 1)


def is_event(text: str) -> bool:
    """Tell whether ``text`` tells a past action of its speaker (``_EVENT``).

    >>> is_event("Yesterday I joined a gym"), is_event("love how art heals")
    (True, False)
    """
    return _EVENT.search(text) is not None


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
    for match in _TITLE.finditer(text):
        yield "proper", match.group(1)  # a quoted title: "Dune", 「三体」
    for match in _CJK_NAME.finditer(text):
        yield "name", match.group(1)
    for match in _CJK_PLACE.finditer(text):
        yield "proper", match.group(1)


def salience_of(
    text: str, role: Role | None = "user", *, dialogue: bool = False
) -> Salience:
    """Return the salience of one fragment said by ``role``.

    ``dialogue``: the fragment is one person's line in a conversation between
    people (a dated transcript, a diary of sessions). Neither side sets goals
    there: a wish ("I want to help people") is a personal statement from the user
    role as it is from the assistant role, not a goal given to an assistant.

    >>> salience_of("Thanks!").score, salience_of("My order is ORD-2041.").score
    (0, 11)
    """
    claimed: list[tuple[int, int]] = []
    found: dict[str, tuple[Kind, str]] = {}
    for kind, pattern in spans_for(text):
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
    plain = lowered.isascii()  # the cues' ASCII patterns (``Cue``)
    chatter = _CHATTER.ascii if plain else _CHATTER.pattern
    if kinds or _WORDY.search(chatter.sub(" ", lowered)):  # not chatter alone
        kinds.update(
            kind
            for kind, cue in _CUES
            if (cue.ascii if plain else cue.pattern).search(lowered)
        )
        if role not in ("user", None):
            kinds -= {"goal", "question"}  # only the user sets goals
        elif dialogue:
            kinds.discard("goal")  # between people, a wish is no goal set
        if (
            kinds & {"constraint", "task"}
            and not kinds & _SPECIFIC
            and _ADVICE.search(lowered)
            and not _FIRST_PERSON.search(lowered)
        ):
            kinds -= {"constraint", "task"}  # advice: "don't give up", "must be fun"
        if (
            "constraint" in kinds
            and not kinds & _SPECIFIC
            and not _RULE.search(lowered)
            and text.isascii()
        ):
            kinds.discard("constraint")  # "never give up", "don't they?": no rule
        kinds.add("outcome" if role == "tool" else "plain")
        if role == "tool" and LIST_ITEM.match(text):
            kinds.add("listing")  # one hit of many: no outcome of its own
        if len(kinds) > 1:
            kinds -= {"outcome", "plain"}  # the fallback kinds, when nothing else
        if kinds == {"listing"}:
            kinds.add("outcome")
    identifiers = tuple(
        (kind, value) for kind, value in found.values() if kind in IDENTIFYING
    )
    frozen = frozenset(kinds)
    return Salience(score(frozen, role), frozen, identifiers)
