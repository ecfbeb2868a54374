"""The pure core: values, rules and decisions, with no I/O, threads or clock."""

from __future__ import annotations

from .breaker import (
    Breaker,
    breaker_admit,
    breaker_failed,
    breaker_is_open,
    breaker_released,
    breaker_succeeded,
)
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
from .pins import extract_pins, pinned_section, with_pins
from .plan import CompressionPlan, injection_budget_tokens, plan_compression
from .ports import (
    Archive,
    CommitResult,
    CompactionStore,
    FenceReason,
    MemoryStore,
    PoppingStore,
    StreamingSummarizer,
    Summarizer,
    TokenCounter,
)
from .prompt import latest_todo_call, summary_request, system_prompt
from .reason import Reason, is_forced
from .render import render_message, render_transcript
from .state import Busy, Idle, SessionState, on_finished, on_trigger
from .summary import (
    NAMESPACE,
    QUARANTINE_NAMESPACE,
    SummaryRecord,
    Unreadable,
    add_unsummarized,
    drop_unsummarized_through,
    read_record,
    resummarized_record,
    trimmed_record,
)
from .text import cut_chars, normalize_text
from .truncate import truncate_to_tokens
from .verdict import Accepted, Rejected, RejectReason, check_summary
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
    "QUARANTINE_NAMESPACE",
    "SUMMARY_KIND",
    "Accepted",
    "Archive",
    "Breaker",
    "Busy",
    "Chunk",
    "ClearResult",
    "CommitResult",
    "CompactionStore",
    "CompressRequested",
    "Compressing",
    "CompressionPlan",
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
    "PoppingStore",
    "Reason",
    "RejectReason",
    "Rejected",
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
    "Unreadable",
    "WindowSplit",
    "add_unsummarized",
    "assemble_messages",
    "breaker_admit",
    "breaker_failed",
    "breaker_is_open",
    "breaker_released",
    "breaker_succeeded",
    "check_summary",
    "cut_chars",
    "drop_unsummarized_through",
    "extract_pins",
    "find_safe_cut",
    "fold_chunks",
    "injection_budget_tokens",
    "injection_text",
    "input_limit_tokens",
    "is_forced",
    "is_summarized",
    "latest_todo_call",
    "next_record",
    "normalize_text",
    "on_finished",
    "on_trigger",
    "pinned_section",
    "plan_chunks",
    "plan_compression",
    "probe_limit",
    "read_record",
    "render_message",
    "render_transcript",
    "resummarized_record",
    "separator_message",
    "should_compress",
    "split_window",
    "summary_budget_tokens",
    "summary_message",
    "summary_request",
    "system_prompt",
    "trimmed_record",
    "truncate_to_tokens",
    "with_pins",
]
