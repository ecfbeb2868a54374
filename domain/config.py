"""The engine's configuration: the seed's fields, their defaults, and their ranges.

Why about 540 lines: one concept, ``SummaryConfig``. Each field's check (the
validators and converters above the class) reads best next to the field it guards,
and ``from_mapping``/``to_mapping``/``field_error``/``closest_key`` are the same
fields spelled for a file or an environment variable.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Literal, get_args

import attrs

from .errors import ConfigError, ConfigErrors
from .model import LLMRef

ModelMode = Literal["global", "custom", "session"]
Locale = Literal["en", "zh"]
FailurePolicy = Literal["trim", "keep"]
RecallIndex = Literal["lazy", "eager", "off"]
OfflineFold = Literal["thread", "process"]
MODEL_MODES: tuple[ModelMode, ...] = get_args(ModelMode)
LOCALES: tuple[Locale, ...] = get_args(Locale)
FAILURE_POLICIES: tuple[FailurePolicy, ...] = get_args(FailurePolicy)
RECALL_INDEXES: tuple[RecallIndex, ...] = get_args(RecallIndex)
"""When a store indexes a session for ``search_history``: at its first search
(``lazy``), at every save (``eager``), or never, search refused (``off``)."""
OFFLINE_FOLDS: tuple[OfflineFold, ...] = get_args(OfflineFold)
"""Where the engine's own offline summarizer folds: on an engine thread, or in one
child process whose CPU never holds the host's GIL (a server's choice)."""
DEFAULT_TASK_TOOLS = ("manage_todo_list", "todo_manage")
MAX_INSTRUCTIONS_CHARS = 2000
"""The longest instructions a host may give the summarizer (``summary_instructions``,
and one compression's own)."""
KEEP_SHARE = 0.2
"""The share of ``context_window`` the kept part may hold when ``keep_recent_tokens``
is unset: well under the default trigger (0.7), so one compression brings a session
back under it."""


def _int_at_least(low: int) -> Callable[[object, attrs.Attribute[int], object], None]:
    def check(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(attribute.name, value, f"int >= {low}")

    return check


def _number_in(
    low: float, high: float, *, low_open: bool = False
) -> Callable[[object, attrs.Attribute[float], object], None]:
    bracket = "(" if low_open else "["
    allowed = f"float in {bracket}{low:g}, {high:g}]"

    def check(
        instance: object, attribute: attrs.Attribute[float], value: object
    ) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(attribute.name, value, allowed)
        too_low = value <= low if low_open else value < low
        if math.isnan(value) or too_low or value > high:
            raise ConfigError(attribute.name, value, allowed)

    return check


def _optional_int_at_least(
    low: int,
) -> Callable[[object, attrs.Attribute[int | None], object], None]:
    def check(
        instance: object, attribute: attrs.Attribute[int | None], value: object
    ) -> None:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < low
        ):
            raise ConfigError(attribute.name, value, f"int >= {low}, or None (off)")

    return check


def _positive_seconds(
    instance: object, attribute: attrs.Attribute[float], value: object
) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(attribute.name, value, "seconds, a finite number > 0")


def _one_of(
    choices: tuple[str, ...],
) -> Callable[[object, attrs.Attribute[str], object], None]:
    def check(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
        if value not in choices:
            raise ConfigError(attribute.name, value, " / ".join(map(repr, choices)))

    return check


def check_recall_index(value: object) -> RecallIndex:
    """Return ``value`` as a recall index policy; ``ConfigError`` unless it is one.

    A store's ``recall_index=`` argument and ``set_recall_index`` check with this.
    """
    for policy in RECALL_INDEXES:
        if value == policy and isinstance(value, str):
            return policy
    raise ConfigError("recall_index", value, " / ".join(map(repr, RECALL_INDEXES)))


def _is_bool(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(attribute.name, value, "true or false")


def _is_text(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str):
        raise ConfigError(attribute.name, value, "text (str)")


def _instructions(
    instance: object, attribute: attrs.Attribute[str], value: object
) -> None:
    if not isinstance(value, str) or len(value) > MAX_INSTRUCTIONS_CHARS:
        raise ConfigError(
            attribute.name,
            value,
            f"text of at most {MAX_INSTRUCTIONS_CHARS} characters",
        )


def _llm_ref(value: object) -> LLMRef | None:
    if value is None or isinstance(value, LLMRef):
        return value
    if isinstance(value, Mapping) and set(value) == {"provider", "model"}:
        provider, model = value["provider"], value["model"]
        if isinstance(provider, str) and isinstance(model, str) and provider and model:
            return LLMRef(provider, model)
    raise ConfigError("summary_llm", value, "LLMRef or {provider: str, model: str}")


MAX_TOKENS = 1_000_000_000
"""The largest window or keep accepted, far above any model's."""


class Windows(Mapping[str, int]):
    """A read-only, hashable mapping of model names to context windows."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, int]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> int:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"Windows({self._items!r})"

    def __reduce__(self) -> tuple[type[Windows], tuple[dict[str, int]]]:
        return (Windows, (self._items,))


def _context_window(value: object) -> int | Windows | None:
    allowed = (
        f"an int in [1, {MAX_TOKENS}], a mapping model name -> such an int, or None"
    )
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not value or not all(
            isinstance(k, str) and k and _is_count(v) for k, v in value.items()
        ):
            raise ConfigError("context_window", value, allowed)
        return Windows(value)
    if not _is_count(value):
        raise ConfigError("context_window", value, allowed)
    return value  # type: ignore[return-value]


def _keep_tokens(
    instance: object, attribute: attrs.Attribute[int | None], value: object
) -> None:
    if value is not None and not _is_count(value):
        raise ConfigError(
            attribute.name, value, f"an int in [1, {MAX_TOKENS}], or None"
        )


def _is_count(value: object) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 1 <= value <= MAX_TOKENS
    )


def _todo_tools(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError("todo_tool_names", value, "a list of tool names")
    if not all(isinstance(name, str) and name for name in value):
        raise ConfigError("todo_tool_names", value, "a list of non-empty tool names")
    return tuple(value)


@attrs.frozen(kw_only=True)
class SummaryConfig:
    """How and when the engine compresses a session.

    The first seven fields are the seed's; the rest are this library's additions.
    When the summarizer fails, ``on_summarizer_failure="trim"`` (the seed's rule)
    archives without a summary and ``"keep"`` leaves the history active until it is
    back; ``breaker_failures`` consecutive failures open a summarizer's circuit
    breaker for ``breaker_cooldown_s`` seconds. ``pin_facts`` re-attaches identifiers
    a new summary lost (``domain.pins``).
    ``SummaryConfig.from_mapping`` also takes camelCase names.

    >>> SummaryConfig(threshold=40).keep_recent
    20
    >>> SummaryConfig.from_mapping({"keepRecent": 10}).keep_recent
    10
    """

    threshold: int = attrs.field(default=30, validator=_int_at_least(1))
    keep_recent: int = attrs.field(default=20, validator=_int_at_least(0))
    summary_token_ratio: float = attrs.field(
        default=0.05, validator=_number_in(0.0, 1.0, low_open=True)
    )
    auto_compress_threshold: float = attrs.field(
        default=0.7, validator=_number_in(0.0, 1.0)
    )
    summary_prompt: str = attrs.field(default="", validator=_is_text)
    summary_instructions: str = attrs.field(default="", validator=_instructions)
    summary_model_mode: ModelMode = attrs.field(
        default="global", validator=_one_of(MODEL_MODES)
    )
    summary_llm: LLMRef | None = attrs.field(default=None, converter=_llm_ref)
    locale: Locale = attrs.field(default="en", validator=_one_of(LOCALES))
    truncate_chars: int = attrs.field(default=200, validator=_int_at_least(1))
    probe_floor: int = attrs.field(default=200, validator=_int_at_least(1))
    todo_tool_names: tuple[str, ...] = attrs.field(
        default=DEFAULT_TASK_TOOLS, converter=_todo_tools
    )
    max_concurrent_summaries: int = attrs.field(default=4, validator=_int_at_least(1))
    actor_idle_s: float = attrs.field(default=300.0, validator=_positive_seconds)
    summarizer_timeout_s: float = attrs.field(
        default=120.0, validator=_positive_seconds
    )
    # seed: "trim" archives without a summary when the summarizer fails; "keep"
    # leaves the history active until the summarizer is back.
    on_summarizer_failure: FailurePolicy = attrs.field(
        default="trim", validator=_one_of(FAILURE_POLICIES)
    )
    # Where the default offline summarizer (llm=None) folds: "process" keeps its CPU
    # off the GIL the host's event loop needs (ExtractiveSummarizer(worker=...)).
    offline_fold: OfflineFold = attrs.field(
        default="thread", validator=_one_of(OFFLINE_FOLDS)
    )
    breaker_failures: int = attrs.field(default=5, validator=_int_at_least(1))
    breaker_cooldown_s: float = attrs.field(default=30.0, validator=_positive_seconds)
    pin_facts: bool = attrs.field(default=True, validator=_is_bool)
    # The chat model's window: the engine measures usage itself after each turn.
    context_window: int | Windows | None = attrs.field(
        default=None, converter=_context_window
    )
    keep_recent_tokens: int | None = attrs.field(default=None, validator=_keep_tokens)
    token_safety_margin: float = attrs.field(
        default=0.15, validator=_number_in(0.0, 1.0)
    )
    # Recall: tool results older than this many user turns are masked in requests.
    mask_tool_results_after: int | None = attrs.field(
        default=None, validator=_optional_int_at_least(1)
    )
    # Anthropic requests: thinking blocks older than this many assistant turns are
    # dropped (the open tool loop's always stay); None keeps them all.
    anthropic_keep_thinking_turns: int | None = attrs.field(
        default=None, validator=_optional_int_at_least(0)
    )
    # The injected summary says older turns can be looked up (the host offers the
    # recall tools); off by default, so hosts without them do not mislead the model.
    recall_hint: bool = attrs.field(default=False, validator=_is_bool)
    recall_result_max_tokens: int = attrs.field(
        default=1500, validator=_int_at_least(100)
    )
    # Earlier summaries kept for ``summary_history`` (their id ranges stay too).
    summary_versions_kept: int = attrs.field(default=20, validator=_int_at_least(0))
    # When the store indexes a session for ``search_history`` (docs/recall.md);
    # None leaves each store its own (``recall_index=``, lazy by default).
    recall_index: RecallIndex | None = attrs.field(
        default=None, validator=attrs.validators.optional(_one_of(RECALL_INDEXES))
    )

    def __attrs_post_init__(self) -> None:
        self._check_keep_recent()
        self._check_keep_tokens()
        if self.summary_model_mode == "custom" and self.summary_llm is None:
            raise ConfigError(
                "summary_llm",
                None,
                "an LLMRef(provider, model) when summary_model_mode='custom'",
            )

    def _check_keep_recent(self) -> None:
        """Refuse a threshold at or under the kept count: it would compress every turn.

        The constructor cannot tell a field passed from one left out, so the error
        names the field whose value differs from its default (``keep_recent=40``
        against the default threshold is keep_recent's fault); with both changed,
        threshold. ``from_mapping`` names the field set instead (``_keep_error``).
        """
        error = _keep_error(
            self.threshold,
            self.keep_recent,
            threshold_set=_is_changed(self, "threshold"),
        )
        if error is not None:
            raise error

    def _check_keep_tokens(self) -> None:
        """Refuse a token keep at or over the trigger: it would compress every turn."""
        window = self.context_window
        keep = self.keep_recent_tokens
        if keep is None or window is None or self.auto_compress_threshold <= 0:
            return
        smallest = window if isinstance(window, int) else min(window.values())
        trigger = int(smallest * self.auto_compress_threshold)
        if keep >= trigger:
            raise ConfigError(
                "keep_recent_tokens",
                keep,
                f"an int < context_window={smallest} x auto_compress_threshold="
                f"{self.auto_compress_threshold:g} = {trigger} (a kept part at the "
                "trigger would compress on every turn)",
            )

    @property
    def effective_keep_recent(self) -> int:
        """Return the kept count with the seed's floor of one message."""
        return max(self.keep_recent, 1)

    def window_for(self, model: str | None) -> int | None:
        """Return the chat model's context window in tokens, or None when unknown.

        A mapping is looked up by the exact model name, then by the longest key the
        name starts with (``"gpt-4o"`` covers ``"gpt-4o-2024-08-06"``), then under
        ``"default"`` (or ``"*"``).
        """
        window = self.context_window
        if window is None or isinstance(window, int):
            return window
        if model:
            if model in window:
                return window[model]
            prefixes = [key for key in window if model.startswith(key)]
            if prefixes:
                return window[max(prefixes, key=len)]
        return window.get("default", window.get("*"))

    def keep_tokens_for(self, model: str | None) -> int | None:
        """Return the kept part's token bound: ``keep_recent_tokens``, else a share.

        With ``context_window`` known and ``keep_recent_tokens`` unset, the kept part
        may hold ``KEEP_SHARE`` of the window; with neither, it is bound by count only.
        """
        if self.keep_recent_tokens is not None:
            return self.keep_recent_tokens
        window = self.window_for(model)
        return None if window is None else max(int(window * KEEP_SHARE), 1)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> SummaryConfig:
        """Build a config from seed camelCase or snake_case keys.

        Raises:
            ConfigError: an unknown key (with the closest valid key suggested), a wrong
                type or a value out of range; ``ConfigErrors`` (a ``ConfigError``)
                listing each when there are several. A rule between fields
                (``threshold > keep_recent``) is checked once every field is valid.
                The first error (``field``, ``value``) is an unknown key's, in the
                mapping's order, else the first invalid field in declaration order.
        """
        if not isinstance(data, Mapping):
            raise ConfigError("config", data, "a mapping of field names to values")
        values: dict[str, object] = {}
        errors: list[ConfigError] = []  # keys first, in the mapping's order
        wrong: dict[str, ConfigError] = {}  # then fields, in their declared order
        for key, value in data.items():
            if not isinstance(key, str):
                errors.append(ConfigError("config", key, "text keys"))
                continue
            name = CAMEL_TO_FIELD.get(key, key)
            if name not in FIELD_NAMES:
                close = closest_key(key)
                hint = f" (did you mean {close!r}?)" if close else ""
                errors.append(ConfigError(key, value, f"one of the known keys{hint}"))
            elif name in values:
                errors.append(
                    ConfigError(key, value, "each field once (camelCase or snake_case)")
                )
            else:
                values[name] = value
                error = field_error(name, value)
                if error is not None:
                    wrong[name] = error
        errors += [wrong[name] for name in FIELD_NAMES if name in wrong]
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ConfigErrors(tuple(errors))
        defaults = attrs.fields_dict(cls)
        keep_error = _keep_error(  # the field set is blamed, even set to its default
            values.get("threshold", defaults["threshold"].default),  # type: ignore[arg-type]
            values.get("keep_recent", defaults["keep_recent"].default),  # type: ignore[arg-type]
            threshold_set="threshold" in values,
        )
        if keep_error is not None:
            raise keep_error
        return cls(**values)  # type: ignore[arg-type]

    def to_mapping(self) -> dict[str, object]:
        """Return the effective values under their snake_case names."""
        out = attrs.asdict(self, recurse=True)
        out["todo_tool_names"] = list(self.todo_tool_names)
        if isinstance(self.context_window, Mapping):
            out["context_window"] = dict(self.context_window)
        return out


FIELD_NAMES: tuple[str, ...] = tuple(a.name for a in attrs.fields(SummaryConfig))
RULE_FIELDS: dict[str, tuple[str, ...]] = {
    "threshold": ("keep_recent",),
    "keep_recent": ("threshold",),
    "keep_recent_tokens": ("context_window", "auto_compress_threshold"),
    "summary_llm": ("summary_model_mode",),
}
"""The other fields a rule between fields reads, by the field its error names: a
loader names where each came from (``config_file.load_config``)."""


def _keep_error(
    threshold: int, keep_recent: int, *, threshold_set: bool
) -> ConfigError | None:
    """Return the error of a threshold at or under the kept count, or None.

    A threshold over 1 that was not set is the default's, so ``keep_recent`` is the
    field to change; otherwise (both set, or only threshold) threshold is blamed.
    """
    if threshold > max(keep_recent, 1):  # the effective keep: at least 1 is kept
        return None
    why = (
        "(at least 1 is kept; a session kept at keep_recent messages would reach "
        "threshold again at once and compress on every turn)"
    )
    if threshold > 1 and not threshold_set:
        return ConfigError(
            "keep_recent", keep_recent, f"an int < threshold={threshold} {why}"
        )
    return ConfigError(
        "threshold", threshold, f"an int > keep_recent={keep_recent} {why}"
    )


def _is_changed(config: SummaryConfig, name: str) -> bool:
    """Say whether ``config`` holds another value than the field's default."""
    default = attrs.fields_dict(SummaryConfig)[name].default
    return bool(getattr(config, name) != default)


def field_error(name: str, value: object) -> ConfigError | None:
    """Return the error of one field's value by that field's own rule, or None.

    Only the field's type and range are checked, as the constructor checks them
    before its cross-field rules (``threshold > keep_recent``...), which need the
    other fields' values: build the config to check those.

    >>> field_error("keep_recent", -1).allowed
    'int >= 0'
    >>> field_error("threshold", 5) is None   # whatever keep_recent will be
    True
    """
    attribute = attrs.fields_dict(SummaryConfig).get(name)
    if attribute is None:
        return ConfigError(name, value, "one of the known keys")
    try:
        if callable(attribute.converter):
            value = attribute.converter(value)
        if attribute.validator is not None:
            attribute.validator(None, attribute, value)
    except ConfigError as exc:
        return exc
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# The seed spells summaryLLM with a capital LLM.
CAMEL_TO_FIELD: dict[str, str] = {
    ("summaryLLM" if name == "summary_llm" else _camel(name)): name
    for name in FIELD_NAMES
    if "_" in name
}
KNOWN_KEYS: tuple[str, ...] = FIELD_NAMES + tuple(CAMEL_TO_FIELD)


def closest_key(key: str) -> str | None:
    """Return the known key nearest to ``key``, in its spelling (camelCase or not).

    >>> closest_key("summaryLlm"), closest_key("keep_recnt"), closest_key("KeepRecent")
    ('summaryLLM', 'keep_recent', 'keepRecent')
    """
    camel = "_" not in key and not key.islower()
    pool = [k for k in KNOWN_KEYS if "_" not in k] if camel else list(FIELD_NAMES)
    folded = key.replace("_", "").lower()
    same = [k for k in pool if k.replace("_", "").lower() == folded]
    close = same or difflib.get_close_matches(key, pool, n=1, cutoff=0.5)
    close = close or difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.5)
    return close[0] if close else None
