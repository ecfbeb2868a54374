"""OpenTelemetry for an engine: a span per compression and metrics (extra ``otel``).

``instrument(engine)`` subscribes to the engine's events; nothing else of the library
imports this module, so ``opentelemetry`` loads only when a host asks for it::

    from memory_summary.otel import instrument
    instrumentation = instrument(engine)  # the global providers, or pass your own

Names follow the OpenTelemetry semantic conventions for generative AI where they
apply (``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``,
``gen_ai.conversation.id``, the ``gen_ai.client.token.usage`` histogram with
``gen_ai.token.type``); what is ours is under ``memory_summary.*``:

- span ``memory_summary.compress`` (kind INTERNAL: it spans the whole compression,
  chunks and commits included), from ``Compressing(start)`` to its end, carrying
  the outcome; status ERROR when the compression ended in ``error``;
- ``memory_summary.compressions`` (counter): compressions by outcome kind, code and
  trigger reason; skipped triggers that never started count here too;
- ``memory_summary.compression.duration`` (histogram, s): a compression's wall-clock
  time; ``gen_ai.client.operation.duration`` (histogram, s): each answered summarizer
  call's latency;
- ``gen_ai.client.token.usage`` (histogram): the summarizer's input and output
  tokens per compression (all its calls), ``memory_summary.usage.source`` saying
  whether the provider reported them or the engine counted them;
- ``memory_summary.tokens_saved`` (up-down counter): how much compressions shrank
  the active context (a summary that grew more than it folded counts negative);
- ``memory_summary.actors.live`` and ``memory_summary.queue.depth`` (gauges): live
  session actors, and compression work queued or running.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

try:
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "memory_summary.otel needs OpenTelemetry: pip install 'memory-summary[otel]'"
    ) from exc

from memory_summary import __version__
from memory_summary.domain import (
    Compressing,
    Event,
    Outcome,
    Skipped,
    is_forced,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider
    from opentelemetry.util.types import AttributeValue

    from .engine import SummaryEngine

SCOPE = "memory_summary"
SPAN_NAME = "memory_summary.compress"
OPERATION = "chat"  # gen_ai.operation.name of a summarizer call: a chat completion
DURATION_BUCKETS_S = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)  # the GenAI conventions' advice
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)


def outcome_attributes(outcome: Outcome) -> dict[str, AttributeValue]:
    """Return a compression outcome as span attributes (None values left out)."""
    usage = outcome.usage
    attributes: dict[str, AttributeValue | None] = {
        "gen_ai.operation.name": OPERATION,
        "gen_ai.conversation.id": outcome.session_id,
        "gen_ai.request.model": outcome.model,
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "memory_summary.outcome": outcome.kind,
        "memory_summary.outcome.code": outcome.code,
        "memory_summary.outcome.detail": outcome.detail,
        "memory_summary.reason": outcome.reason,
        "memory_summary.messages.summarized": outcome.summarized,
        "memory_summary.messages.archived": outcome.archived,
        "memory_summary.messages.recovered": outcome.recovered,
        "memory_summary.chunks": outcome.chunks,
        "memory_summary.summarizer.calls": outcome.summarizer_calls,
        "memory_summary.summarizer.duration": usage.summarizer_s,
        "memory_summary.usage.source": usage.source,
        "memory_summary.context.tokens_before": outcome.tokens_before,
        "memory_summary.context.tokens_after": outcome.tokens_after,
        "memory_summary.duration": outcome.duration_s,
    }
    return {k: v for k, v in attributes.items() if v is not None}


class Instrumentation:
    """The spans and instruments of one engine; ``close()`` stops recording.

    Subscribed to the engine's events, so it runs on the engine's threads: every
    method is quick and thread-safe. Spans are started without becoming the current
    span of any thread (the compression runs on a worker of its own).
    """

    def __init__(
        self,
        engine: SummaryEngine,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self._engine = engine
        self._tracer = trace.get_tracer(
            SCOPE, __version__, tracer_provider=tracer_provider
        )
        meter = metrics.get_meter(SCOPE, __version__, meter_provider=meter_provider)
        self._compressions = meter.create_counter(
            "memory_summary.compressions",
            unit="{compression}",
            description="Compression requests by outcome kind, code and reason.",
        )
        self._duration = meter.create_histogram(
            "memory_summary.compression.duration",
            unit="s",
            description="Wall-clock time of a compression.",
        )
        self._call_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Latency of each answered summarizer call.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Summarizer input and output tokens per compression.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self._saved = meter.create_up_down_counter(
            "memory_summary.tokens_saved",
            unit="{token}",
            description="How much compressions shrank the active context.",
        )
        meter.create_observable_gauge(
            "memory_summary.actors.live",
            callbacks=[self._observe_actors],
            unit="{actor}",
            description="Live session actors (idle ones are reaped).",
        )
        meter.create_observable_gauge(
            "memory_summary.queue.depth",
            callbacks=[self._observe_queue],
            unit="{trigger}",
            description="Compression work queued or running.",
        )
        self._lock = threading.Lock()
        self._spans: dict[str, Span] = {}
        self._closed = False
        self._unsubscribe = engine.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        """Record one engine event (the engine calls this; tests may too)."""
        if self._closed:
            return
        if isinstance(event, Compressing):
            if event.status == "start":
                self._start(event)
            else:
                self._end(event)
        elif isinstance(event, Skipped) and not is_forced(event.reason):
            # a forced request that skips was counted with its Compressing end
            self._compressions.add(
                1,
                {
                    "memory_summary.outcome": "skipped",
                    "memory_summary.outcome.code": event.code,
                    "memory_summary.reason": event.reason,
                },
            )

    def _start(self, event: Compressing) -> None:
        span = self._tracer.start_span(
            SPAN_NAME,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": OPERATION,
                "gen_ai.conversation.id": event.session_id,
                "memory_summary.reason": event.reason,
            },
        )
        with self._lock:
            previous = self._spans.pop(event.session_id, None)
            self._spans[event.session_id] = span
        if previous is not None:  # never happens: one compression per session
            previous.end()

    def _end(self, event: Compressing) -> None:
        with self._lock:
            span = self._spans.pop(event.session_id, None)
        outcome = event.outcome
        if outcome is None:  # pragma: no cover - done and error carry one
            if span is not None:
                span.end()
            return
        if span is not None:
            span.set_attributes(outcome_attributes(outcome))
            if event.status == "error":
                span.set_status(Status(StatusCode.ERROR, outcome.detail))
            span.end()
        self._record(outcome)

    def _record(self, outcome: Outcome) -> None:
        kind = {
            "memory_summary.outcome": outcome.kind,
            "memory_summary.outcome.code": outcome.code or "unknown",
            "memory_summary.reason": outcome.reason,
        }
        self._compressions.add(1, kind)
        self._duration.record(outcome.duration_s, kind)
        usage = outcome.usage
        if usage.calls:
            model = {"gen_ai.operation.name": OPERATION}
            if outcome.model is not None:
                model["gen_ai.request.model"] = outcome.model
            for seconds in outcome.call_durations_s:
                self._call_duration.record(seconds, model)
            source = {**model, "memory_summary.usage.source": usage.source or ""}
            for token_type, count in (
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ):
                self._tokens.record(count, {**source, "gen_ai.token.type": token_type})
        if outcome.tokens_before is not None and outcome.tokens_after is not None:
            self._saved.add(
                outcome.tokens_saved, {"memory_summary.reason": outcome.reason}
            )

    def _observe_actors(self, options: CallbackOptions) -> Iterable[Observation]:
        if self._closed:
            return []
        return [Observation(self._engine.stats().live_actors)]

    def _observe_queue(self, options: CallbackOptions) -> Iterable[Observation]:
        if self._closed:
            return []
        return [Observation(self._engine.stats().queue_depth)]

    def close(self) -> None:
        """Stop recording: unsubscribe, end open spans, report no more gauges."""
        self._closed = True
        self._unsubscribe()
        with self._lock:
            spans, self._spans = list(self._spans.values()), {}
        for span in spans:
            span.end()


def instrument(
    engine: SummaryEngine,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> Instrumentation:
    """Trace and measure ``engine``'s compressions with OpenTelemetry.

    Without providers the global ones are used (``opentelemetry.trace`` and
    ``opentelemetry.metrics``' set_*_provider). Returns the instrumentation;
    ``close()`` it to stop.

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from memory_summary import SummaryEngine
        >>> from memory_summary.adapters import InMemoryStore
        >>> engine = SummaryEngine(InMemoryStore())
        >>> otel = instrument(engine, tracer_provider=TracerProvider())
        >>> otel.close()
    """
    return Instrumentation(engine, tracer_provider, meter_provider)
