from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import ConfigError, LLMRef, SummaryConfig


def _config(keep, more, keep_tokens, **rest):
    window = rest.get("context_window")
    if window is not None and keep_tokens is not None:
        smallest = window if isinstance(window, int) else min(window.values())
        if keep_tokens >= int(smallest * rest["auto_compress_threshold"]):
            keep_tokens = None  # at or over the trigger: refused (tested apart)
    return SummaryConfig(
        keep_recent=keep,
        threshold=max(keep, 1) + more,
        keep_recent_tokens=keep_tokens,
        **rest,
    )


valid_configs = st.builds(
    _config,
    keep=st.integers(0, 10_000),
    more=st.integers(1, 10_000),
    keep_tokens=st.none() | st.integers(1, 10**6),
    context_window=st.none()
    | st.integers(1, 2_000_000)
    | st.dictionaries(
        st.text(min_size=1, max_size=8), st.integers(1, 10**6), min_size=1
    ),
    token_safety_margin=st.floats(0.0, 1.0),
    summary_token_ratio=st.floats(0.0001, 1.0),
    auto_compress_threshold=st.floats(0.0, 1.0),
    summary_prompt=st.text(max_size=50),
    summary_model_mode=st.sampled_from(["global", "session"]),
    locale=st.sampled_from(["en", "zh"]),
    truncate_chars=st.integers(1, 1000),
    probe_floor=st.integers(1, 1000),
    mask_tool_results_after=st.none() | st.integers(1, 100),
    anthropic_keep_thinking_turns=st.none() | st.integers(0, 100),
    recall_hint=st.booleans(),
    recall_result_max_tokens=st.integers(100, 100_000),
)


@given(config=valid_configs)
def test_configs_hash_pickle_and_copy(config):
    import copy
    import pickle

    assert hash(config) == hash(copy.deepcopy(config))
    assert pickle.loads(pickle.dumps(config)) == config


@given(config=valid_configs)
def test_config_round_trips_through_a_mapping(config):
    assert SummaryConfig.from_mapping(config.to_mapping()) == config


@given(
    provider=st.text(min_size=1, max_size=10), model=st.text(min_size=1, max_size=10)
)
def test_custom_config_round_trips_with_its_llm_ref(provider, model):
    config = SummaryConfig(
        summary_model_mode="custom", summary_llm=LLMRef(provider, model)
    )

    assert SummaryConfig.from_mapping(config.to_mapping()) == config


@given(
    field=st.sampled_from(
        ["threshold", "keep_recent", "truncate_chars", "probe_floor"]
    ),
    value=st.integers(max_value=-1),
)
def test_negative_counts_are_rejected(field, value):
    with pytest.raises(ConfigError) as info:
        SummaryConfig.from_mapping({field: value})
    assert info.value.field == field


@given(
    field=st.sampled_from(["summary_token_ratio", "auto_compress_threshold"]),
    value=st.one_of(
        st.floats(max_value=-0.0001), st.floats(min_value=1.0001), st.just(float("nan"))
    ),
)
def test_ratios_outside_their_range_are_rejected(field, value):
    with pytest.raises(ConfigError):
        SummaryConfig.from_mapping({field: value})


def _accepted(load):
    try:
        return load()
    except ConfigError:
        return None


@given(
    threshold=st.integers(-2, 40),
    keep_recent=st.integers(-2, 40),
    keep_tokens=st.none() | st.integers(0, 5_000),
    window=st.none() | st.integers(0, 5_000),
)
def test_variables_are_checked_together_as_the_constructor_checks_them(
    threshold, keep_recent, keep_tokens, window
):
    from memory_summary.config_file import load_config

    values = {"threshold": threshold, "keep_recent": keep_recent}
    if keep_tokens is not None:
        values["keep_recent_tokens"] = keep_tokens
    if window is not None:
        values["context_window"] = window
    environ = {f"MEMORY_SUMMARY_{k.upper()}": str(v) for k, v in values.items()}

    built = _accepted(lambda: SummaryConfig.from_mapping(values))
    loaded = _accepted(lambda: load_config(environ=environ))

    assert loaded == built
