"""The trusted decode: rows the library wrote come back equal to what was saved.

Stores rebuild messages with ``Message.from_row`` (no converters); these tests prove
that shortcut yields exactly what the validating constructor would, field by field.
"""

from __future__ import annotations

import json
from uuid import uuid4

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_summary import Message, StoreError, ToolCall
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.stores.rows import COLUMNS, message_values, row_message
from memory_summary.domain import MalformedRecord
from memory_summary.testing.strategies import content_parts, texts
from tests.contract.stores import kind_of, open_store, redis_client, run_sql

metadata_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(40).map(lambda s: s.encode("utf-8", "replace").decode("utf-8")),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=8), inner, max_size=3),
    ),
    max_leaves=8,
)

IMAGE = {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}


@st.composite
def messages(draw):
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    calls = []
    refusal = None
    content = draw(texts(200) | content_parts())
    if role == "assistant":
        calls = draw(
            st.lists(
                st.builds(
                    ToolCall,
                    texts(20),
                    texts(20),
                    texts(80),
                    type=st.sampled_from(["function", "custom"]),
                ),
                max_size=3,
            )
        )
        refusal = draw(st.none() | texts(40))
        if calls or refusal is not None:
            content = draw(st.just(content) | st.none())
    return Message(
        role,
        content,
        tool_calls=calls,
        tool_call_id="call-" + draw(texts(20)) if role == "tool" else None,
        name=draw(st.none() | texts(20)),
        kind=draw(st.none() | st.sampled_from(["event-marker", "chat"]) | texts(10)),
        timestamp=draw(
            st.none()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.integers(-(2**40), 2**40)
        ),
        metadata=draw(
            st.dictionaries(st.text(max_size=8), metadata_values, max_size=3)
        ),
        refusal=refusal,
    )


def validated(message, row_id):
    """The message as the validating constructor builds it, with the store's id."""
    return Message(
        message.role,
        message.content,
        tool_calls=[attrs.asdict(c) for c in message.tool_calls],
        tool_call_id=message.tool_call_id,
        name=message.name,
        kind=message.kind,
        timestamp=message.timestamp,
        metadata=message.metadata,
        refusal=message.refusal,
        id=row_id,
    )


def assert_same_fields(decoded, expected):
    for field in attrs.fields(Message):
        assert getattr(decoded, field.name) == getattr(expected, field.name), field.name
        assert type(getattr(decoded, field.name)) is type(
            getattr(expected, field.name)
        ), field.name
    assert all(type(c) is ToolCall for c in decoded.tool_calls)
    assert decoded == expected
    assert hash(decoded) == hash(expected)


@given(message=messages(), row_id=st.integers(1, 2**62))
def test_the_trusted_row_decode_equals_the_validating_constructor(message, row_id):
    decoded = row_message((row_id, *message_values(message)))

    assert_same_fields(decoded, validated(message, row_id))


foreign_values = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.text(max_size=10),
    st.binary(max_size=4),
    st.sampled_from(
        ['[{"id": 1, "name": "f", "arguments": "{}"}]', "[{}]", "{}", "[]", "null"]
    ),
)


@given(
    message=messages(),
    column=st.integers(1, len(COLUMNS) - 1),
    value=foreign_values,
)
def test_a_decoded_foreign_row_has_every_field_of_its_type(message, column, value):
    """A foreign value in any column: a message of typed fields, or MalformedRecord."""
    row = [1, *message_values(message)]
    row[column] = value

    try:
        decoded = row_message(row)
    except MalformedRecord:
        return
    for field in ("tool_call_id", "name", "kind", "refusal"):
        assert getattr(decoded, field) is None or type(getattr(decoded, field)) is str
    assert decoded.timestamp is None or type(decoded.timestamp) is float
    assert type(decoded.metadata) is dict
    for call in decoded.tool_calls:
        assert all(type(v) is str for v in (call.id, call.name, call.arguments))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(message=messages())
def test_every_field_round_trips_through_every_store(store, message):
    sid = f"s-{uuid4().hex[:8]}"

    saved = store.save_message(sid, message)
    (read,) = store.get_history(sid)

    assert saved.id is not None
    assert_same_fields(saved, validated(message, saved.id))
    assert_same_fields(read, validated(message, saved.id))
    assert store.get_full_history(sid) == [read]
    assert store.get_oldest_history(sid, 1) == [read]


def test_saving_does_not_share_metadata_with_the_caller(store, sid):
    message = Message("user", "hi", metadata={"k": "v"})

    saved = store.save_message(sid, message)
    saved.metadata["k"] = "changed"

    assert message.metadata == {"k": "v"}
    assert store.get_history(sid)[0].metadata == {"k": "v"}


def test_a_decoded_message_behaves_like_a_constructed_one(store, sid):
    saved = store.save_message(sid, Message("user", "hi"))
    (read,) = store.get_history(sid)

    assert attrs.evolve(read, content="changed").content == "changed"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        read.content = "x"
    assert {read, saved} == {saved}


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("tool_calls", "{broken"),
        ("metadata", "[1, 2]"),
        ("role", "robot"),
    ],
)
def test_a_foreign_row_that_is_no_message_raises_malformed_record(
    sql_store, sid, column, value
):
    sql_store.save_message(sid, Message("assistant", "x"))
    run_sql(
        sql_store,
        f"UPDATE {{t}}messages SET {column} = ? WHERE session_id = ?",
        (value, sid),
    )

    with pytest.raises(MalformedRecord, match="stored message") as caught:
        sql_store.get_history(sid)

    assert isinstance(caught.value, StoreError)


@pytest.mark.parametrize(
    "calls",
    [
        '[{"id": 7, "name": "f", "arguments": "{}"}]',
        '[{"id": null, "name": "f", "arguments": "{}"}]',
        '[{"id": "c", "name": "f", "arguments": {"x": 1}}]',
        '[{"id": "c", "name": "f", "arguments": null}]',
        '[["c", "f", "{}"]]',
    ],
    ids=["int-id", "null-id", "object-arguments", "null-arguments", "a-list"],
)
def test_a_foreign_tool_call_of_another_type_raises_malformed_record(
    sql_store, sid, calls
):
    """Not a call the library wrote: checked, never trusted into a raw TypeError."""
    sql_store.save_message(sid, Message("assistant", "x"))
    run_sql(
        sql_store,
        "UPDATE {t}messages SET tool_calls = ? WHERE session_id = ?",
        (calls, sid),
    )

    with pytest.raises(MalformedRecord, match="stored message"):
        sql_store.get_history(sid)


def test_a_pop_of_a_row_that_is_no_message_says_the_row_is_gone(sql_store, sid):
    """A pop deletes the newest row, as asked; one a foreign writer broke is not
    reported as if it were still stored."""
    kept = sql_store.save_message(sid, Message("user", "kept"))
    sql_store.save_message(sid, Message("assistant", "broken later"))
    run_sql(
        sql_store,
        "UPDATE {t}messages SET role = 'robot' WHERE session_id = ? AND id > ?",
        (sid, kept.id),
    )

    with pytest.raises(MalformedRecord, match="newest message was deleted"):
        sql_store.pop_message(sid)

    assert sql_store.get_history(sid) == [kept]


@pytest.mark.redis
def test_a_redis_pop_of_a_member_that_is_no_message_says_it_is_gone(request, tmp_path):
    store = open_store(request, "redis", tmp_path)
    kept = store.save_message("s", Message("user", "kept"))
    with redis_client(store) as client:
        client.zadd(f"{store.prefix}h:s", {b"not json": kept.id + 1})

    with pytest.raises(MalformedRecord, match="newest message was deleted"):
        store.pop_message("s")

    assert store.get_history("s") == [kept]
    store.close()


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("timestamp", "yesterday"),
        ("timestamp", b"\x00"),
        ("name", b"bot"),
        ("kind", b"chat"),
        ("tool_call_id", b"c1"),
    ],
)
def test_a_foreign_sqlite_value_of_another_type_raises_malformed_record(
    tmp_path, sid, column, value
):
    """SQLite keeps any type in any column: a text timestamp is no message field."""
    store = SqliteStore(tmp_path / "typed.sqlite3")
    store.save_message(sid, Message("assistant", "x"))
    run_sql(store, f"UPDATE messages SET {column} = ?", (value,))

    with pytest.raises(MalformedRecord, match="stored message"):
        store.get_history(sid)
    store.close()


@pytest.mark.parametrize(
    "row", [5, None, "text", [1, 2], {"id": 1}, [*range(12)], [1e999, *[None] * 10]]
)
def test_a_row_of_another_shape_raises_malformed_record(row):
    with pytest.raises(MalformedRecord, match="stored message"):
        row_message(row)


@pytest.mark.redis
@pytest.mark.parametrize(
    "member",
    [
        b"not json",
        b"\xff\xfe",
        b"5",
        b"[1, 2]",
        b'{"id": 1}',
        b"[1e999" + b", null" * 10 + b"]",
    ],
)
def test_a_foreign_redis_member_raises_malformed_record(request, tmp_path, member):
    """A history member another program added: a clear error on every read."""
    store = open_store(request, "redis", tmp_path)
    saved = store.save_message("s", Message("user", "hi"))
    with redis_client(store) as client:
        client.zadd(f"{store.prefix}h:s", {member: saved.id + 1})

    for read in (
        lambda: store.get_history("s"),
        lambda: store.get_full_history("s"),
        lambda: store.search_messages("s", ["hi"], limit=5),
        lambda: store.read_messages("s", saved.id, before=0, after=3),
    ):
        with pytest.raises(MalformedRecord, match="stored message"):
            read()
    store.close()


def test_a_foreign_row_that_is_a_message_is_read_through_the_constructor(
    sql_store, sid
):
    sql_store.save_message(sid, Message("assistant", "x"))
    run_sql(
        sql_store,
        "UPDATE {t}messages SET tool_calls = ?, content = ? WHERE session_id = ?",
        ('[{"function": {"name": "f", "arguments": "{}"}, "id": "c1"}]', "a\x01b", sid),
    )

    (read,) = sql_store.get_history(sid)

    assert read.tool_calls == (ToolCall("c1", "f", "{}"),)
    assert kind_of(sql_store) in ("sqlite", "postgres")


@pytest.mark.parametrize(
    "raw",
    ["{broken", "[1, 2]", '{"type": "text"}', "null", '[{"type": "text"}]', "[[[[" * 5],
    ids=["not-json", "not-parts", "an-object", "null-on-user", "bad-part", "deep"],
)
def test_a_broken_content_json_reads_as_the_text_column(sql_store, sid, raw):
    saved = sql_store.save_message(
        sid, Message("user", [{"type": "text", "text": "hi"}, IMAGE])
    )
    run_sql(
        sql_store,
        "UPDATE {t}messages SET content_json = ? WHERE session_id = ?",
        (raw, sid),
    )

    (read,) = sql_store.get_history(sid)

    assert read.content == "hi\n[image]"
    assert read.id == saved.id


def test_a_content_json_of_another_type_reads_as_the_text_column(tmp_path, sid):
    store = SqliteStore(tmp_path / "typed.sqlite3")
    store.save_message(sid, Message("assistant", None, refusal="no"))
    run_sql(store, "UPDATE messages SET content_json = x'5b5d', refusal = x'6e6f'", ())

    (read,) = store.get_history(sid)

    assert (read.content, read.refusal) == ("", None)
    store.close()


def test_a_foreign_writers_parts_are_read_and_checked(sql_store, sid):
    sql_store.save_message(sid, Message("user", "x"))
    run_sql(
        sql_store,
        "UPDATE {t}messages SET content_json = ? WHERE session_id = ?",
        ('[{"type": "text", "text": "a\\u0000b"}, {"type": "x", "v": [1]}]', sid),
    )

    (read,) = sql_store.get_history(sid)

    assert read.to_openai()["content"] == [
        {"type": "text", "text": "ab"},
        {"type": "x", "v": [1]},
    ]


def test_parts_are_kept_as_text_for_readers_of_the_content_column(sql_store, sid):
    sql_store.save_message(
        sid, Message("user", [{"type": "text", "text": "hi"}, IMAGE])
    )

    rows = run_sql(
        sql_store,
        "SELECT content, content_json FROM {t}messages WHERE session_id = ?",
        (sid,),
    )

    assert rows[0][0] == "hi\n[image]"
    assert json.loads(rows[0][1]) == [{"type": "text", "text": "hi"}, IMAGE]


def test_a_subclass_saving_one_message_as_a_batch_of_one_saves_it_once(tmp_path):
    """A batch of one is one statement, not a call back into ``save_message``."""

    class OneAsBatch(SqliteStore):
        def save_message(self, session_id, message):  # as RedisStore does
            return self.save_messages(session_id, [message])[0]

    store = OneAsBatch(str(tmp_path / "one.sqlite3"))
    try:
        saved = store.save_message("s", Message("user", "hi"))
        assert saved.id is not None
        assert [m.content for m in store.get_history("s")] == ["hi"]
        pair = store.save_messages("s", [Message("user", "a"), Message("user", "b")])
        assert [m.id for m in pair] == [saved.id + 1, saved.id + 2]
    finally:
        store.close()


def test_a_batch_of_one_computes_its_row_once_and_writes_the_same_row(
    sql_store, sid, monkeypatch
):
    from memory_summary.adapters.stores.sql import core

    computed = []

    def counted(message):
        computed.append(message)
        return message_values(message)

    monkeypatch.setattr(core, "message_values", counted)
    message = Message("assistant", "hi", metadata={"k": [1, "x"]}, name="n")

    [saved] = sql_store.save_messages(sid, [message])

    assert computed == [message]
    assert sql_store.get_history(sid) == [saved]
    assert attrs.evolve(saved, id=None) == message
