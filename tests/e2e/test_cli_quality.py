"""``memory-summary quality``: the real-conversation benchmark, run as a process."""

from __future__ import annotations

import json

import pytest

from memory_summary.quality.synthetic import generate_dialogue
from tests.e2e.test_cli import run

pytestmark = pytest.mark.e2e


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
    assert bad.returncode == 1
    assert "list of conversations" in bad.stderr
