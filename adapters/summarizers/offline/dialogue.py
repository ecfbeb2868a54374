"""Rules of the offline summarizer for what people say: chatter, compaction, dates.

About 565 lines: chatter and compaction share their patterns (openers, courtesy,
forms of address, clause breaks), and dates are read where they are stripped.

- Chatter: a question to the other ("…you…?", or one that leaves "you" out: "Wanna see
  my moves?", "Got any plans?", "Need any help?") is chatter unless it names a number,
  an address, a path or an id, or is a request that names its topic ("Can you look
  into overfitting?", not "Could you help me?"); so is praise of the other as the
  subject ("Your support means a lot", "You look great on stage"), not a fact told to
  them ("Your account is locked") nor a request ("You must reply in French"); so is
  cheering them on from anywhere in the sentence ("Impressed by your commitment",
  "Have faith in yourself") when the speaker says nothing of themselves; so is a
  sentence that, once its interjections ("wow", "haha", "好的"), greetings ("hey", "long
  time no see"), forms of address ("…, Mel!") and emoji are set aside, has fewer than
  ``MIN_CONTENT_WORDS`` content words left (words that are not function words nor
  praise such as "amazing") and does not speak of its speaker ("I have a cat" is a
  fact), nor a number ("100%" opening a sentence as "fully", as in "100% agree", is
  none). A CJK sentence needs ``MIN_CONTENT_CJK`` such characters. Praise, thanks (in
  other words too: "I really appreciate your help") and acknowledgements carry no
  fact, and keeping them spent the budget; a request naming its topic after them stays
  ("Thanks so much, could you look into overfitting?" keeps the request, and its
  compaction drops the thanks). The speaker as the one a sentence is about ("It is
  hard for me to sleep", "…means everything to me") speaks of its speaker as "I" does.
- Showing: a sentence that only points at what is shared ("Here's a pic from
  the trip", "Check out this piece I made", "Look at this!", "看看这张照片") is
  chatter unless it names a number or a proper noun: what the picture shows is
  the fact, not that it was shown.
- Compaction: a kept sentence loses the same openers and forms of address, the
  filler words (``FILLER``: "really", "so", "just", articles, a closing "for me",
  真的, 非常 …), emoji and repeated punctuation: the fewer words a fact takes, the more
  facts the budget holds. "I'm" stays ("I am" becomes it): it is what tells a
  personal statement ("I'm lucky to have my kids" is one) once the rest is gone, and
  salience reads the compacted text, in the summary too. Words that carry meaning
  are no filler: "to" ("I need to sort out flights", "went to the park", "moved to
  Sweden"), "about" ("a question about the tram"), "going to", "gonna" and "got to"
  ("I'm going to try yoga"). A filler word stays where its loss changes or breaks
  the sentence: the "this", "that" or "a" of a time ("this week", "that night", "68
  EUR a night"), "it" as a verb's object ("Keep it cheap", not "it was fun" nor
  "with it"), "my" after a preposition that stays ("next on my list"), "and"
  before a second verb ("costs 6.80 EUR and covers tram 28", told by its -s or -ed
  and the word after it; "husband and kids" reads "husband kids") and the word that
  closes the sentence ("Take a look at this."), and the words before a name that
  closes it ("…addition to the family, this is Max!": once bared, ", Max" would
  read as a form of address and go). Whole words only: an identifier, a
  number, a name or a path is never touched. Compacting twice changes nothing: a
  clause is read for content once its filler is gone, and an opener, a form of
  address or "I am" the filler uncovers goes in the same pass.
- Dates: a message that opens with a bracketed date (``[8 May 2023] …``) dates what
  follows it; the date becomes the context of the facts it dates, not their text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_summary.domain.lexicon import MONTHS

MIN_CONTENT_WORDS = 2
MIN_CONTENT_CJK = 2

_OPENERS = (
    r"hey|hi|hello|heya|yo|wow|whoa|woah|oh(?: man| boy)?|ooh|oops|aw+|aww+|yeah|"
    r"yea|yes|yep|yup|"
    r"haha+|hahaha+|hehe+|lol|omg|ok|okay|cool|well|so|hmm+|um+|uh|great|awesome|"
    r"nice|sure|thanks|thank you(?: so much)?|thx|congrats|congratulations|agreed|"
    r"totally|absolutely|definitely|exactly|true|right|indeed|gosh|geez|anyway|"
    r"good to (?:see|hear from) you|great to (?:see|hear from|chat with|talk to) you|"
    r"nice to (?:meet|see) you|long time no (?:see|talk|chat)|"
    r"(?:i )?hope (?:you're|you are|all is) (?:doing )?(?:well|good|great|ok)|"
    r"since (?:we )?last (?:chatted|spoke|talked|chat)|bye|goodbye|see you|"
    r"take care|talk (?:to you )?soon|cheers|guess what|"
    r"how(?:'s| is| are| have) (?:it going|you been|you|things|everything)"
)
_OPENER = re.compile(
    rf"^(?:(?:{_OPENERS})(?-i:\s+[A-Z][a-z]{{1,20}})?\s*(?:[,!.?;:~\-]+(?=\s|$)\s*|$))+",
    re.IGNORECASE,
)
_ZH_OPENER = re.compile(
    r"^(?:(?:哇|哦|噢|嗯|哈哈+|嘿|嗨|你好|您好|好的|好啊|是啊|是的|对啊|对|太棒了|真棒|"
    r"谢谢你?|多谢|恭喜(?:你)?|没错|当然|确实|好久不见)[，,。！!？?~\s]*)+"
)
# ", Mel!" or " Mel!" closing a sentence: addressing the other speaker by name.
_VOCATIVE_END = re.compile(r",\s*[A-Z][a-z]{1,20}\s*(?=[!.?]*\s*$)")
# ", Mel!" closing a sentence, unless a place is being named ("…my home country,
# Sweden", "…the city, Paris").
_ADDRESS_END = re.compile(
    r"(?<!country)(?<!city)(?<!town)(?<!state)(?<!island)(?<!capital)"
    r",\s*[A-Z][a-z]{1,20}\s*[!.?]*\s*$"
)
_VOCATIVE_START = re.compile(r"^[A-Z][a-z]{1,20}[,!]\s+(?=[A-Za-z])")
_EMOJI = re.compile(
    "[\u2600-\u27bf\U0001f000-\U0001faff\u2b00-\u2bff\ufe0f\u200d]+|"
    r"(?<!\w)[:;]-?[()DPp](?!\w)"
)
# Words a filler word must stay before or after, lest the sentence change or break
# (module docstring: compaction). Case-sensitive where a capital tells a name.
_TIME_WORD = (
    r"(?:week|weekend|month|year|morning|afternoon|evening|night|day|time|summer|"
    r"winter|spring|fall|autumn|season|semester|term|quarter|hour|minute|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
)
# Filler that may stand between "to" or "it" and the word that tells what it is.
_SKIPPED_WORD = (
    r"(?:really|very|just|actually|totally|super|pretty|quite|kinda|definitely|"
    r"honestly|literally|basically|absolutely|truly|also|finally|recently|"
    r"currently|lately|still|even|already|always|am|is|are|was|were|been|being)"
)
_SKIPPED = rf"(?:{_SKIPPED_WORD}\s+)*"
# Before "it", what makes it no object: a preposition, a conjunction, a pronoun,
# or a word compaction drops.
_NOT_OBJECT_OF = "|".join(
    rf"(?<=\b{word} it)"
    for word in (
        "in", "on", "at", "with", "by", "from", "into", "over", "near", "under",
        "after", "before", "through", "during", "like", "than", "as", "and", "but",
        "or", "so", "because", "if", "when", "while", "where", "though", "since",
        "until", "once", "then", "i", "we", "you", "he", "she", "they", "a", "an",
        "the", "really", "very", "just", "actually", "totally", "super", "pretty",
        "quite", "kinda", "definitely", "honestly", "literally", "basically",
        "absolutely", "truly", "um", "uh", "my", "myself", "am", "is", "are", "was",
        "were", "be", "been", "being", "also", "to", "of", "for", "that", "this",
        "its", "there", "about", "some", "which", "who", "finally", "recently",
        "currently", "lately", "still", "even", "already", "always", "it", "it's",
        "that's", "gonna",
    )
)  # fmt: skip
# Before "my", a preposition compaction keeps: "next on my list", not "on list".
_OWNED_AFTER = "".join(
    rf"(?<!\b{word} my)"
    for word in (
        "on", "in", "at", "with", "by", "from", "into", "over", "near", "under",
        "after", "before", "through", "during",
    )
)  # fmt: skip
# After "and", a verb that takes an object: a second predicate ("costs 6.80 EUR and
# covers tram 28", "went hiking and camped there"), not a list's last noun ("husband
# and kids"). Told by its ending (-s, -ed) and a word after it; a plural noun there
# keeps an "and" it did not need, which costs a word, not a meaning.
_VERB_FORM = (
    rf"{_SKIPPED}(?!{_SKIPPED_WORD}\b|(?:this|his|its|us|these|those|yours|ours|"
    r"theirs|hers|as)\b)[a-z]+(?:s|ed)\s+[\w$\u20ac\u00a3\u00a5]"
)
_SUBJECT_VERB = (
    r"(?:is|was|will|would|can|could|has|had|does|did|may|might|must|should)\b"
)
# Each condition is read after its word has matched (the lookbehinds end with it):
# the pattern is tried at every word, and most words are none of these.
_FILLER_WORDS = (
    "a(?!\\s+" + _TIME_WORD + ")|an|the|really|so|very|just|actually|totally|super|"
    "pretty|quite|kinda|"
    "definitely|honestly|literally|basically|absolutely|truly|um|uh|"
    "kind of|sort of|"
    "my" + _OWNED_AFTER + "|myself|am|is|are|was|were|be(?<!\\bto be)|been|"
    "being|it's|it is|that's|also|"
    "of|for|and(?!\\s+" + _VERB_FORM + ")|"
    "that(?!\\s+" + _TIME_WORD + ")|this(?!\\s+" + _TIME_WORD + ")|"
    "it(?:(?<![a-z] it)|" + _NOT_OBJECT_OF + ")|"
    "it(?=\\s+" + _SKIPPED + _SUBJECT_VERB + ")|"
    "its|there|"
    "some|which|who|"
    "finally|recently|currently|lately|still|even|already|always"
)
# Whole words: never a piece of a path, an address or an id ("/srv/a/a.py"),
# and never after a number ("0 of s1" must not read "0 s1", a quantity). A word
# closing the text stays ("Take a look at this."): it closes it again when the
# compacted text is read once more. ``INNER_FILLER``: the same for a clause that
# others follow (its last word does not close the text).
_FILLER_PATTERN = (
    rf"(?<![\w'\-/.@:#])(?<!\d )(?:{_FILLER_WORDS})(?![\w'\-/.@:#]{{closing}})\s*"
)
FILLER = re.compile(_FILLER_PATTERN.format(closing=r"|\s*$"), re.IGNORECASE)
INNER_FILLER = re.compile(_FILLER_PATTERN.format(closing=""), re.IGNORECASE)
# The speaker's "I" opening a sentence: the line names its speaker. Elsewhere it
# stays ("yesterday I joined …" tells who did it).
_OPENING_I = re.compile(r"^(?:i\s+(?!will|would|had|need|want)(?=\w))+", re.IGNORECASE)
# "I am" as "I'm": the personal statement's cue (``salience``) stays, in fewer letters.
_I_AM = re.compile(r"\b[Ii] am\b")
_FOR_ME = re.compile(r"\s+for me(?=\s*(?:[,;!?.]|$))", re.IGNORECASE)
_ZH_FILLER = re.compile(r"真的|非常|特别|其实|就是|有点|一下|挺|蛮|超级|好像")
_PUNCT_RUN = re.compile(r"([!?.])[!?.]+(?=\s|$)")
_SPACE_BEFORE = re.compile(r"\s+([,;:!?.])(?=\s|$)")
# Where a clause may end: a comma, dash or semicolon, or "and"/"but"/"so" before a
# pronoun ("…, and it was awesome").
_CLAUSE_BREAK = re.compile(
    r"(\s*[,;\u2013\u2014]\s*|\s+-\s+|\s+(?:and|but|so)\s+(?=(?:it|that|this|"
    r"which|they|we|i|you)\b))",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s{2,}")
# A closing clause that is a name alone, as a form of address reads (``_ADDRESS_END``):
# when the filler bared it ("…, this is Max!" read ", Max!"), it was none.
_NAME_ALONE = re.compile(r"^\s*,\s*[A-Z][a-z]{1,20}\s*[!.?]*\s*$")
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_COURTESY = re.compile(
    r"(?:thanks|thank you|thx|glad|so glad|i'm (?:so )?glad|congrats|congratulations|"
    r"(?:i |really |i really )?appreciate (?:it|that|you|your)|"
    r"good luck|best of luck|happy for you|so happy for you|proud of you|"
    r"(?:i )?hope (?:you|it|that|your)|can't wait|sounds (?:like|great|good|fun)|"
    r"that sounds|that's (?:so |really )?(?:great|awesome|amazing|cool|nice|"
    r"wonderful|lovely|fantastic)|you're (?:so |the )|take care|have fun|enjoy)\b"
)
# Praise of the other person as the subject ("Your support means a lot", "You look
# great on stage"); not a fact told to them ("Your account is locked") nor a
# request ("You must reply in French").
_ABOUT_OTHER = re.compile(r"^(?:you|your|you're|you've|you'll|you'd)\b")
_PRAISE = re.compile(
    r"\b(?:amazing|awesome|great|good|nice|cool|wonderful|fantastic|incredible|"
    r"beautiful|lovely|proud|inspir\w*|impress\w*|talented|brave|strong|rock|"
    r"badass|look|looks|sound|sounds|support|mean(?:s)? (?:a lot|so much|the world)|"
    r"motivat\w*|encourag\w*|dedicat\w*|commitment|passion\w*|kind|sweet|best|"
    r"(?:got|have) this)\b"
)
# Cheering the other on from anywhere in the sentence ("Impressed by your
# commitment", "No doubt, Jon, you've got this", "Have faith in yourself"): the
# same praise, without "look"/"sound" ("the build you sent looks broken").
_TO_OTHER = re.compile(r"\byou(?:r|rs|rself|'re|'ve|'ll)?\b")
_CHEERING = re.compile(
    r"\b(?:amazing|awesome|great|wonderful|fantastic|incredible|proud|inspir\w*|"
    r"impress\w*|talented|brave|strong|rock|support|motivat\w*|encourag\w*|"
    r"dedicat\w*|commitment|passion\w*|faith|believe in|(?:got|have) this)\b"
)
_INSTRUCTS = re.compile(
    r"\b(?:must|should|need|needs|have to|never|always|don't|do not|please|remember|"
    r"can|could|will|would)\b"
)
# A question to the other that leaves "you" out: "Wanna see my moves?", "Got any
# plans?", "Ever been to Rome?".
_ASKS_ELLIPTIC = re.compile(
    r"^(?:wanna|want|need|got|ever|any|anything|how about|what about)\b[^.!?]*\?\s*$"
)
# "100%" as "fully" opening a sentence ("100% agree", "100 percent!"): no number
# told, unless it is a share of something ("100% of the tests pass").
_FULLY = re.compile(r"^1[01]?00 ?(?:%|percent)(?!\s*of\b)\W*", re.IGNORECASE)
# Pointing at what is shared: "Here's a pic …", "Check out this piece I made",
# "Look at this!", "看看这张照片": no fact unless it names a number or a name.
_SHOWING = re.compile(
    r"^(?:here(?:'s| is| are)|check (?:this|it|these|that) out|check out|"
    r"look at|take a look(?: at)?)\b(?P<shown>.*)$"
)
_SHOWN = re.compile(
    r"^\W*(?:(?:this|these|that|it|my|our|a|the|new|latest)\s+){0,3}"
    r"(?:(?:pics?|pictures?|photos?|snaps?|shots?|piece)\b|(?:this|these|that|it)\W*$)"
)
_ZH_SHOWING = re.compile(
    r"^(?:你?看看?|给你看看?|这是)[^，。！？]{0,6}(?:照片|图片|截图|作品)"
)
_PROPER_INSIDE = re.compile(r"(?<=[a-z,] )[A-Z][a-z]")
_ASKS_OTHER = re.compile(r"\byou(?:r|rs|rself)?\b[^.!?]*\?\s*$")
# A request for work: its topic is a fact, unless it is the other's ("…your essay?").
_REQUEST = re.compile(
    r"^(?:please )?(?:can|could|would|will) you (?:please )?(?:help|look|find|check|"
    r"search|research|book|explain|summari[sz]e|compare|recommend|suggest|plan|fix|"
    r"review|translate|write|draft|remind|list|teach|dig|figure)\b(?P<topic>[^?]*)"
)
_OWN = re.compile(r"\b(?:i|i'm|i've|i'd|my|we|we're|we've|our)\b")
# The speaker as the one a sentence is about though not its subject: "It is hard
# for me to sleep", "This necklace means everything to me".
_OWN_OBJECT = re.compile(r"\b(?:for|to) me\b")
_DATE_PREFIX = re.compile(r"^\[([^\[\]\n]{4,40})\]\s*")
_DATE_LIKE = re.compile(r"\d")
_NOT_CONTENT = frozenset(
    """i me my mine we us our you your yours he him his she her they them their it its
    this that these those there here a an the and or but if then so as of to in on at
    for with by from about into over up down out is am are was were be been being do
    does did have has had having will would can could should may might must not no
    yes what which who whom whose when where why how all any some more most other such
    only own same than too very s t just now also well really get got go going gonna
    wanna know think thing things lot lots much many make made feel feeling glad happy
    love loved lovely amazing awesome great good nice cool wonderful fantastic
    incredible beautiful cute adorable proud sorry thanks thank congrats
    congratulations agreed agree wow hey hi hello yeah yep totally absolutely
    definitely sure super pretty stuff something everything anything always never
    again keep keeps kept hear heard see seen sounds sound look looks looking way
    mean means meant time day great fun awesome blast wish hope hoping glad excited
    inspiring inspired special tough hard let""".split()  # noqa: SIM905
)
_ZH_CHATTER = re.compile(
    r"不错|厉害|加油|可爱|漂亮|好看|有意思|[的了吗呢吧啊呀哦嗯是在也都就和与很太真好棒谢这那个]"
)


def session_date(text: str) -> tuple[str, str]:
    """Return the date a message opens with (``[8 May 2023] …``) and the rest.

    A bracketed opener counts as a date only when it holds a digit.

    >>> session_date("[8 May 2023] Hey Mel!")
    ('8 May 2023', 'Hey Mel!')
    >>> session_date("[draft] text")
    ('', '[draft] text')
    """
    match = _DATE_PREFIX.match(text)
    if match is None or not _DATE_LIKE.search(match.group(1)):
        return "", text
    return match.group(1).strip(), text[match.end() :]


_DAY_YEAR = re.compile(rf"^(\d{{1,2}} {MONTHS}),? (\d{{4}})$")
_DAY_ALONE = re.compile(rf"^\d{{1,2}} {MONTHS}$")


def written_day(day: str, year: str) -> tuple[str, str]:
    """Return how a date line writes ``day`` after a line of ``year``, and its year.

    A day of the year the section's previous date line named is written without
    it (``[9 May]`` below ``[8 May 2023]``): the reader takes the year from above
    (``read_day``).

    >>> written_day("9 May 2023", "2023"), written_day("2 Jan 2024", "2023")
    (('9 May', '2023'), ('2 Jan 2024', '2024'))
    """
    match = _DAY_YEAR.match(day)
    if match is None:
        return day, ""
    return (match.group(1) if match.group(2) == year else day), match.group(2)


def read_day(day: str, year: str) -> tuple[str, str]:
    """Return a date line's day in full, and the year the next line may omit.

    >>> read_day("9 May", "2023"), read_day("8 May 2023", "")
    (('9 May 2023', '2023'), ('8 May 2023', '2023'))
    """
    if year and _DAY_ALONE.match(day):
        return f"{day} {year}", year
    match = _DAY_YEAR.match(day)
    return day, (match.group(2) if match else "")


_MONTH_NUMBERS = {
    name: number
    for number, name in enumerate(
        "jan feb mar apr may jun jul aug sep oct nov dec".split(),  # noqa: SIM905
        start=1,
    )
}
_ISO_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\b")


def day_order(day: str) -> tuple[int, int, int] | None:
    """Return ``day`` as (year, month, day) when it reads as a date, else None.

    >>> day_order("8 May 2023"), day_order("2023-05-08"), day_order("draft 2")
    ((2023, 5, 8), (2023, 5, 8), None)
    """
    match = _DAY_YEAR.match(day)
    if match is not None:
        number, month = match.group(1).split(" ")
        return int(match.group(2)), _MONTH_NUMBERS[month[:3].lower()], int(number)
    iso = _ISO_DAY.match(day)
    if iso is not None:
        return int(iso.group(1)), int(iso.group(2)), int(iso.group(3))
    return None


def latest_day(days: Sequence[str]) -> str:
    """Return the latest of ``days`` (the last one when any does not read as a date).

    A summary lists its days by section, not by time: the day a new transcript
    goes on from is the latest it names, not the last it writes.

    >>> latest_day(["9 June 2023", "25 May 2023", ""]), latest_day([])
    ('9 June 2023', '')
    """
    named = [day for day in days if day]
    orders = [order for order in map(day_order, named) if order is not None]
    if len(orders) < len(named) or not named:
        return named[-1] if named else ""
    return max(zip(orders, range(len(named)), named, strict=True))[2]


def _stripped(sentence: str, *, address: bool = True) -> str:
    """Return ``sentence`` without openers, forms of address and emoji.

    ``address``: also a name that opens or closes it by a comma ("Mel, …",
    "…, Mel!"); only the chatter test does this, as the name may be a fact ("…my
    home country, Sweden").
    """
    emoji = not sentence.isascii() or ":" in sentence or ";" in sentence  # _EMOJI
    text = (_EMOJI.sub("", sentence) if emoji else sentence).strip()
    for _ in range(3):  # "Hey Mel! Wow, ..." takes more than one pass
        before = text
        text = _OPENER.sub("", text).strip()
        text = _ZH_OPENER.sub("", text).strip()
        if address:
            text = _VOCATIVE_START.sub("", text).strip()
        if text == before:
            break
    return _VOCATIVE_END.sub("", text).strip() if address and "," in text else text


def content_words(text: str) -> list[str]:
    """Return the words of ``text`` that can carry a fact (lower case)."""
    lowered = text.lower().replace("\u2019", "'")
    return [w for w in _WORD.findall(lowered) if w.split("'")[0] not in _NOT_CONTENT]


def _has_content(text: str) -> bool:
    """Tell whether ``content_words(text)`` holds a word, reading up to the first."""
    lowered = text.lower().replace("\u2019", "'")
    return any(
        word[0].split("'")[0] not in _NOT_CONTENT for word in _WORD.finditer(lowered)
    )


def is_chatter(sentence: str) -> bool:
    """Tell whether a sentence carries no fact (module docstring: chatter).

    >>> [is_chatter(s) for s in ("Wow Nate, they're adorable!", "Agreed, John!",
    ...                          "I started doing aerial yoga.", "好的，谢谢！")]
    [True, True, False, True]
    """
    text = _stripped(sentence)
    if not text:
        return True
    if text[0] == "1":
        text = _FULLY.sub("", text)
        if not text:
            return True  # "100%!": agreement, no number told
    if "@" in text or "/" in text or "#" in text or any(map(str.isdigit, text)):
        return False  # a number, an address, a path or an id: never chatter
    lowered = text.lower().replace("\u2019", "'")
    if _COURTESY.match(lowered):  # thanks, wishes and praise, unless a request follows
        return request_after(text) < 0
    if (
        _ABOUT_OTHER.match(lowered)
        and _PRAISE.search(lowered)
        and not _INSTRUCTS.search(lowered)
    ):
        return True  # praise of the other: what they said of themselves stays
    if (
        _TO_OTHER.search(lowered)
        and _CHEERING.search(lowered)
        and not _INSTRUCTS.search(lowered)
        and not _OWN.search(lowered)
    ):
        return True  # cheering the other on, wherever "you" stands
    request = _REQUEST.match(lowered)
    if request and content_words(request["topic"]) and "your" not in lowered:
        return False  # a request that names its topic
    if _ASKS_OTHER.search(lowered) or _ASKS_ELLIPTIC.match(lowered):
        return True  # a question to the other: their answer holds the fact
    if _is_showing(text, lowered):
        return True  # pointing at a picture: what it shows is the fact
    words = content_words(text)
    if len(words) >= MIN_CONTENT_WORDS or (
        words and (_OWN.search(lowered) or _OWN_OBJECT.search(lowered))
    ):
        return False  # "I have a cat": one content word is enough about oneself
    cjk = _CJK.findall(_ZH_CHATTER.sub("", _ZH_FILLER.sub("", text)))
    return len(cjk) < MIN_CONTENT_CJK


def request_after(text: str) -> int:
    """Return where a request naming its topic follows courtesy in ``text``, or -1.

    "Thanks, could you look into overfitting?": the thanks is chatter, the request
    is not ("Thanks, could you help?" names no topic, "…check your essay?" is the
    other's).

    >>> request_after("Thanks, could you look into overfitting?")
    8
    >>> request_after("Thanks, could you help?"), request_after("Thanks a lot!")
    (-1, -1)
    """
    for cut in _CLAUSE_BREAK.finditer(text):
        rest = text[cut.end() :].lower().replace("\u2019", "'")
        request = _REQUEST.match(rest)
        if request and content_words(request["topic"]) and "your" not in rest:
            return cut.end()
    return -1


def _is_showing(text: str, lowered: str) -> bool:
    """Tell whether ``text`` only points at what is shared (module docstring).

    ``text`` holds no digit here (``is_chatter`` kept those); a proper noun after
    the pointing words ("Here's a pic of Max") names something: no chatter.
    """
    if _ZH_SHOWING.match(text):
        return True
    match = _SHOWING.match(lowered)
    if match is None or not _SHOWN.match(match.group("shown")):
        return False
    return _PROPER_INSIDE.search(text[match.start("shown") :]) is None


def _clauses(text: str) -> list[str]:
    """Return ``text`` cut before each clause break, the breaks kept."""
    if (
        "," not in text
        and ";" not in text
        and "-" not in text
        and text.isascii()  # no dash, no other space than " "
        and text.isprintable()
    ):
        lowered = text.lower()
        if " and " not in lowered and " but " not in lowered and " so " not in lowered:
            return [text] if text.strip() else []  # no break: no search
    pieces = _CLAUSE_BREAK.split(text)
    clauses = [pieces[0]]
    clauses += (pieces[i] + pieces[i + 1] for i in range(1, len(pieces) - 1, 2))
    return [clause for clause in clauses if clause.strip()]


def _ends_addressed(text: str) -> bool:
    """Tell whether ``text`` may close with a form of address (``_ADDRESS_END``)."""
    comma = text.rfind(",")
    return comma >= 0 and text[comma + 1 : comma + 3].lstrip()[:1].isupper()


def compacted(sentence: str) -> str:
    """Return a kept sentence as its content words (module docstring: compaction).

    >>> compacted("Wow, I just started doing aerial yoga, it's really fun!!")
    'started doing aerial yoga'
    >>> compacted("This necklace is super special to me - a gift from my grandma.")
    'necklace special to me - gift from my grandma'
    >>> compacted("Yesterday I joined a gym.")
    'Yesterday I joined gym'
    """
    text = _stripped(sentence, address=False)
    if not text:
        return sentence.strip()
    if "," in text:  # what _ADDRESS_END needs
        text = _ADDRESS_END.sub("", text).strip() or text
    if ("you " in text or "You " in text) and _COURTESY.match(text.lower()):
        text = text[max(request_after(text), 0) :]  # the request alone
    if " am" in text:  # most sentences have none: no search
        text = _I_AM.sub("I'm", text)
    if "for me" in text:  # most sentences have none: no search
        text = _FOR_ME.sub("", text)
    # Each clause is read for content without its filler, and what the filler
    # uncovers (an opener, a form of address, "I am") goes too: compacting again
    # changes nothing.
    said = _clauses(text)
    last = len(said) - 1
    clauses = [
        (FILLER if index == last else INNER_FILLER).sub("", clause)
        for index, clause in enumerate(said)
    ]
    if last > 0 and clauses[-1] != said[-1] and _NAME_ALONE.match(clauses[-1]):
        clauses[-1] = said[-1]  # "…, this is Max!": a name the filler bared is told
    telling = [c for c in clauses if _has_content(c)]
    text = "".join(telling or clauses).lstrip(" ,;:-\u2013\u2014")
    if said and not text.startswith(said[0]):  # its opening changed: an opener shows?
        text = _OPENER.sub("", text)
    while _ends_addressed(text):  # "…, Paris, Mel": each address uncovered
        addressed = _ADDRESS_END.sub("", text).strip()
        if not addressed or addressed == text:
            break
        text = addressed
    if " am" in text:
        text = _I_AM.sub("I'm", text)
    text = _OPENING_I.sub("", text.lstrip(" ,;:-\u2013\u2014"))
    if not text.isascii():  # 真的, 非常 …
        text = _ZH_FILLER.sub("", text)
    text = _SPACE_BEFORE.sub(r"\1", _SPACES.sub(" ", text))
    text = _PUNCT_RUN.sub(r"\1", text)
    text = text.lstrip(" ,;:-\u2013\u2014").rstrip(" ,;:-\u2013\u2014!.")
    return text or sentence.strip()
