"""The native artifact: kept with the record, read poison-proof, placed first."""

from __future__ import annotations

import attrs
import pytest

from memory_summary.domain import (
    NativeArtifact,
    SummaryConfig,
    SummaryRecord,
    read_native,
    read_record,
    resummarized_record,
    trimmed_record,
    with_block_first,
)
from memory_summary.domain.anthropic_pairing import CONTINUED
from memory_summary.domain.compression_io import Summarize
from memory_summary.domain.native import host_system, strip_leading_blocks
from memory_summary.domain.pins import pins_line
from memory_summary.domain.replies import read_usage_tokens
from tests.compression_world import GOOD, World, history, run, setting_for

CONFIG = SummaryConfig()  # threshold 30, keep_recent 20
HEADER = "Summary of the earlier conversation (older messages were archived):"

BLOCK = {
    "type": "compaction",
    "content": "Likes tea.",
    "signature": "c2ln",
    "later_field": {"x": [1, None]},
}
ARTIFACT = NativeArtifact("anthropic", "claude-haiku-4-5", BLOCK)
ITEM = {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA=="}


def record(native=ARTIFACT):
    return SummaryRecord("Likes tea.", 7, 3, generation="g1", native=native)


def test_a_record_with_an_artifact_round_trips_with_extra_fields():
    stored = record().to_mapping()

    assert stored["native"] == {
        "provider": "anthropic",
        "model": "claude-haiku-4-5",
        "block": BLOCK,
    }
    assert read_record(stored) == record()


def test_a_record_without_an_artifact_stores_no_native_key():
    assert "native" not in record(None).to_mapping()


def test_a_record_from_an_older_version_reads_without_an_artifact():
    older = {"text": "Likes tea.", "covered_through_id": 7, "tokens": 3}

    assert read_record(older).native is None


@pytest.mark.parametrize(
    "native",
    [
        "a string",
        [BLOCK],
        {"provider": "openai", "model": None, "block": BLOCK},
        {"provider": "anthropic", "model": 5, "block": BLOCK},
        {"provider": "anthropic", "model": None},
        {"provider": "anthropic", "model": None, "block": dict(BLOCK, content=None)},
        {"provider": "anthropic", "model": None, "block": dict(BLOCK, content=" ")},
        {"provider": "anthropic", "model": None, "block": dict(BLOCK, type="text")},
        {"provider": "anthropic", "model": None, "block": {1: "not a text key"}},
        {"provider": "anthropic", "model": None, "block": dict(BLOCK, x=float("nan"))},
        {"provider": "anthropic", "model": None, "block": dict(BLOCK, x="a\ud800b")},
        {
            "provider": "openai",
            "model": None,
            "block": dict(ITEM, encrypted_content=""),
        },
        {"provider": "openai", "model": None, "block": dict(ITEM, encrypted_content=3)},
        {"provider": "openai", "model": None, "block": dict(ITEM, type="message")},
        {"provider": "google", "model": None, "block": ITEM},
    ],
)
def test_an_unreadable_artifact_is_dropped_and_the_record_still_reads(native):
    stored = dict(record(None).to_mapping(), native=native)

    read = read_record(stored)

    assert read == record(None)
    assert read_native(native) is None


def test_an_openai_item_round_trips_and_serves_openai_only():
    item = NativeArtifact("openai", "gpt-5.4-mini", ITEM, "Pinned: tea.")
    stored = record(item).to_mapping()

    assert read_record(stored) == record(item)
    assert stored["native"]["block"] == ITEM
    assert item.serves("openai", "gpt-5.4-mini")
    assert not item.serves("openai", "gpt-4.1")
    assert not item.serves("anthropic", "gpt-5.4-mini")
    assert not ARTIFACT.serves("openai", None)


def test_the_artifact_serves_its_provider_and_model_only():
    assert ARTIFACT.serves("anthropic", "claude-haiku-4-5")
    assert ARTIFACT.serves("anthropic", None)  # an unnamed model cannot tell
    assert not ARTIFACT.serves("anthropic", "claude-opus-4-6")
    assert not ARTIFACT.serves("openai", "claude-haiku-4-5")


def test_a_trim_keeps_the_artifact_and_a_resummary_drops_it():
    trimmed = trimmed_record(record(), first_id=8, last_id=9, generation="", now=0)
    resummarized = resummarized_record(
        trimmed,
        text="Likes tea and cake.",
        tokens=5,
        through_id=9,
        folded=2,
        model="m",
        generation="",
        now=0,
    )

    assert trimmed.native == ARTIFACT
    assert resummarized.native is None


def test_the_block_opens_the_messages_before_a_user_turn():
    turns = [{"role": "user", "content": "hi"}]

    assert with_block_first(BLOCK, turns) == [
        {"role": "assistant", "content": [BLOCK]},
        {"role": "user", "content": "hi"},
    ]


def test_the_block_takes_the_place_of_the_placeholder_turn():
    turns = [
        {"role": "user", "content": CONTINUED},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]

    placed = with_block_first(BLOCK, turns)

    assert placed[0] == {
        "role": "assistant",
        "content": [BLOCK, {"type": "text", "text": "ok"}],
    }
    assert placed[1:] == turns[2:]
    assert turns[1] == {"role": "assistant", "content": "ok"}  # not changed


def _summarize_actions(world):
    return [a for a in world.actions if isinstance(a, Summarize)]


def test_a_native_fold_sends_the_range_and_commits_the_block():
    world = World(CONFIG, history(30), record=record(), native=True, answers=["native"])
    world.record = attrs.evolve(world.record, covered_through_id=None)

    run(world, setting_for(CONFIG, "manual"))

    (summarize,) = _summarize_actions(world)
    assert summarize.native is not None
    assert summarize.native.history == tuple(world.archived)
    assert summarize.native.previous == ARTIFACT
    assert summarize.native.prompt == summarize.request
    content = world.record.native.block["content"]
    assert world.record.text.startswith(content)  # pinned facts may follow
    assert world.record.native.block == {
        "type": "compaction",
        "content": content,
        "signature": "s",
    }


def test_a_text_reply_drops_the_previous_artifact():
    world = World(CONFIG, history(30), record=record(), native=True, answers=["ok"])
    world.record = attrs.evolve(world.record, covered_through_id=None)

    run(world, setting_for(CONFIG, "manual"))

    assert world.record.text.startswith(GOOD)
    assert world.record.native is None


def test_a_text_summarizer_gets_no_native_request():
    world = World(CONFIG, history(30))

    run(world, setting_for(CONFIG, "manual"))

    assert [a.native for a in _summarize_actions(world)] == [None]


@pytest.mark.parametrize(
    ("iterations", "tokens"),
    [
        # the compaction entry measures the compaction: the message before it counts
        (
            [
                {"type": "message", "input_tokens": 30_000},
                {"type": "compaction", "input_tokens": 3_000},
            ],
            30_000,
        ),
        # only a compaction entry: the top-level fields
        ([{"type": "compaction", "input_tokens": 3_000}], 15),
        (
            [
                {"type": "compaction", "input_tokens": 190_000},
                {"type": "message", "input_tokens": 20_000},
            ],
            20_000,
        ),
    ],
)
def test_the_context_is_the_last_sampling_iteration_never_a_compaction(
    iterations, tokens
):
    usage = {"input_tokens": 5, "cache_read_input_tokens": 10, "iterations": iterations}

    assert read_usage_tokens(usage) == tokens


def test_what_the_record_adds_beside_the_block_round_trips():
    with_pins = attrs.evolve(ARTIFACT, beside="Pinned facts: ORD-1")
    stored = record(with_pins).to_mapping()

    assert stored["native"]["beside"] == "Pinned facts: ORD-1"
    assert read_record(stored).native == with_pins
    assert read_native(dict(stored["native"], beside=5)).beside is None


def test_a_block_nested_too_deep_reads_as_none():
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    stored = {"provider": "anthropic", "model": None, "block": dict(BLOCK, x=deep)}

    assert read_native(stored) is None


def test_a_native_fold_keeps_the_pins_beside_the_block():
    world = World(CONFIG, history(30), native=True, answers=["native"])

    run(world, setting_for(CONFIG, "manual"))

    native = world.record.native
    assert native is not None
    assert native.beside == pins_line(world.record.text, "en")
    assert native.beside.startswith("Pinned facts: ORD-")


def test_a_block_over_the_summary_budget_is_not_kept():
    world = World(CONFIG, history(30), native=True, answers=["native-long"])

    run(world, setting_for(CONFIG, "manual"))

    (summarize,) = _summarize_actions(world)
    notes = [text for c in world.commits for _, text in c.effects.notes]
    assert world.record.native is None
    assert world.record.text.startswith(GOOD)
    assert world.record.tokens <= summarize.max_tokens
    assert any("over the summary budget" in note for note in notes)


COMPACTION = {"type": "compaction", "content": "s", "signature": "x"}


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([], []),
        (  # the library's turn of its own: gone
            [
                {"role": "assistant", "content": [COMPACTION]},
                {"role": "user", "content": "hi"},
            ],
            [{"role": "user", "content": "hi"}],
        ),
        (  # several, and the turn's other blocks stay
            [
                {
                    "role": "assistant",
                    "content": [COMPACTION, COMPACTION, {"type": "text", "text": "ok"}],
                }
            ],
            [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}],
        ),
        (  # a host's block after other content, or in a later turn: kept
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [COMPACTION]},
            ],
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [COMPACTION]},
            ],
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": "a"}, COMPACTION]}],
            [{"role": "user", "content": [{"type": "text", "text": "a"}, COMPACTION]}],
        ),
    ],
)
def test_leading_compaction_blocks_are_stripped(turns, expected):
    assert strip_leading_blocks(turns) == expected


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        (None, None),
        ("Be brief.", "Be brief."),
        (f"Be brief.\n\n{HEADER}\nold", "Be brief."),
        (f"{HEADER}\nold", None),  # the summary alone
        (
            [
                {"type": "text", "text": "A", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": f"\n\n{HEADER}\nold"},
            ],
            [{"type": "text", "text": "A", "cache_control": {"type": "ephemeral"}}],
        ),
    ],
)
def test_the_host_system_loses_a_merged_summary(system, expected):
    assert host_system(system) == expected


def test_an_openai_artifact_keeps_its_lead_through_the_store_shape():
    from memory_summary.domain.native import NativeArtifact, read_native

    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "x"}
    lead = ({"type": "message", "role": "user", "content": "hi"},)
    artifact = NativeArtifact("openai", "m", item, "pins", lead=lead)

    back = read_native(artifact.to_mapping())

    assert back == artifact
    assert back is not None
    assert back.items == [lead[0], item]
    assert "lead" not in NativeArtifact("openai", "m", item).to_mapping()


@pytest.mark.parametrize(
    "lead",
    [
        "not a list",
        [{"type": "compaction", "encrypted_content": "y"}],  # only messages lead
        [["nested"]],
        [{"type": "message", "content": float("nan")}],
    ],
)
def test_a_stored_lead_that_is_not_ours_drops_the_artifact(lead):
    from memory_summary.domain.native import read_native

    data = {
        "provider": "openai",
        "model": "m",
        "block": {"type": "compaction", "encrypted_content": "x"},
        "lead": lead,
    }

    assert read_native(data) is None


@pytest.mark.parametrize(
    ("provider", "lead"),
    [
        ("openai", [{"type": "message", "role": "developer", "content": "x"}]),
        ("openai", [{"type": "message", "role": "user", "content": "\ud800"}]),
        ("anthropic", [{"type": "message", "role": "user", "content": "x"}]),
    ],
)
def test_a_lead_of_another_role_a_lone_surrogate_or_provider_is_refused(provider, lead):
    from memory_summary.domain.native import read_native

    block = (
        {"type": "compaction", "encrypted_content": "x"}
        if provider == "openai"
        else {"type": "compaction", "content": "Likes tea."}
    )

    assert (
        read_native({"provider": provider, "model": "m", "block": block, "lead": lead})
        is None
    )
