"""A TOML config file: fields at the top level or under ``[memory_summary]``."""

from __future__ import annotations

import re

import pytest

from memory_summary import ConfigError, LLMRef
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


@pytest.mark.parametrize(
    "text",
    [
        "threshold = 50\nkeep_recent = 7\n[memory_summary.cli]\ndb = 'x.sqlite3'\n",
        "threshold = 50\n[memory_summary]\nkeep_recent = 7\n",
        "keepRecent = 7\n[memory_summary]\nthreshold = 50\n[memory_summary.cli]\n",
        "threshold = 50\nname = 'my app'\n[server]\nport = 1\n[memory_summary]\n"
        "keep_recent = 7\n",
    ],
    ids=["top+cli", "top+table", "camel+table+cli", "host-keys"],
)
def test_top_level_fields_and_the_table_merge(tmp_path, text):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")

    config = load_config(path, environ={})

    assert (config.threshold, config.keep_recent) == (50, 7)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "threshold = 50\n[memory_summary]\nthreshold = 40\n",
            "also set in [memory_summary] (as 'threshold')",
        ),
        (
            "keepRecent = 5\n[memory_summary]\nkeep_recent = 6\n",
            "also set in [memory_summary] (as 'keep_recent')",
        ),
        (
            "keepRecnt = 5\n[memory_summary]\nthreshold = 40\n",
            "did you mean 'keepRecent'?",
        ),
        ("memory_summary = 3\n", "a table of configuration fields"),
    ],
    ids=["twice", "twice-camel", "top-level-typo", "not-a-table"],
)
def test_a_field_lost_between_the_top_level_and_the_table_is_an_error(
    tmp_path, text, says
):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ConfigError, match=re.escape(says)):
        load_config(path, environ={})
