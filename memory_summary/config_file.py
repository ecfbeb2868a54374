"""Reading ``SummaryConfig`` from a TOML file and ``MEMORY_SUMMARY_*`` variables.

A file holds the fields at its top level or under a ``[memory_summary]`` table, with
snake_case or the seed's camelCase keys. An environment variable
``MEMORY_SUMMARY_<FIELD>`` (for example ``MEMORY_SUMMARY_KEEP_RECENT=10``) overrides the
file; its value is read as TOML (``10``, ``0.5``, ``"zh"``), or as a bare string.

Command-line defaults live in a ``[memory_summary.cli]`` table (``db``, ``sessions``,
``base_url``, ...) and in ``MEMORY_SUMMARY_CLI_<OPTION>`` variables; the command line
itself wins over both.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from memory_summary.domain import ConfigError, SummaryConfig
from memory_summary.domain.config import FIELD_NAMES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ENV_PREFIX = "MEMORY_SUMMARY_"
TABLE = "memory_summary"
CLI_TABLE = "cli"
CLI_ENV_PREFIX = "MEMORY_SUMMARY_CLI_"


def read_toml(path: str | Path) -> dict[str, object]:
    """Return the config mapping of a TOML file.

    Raises:
        ConfigError: the file is missing or is not valid TOML.
    """
    data = _read(path)
    table = _table(data)
    # Tables other than ours (a host's own settings) are not config fields.
    return {
        k: v
        for k, v in table.items()
        if not (TABLE not in data and isinstance(v, dict))
    }


def _table(data: dict[str, object]) -> dict[str, object]:
    table = data.get(TABLE, data)
    if not isinstance(table, dict):
        raise ConfigError(TABLE, table, "a table of configuration fields")
    return {k: v for k, v in table.items() if k != CLI_TABLE}


def _read(path: str | Path) -> dict[str, object]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError("config file", str(path), "an existing TOML file") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("config file", str(path), f"valid TOML ({exc})") from exc


def cli_defaults(
    path: str | Path | None,
    options: Mapping[str, type],
    environ: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Return command-line defaults from the file's ``[memory_summary.cli]`` and env.

    Raises:
        ConfigError: an unknown option or a value of the wrong type.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    if path is not None:
        table = _read(path).get(TABLE, {})
        cli = table.get(CLI_TABLE, {}) if isinstance(table, dict) else {}
        if not isinstance(cli, dict):
            raise ConfigError(
                f"{TABLE}.{CLI_TABLE}", cli, "a table of command-line options"
            )
        values.update(cli)
    for name in options:
        raw = environ.get(CLI_ENV_PREFIX + name.upper())
        if raw is not None:
            values[name] = raw if options[name] is str else _env_value(raw)
    for name, value in values.items():
        kind = options.get(name)
        if kind is None:
            raise ConfigError(
                f"cli.{name}", value, f"one of {', '.join(sorted(options))}"
            )
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"cli.{name}", value, kind.__name__)
    return values


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
    path: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> SummaryConfig:
    """Return the effective config: defaults, then the file, then the environment.

    >>> load_config(environ={"MEMORY_SUMMARY_KEEP_RECENT": "10"}).keep_recent
    10
    """
    config = SummaryConfig.from_mapping(read_toml(path) if path is not None else {})
    env = read_environment(environ)
    if env:
        config = SummaryConfig.from_mapping({**config.to_mapping(), **env})
    return config
