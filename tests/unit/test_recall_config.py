from __future__ import annotations

import pytest

from memory_summary import ConfigError, Message, SummaryConfig
from memory_summary.domain import injection_text, is_summary_message
from memory_summary.domain.injection import HEADERS, RECALL_HINTS


def test_recall_fields_default_to_off_and_1500_tokens():
    config = SummaryConfig()

    assert config.mask_tool_results_after is None
    assert config.recall_hint is False
    assert config.recall_result_max_tokens == 1500


def test_recall_fields_read_camel_case():
    config = SummaryConfig.from_mapping(
        {"maskToolResultsAfter": 3, "recallHint": True, "recallResultMaxTokens": 800}
    )

    assert (config.mask_tool_results_after, config.recall_hint) == (3, True)
    assert config.recall_result_max_tokens == 800


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mask_tool_results_after", 0),
        ("mask_tool_results_after", True),
        ("mask_tool_results_after", "3"),
        ("recall_hint", 1),
        ("recall_result_max_tokens", 99),
        ("recall_result_max_tokens", None),
    ],
)
def test_bad_recall_values_name_the_field(field, value):
    with pytest.raises(ConfigError, match=field):
        SummaryConfig(**{field: value})


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_the_hint_follows_the_header_in_the_locale_only_when_enabled(locale):
    with_hint = injection_text(
        "S.", locale=locale, budget_tokens=512, count_tokens=len, recall_hint=True
    )
    without = injection_text("S.", locale=locale, budget_tokens=512, count_tokens=len)

    assert with_hint == f"{HEADERS[locale]}\n{RECALL_HINTS[locale]}\nS."
    assert without == f"{HEADERS[locale]}\nS."
    assert "search_history" in with_hint
    assert "read_history" in with_hint
    assert is_summary_message(Message("system", with_hint))  # found without kind


def test_recall_index_leaves_the_stores_own_by_default_and_is_read_from_camel_case():
    assert SummaryConfig().recall_index is None  # each store's own: lazy
    assert SummaryConfig.from_mapping({"recallIndex": "eager"}).recall_index == "eager"
    assert SummaryConfig(recall_index="off").recall_index == "off"


@pytest.mark.parametrize("bad", ["Lazy", "", "never", 0, True])
def test_an_unknown_recall_index_names_the_field_and_the_policies(bad):
    with pytest.raises(ConfigError) as caught:
        SummaryConfig(recall_index=bad)

    assert caught.value.field == "recall_index"
    assert caught.value.allowed == "'lazy' / 'eager' / 'off'"


def test_a_store_checks_its_policy_as_the_config_does():
    from memory_summary.domain.config import check_recall_index

    assert [check_recall_index(p) for p in ("lazy", "eager", "off")] == [
        "lazy",
        "eager",
        "off",
    ]
    with pytest.raises(ConfigError, match="recall_index='LAZY'"):
        check_recall_index("LAZY")
