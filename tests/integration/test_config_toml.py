"""A TOML config file: fields at the top level or under ``[memory_summary]``."""

from __future__ import annotations

import pytest

from memory_summary import LLMRef
from memory_summary.config_file import load_config

FIELDS = """\
threshold = 5
keep_recent = 2
summary_model_mode = "custom"
context_window = {"gpt-4o" = 128000, "small" = 8000}
summary_llm = {provider = "local", model = "qwen"}
"""


@pytest.mark.parametrize("table", ["", "[memory_summary]\n"], ids=["top", "table"])
def test_every_field_is_read_at_the_top_level_as_under_the_table(tmp_path, table):
    path = tmp_path / "config.toml"
    path.write_text(table + FIELDS, encoding="utf-8")

    config = load_config(path, environ={})

    assert (config.threshold, config.keep_recent) == (5, 2)
    assert dict(config.context_window) == {"gpt-4o": 128000, "small": 8000}
    assert config.summary_llm == LLMRef("local", "qwen")


def test_a_hosts_own_table_beside_top_level_fields_is_ignored(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        "threshold = 40\ncontextWindow = 9000\n[server]\nport = 8080\n",
        encoding="utf-8",
    )

    config = load_config(path, environ={})

    assert (config.threshold, config.context_window) == (40, 9000)
