"""The host process exits after ``stop()`` whatever its summarizer does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.e2e

HOST = textwrap.dedent(
    """
    import threading
    from memory_summary import Message, SummaryConfig, SummaryEngine
    from memory_summary.adapters import InMemoryStore

    entered = threading.Event()

    class Hung:
        def context_length(self, model=None):
            return 8192

        def complete(self, messages, **kwargs):
            entered.set()
            threading.Event().wait()  # never answers

    store = InMemoryStore()
    for i in range(12):
        store.save_message("s1", Message("user", f"message {i}."))
    engine = SummaryEngine(store, Hung(), config=SummaryConfig(threshold=10,
        keep_recent=4, summarizer_timeout_s=600))
    engine.compress("s1")
    assert entered.wait(30), "the summarizer was never called"
    print("stopped in time:", engine.stop(timeout=1), flush=True)
    """
)


def test_the_host_exits_after_stop_with_a_summarizer_that_never_answers(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", HOST],
        capture_output=True,
        text=True,
        timeout=120,  # a hang fails the test instead of blocking the suite
        check=False,
        cwd=tmp_path,  # never the repository, whose folders shadow the package
    )

    assert done.returncode == 0, done.stderr
    assert "stopped in time: True" in done.stdout  # the job gave up on the call
