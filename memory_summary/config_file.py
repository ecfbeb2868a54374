"""Reading ``SummaryConfig`` from a TOML file and ``MEMORY_SUMMARY_*`` variables.

A file holds the fields at its top level or under a ``[memory_summary]`` table, with
snake_case or the seed's camelCase keys. An environment variable
``MEMORY_SUMMARY_<FIELD>`` (for example ``MEMORY_SUMMARY_KEEP_RECENT=10``) overrides the
file; its value is read as TOML (``10``, ``0.5``, ``"zh"``), or as a bare string.
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


def read_toml(path: str | Path) -> dict[str, object]:
    """Return the config mapping of a TOML file.

    Raises:
        ConfigError: the file is missing or is not valid TOML.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError("config file", str(path), "an existing TOML file") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("config file", str(path), f"valid TOML ({exc})") from exc
    table = data.get(TABLE, data)
    if not isinstance(table, dict):
        raise ConfigError(TABLE, table, "a table of configuration fields")
    # Tables other than ours (a host's own settings) are not config fields.
    return {
        k: v for k, v in table.items() if not (table is data and isinstance(v, dict))
    }


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
