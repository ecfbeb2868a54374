"""The pure core: values, rules and decisions, with no I/O, threads or clock."""

from __future__ import annotations

from .budget import Chunk, input_limit_tokens, plan_chunks, summary_budget_tokens
from .compaction import FoldChunk, Outcome, fold_chunks, next_record, separator_message
from .config import SummaryConfig
from .cut import find_safe_cut
from .errors import (
    ConfigError,
    EngineClosed,
    MalformedRecord,
    MemorySummaryError,
    MessageError,
    StoreError,
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
    TokenizerError,
)
from .events import ClearResult, Compressing, CompressRequested, Event
from .injection import assemble_messages, injection_text, summary_message
from .model import EVENT_MARKER, SUMMARY_KIND, LLMRef, Message, ToolCall
from .ports import (
    Archive,
    CompactionStore,
    CommitResult,
    FenceReason,
    MemoryStore,
    StreamingSummarizer,
    Summarizer,
    TokenCounter,
)
from .prompt import latest_todo_call, summary_request, system_prompt
from .reason import Reason
from .render import render_message, render_transcript
from .state import Busy, Idle, SessionState, on_finished, on_trigger
from .summary import NAMESPACE, SummaryRecord
from .text import cut_chars, normalize_text
from .truncate import truncate_to_tokens
from .window import (
    WindowSplit,
    is_summarized,
    probe_limit,
    should_compress,
    split_window,
)

__all__ = [
    "EVENT_MARKER",
    "NAMESPACE",
    "SUMMARY_KIND",
    "Archive",
    "Busy",
    "Chunk",
    "ClearResult",
    "CommitResult",
    "CompactionStore",
    "CompressRequested",
    "Compressing",
    "ConfigError",
    "EngineClosed",
    "Event",
    "FenceReason",
    "FoldChunk",
    "Idle",
    "LLMRef",
    "MalformedRecord",
    "MemoryStore",
    "MemorySummaryError",
    "Message",
    "MessageError",
    "Outcome",
    "Reason",
    "SessionState",
    "StoreError",
    "StreamingSummarizer",
    "Summarizer",
    "SummarizerContextError",
    "SummarizerError",
    "SummarizerTimeout",
    "SummaryConfig",
    "SummaryRecord",
    "TokenCounter",
    "TokenizerError",
    "ToolCall",
    "WindowSplit",
    "assemble_messages",
    "cut_chars",
    "find_safe_cut",
    "fold_chunks",
    "injection_text",
    "input_limit_tokens",
    "is_summarized",
    "latest_todo_call",
    "next_record",
    "normalize_text",
    "on_finished",
    "on_trigger",
    "plan_chunks",
    "probe_limit",
    "render_message",
    "render_transcript",
    "separator_message",
    "should_compress",
    "split_window",
    "summary_budget_tokens",
    "summary_message",
    "summary_request",
    "system_prompt",
    "truncate_to_tokens",
]
