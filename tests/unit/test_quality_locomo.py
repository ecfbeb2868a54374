"""The LoCoMo reader (``summary_quality.locomo``) on data of LoCoMo's shape."""

from __future__ import annotations

import json

import pytest
from summary_quality.locomo import (
    LocomoError,
    default_locomo_path,
    load_locomo,
    parse_locomo,
    parse_session_date,
)


def sample() -> list[dict]:
    """Return one made-up conversation in LoCoMo's shape (two sessions)."""
    return [
        {
            "sample_id": "made-up-1",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
                    {
                        "speaker": "Ben",
                        "dia_id": "D1:2",
                        "text": "I started aerial yoga.",
                        "blip_caption": "a photo of a studio",
                        "img_url": ["http://example.invalid/a.jpg"],
                    },
                ],
                "session_2_date_time": "10:05 am on 2 June, 2023",
                "session_2": [
                    {"speaker": "Ana", "dia_id": "D2:1", "text": "I adopted a cat."}
                ],
                "session_3_date_time": "10:05 am on 3 June, 2023",
                "session_3": [],
            },
            "qa": [
                {
                    "question": "What did Ben start?",
                    "answer": "aerial yoga",
                    "evidence": ["D1:2"],
                    "category": 4,
                },
                {
                    "question": "When?",
                    "answer": 2023,
                    "evidence": ["D1:2; D2:1", "D"],
                    "category": 2,
                },
                {
                    "question": "What did Ana adopt from the zoo?",
                    "adversarial_answer": "a lion",
                    "evidence": ["D2:1"],
                    "category": 5,
                },
            ],
        }
    ]


def test_a_conversation_reads_its_speakers_sessions_and_questions():
    [conversation] = parse_locomo(sample())

    assert conversation.sample_id == "made-up-1"
    assert conversation.speakers == ("Ana", "Ben")
    assert [s.number for s in conversation.sessions] == [1, 2]  # the empty one goes
    assert [t.dia_id for t in conversation.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conversation.speaker_of("D1:2") == "Ben"
    assert conversation.speaker_of("D9:9") is None
    questions = conversation.questions
    assert [q.category_name for q in questions] == [
        "single-hop",
        "temporal",
        "adversarial",
    ]
    assert questions[1].answer == "2023"
    assert questions[1].evidence == ("D1:2", "D2:1")
    assert questions[2].answer == "a lion"


def test_messages_attribute_speakers_and_date_each_session():
    [conversation] = parse_locomo(sample())

    messages = conversation.messages()

    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert [m.name for m in messages] == ["Ana", "Ben", "Ana"]
    assert messages[0].text == "[8 May 2023] Hi Ben!"
    assert (
        messages[1].text
        == "I started aerial yoga. [shares a photo: a photo of a studio]"
    )
    assert messages[2].text == "[2 June 2023] I adopted a cat."
    assert messages[1].metadata["dia_id"] == "D1:2"
    assert messages[2].metadata["date"] == "10:05 am on 2 June, 2023"
    assert (
        messages[0].timestamp
        == parse_session_date("1:56 pm on 8 May, 2023").timestamp()
    )
    assert next(m.text for m in conversation.messages(dates="none")) == "Hi Ben!"
    assert all(m.text.startswith("[") for m in conversation.messages(dates="every"))
    with pytest.raises(ValueError, match="dates"):
        conversation.messages(dates="sometimes")


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00+00:00"),
        ("12:09 am on 13 September, 2023", "2023-09-13T00:09:00+00:00"),
        ("12:30 pm on 1 January, 2022", "2022-01-01T12:30:00+00:00"),
    ],
)
def test_session_dates_parse(text, iso):
    assert parse_session_date(text).isoformat() == iso


@pytest.mark.parametrize("text", ["", "yesterday", "1:56 pm on 31 February, 2023"])
def test_an_unreadable_session_date_is_none(text):
    assert parse_session_date(text) is None


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d[0].pop("conversation"), r"\[0\]\.conversation"),
        (lambda d: d[0]["conversation"].pop("speaker_b"), "speaker_b"),
        (lambda d: d[0]["conversation"].update(session_1="x"), "session_1"),
        (lambda d: d[0]["qa"][0].update(category="4"), r"qa\[0\]\.category"),
        (lambda d: d[0]["qa"][0].update(evidence="D1:2"), "evidence"),
        (lambda d: d[0]["conversation"]["session_2"][0].update(text=[1]), "text"),
    ],
)
def test_a_malformed_conversation_names_where(mutate, where):
    data = sample()
    mutate(data)

    with pytest.raises(LocomoError, match=where):
        parse_locomo(data)


def test_load_reads_a_file_and_rejects_what_is_not_json(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(sample()), encoding="utf-8")
    bad.write_text("{not json", encoding="utf-8")

    assert load_locomo(good)[0].sample_id == "made-up-1"
    with pytest.raises(LocomoError, match="not JSON"):
        load_locomo(bad)
    with pytest.raises(LocomoError, match="list of conversations"):
        parse_locomo({"conversation": {}})


def test_the_default_path_is_the_shared_development_half_or_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_locomo_path() is None

    target = tmp_path / "work" / "shared" / "datasets" / "locomo"
    target.mkdir(parents=True)
    (target / "locomo-dev.json").write_text("[]", encoding="utf-8")
    (tmp_path / "work" / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "work" / "repo")
    assert default_locomo_path() is not None
    assert load_locomo(default_locomo_path()) == []
