"""Reading ``SummaryConfig`` from a TOML file and ``MEMORY_SUMMARY_*`` variables.

A file holds the fields at its top level or under a ``[memory_summary]`` table, with
snake_case or the seed's camelCase keys; with both, they merge, and a field set in
both places is an error (never one silently winning). Beside a ``[memory_summary]``
table, a top-level key that is no field is the host's own and ignored, unless it is a
near miss of a field's name (``keepRecnt``), which is an error with the name
suggested; without the table, every top-level key that is not a table is a field.
An environment variable ``MEMORY_SUMMARY_<FIELD>`` (for example
``MEMORY_SUMMARY_KEEP_RECENT=10``) overrides the file; its value is read as TOML
(``10``, ``0.5``, ``"zh"``), or as a bare string.

Command-line defaults live in a ``[memory_summary.cli]`` table (``db``, ``sessions``,
``base_url``, ...) and in ``MEMORY_SUMMARY_CLI_<OPTION>`` variables; the command line
itself wins over both.

A ``MEMORY_SUMMARY_*`` variable that names nothing (``MEMORY_SUMMARY_TRESHOLD``) is an
error with the closest known name suggested, and every error found is reported at once
(``ConfigErrors``), not only the first.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from memory_summary.domain import ConfigError, SummaryConfig
from memory_summary.domain.config import (
    CAMEL_TO_FIELD,
    FIELD_NAMES,
    KNOWN_KEYS,
    RULE_FIELDS,
    field_error,
)
from memory_summary.domain.errors import ConfigErrors

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ENV_PREFIX = "MEMORY_SUMMARY_"
TABLE = "memory_summary"
CLI_TABLE = "cli"
CLI_ENV_PREFIX = "MEMORY_SUMMARY_CLI_"
DSN_VARIABLE = "MEMORY_SUMMARY_PG_DSN"
# Variables with our prefix that are not fields: the PostgreSQL DSN, and the test
# suite's own (a server's bin directory, a real LLM endpoint).
OTHER_VARIABLES = (
    DSN_VARIABLE,
    "MEMORY_SUMMARY_PG_BINDIR",
    "MEMORY_SUMMARY_REDIS_URL",  # RedisStore(url=None)
    "MEMORY_SUMMARY_REAL_LLM_URL",
    "MEMORY_SUMMARY_REAL_LLM_MODEL",
    "MEMORY_SUMMARY_REAL_LLM_CONTEXT",
)


def known_variables(cli_options: Iterable[str]) -> tuple[str, ...]:
    """Return every ``MEMORY_SUMMARY_*`` variable read: fields, options, others."""
    return (
        *(ENV_PREFIX + name.upper() for name in FIELD_NAMES),
        *(CLI_ENV_PREFIX + name.upper() for name in cli_options),
        *OTHER_VARIABLES,
    )


def unknown_variables(
    environ: Mapping[str, str] | None = None, cli_options: Iterable[str] = ()
) -> list[ConfigError]:
    """Return an error for each ``MEMORY_SUMMARY_*`` variable that names nothing.

    >>> [e.allowed for e in unknown_variables({"MEMORY_SUMMARY_TRESHOLD": "40"})]
    ['a known variable (did you mean MEMORY_SUMMARY_THRESHOLD?)']
    """
    environ = os.environ if environ is None else environ
    known = known_variables(cli_options)
    errors = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in known:
            continue
        close = _closest_variable(name, known)
        hint = f" (did you mean {close}?)" if close else ""
        errors.append(ConfigError(name, environ[name], f"a known variable{hint}"))
    return errors


def _closest_variable(name: str, known: Iterable[str]) -> str | None:
    """Return the known variable ``name`` likely misspells, or None.

    Compared without the prefix they all share: with it, any short name looked
    close to some variable (``MEMORY_SUMMARY_X``: ``MEMORY_SUMMARY_PG_DSN``).
    """
    cut = len(ENV_PREFIX)
    by_rest = {variable[cut:]: variable for variable in known}
    close = difflib.get_close_matches(name[cut:], by_rest, n=1, cutoff=0.8)
    return by_rest[close[0]] if close else None


def raise_all(errors: list[ConfigError]) -> None:
    """Raise nothing when ``errors`` is empty, one as itself, several at once."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(tuple(errors))


def file_entries(
    data: Mapping[str, object],
) -> tuple[list[tuple[str, object]], list[ConfigError]]:
    """Return a TOML document's config entries (key, value) and the errors found.

    The ``[memory_summary]`` table's fields and the top level's merge; the
    ``[memory_summary.cli]`` table is the command line's (``cli_defaults``).
    """
    table = data.get(TABLE)
    if table is not None and not isinstance(table, dict):
        return [], [ConfigError(TABLE, table, "a table of configuration fields")]
    entries = [(k, v) for k, v in (table or {}).items() if k != CLI_TABLE]
    errors: list[ConfigError] = []
    in_table = {CAMEL_TO_FIELD.get(k, k): k for k, _ in entries}
    for key, value in data.items():
        if key == TABLE:
            continue
        name = CAMEL_TO_FIELD.get(key, key)
        if name in in_table:
            errors.append(
                ConfigError(
                    key,
                    value,
                    f"one place: it is also set in [{TABLE}] "
                    f"(as {in_table[name]!r}); keep one",
                )
            )
        elif key in KNOWN_KEYS:  # a field at the top level: merged
            entries.append((key, value))
        elif table is None:
            # no table: the top level is ours, but a host's own tables
            if not isinstance(value, dict) and key != CLI_TABLE:
                entries.append((key, value))
        elif not isinstance(value, dict):
            near = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.8)
            if near:  # beside the table, a typo of a field is no host's setting
                errors.append(_unknown_key(key, value))
    return entries, errors


def _read(path: str | Path) -> dict[str, object]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError("config file", str(path), "an existing TOML file") from exc
    except OSError as exc:  # a directory, no permission
        raise ConfigError(
            "config file", str(path), f"a readable TOML file ({exc.strerror})"
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("config file", str(path), f"valid TOML ({exc})") from exc


def cli_defaults(
    path: str | Path | None,
    options: Mapping[str, type],
    environ: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Return command-line defaults from the file's ``[memory_summary.cli]`` and env.

    Raises:
        ConfigError: an unknown option or a value of the wrong type (all at once).
    """
    settings = cli_settings(path, options, environ)
    raise_all(settings.errors)
    return settings.values


@attrs.frozen
class CliSettings:
    """The command-line defaults read, where each came from, and the errors found.

    ``values`` holds the defaults that are good; ``rejected`` the error of each known
    option whose value is not (the wrong type; ``checked_cli_defaults`` adds those
    out of range); ``unknown`` the error of each name that is no option, and of each
    ``MEMORY_SUMMARY_*`` variable that names nothing (``unknown_variables``: it may be
    a misspelled option's, so every command refuses it). An error
    names the value's origin: ``cli.sessions`` in the file,
    ``MEMORY_SUMMARY_CLI_SESSIONS`` in the environment (``sources``).
    """

    values: dict[str, object]
    sources: dict[str, str]
    unknown: list[ConfigError]
    rejected: dict[str, ConfigError]

    @property
    def errors(self) -> list[ConfigError]:
        """Every error: the unknown names', then the rejected values'."""
        return [*self.unknown, *self.rejected.values()]


def cli_settings(
    path: str | Path | None,
    options: Mapping[str, type],
    environ: Mapping[str, str] | None = None,
) -> CliSettings:
    """Return the command-line defaults and every error of their names and types.

    Raises:
        ConfigError: the file cannot be read, or its ``[memory_summary.cli]`` is no
            table.
    """
    environ = os.environ if environ is None else environ
    read: dict[str, object] = {}
    sources: dict[str, str] = {}
    if path is not None:
        table = _read(path).get(TABLE, {})
        cli = table.get(CLI_TABLE, {}) if isinstance(table, dict) else {}
        if not isinstance(cli, dict):
            raise ConfigError(
                f"{TABLE}.{CLI_TABLE}", cli, "a table of command-line options"
            )
        read.update(cli)
        sources.update((name, f"{CLI_TABLE}.{name}") for name in cli)
    for name in options:
        variable = CLI_ENV_PREFIX + name.upper()
        raw = environ.get(variable)
        if raw is not None:
            read[name] = raw if options[name] is str else _env_value(raw)
            sources[name] = variable
    unknown = unknown_variables(environ, options)
    values: dict[str, object] = {}
    rejected: dict[str, ConfigError] = {}
    for name, value in read.items():
        kind = options.get(name)
        if kind is None:
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            unknown.append(
                ConfigError(
                    sources[name],
                    value,
                    f"one of {', '.join(sorted(options))}{hint}",
                )
            )
        elif not _is_kind(value, kind):
            rejected[name] = ConfigError(sources[name], value, kind.__name__)
        else:
            values[name] = value
    return CliSettings(values, sources, unknown, rejected)


def _is_kind(value: object, kind: type) -> bool:
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def _env_value(raw: str) -> object:
    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw


def read_environment(environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """Return the fields set through ``MEMORY_SUMMARY_<FIELD>`` variables."""
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for name in FIELD_NAMES:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None:
            values[name] = _env_value(raw)
    return values


def load_config(
    path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    cli_options: Iterable[str] = (),
) -> SummaryConfig:
    """Return the effective config: defaults, then the file, then the environment.

    ``cli_options`` names the ``MEMORY_SUMMARY_CLI_*`` variables that are known.

    Raises:
        ConfigError: one invalid value, key or variable; ``ConfigErrors`` (a
            ``ConfigError``) when there are several: each is reported.

    >>> load_config(environ={"MEMORY_SUMMARY_KEEP_RECENT": "10"}).keep_recent
    10
    """
    environ = os.environ if environ is None else environ
    errors = unknown_variables(environ, cli_options)
    values: dict[str, object] = {}
    written: dict[str, str] = {}  # field -> the key or variable that set it
    entries: list[tuple[str, object]] = []
    if path is not None:
        entries, file_errors = file_entries(_read(path))
        errors += file_errors
    for key, value in entries:
        name = CAMEL_TO_FIELD.get(key, key)
        if name in values:
            errors.append(
                ConfigError(
                    key,
                    value,
                    "each field once (camelCase or snake_case; also set as "
                    f"{written[name]!r})",
                )
            )
        elif name not in FIELD_NAMES:
            errors.append(_unknown_key(key, value))
        else:
            values[name] = value
            written[name] = key
    from_environment = read_environment(environ)
    values.update(from_environment)
    written.update((name, ENV_PREFIX + name.upper()) for name in from_environment)
    for name, value in values.items():
        error = field_error(name, value)
        if error is not None:  # named as the user wrote it: keepRecent, a variable
            errors.append(ConfigError(written[name], value, error.allowed))
    raise_all(errors)
    try:
        return SummaryConfig.from_mapping(values)
    except ConfigError as exc:  # a rule between fields: say where each came from
        raise _between_fields(exc, values, written, from_environment, path) from exc


def _between_fields(
    exc: ConfigError,
    values: Mapping[str, object],
    written: Mapping[str, str],
    from_environment: Mapping[str, object],
    path: str | Path | None,
) -> ConfigError:
    """Return the error of a rule between fields, each field named by its origin.

    The field the rule blames is named as the user wrote it, and every field the rule
    read is listed with its origin: ``MEMORY_SUMMARY_KEEP_RECENT=40 is invalid;
    allowed: an int < threshold=30 (...); involved: MEMORY_SUMMARY_KEEP_RECENT=40,
    threshold=30 (the default)``.
    """
    defaults = SummaryConfig().to_mapping()
    said = []
    for name in (exc.field, *RULE_FIELDS.get(exc.field, ())):
        if name not in written:
            said.append(f"{name}={defaults.get(name)!r} (the default)")
        elif name in from_environment:
            said.append(f"{written[name]}={values[name]!r}")
        else:
            said.append(f"{written[name]}={values[name]!r} in {path}")
    return ConfigError(
        written.get(exc.field, exc.field),
        exc.value,
        f"{exc.allowed}; involved: {', '.join(said)}",
    )


def _unknown_key(key: str, value: object) -> ConfigError:
    """Return the error of an unknown key, with the closest known key suggested."""
    try:
        SummaryConfig.from_mapping({key: value})
    except ConfigError as exc:
        return exc
    return ConfigError(key, value, "one of the known keys")  # pragma: no cover
