"""``benchmarks/facts.py``, ``quality.py``, ``recall_questions.py``, run as processes.

(And ``recall_expansion.py``'s usage errors: its run needs NLTK and WordNet.)

The benchmark commands of a source checkout (not in the wheel): their options, exit
codes and reports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from summary_quality.synthetic import generate_dialogue

pytestmark = pytest.mark.e2e

BENCHMARKS = Path(__file__).absolute().parents[2] / "benchmarks"


def run(name: str, *args: str, env: dict[str, str] | None = None, cwd=None):
    """Run ``benchmarks/<name>.py`` with ``args`` in this interpreter."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("MEMORY_SUMMARY_")
    }
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        cwd=cwd,
    )


def test_facts_runs_one_conversation_per_locale_and_reports_every_kind():
    result = run("facts", "--conversations", "1")

    assert result.returncode == 0, result.stderr
    for row in ("person", "tool_outcome", "all facts", "summarizer calls"):
        assert f"\n  {row} " in result.stdout
    assert "extractive (offline, not an LLM)" in result.stdout
    assert "facts: zh conversation 1/1:" in result.stderr  # progress lines


def test_facts_prints_json_and_rejects_bad_input():
    result = run("facts", "--conversations", "1", "--locale", "zh", "--json", "--quiet")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["locales"] == ["zh"]
    (conversation,) = report["conversations"]
    assert conversation["compressions"] >= 5
    assert len(conversation["facts"]) == 12
    assert report["retention"]["zh"]["all"]["planted"] == 12
    assert result.stderr == ""
    assert run("facts", "--conversations", "0").returncode == 2
    assert run("facts", "--locale", "fr").returncode == 2


def test_generated_chats_give_a_report_of_every_view(tmp_path):
    result = run("quality", "--generated", "2", "--json", "--quiet", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["source"] == "generated"
    assert [r["budget_factor"] for r in report["runs"]] == [1, 4]
    run_ = report["runs"][0]
    assert list(run_["checkpoints"]) == ["25%", "50%", "75%", "100%"]
    assert set(run_["headline"]) == set(report["texts"])
    assert run_["headline"]["summary"]["of"] > 0
    assert run_["summarizer_calls"] > 0


def test_data_in_locomo_shape_is_read_from_a_path(tmp_path):
    data = tmp_path / "chats.json"
    data.write_text(json.dumps([generate_dialogue(3, 0)]), encoding="utf-8")

    result = run(
        "quality", "--data", str(data), "--budget-factors", "1", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "end, cat 1/2/4" in result.stdout
    assert "keep_last" in result.stdout


def test_without_data_it_skips_with_a_message_and_bad_data_fails(tmp_path):
    skipped = run("quality", cwd=tmp_path)
    (tmp_path / "bad.json").write_text('{"not": "a list"}', encoding="utf-8")
    bad = run("quality", "--data", str(tmp_path / "bad.json"), cwd=tmp_path)

    assert skipped.returncode == 0
    assert "no LoCoMo data" in skipped.stderr
    assert bad.returncode == 3  # bad input, as documented
    assert "list of conversations" in bad.stderr


def _short(turns: int, sample_id: str = "short") -> dict:
    """Return a well-formed LoCoMo conversation of ``turns`` turns in one session."""
    dialogue = generate_dialogue(3, 0)
    said = dialogue["conversation"]["session_1"][:turns]
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": dialogue["conversation"]["speaker_a"],
            "speaker_b": dialogue["conversation"]["speaker_b"],
            "session_1_date_time": dialogue["conversation"]["session_1_date_time"],
            "session_1": said,
        },
        "qa": dialogue["qa"],
    }


def test_conversations_of_fewer_than_four_turns_are_replayed(tmp_path):
    data = tmp_path / "short.json"
    chats = [_short(n, f"c{n}") for n in (0, 1, 2, 3)] + [generate_dialogue(3, 1)]
    data.write_text(json.dumps(chats), encoding="utf-8")

    result = run(
        "quality", "--data", str(data), "--budget-factors", "1", "--json", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["conversations"] == ["c0", "c1", "c2", "c3", chats[-1]["sample_id"]]
    assert list(report["runs"][0]["checkpoints"]) == ["25%", "50%", "75%", "100%"]


@pytest.mark.parametrize(
    "content",
    [None, "", "{not json", "[]", '{"not": "a list"}', '[{"conversation": 3}]', "dir"],
    ids=["missing", "empty", "not-json", "no-conversation", "not-a-list", "bad-shape",
         "a-directory"],
)  # fmt: skip
def test_data_that_cannot_be_replayed_is_bad_input_exit_3(tmp_path, content):
    data = tmp_path / "data.json"
    if content == "dir":
        data.mkdir()
    elif content is not None:
        data.write_text(content, encoding="utf-8")

    result = run("quality", "--data", str(data), "--quiet", cwd=tmp_path)

    assert result.returncode == 3, (result.stdout, result.stderr)
    assert result.stderr.startswith("quality: ")
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_summarizer_that_fails_every_call_exits_4(tmp_path):
    result = run(
        "quality", "--generated", "1", "--budget-factors", "1", "--quiet",
        "--base-url", "http://127.0.0.1:1/v1", "--model", "m",
        cwd=tmp_path, env={"OPENAI_API_KEY": "k"},
    )  # fmt: skip

    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "summarizer failed" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("factor", ["0", "-1", "nan", "inf", "x", "1e400"])
def test_a_budget_factor_that_is_no_budget_is_a_usage_error(tmp_path, factor):
    result = run(
        "quality", "--generated", "1", "--budget-factors", "1", factor, cwd=tmp_path
    )

    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "--budget-factors" in result.stderr
    assert "Traceback" not in result.stderr


def test_recall_questions_reports_each_half_and_the_questions_that_changed(tmp_path):
    out = tmp_path / "before.json"
    first = run("recall_questions", "--quick", "--out", str(out), cwd=tmp_path)

    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(
        "unseen (24): all: 100.0%, 1: 100.0%, 4: 100.0%, @5: "
    )
    before = json.loads(out.read_text(encoding="utf-8"))
    assert len(before) == 24
    assert all(1 <= row["rank"] <= 10 for row in before.values())
    flipped = next(iter(before))
    before[flipped]["found"] = False
    out.write_text(json.dumps(before), encoding="utf-8")
    second = run("recall_questions", "--quick", "--against", str(out), cwd=tmp_path)

    assert second.returncode == 0, second.stderr
    assert f"+ unseen 4 {flipped}: " in second.stdout
    assert (
        sum(line.startswith(("+ ", "- ")) for line in second.stdout.splitlines()) == 1
    )
    assert "\nunseen: 1 gained, 0 lost (sign test p = 1.00)\n" in second.stdout


def test_recall_questions_without_data_is_a_usage_error(tmp_path):
    result = run("recall_questions", cwd=tmp_path)

    assert result.returncode == 2
    assert "--data" in result.stderr


def test_recall_expansion_without_data_or_wordnet_is_a_usage_error(tmp_path):
    no_data = run("recall_expansion", cwd=tmp_path)
    data = tmp_path / "locomo.json"
    data.write_text("[]", encoding="utf-8")
    no_wordnet = run(
        "recall_expansion", "--data", str(data), "--wordnet", str(tmp_path)
    )

    assert (no_data.returncode, no_wordnet.returncode) == (2, 2)
    assert "--data" in no_data.stderr
    assert "no WordNet 3.0 files" in no_wordnet.stderr
