"""What one compression touches: the package's modules and classes whose code runs.

``python benchmarks/trace.py [--store sqlite|memory]`` starts an engine (its warm-up
done), saves a session past the threshold, then traces every thread from the host's
``turn_after`` to the end of the compression it causes (one summarizer call, the
offline summarizer) and prints how many of the package's modules and classes ran code,
with their names. A measure of how much a reader follows to understand one compression.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import InMemoryStore, SqliteStore

PACKAGE = Path(sys.modules["memory_summary"].__file__ or "").resolve().parent.parent
FOLDERS = ("domain", "actors", "adapters", "memory_summary")


def _ours(filename: str) -> str | None:
    path = Path(filename).resolve()
    try:
        relative = path.relative_to(PACKAGE)
    except ValueError:
        return None
    parts = relative.parts
    if not parts or parts[0] not in FOLDERS or "testing" in parts:
        return None
    return str(relative)


def trace(store_kind: str) -> tuple[set[str], set[str]]:
    """Return the modules and the classes whose code one compression ran."""
    modules: set[str] = set()
    classes: set[str] = set()

    def tracer(frame, event, arg):
        if event != "call":
            return None
        module = _ours(frame.f_code.co_filename)
        if module is None:
            return None
        modules.add(module)
        qualname = frame.f_code.co_qualname if sys.version_info >= (3, 11) else ""
        owner = qualname.rpartition(".")[0].split(".<locals>")[0]
        if owner and owner[0].isupper():
            classes.add(f"{module}:{owner}")
        return None

    folder = tempfile.mkdtemp()
    store = (
        SqliteStore(f"{folder}/trace.db") if store_kind == "sqlite" else InMemoryStore()
    )
    with SummaryEngine(store) as engine:
        engine.start()
        engine.wait_idle(30)
        for i in range(60):
            role = "user" if i % 2 == 0 else "assistant"
            store.save_message("s", Message(role, f"turn {i}: about the Lisbon trip"))
        threading.settrace(tracer)
        sys.settrace(tracer)
        try:
            engine.turn_after("s")
            engine.wait_idle(30)
        finally:
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
    return modules, classes


OFFLINE = {"extractive", "dialogue", "fact_reading", "fitting", "salience"}
OFFLINE |= {"host_instructions", "transcript", "clause_fold", "argument_fold"}


def main() -> None:
    """Print the counts (and with ``--names``, the names) for one store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--names", action="store_true", help="list them")
    args = parser.parse_args()
    modules, classes = trace(args.store)
    offline = {m for m in modules if Path(m).stem in OFFLINE}
    print(
        f"{args.store}: {len(modules)} modules ({len(offline)} of them the offline "
        f"summarizer's), {len(classes)} classes"
    )
    if args.names:
        print("\n".join(sorted(modules | classes)))


if __name__ == "__main__":
    main()
