"""The demo drives its sessions as a chat server does: the conversation handle."""

from __future__ import annotations

from memory_summary import SummaryConfig
from memory_summary.adapters import SqliteStore
from memory_summary.conversations import session_turns
from memory_summary.demo import HOST_CONTEXT_TOKENS, run_demo


def _shape(message):
    calls = tuple((c.id, c.name, c.arguments) for c in message.tool_calls or ())
    return (message.role, message.text, calls, message.tool_call_id)


def test_every_generated_message_is_stored_once_in_order_and_no_prompt(tmp_path):
    db = tmp_path / "demo.sqlite3"

    report = run_demo(db, sessions=2, turns=12, workers=2, progress=False)

    assert report.turns == 24
    assert report.turn_p50_us > 0  # the handle's calls were timed
    store = SqliteStore(db)
    try:
        for index in range(2):
            expected = [
                _shape(m) for turn in session_turns(index, 12, 7) for m in turn.messages
            ]
            stored = [_shape(m) for m in store.get_full_history(f"s{index}")]
            assert stored == expected  # archived and active, nothing lost or doubled
    finally:
        store.close()


def test_the_hosts_context_window_is_kept_and_the_demos_is_the_default(
    tmp_path, monkeypatch
):
    seen = []
    import memory_summary.demo as demo

    real = demo.SummaryEngine

    def engine(*args, config, **kwargs):
        seen.append(config.context_window)
        return real(*args, config=config, **kwargs)

    monkeypatch.setattr(demo, "SummaryEngine", engine)
    run_demo(tmp_path / "a.sqlite3", sessions=1, turns=2, workers=1, progress=False)
    run_demo(
        tmp_path / "b.sqlite3",
        sessions=1,
        turns=2,
        workers=1,
        progress=False,
        config=SummaryConfig(context_window=32_000),
    )

    assert seen == [HOST_CONTEXT_TOKENS, 32_000]
