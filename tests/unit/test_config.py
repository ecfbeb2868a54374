from __future__ import annotations

import pytest

from memory_summary import ConfigError, LLMRef, SummaryConfig
from memory_summary.domain.errors import ConfigErrors


def test_defaults_are_the_seeds():
    config = SummaryConfig()

    assert (config.threshold, config.keep_recent) == (30, 20)
    assert config.summary_token_ratio == 0.05
    assert config.auto_compress_threshold == 0.7
    assert config.summary_prompt == ""
    assert config.summary_model_mode == "global"
    assert config.summary_llm is None
    assert (config.locale, config.truncate_chars, config.probe_floor) == (
        "en",
        200,
        200,
    )
    assert config.todo_tool_names == ("manage_todo_list", "todo_manage")
    assert config.max_concurrent_summaries == 4


def test_from_mapping_takes_seed_camel_case_and_snake_case():
    config = SummaryConfig.from_mapping(
        {
            "threshold": 40,
            "keepRecent": 10,
            "summaryTokenRatio": 0.1,
            "autoCompressThreshold": 0,
            "summaryPrompt": "Be brief.",
            "summaryModelMode": "custom",
            "summaryLLM": {"provider": "local", "model": "qwen"},
            "truncate_chars": 100,
        }
    )

    assert config.keep_recent == 10
    assert config.summary_llm == LLMRef("local", "qwen")
    assert config.auto_compress_threshold == 0
    assert config.truncate_chars == 100


def test_unknown_key_suggests_the_closest_valid_key():
    with pytest.raises(ConfigError, match="did you mean 'keepRecent'"):
        SummaryConfig.from_mapping({"keepRecnt": 5})


def test_the_same_field_twice_is_rejected():
    with pytest.raises(ConfigError, match="each field once"):
        SummaryConfig.from_mapping({"keepRecent": 5, "keep_recent": 6})


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("threshold", 0, "int >= 1"),
        ("threshold", True, "int >= 1"),
        ("threshold", 3.0, "int >= 1"),
        ("keep_recent", -1, "int >= 0"),
        ("summary_token_ratio", 0, "(0, 1]"),
        ("summary_token_ratio", 1.5, "(0, 1]"),
        ("auto_compress_threshold", -0.1, "[0, 1]"),
        ("auto_compress_threshold", float("nan"), "[0, 1]"),
        ("summary_model_mode", "auto", "'global' / 'custom' / 'session'"),
        ("locale", "fr", "'en' / 'zh'"),
        ("summary_prompt", 3, "text"),
        ("summary_llm", "openai/gpt", "LLMRef"),
        ("todo_tool_names", "todo", "list of tool names"),
        ("actor_idle_s", 0, "> 0"),
    ],
)
def test_out_of_range_values_name_field_value_and_allowed(field, value, allowed):
    with pytest.raises(ConfigError) as info:
        SummaryConfig(**{field: value})

    assert info.value.field == field
    assert allowed in str(info.value)
    assert str(info.value).startswith(f"{field}=")


def test_custom_mode_needs_summary_llm():
    with pytest.raises(ConfigError) as info:
        SummaryConfig(summary_model_mode="custom")

    assert info.value.field == "summary_llm"


def test_keep_recent_zero_has_an_effective_floor_of_one():
    assert SummaryConfig(keep_recent=0).effective_keep_recent == 1


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_to_mapping_round_trips():
    config = SummaryConfig(
        summary_model_mode="custom", summary_llm=LLMRef("p", "m"), locale="zh"
    )

    assert SummaryConfig.from_mapping(config.to_mapping()) == config


def test_summarizer_failure_defaults_trim_with_a_five_failure_breaker():
    config = SummaryConfig()

    assert config.on_summarizer_failure == "trim"
    assert config.breaker_failures == 5
    assert config.breaker_cooldown_s == 30.0


def test_failure_fields_take_camel_case_and_snake_case():
    camel = SummaryConfig.from_mapping(
        {
            "onSummarizerFailure": "keep",
            "breakerFailures": 2,
            "breakerCooldownS": 7.5,
        }
    )
    snake = SummaryConfig.from_mapping(
        {
            "on_summarizer_failure": "keep",
            "breaker_failures": 2,
            "breaker_cooldown_s": 7.5,
        }
    )

    assert camel == snake
    assert (camel.on_summarizer_failure, camel.breaker_failures) == ("keep", 2)
    assert camel.breaker_cooldown_s == 7.5


def test_an_integer_cooldown_is_accepted():
    assert SummaryConfig(breaker_cooldown_s=1).breaker_cooldown_s == 1


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("on_summarizer_failure", "drop", "'trim' / 'keep'"),
        ("on_summarizer_failure", None, "'trim' / 'keep'"),
        ("breaker_failures", 0, "int >= 1"),
        ("breaker_failures", True, "int >= 1"),
        ("breaker_failures", 2.0, "int >= 1"),
        ("breaker_cooldown_s", 0, "> 0"),
        ("breaker_cooldown_s", -1.0, "> 0"),
        ("breaker_cooldown_s", float("inf"), "finite"),
        ("breaker_cooldown_s", float("nan"), "finite"),
        ("breaker_cooldown_s", "30", "> 0"),
    ],
)
def test_failure_fields_name_field_value_and_allowed(field, value, allowed):
    with pytest.raises(ConfigError) as info:
        SummaryConfig.from_mapping({field: value})

    assert info.value.field == field
    assert info.value.value is value or info.value.value == value
    assert allowed in str(info.value)


def test_a_misspelt_failure_key_suggests_the_right_one():
    with pytest.raises(ConfigError, match="did you mean 'breakerCooldownS'"):
        SummaryConfig.from_mapping({"breakerCooldown": 5})


def test_failure_fields_round_trip_through_a_mapping():
    config = SummaryConfig(
        on_summarizer_failure="keep", breaker_failures=9, breaker_cooldown_s=0.25
    )

    assert SummaryConfig.from_mapping(config.to_mapping()) == config


def test_a_context_window_beyond_any_model_is_refused():
    with pytest.raises(ConfigError, match="context_window"):
        SummaryConfig(context_window=10**400)
    with pytest.raises(ConfigError, match="context_window"):
        SummaryConfig(context_window={"gpt-4o": 10**12})


def test_a_token_keep_at_the_trigger_is_refused_naming_both_fields():
    with pytest.raises(ConfigError, match=r"keep_recent_tokens=.*context_window=8000"):
        SummaryConfig(context_window=8000, keep_recent_tokens=5600)
    assert SummaryConfig(context_window=8000, keep_recent_tokens=5599)


def test_a_threshold_at_the_effective_keep_is_refused():
    with pytest.raises(ConfigError, match="threshold=1"):
        SummaryConfig(threshold=1, keep_recent=0)


def test_a_window_mapping_is_looked_up_by_name_then_prefix_then_default():
    config = SummaryConfig(
        context_window={"gpt-4o": 128_000, "gpt-4o-mini": 64_000, "default": 8_000}
    )

    assert config.window_for("gpt-4o-mini-2024") == 64_000
    assert config.window_for("gpt-4o-2024") == 128_000
    assert config.window_for("llama") == 8_000
    assert config.keep_tokens_for("gpt-4o") == 25_600
    assert hash(config) == hash(SummaryConfig.from_mapping(config.to_mapping()))


def test_from_mapping_reports_every_key_and_field_error_at_once():
    with pytest.raises(ConfigErrors) as info:
        SummaryConfig.from_mapping({"treshold": 1, "keep_recent": -1, "locale": "fr"})

    fields = [error.field for error in info.value.errors]
    assert fields == ["treshold", "keep_recent", "locale"]
    assert "did you mean 'threshold'?" in str(info.value)


@pytest.mark.parametrize(
    ("data", "first"),
    [
        ({"keep_recent": -1, "threshold": 0}, "threshold"),
        ({"keep_recent": -1, "thresold": 5}, "thresold"),
        ({"locale": "fr", "keepRecent": -1}, "keep_recent"),
    ],
)
def test_from_mapping_names_unknown_keys_first_then_fields_in_declared_order(
    data, first
):
    """The first error (``field``) does not depend on the mapping's key order."""
    with pytest.raises(ConfigErrors) as info:
        SummaryConfig.from_mapping(data)
    with pytest.raises(ConfigErrors) as backwards:
        SummaryConfig.from_mapping(dict(reversed(list(data.items()))))

    assert info.value.field == first
    assert backwards.value.field == first


def test_from_mapping_checks_rules_between_fields_once_each_is_valid():
    with pytest.raises(ConfigError) as info:
        SummaryConfig.from_mapping({"threshold": 5, "keepRecent": 10})

    assert not isinstance(info.value, ConfigErrors)
    assert "threshold" in str(info.value)


def test_a_keep_over_the_default_threshold_is_keep_recents_fault():
    with pytest.raises(ConfigError) as info:
        SummaryConfig(keep_recent=40)

    assert (info.value.field, info.value.value) == ("keep_recent", 40)
    assert "an int < threshold=30" in info.value.allowed


def test_a_threshold_changed_under_the_keep_is_thresholds_fault():
    for kwargs in ({"threshold": 10}, {"threshold": 10, "keep_recent": 40}):
        with pytest.raises(ConfigError) as info:
            SummaryConfig(**kwargs)

        assert info.value.field == "threshold"


@pytest.mark.parametrize(
    ("data", "blamed"),
    [
        ({"threshold": 30, "keep_recent": 30}, "threshold"),
        ({"keepRecent": 30, "threshold": 30}, "threshold"),
        ({"threshold": 10}, "threshold"),
        ({"keep_recent": 30}, "keep_recent"),
    ],
)
def test_from_mapping_blames_the_threshold_set_even_to_its_default(data, blamed):
    with pytest.raises(ConfigError) as info:
        SummaryConfig.from_mapping(data)

    assert info.value.field == blamed
    assert not isinstance(info.value, ConfigErrors)


@pytest.mark.parametrize(
    ("key", "suggested"),
    [
        ("summaryLlm", "summaryLLM"),
        ("KeepRecent", "keepRecent"),
        ("keep_recnt", "keep_recent"),
        ("keeprecent", "keep_recent"),
    ],
)
def test_a_misspelt_key_is_suggested_in_its_own_spelling(key, suggested):
    with pytest.raises(ConfigError, match=f"did you mean '{suggested}'"):
        SummaryConfig.from_mapping({key: 5})
