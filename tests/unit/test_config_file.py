"""Reading the configuration from variables: unknown names and every error at once."""

from __future__ import annotations

import pytest

from memory_summary import ConfigError
from memory_summary.config_file import load_config, unknown_variables
from memory_summary.domain.errors import ConfigErrors


def test_a_misspelt_field_variable_suggests_the_known_one():
    (error,) = unknown_variables({"MEMORY_SUMMARY_TRESHOLD": "40"})

    assert error.field == "MEMORY_SUMMARY_TRESHOLD"
    assert "did you mean MEMORY_SUMMARY_THRESHOLD?" in error.allowed


def test_a_misspelt_cli_variable_suggests_the_known_option():
    (error,) = unknown_variables({"MEMORY_SUMMARY_CLI_SESIONS": "2"}, ["sessions"])

    assert "did you mean MEMORY_SUMMARY_CLI_SESSIONS?" in error.allowed


@pytest.mark.parametrize(
    "name",
    [
        "MEMORY_SUMMARY_X",  # was "did you mean MEMORY_SUMMARY_PG_DSN?"
        "MEMORY_SUMMARY_CLI_X",  # was "did you mean MEMORY_SUMMARY_CLI_DB?"
        "MEMORY_SUMMARY_QQ",
        "MEMORY_SUMMARY_",
    ],
)
def test_short_garbage_after_the_prefix_suggests_nothing(name):
    """Names were compared whole: the shared 15-character prefix alone made any
    short name look close to some variable."""
    (error,) = unknown_variables({name: "1"}, ["db", "sessions"])

    assert error.allowed == "a known variable"


def test_a_misspelt_dsn_variable_still_suggests_the_known_one():
    (error,) = unknown_variables({"MEMORY_SUMMARY_PG_DNS": "host=db"})

    assert "did you mean MEMORY_SUMMARY_PG_DSN?" in error.allowed


def test_known_and_foreign_variables_are_not_reported():
    environ = {
        "MEMORY_SUMMARY_KEEP_RECENT": "3",
        "MEMORY_SUMMARY_PG_DSN": "host=db",
        "MEMORY_SUMMARY_REDIS_URL": "redis://127.0.0.1:6379/0",
        "MEMORY_SUMMARY_CLI_TURNS": "4",
        "OTHER_THRESHOLD": "1",
    }

    assert unknown_variables(environ, ["turns"]) == []


def test_an_unknown_variable_fails_loading():
    with pytest.raises(ConfigError, match="MEMORY_SUMMARY_TRESHOLD"):
        load_config(environ={"MEMORY_SUMMARY_TRESHOLD": "40"})


def test_every_error_is_reported_at_once():
    environ = {
        "MEMORY_SUMMARY_KEEP_RECENT": "-1",
        "MEMORY_SUMMARY_LOCALE": "fr",
        "MEMORY_SUMMARY_TRESHOLD": "40",
    }

    with pytest.raises(ConfigErrors) as caught:
        load_config(environ=environ)

    fields = [error.field for error in caught.value.errors]
    assert sorted(fields) == [
        "MEMORY_SUMMARY_KEEP_RECENT",
        "MEMORY_SUMMARY_LOCALE",
        "MEMORY_SUMMARY_TRESHOLD",
    ]
    assert "MEMORY_SUMMARY_KEEP_RECENT=-1 is invalid" in str(caught.value)
    assert "MEMORY_SUMMARY_LOCALE='fr'" in str(caught.value)


def test_a_cross_field_rule_is_still_checked():
    with pytest.raises(ConfigError, match="summary_llm"):
        load_config(environ={"MEMORY_SUMMARY_SUMMARY_MODEL_MODE": "custom"})


def test_valid_variables_load():
    config = load_config(
        environ={"MEMORY_SUMMARY_KEEP_RECENT": "4", "MEMORY_SUMMARY_LOCALE": "zh"}
    )

    assert (config.keep_recent, config.locale) == (4, "zh")


def test_fields_valid_only_together_load_from_variables():
    config = load_config(
        environ={"MEMORY_SUMMARY_THRESHOLD": "5", "MEMORY_SUMMARY_KEEP_RECENT": "2"}
    )

    assert (config.threshold, config.keep_recent) == (5, 2)


@pytest.mark.parametrize(
    ("environ", "blamed"),
    [
        (
            {"MEMORY_SUMMARY_THRESHOLD": "30", "MEMORY_SUMMARY_KEEP_RECENT": "30"},
            "MEMORY_SUMMARY_THRESHOLD",
        ),
        ({"MEMORY_SUMMARY_KEEP_RECENT": "30"}, "MEMORY_SUMMARY_KEEP_RECENT"),
    ],
)
def test_a_threshold_set_to_its_default_is_blamed_when_both_are_set(environ, blamed):
    with pytest.raises(ConfigError) as info:
        load_config(environ=environ)

    assert info.value.field == blamed


def test_a_threshold_key_set_to_its_default_is_blamed_with_the_keep(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("threshold = 30\nkeepRecent = 30\n")

    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})

    assert info.value.field == "threshold"
    assert "involved: threshold=30 in" in info.value.allowed


def test_a_field_error_and_a_cross_field_error_are_each_reported():
    environ = {"MEMORY_SUMMARY_THRESHOLD": "5", "MEMORY_SUMMARY_LOCALE": "fr"}

    with pytest.raises(ConfigError) as caught:
        load_config(environ=environ)

    assert "MEMORY_SUMMARY_LOCALE='fr'" in str(caught.value)


def test_a_file_value_names_the_field_and_a_variable_names_the_variable(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("keep_recent = -1\n", encoding="utf-8")

    with pytest.raises(ConfigErrors) as caught:
        load_config(path, environ={"MEMORY_SUMMARY_THRESHOLD": "abc"})

    said = [str(error) for error in caught.value.errors]
    assert "keep_recent=-1 is invalid; allowed: int >= 0" in said
    assert any(s.startswith("MEMORY_SUMMARY_THRESHOLD='abc' is invalid") for s in said)


def test_a_file_key_is_named_as_written(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("keepRecent = -1\n", encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})

    assert str(caught.value) == "keepRecent=-1 is invalid; allowed: int >= 0"


def test_a_rule_between_fields_names_the_field_and_origin_involved(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("contextWindow = 100\n", encoding="utf-8")
    environ = {"MEMORY_SUMMARY_KEEP_RECENT_TOKENS": "90"}

    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=environ)

    assert caught.value.field == "MEMORY_SUMMARY_KEEP_RECENT_TOKENS"
    assert caught.value.allowed.endswith(
        f"; involved: MEMORY_SUMMARY_KEEP_RECENT_TOKENS=90, contextWindow=100 in "
        f"{path}, auto_compress_threshold=0.7 (the default)"
    )
