"""The summarizer contract from the kit, used from outside the project.

A test module in a directory of its own subclasses ``SummarizerContract`` for
summarizers it defines, and pytest runs it in a child process: a summarizer that keeps
the port passes; one that lets its driver's exception escape, or whose stream pieces
do not join to its answer, is caught.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from memory_summary.testing.summarizer_contract import SummarizerContract

OUTSIDE_MODULE = textwrap.dedent(
    '''
    from memory_summary import SummarizerError
    from memory_summary.testing.summarizer_contract import SummarizerContract


    class EchoSummarizer:
        """Answers with the first words of the request: keeps the port."""

        def __init__(self, down=False):
            self.down = down

        def context_length(self, model=None):
            return 8192

        def complete(self, messages, *, model=None, max_tokens, temperature):
            if self.down:
                raise SummarizerError("the endpoint is down")
            return " ".join(messages[-1].text.split()[:20])

        def stream(self, messages, *, model=None, max_tokens, temperature):
            if self.down:
                raise SummarizerError("the endpoint is down")
            words = self.complete(messages, max_tokens=max_tokens,
                                  temperature=temperature).split(" ")
            for index, word in enumerate(words):
                yield word if index == 0 else " " + word


    class LeakySummarizer(EchoSummarizer):
        """Lets its driver's error escape and streams something else: caught."""

        def complete(self, messages, *, model=None, max_tokens, temperature):
            if self.down:
                raise ConnectionError("driver error")
            return "answer"

        def stream(self, messages, *, model=None, max_tokens, temperature):
            yield "another answer"


    class TestEcho(SummarizerContract):
        def make_summarizer(self, request):
            return EchoSummarizer()

        def make_failing_summarizer(self, request):
            return EchoSummarizer(down=True)


    class TestLeaky(SummarizerContract):
        def make_summarizer(self, request):
            return LeakySummarizer()

        def make_failing_summarizer(self, request):
            return LeakySummarizer(down=True)
    '''
)


def run_pytest(directory, *args):
    env = {**os.environ, "HYPOTHESIS_PROFILE": "default"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_summarizer_defined_outside_the_project_passes_the_contract(tmp_path):
    (tmp_path / "test_my_summarizer.py").write_text(OUTSIDE_MODULE, encoding="utf-8")
    contract_tests = sum(
        1 for name in dir(SummarizerContract) if name.startswith("test_")
    )

    result = run_pytest(tmp_path, "test_my_summarizer.py::TestEcho", "-rs")

    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary
    assert "failed" not in summary
    assert int(summary.split(" passed")[0].split()[-1]) >= contract_tests - 1


def test_the_contract_catches_escaping_driver_errors_and_diverging_streams(tmp_path):
    (tmp_path / "test_my_summarizer.py").write_text(OUTSIDE_MODULE, encoding="utf-8")

    result = run_pytest(tmp_path, "test_my_summarizer.py::TestLeaky")

    assert result.returncode == 1
    for caught in (
        "test_a_failing_call_raises_a_summarizer_error",
        "test_stream_pieces_join_to_what_complete_returns",
    ):
        assert f"FAILED test_my_summarizer.py::TestLeaky::{caught}" in result.stdout


def test_without_the_extra_the_summarizer_kit_names_it(tmp_path):
    probe = (
        "import sys; sys.modules['hypothesis'] = None; "
        "import memory_summary.testing.summarizer_contract"
    )

    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1
    assert "pip install 'memory-summary[testing]'" in result.stderr
