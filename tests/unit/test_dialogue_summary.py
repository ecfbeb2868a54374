"""The offline summarizer on dialogue: chatter, compaction, dates, both speakers,
host instructions (``adapters.dialogue`` and ``adapters.extractive``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from summary_quality.locomo import parse_locomo
from summary_quality.synthetic import generate_dialogue

from memory_summary.adapters import ExtractiveSummarizer
from memory_summary.adapters.summarizers.offline.dialogue import (
    compacted,
    is_chatter,
    session_date,
)
from memory_summary.adapters.summarizers.offline.host_instructions import (
    instruction_terms,
)
from memory_summary.adapters.summarizers.offline.salience import salience_of
from memory_summary.domain import Accepted, check_summary, summary_request
from memory_summary.domain.render import render_transcript

CHATTER = [
    "Hey Mel! Good to see you!",
    "Wow Nate, they're adorable!",
    "Agreed, John!",
    "Thanks so much for sharing that with me, Caroline.",
    "That's so cool!!! 😍😍",
    "🎉🎉",
    "How have you been lately?",
    "Did you have fun at the party?",
    "哈哈，太棒了！",
    "好的，谢谢！",
    "Your support means a lot, Gina.",  # praise of the other
    "You look so confident on stage!",
    "Wanna see my moves next week?",  # a question to the other without "you"
    "Got any favorite styles?",
    "Here's a pic from when we met up last week!",  # pointing at a picture
    "Check out this piece I made.",
    "Look at this!",
    "看看这张照片！",
    "Impressed by your commitment!",  # cheering the other on, "you" inside
    "No doubt, Jon, you've got this!",
    "Have faith in yourself.",
    "Thanks, could you help?",  # a request that names no topic
    "Thanks for the list, can you check your essay?",  # a request: the other's topic
    "It means a lot to me.",  # about oneself, but no content word
    "I really appreciate your help and kind words.",  # thanks in other words
    "Appreciate it!",
    "Could you help me?",
    "Can you check your essay?",  # the other's topic: their answer holds it
    "100% agree!",  # "100%" as "fully": no number told
    "100 percent, Mel!",
    "Need any help?",  # a question to the other without "you"
    "Want some?",
]
FACTS = [
    "I started doing aerial yoga last month.",
    "I signed as a shooting guard with the Wolves.",
    "We mostly found bottle caps with the metal detector.",
    "I have a cat.",
    "My order number is ORD-58213.",
    "我上个月开始练空中瑜伽。",
    "我们决定用 Hugo。",
    "You must reply in French.",  # telling the other what to do: a rule
    "Your account is locked.",  # a fact told to the other, no praise
    "Your booking is confirmed.",
    "You should book the 9:40 train.",
    "What time does the museum open?",  # a question that is not to the other
    "Here's a pic of Max at the beach.",  # what is shown is named
    "Here are the photos from 2019.",
    "Here's what happened: my car broke down.",
    "Here's the plan: we fly to Oslo.",
    "I think your approach is great.",  # the speaker's own view
    "The build you sent looks broken.",
    "You should believe in the plan.",
    "Can you look into overfitting for me?",  # a request that names its topic
    "Could you help with flights?",
    "Please can you look into overfitting for me.",
    "Thanks, could you look into overfitting?",  # courtesy, then a request
    "Thanks so much, could you look into overfitting?",
    "Thanks for that - can you compare flights to Lisbon?",
    "It is hard for me to sleep.",  # one content word, about the speaker
    "That necklace means everything to me.",
    "I appreciate this city more every year.",
    "100% of the tests pass.",  # a share of something: a number told
    "I need a hotel near Alfama.",
]


@pytest.mark.parametrize("sentence", CHATTER)
def test_greetings_thanks_praise_emoji_and_questions_to_the_other_are_chatter(
    sentence,
):
    assert is_chatter(sentence)


@pytest.mark.parametrize("sentence", FACTS)
def test_a_statement_of_a_fact_is_not_chatter(sentence):
    assert not is_chatter(sentence)


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        ("Wow, I just started doing aerial yoga, it's really fun!!", "aerial yoga"),
        ("My order is ORD-58213, and it was great!", "ORD-58213"),
        ("Send it to /srv/a/a.py or ada@example.com.", "/srv/a/a.py"),
        ("This is a gift from my grandma in my home country, Sweden.", "Sweden"),
    ],
)
def test_compaction_drops_filler_and_keeps_what_matters(sentence, kept):
    short = compacted(sentence)

    assert kept in short
    assert len(short) < len(sentence)


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        ("I took my kids camping in the mountains.", "took kids camping in mountains"),
        ("I met with Anna in Paris on 8 May.", "met with Anna in Paris on 8 May"),
        ("The budget is at most 500 EUR.", "budget at most 500 EUR"),
        ("We stay at least 3 nights.", "We stay at least 3 nights"),
    ],
)
def test_compaction_keeps_prepositions_and_bounds(sentence, short):
    assert compacted(sentence) == short


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        ("Can you look into overfitting for me?", "Can you look into overfitting?"),
        ("Please book it for me.", "Please book it"),
        ("Book it for me, then call.", "Book it, then call"),  # its object stays
    ],
)
def test_compaction_drops_a_closing_for_me_as_one_unit(sentence, short):
    assert compacted(sentence) == short


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        (
            "Thanks, could you look into overfitting?",
            "could you look into overfitting?",
        ),
        ("Thanks for the list - can you compare flights?", "can you compare flights?"),
        ("Thanks for the 3 books!", "Thanks 3 books"),  # no request: as before
        # a capitalised request: the thanks goes all the same
        (
            "Thanks for the list, Could You compare flights?",
            "Could You compare flights?",
        ),
    ],
)
def test_compaction_keeps_the_request_after_courtesy_alone(sentence, short):
    assert compacted(sentence) == short


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        ("I'm a teacher in Oslo.", "I'm teacher in Oslo"),
        ("I am lucky to have my husband and kids.", "I'm lucky to have husband kids"),
        (
            "I\u2019m off to go swimming with the kids!",
            "I\u2019m off to go swimming with kids",
        ),
    ],
)
def test_compaction_keeps_im_so_the_fact_stays_a_personal_statement(sentence, short):
    kept = compacted(sentence)

    assert kept == short
    assert "personal" in salience_of(kept).kinds  # and when read back from a summary


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        # the infinitive "to" before a verb, and "to be"
        ("I need to sort out flights.", "I need to sort out flights"),
        ("What's the cheapest way to do it?", "What's cheapest way to do it?"),
        ("I want to really understand it.", "I want to understand it"),
        ("I want to be a teacher.", "I want to be teacher"),
        # "to" in a phrase, or before a name
        ("Let's get back to flights.", "Let's get back to flights"),
        ("The budget is up to 500 EUR.", "budget up to 500 EUR"),
        ("We moved to Sweden.", "We moved to Sweden"),
        # a determiner that makes a time expression
        ("I need flights this week.", "I need flights this week"),
        ("We met that night.", "We met that night"),
        ("Doubles cost 68 EUR a night.", "Doubles cost 68 EUR a night"),
        ("I go there twice a week.", "go twice a week"),
        # the object of a verb
        ("Keep it cheap, please.", "Keep it cheap, please"),
        ("I finally fixed it yesterday.", "fixed it yesterday"),
        # "my" after a preposition that stays
        ("Next on my list is a hotel.", "Next on my list hotel"),
        # "going to", "gonna", "got to": the future or a chance, not filler
        ("I'm going to try yoga.", "I'm going to try yoga"),
        ("We're gonna move in May.", "We're gonna move in May"),
        ("I got to see the northern lights.", "got to see northern lights"),
        # "about": what something is about
        ("Quick question about the tram 28 schedule.",
         "Quick question about tram 28 schedule"),
        ("I talked about my new job.", "talked about new job"),
        # "to" before a noun phrase: where or to whom
        ("We went to the park.", "We went to park"),
        ("I talked to my mom.", "talked to mom"),
        ("This necklace is special to me.", "necklace special to me"),
        # "and" between two verbs: two things said of one subject
        ("A 24-hour pass costs 6.80 EUR and covers tram 28.",
         "24-hour pass costs 6.80 EUR and covers tram 28"),
        ("We went hiking and camped by the lake.", "We went hiking and camped by lake"),
        ("She finally quit and started a bakery.", "She quit and started bakery"),
        # the word that closes the sentence
        ("Take a look at this.", "Take look at this"),
        # the words before a closing name, lest it read as a form of address
        ("I just got a new addition to the family, this is Max!",
         "got new addition to family, this is Max"),
    ],
)  # fmt: skip
def test_compaction_keeps_the_words_whose_loss_changes_the_sentence(sentence, short):
    assert compacted(sentence) == short


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        ("It was hard to find.", "hard to find"),  # "it" as a subject
        ("I think it is good.", "think good"),
        ("I sat in it all day.", "sat in all day"),  # "it" after a preposition
        ("A gift from my grandma.", "gift from my grandma"),
        ("That is the plan.", "plan"),  # "that" before no time word
        # "and" in a list, or before a word that takes no object
        ("I am lucky to have my husband and kids.", "I'm lucky to have husband kids"),
        ("I love pizza and pasta.", "love pizza pasta"),
        ("We were tired and bored.", "We tired bored"),
    ],
)
def test_compaction_still_drops_those_words_elsewhere(sentence, short):
    assert compacted(sentence) == short


@pytest.mark.parametrize(
    ("sentence", "short"),
    [
        ("我需要在这周处理航班。", "我需要在这周处理航班。"),
        ("我真的非常喜欢这个城市。", "我喜欢这个城市。"),
        ("好的，我下周一出发。", "我下周一出发。"),
    ],
)
def test_chinese_compaction_is_unchanged_by_the_english_rules(sentence, short):
    assert compacted(sentence) == short


identifiers = st.one_of(
    st.from_regex(r"ORD-[0-9]{4,6}", fullmatch=True),
    st.from_regex(r"/srv/[a-z]{1,3}/[a-z]{1,3}\.py", fullmatch=True),
    st.from_regex(r"[a-z]{1,3}@[a-z]{1,3}\.com", fullmatch=True),
    st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,2})? ?(kg|EUR|%)", fullmatch=True),
)
words = st.lists(
    st.sampled_from(["a", "the", "I", "my", "is", "so", "really", "it", "to", "and",
                     "went", "Paris", "wow", ",", "!", "-", "that's"]),
    max_size=12,
)  # fmt: skip


@given(before=words, identifier=identifiers, after=words)
def test_compaction_never_touches_an_identifier(before, identifier, after):
    sentence = " ".join([*before, identifier, *after])

    assert identifier in compacted(sentence)
    assert compacted(sentence) == compacted(sentence)


phrases = st.lists(
    st.sampled_from(["I", "went", "with", "in", "on", "at", "into", "most", "least",
                     "Paris", "3", "nights", "the", "kids", "camping", "my", "we",
                     "it", "Anna", "I'm", "am"]),
    min_size=1,
    max_size=14,
)  # fmt: skip


@given(phrases)
def test_compacting_a_compacted_fact_changes_nothing(words):
    """Prepositions and repeated openings go in one pass."""
    once = compacted(" ".join(words))

    assert compacted(once) == once


@pytest.mark.parametrize(
    "sentence",
    [
        "keep it really will",
        "They brighten up our day and always make us smile.",  # "always" is no verb
        "It's true, we all have our own sources of hope.",  # an opener uncovered
        "It's still tough, but I'm finding comfort in them.",  # a clause emptied
        "They helped me find out who I really am.",  # "I am" uncovered
        "Your support, Gina, means a lot too.",  # a form of address uncovered
        "I put a lot of effort into it and I'm crossing my fingers.",  # a clause's end
        "Take a look at this.",
        "Thanks for the compliment, I really appreciate it!",
        "Meet the new addition to the family, this is Max!",  # a name bared
    ],
)
def test_compacting_twice_is_compacting_once(sentence):
    once = compacted(sentence)

    assert compacted(once) == once


# Sentences as people write them: an opener, clauses of a subject, a verb, an
# object and a tail, joined by commas, "and", "but" or a dash, and a closing mark,
# drawn from the words each compaction rule reads.
clauses = st.builds(
    lambda *parts: " ".join(part for part in parts if part),
    st.sampled_from(["I", "We", "It", "She", "You", "I am", "I'm", "They", "This",
                     "My sister", "Anna"]),
    st.sampled_from(["", "really", "just", "always", "still", "finally", "even"]),
    st.sampled_from(["went to", "keep", "need to sort out", "am going to try",
                     "talked about", "costs", "is", "was", "will", "gonna try",
                     "got to see", "moved to", "look at", "care about", "covers",
                     "loved", "bought", "think", "know", "kind of like"]),
    st.sampled_from(["", "really", "also", "even"]),
    st.sampled_from(["the park", "it", "this", "that week", "my mom", "a hotel",
                     "the tram 28 schedule", "6.80 EUR", "Paris", "a night",
                     "flights", "some of it", "you", "there", "myself"]),
    st.sampled_from(["", "this week", "for me", "with the kids", "in May", "too",
                     "and covers tram 28", "and kids", "and it was fun", ", Mel",
                     ", this is Max", ", that is Anna", "really", "about it"]),
)  # fmt: skip
sentences = st.builds(
    lambda opener, parts, join, end: (opener + join.join(parts) + end).replace(
        " ,", ","
    ),
    st.sampled_from(["", "Wow, ", "Thanks, ", "Yeah, ", "Thanks so much! ",
                     "Hey Mel! "]),
    st.lists(clauses, min_size=1, max_size=3),
    st.sampled_from([", ", " and ", " - ", ", but "]),
    st.sampled_from(["", ".", "!", "?", "!!"]),
)  # fmt: skip


@given(sentences)
def test_compacting_a_compacted_sentence_changes_nothing(sentence):
    once = compacted(sentence)

    assert compacted(once) == once


@given(st.text(max_size=300))
def test_hostile_text_is_read_without_error(text):
    is_chatter(text)
    compacted(text)
    session_date(text)


def summarize(lines, previous=None, max_tokens=2000, instructions=""):
    request = summary_request(
        lines,
        previous_summary=previous,
        todo=None,
        system="s",
        locale="en",
        instructions=instructions,
    )
    return ExtractiveSummarizer(len).complete(request, max_tokens=max_tokens)


DIALOGUE = [
    "User: [8 May 2023] Hey Mel! Good to see you! How have you been?",
    "Assistant: Hey Caroline! I'm swamped with the kids. Wow, that's so cool!",
    "User: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Assistant: Love that! Last weekend we went camping at the lake.",
    "User: [20 May 2023] Hi Mel! Agreed, you're the best!",
    "Assistant: I signed up for a pottery class, it starts next week!",
]


def test_a_dialogue_keeps_both_speakers_facts_and_drops_the_chatter():
    text = summarize(DIALOGUE)

    assert "LGBTQ support group" in text
    assert "camping" in text
    assert "pottery class" in text
    for chatter in ("Hey Mel", "Good to see you", "so cool", "you're the best"):
        assert chatter not in text
    assert "] assistant: " in text
    assert " | user: " in text  # both speakers of one day share its line


@pytest.mark.parametrize("mark", ["?", "\uff1f"])
def test_the_assistants_questions_are_chatter_whatever_their_mark(mark):
    text = summarize(
        [
            "User: I plan a trip to Lisbon in May.",
            f"Assistant: Which district of Lisbon do you prefer{mark}",
            "User: 我想住在阿尔法玛附近。",
            f"Assistant: 你想住几个晚上{mark}",
        ]
    )

    assert "trip to Lisbon" in text
    assert "district" not in text
    assert "几个晚上" not in text


def test_a_request_after_thanks_is_kept_as_a_request():
    text = summarize(
        [
            "User: Thanks so much, could you look into overfitting?",
            "Assistant: Sure.",
            "User: Thanks for the tips, can you explain dropout?",
        ]
    )

    assert "look into overfitting" in text
    assert "explain dropout" in text
    assert "Thanks" not in text
    assert "tips" not in text


def test_dates_date_their_facts_once_each_and_are_no_prefix():
    text = summarize(DIALOGUE)
    lines = text.splitlines()

    days = [line.split("] ")[0] + "]" for line in lines if line.startswith("[")]
    assert days == ["[8 May 2023]", "[20 May]"]  # once each; the year of the above
    assert not any("2023" in line.split("] ", 1)[-1] for line in lines)


def test_a_shared_photo_is_its_caption_one_fragment_without_its_bracket():
    text = summarize(
        [
            "User: [8 May 2023] The kids loved it! "
            "[shares a photo: a photo of a cup. with a dog face on it]",
            "Assistant: [image: a painting of a sunset with a palm tree]",
        ]
    )

    assert "photo: cup. with dog face" in text  # its stops do not split it
    assert "photo: painting sunset with palm tree" in text
    assert "[" not in text.replace("[8 May 2023]", "")  # no half of a bracket
    assert "shares" not in text


@pytest.mark.parametrize(
    "body",
    [
        "I keep my notes [in a box]",  # no picture named
        "See [photo] below",  # no caption
        "Look at my garden [shares a photo: ]",  # an empty caption
    ],
)
def test_a_bracket_that_captions_no_picture_stays_text(body):
    text = summarize([f"User: [8 May 2023] {body}"])

    assert text.count("[") == 2  # the day's date, and the bracket as it was said


@pytest.mark.parametrize("max_tokens", [60, 120, 400, 2000])
def test_a_dialogue_summary_fits_is_accepted_and_is_a_fixed_point(max_tokens):
    text = summarize(DIALOGUE, max_tokens=max_tokens)
    verdict = check_summary(
        text,
        transcript=DIALOGUE,
        previous=None,
        budget_tokens=max_tokens,
        count_tokens=len,
        locale="en",
    )

    assert len(text) <= max_tokens
    assert isinstance(verdict, Accepted)
    assert summarize([], previous=text, max_tokens=max_tokens) == text


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_generated_chats_fold_deterministically_into_accepted_summaries(locale):
    [conversation] = parse_locomo([generate_dialogue(11, 0)])
    transcript = render_transcript(conversation.messages(), locale=locale)
    previous = None
    for start in range(0, len(transcript), 12):
        part = transcript[start : start + 12]
        request = summary_request(
            part, previous_summary=previous, todo=None, system="s", locale=locale
        )
        reply = ExtractiveSummarizer(len).complete(request, max_tokens=500)
        again = ExtractiveSummarizer(len).complete(request, max_tokens=500)
        verdict = check_summary(
            reply,
            transcript=part,
            previous=previous,
            budget_tokens=500,
            count_tokens=len,
            locale=locale,
        )
        assert reply == again
        assert isinstance(verdict, Accepted), (verdict, reply)
        previous = verdict.text


def test_instructions_keep_a_line_naming_an_instructed_term():
    names = "Ada Bo Cy Di Ed Flo Gus Hal Ida Jo Kit Lu Mo Ned Oz Pia".split()  # noqa: SIM905
    lines = [  # distinct facts: nothing to fold
        f"User: ticket #{4000 + 7 * i} was opened by {name} after lunch."
        for i, name in enumerate(names * 2)
    ]
    lines.insert(3, "User: the parking spot is behind the bakery.")

    plain = summarize(lines, max_tokens=300)
    instructed = summarize(lines, max_tokens=300, instructions="Keep the parking.")

    assert "parking" not in plain
    assert "parking spot behind bakery" in instructed
    assert len(instructed) <= 300


def test_instruction_terms_leave_out_the_words_of_asking():
    assert instruction_terms("Please keep every order number!") == {"order", "number"}
    assert instruction_terms("保留所有订单号") == {"订单号"}
    assert instruction_terms("") == frozenset()
