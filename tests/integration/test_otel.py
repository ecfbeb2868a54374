"""OpenTelemetry: spans and metrics captured by the SDK's in-memory exporters."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from memory_summary import SummarizerError, SummaryConfig
from memory_summary.otel import SPAN_NAME, instrument
from memory_summary.testing.fakes import InstrumentedSummarizer, ScriptedSummarizer
from tests.integration.conversation import fill

SMALL = SummaryConfig(threshold=10, keep_recent=4)
GOOD = "The user and the assistant discussed the weather forecast for Paris in detail."


@pytest.fixture
def telemetry():
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield exporter, reader, tracer_provider, meter_provider
    tracer_provider.shutdown()
    meter_provider.shutdown()


def points(reader, name):
    """Return the data points of metric ``name`` as (attributes, point) pairs."""
    found = []
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found += [(dict(p.attributes), p) for p in metric.data.data_points]
    return found


def instrumented(engine, telemetry):
    _, _, tracer_provider, meter_provider = telemetry
    return instrument(
        engine, tracer_provider=tracer_provider, meter_provider=meter_provider
    )


def test_a_compression_is_one_span_carrying_its_outcome(store, make_engine, telemetry):
    exporter = telemetry[0]
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    instrumented(engine, telemetry)
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    (span,) = exporter.get_finished_spans()
    assert span.name == SPAN_NAME
    assert span.kind == SpanKind.INTERNAL
    assert span.status.status_code == StatusCode.UNSET
    attributes = dict(span.attributes)
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.conversation.id"] == "s1"
    assert attributes["gen_ai.request.model"] == outcome.model
    assert attributes["gen_ai.usage.input_tokens"] == outcome.usage.input_tokens > 0
    assert attributes["gen_ai.usage.output_tokens"] == outcome.usage.output_tokens
    assert attributes["memory_summary.outcome"] == "compressed"
    assert attributes["memory_summary.outcome.code"] == "summary_written"
    assert attributes["memory_summary.reason"] == "manual"
    assert attributes["memory_summary.messages.archived"] == 8
    assert attributes["memory_summary.usage.source"] == "counted"
    assert attributes["memory_summary.context.tokens_before"] == outcome.tokens_before
    assert attributes["memory_summary.context.tokens_after"] == outcome.tokens_after
    assert span.end_time - span.start_time > 0


def test_a_failed_compression_is_an_error_span(store, make_engine, telemetry):
    exporter = telemetry[0]
    engine = make_engine(store, ScriptedSummarizer(SummarizerError("down")))
    instrumented(engine, telemetry)
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == outcome.detail
    assert span.attributes["memory_summary.outcome"] == "trimmed"
    assert span.attributes["memory_summary.outcome.code"] == "summarizer_failed"
    assert "memory_summary.usage.source" not in span.attributes  # no call answered


def test_metrics_count_outcomes_tokens_savings_and_durations(
    store, make_engine, telemetry
):
    _, reader = telemetry[:2]
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    instrumented(engine, telemetry)
    fill(store, "s1", 12)
    fill(store, "s2", 12)
    fill(store, "s3", 2)
    token = store.acquire_lease("s2", owner="another-host:1:2:3", ttl_s=3600)

    first = engine.compress("s1").result(timeout=10)
    engine.compress("s3").result(timeout=10)  # nothing to fold
    engine.turn_after("s2")  # another worker holds the lease: skipped
    assert engine.wait_idle(timeout=10)
    store.release_lease("s2", token)

    counts = {
        (
            a["memory_summary.outcome"],
            a["memory_summary.outcome.code"],
            a["memory_summary.reason"],
        ): p.value
        for a, p in points(reader, "memory_summary.compressions")
    }
    assert counts == {
        ("compressed", "summary_written", "manual"): 1,
        ("skipped", "nothing_to_fold", "manual"): 1,
        ("skipped", "lease_held", "turn"): 1,
    }
    tokens = {
        a["gen_ai.token.type"]: p
        for a, p in points(reader, "gen_ai.client.token.usage")
    }
    assert (tokens["input"].sum, tokens["input"].count) == (
        first.usage.input_tokens,
        1,
    )
    assert tokens["output"].sum == first.usage.output_tokens
    input_attributes = next(
        a
        for a, _ in points(reader, "gen_ai.client.token.usage")
        if a["gen_ai.token.type"] == "input"
    )
    assert input_attributes["gen_ai.request.model"] == first.model
    assert input_attributes["memory_summary.usage.source"] == "counted"
    (saved,) = points(reader, "memory_summary.tokens_saved")
    assert saved[1].value == first.tokens_saved
    durations = points(reader, "memory_summary.compression.duration")
    assert sum(p.count for _, p in durations) == 2  # the two that started
    (calls,) = points(reader, "gen_ai.client.operation.duration")
    assert calls[0] == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": first.model,
    }
    assert calls[1].count == len(first.call_durations_s) == 1
    assert calls[1].sum == pytest.approx(first.usage.summarizer_s)


def test_gauges_report_live_actors_and_queue_depth(store, make_engine, telemetry):
    _, reader = telemetry[:2]
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm, config=SMALL)
    instrumented(engine, telemetry)
    fill(store, "s1", 12)

    pending = engine.compress("s1")
    assert llm.entered.wait(10)
    engine.compress("s1")  # queued behind the running one

    (actors,) = points(reader, "memory_summary.actors.live")
    (depth,) = points(reader, "memory_summary.queue.depth")
    assert actors[1].value == engine.stats().live_actors == 1
    assert depth[1].value >= 1
    gate.set()
    pending.result(timeout=10)
    assert engine.wait_idle(timeout=10)
    (depth,) = points(reader, "memory_summary.queue.depth")
    assert depth[1].value == 0


def test_close_stops_recording(store, make_engine, telemetry):
    exporter, reader = telemetry[:2]
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    instrumentation = instrumented(engine, telemetry)
    instrumentation.close()
    fill(store, "s1", 12)

    engine.compress("s1").result(timeout=10)

    assert exporter.get_finished_spans() == ()
    assert points(reader, "memory_summary.compressions") == []
    assert points(reader, "memory_summary.actors.live") == []


def test_the_library_never_imports_opentelemetry_unless_asked(tmp_path):
    code = (
        "import sys\n"
        "import memory_summary\n"
        "from memory_summary import Message, SummaryEngine\n"
        "from memory_summary.adapters import InMemoryStore\n"
        "store = InMemoryStore()\n"
        "with SummaryEngine(store) as engine:\n"
        "    for i in range(40):\n"
        "        store.save_message('s', Message('user', f'fact {i}.'))\n"
        "    engine.compress('s').result(timeout=30)\n"
        "    engine.usage()\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not the repository: its folders would shadow the package
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
