"""How the user's shell runs this program: the command that error messages suggest."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path


def invocation() -> str:
    """Return a command that runs this program from the user's shell.

    ``memory-summary`` when that name on the PATH is this program; else the full
    path of the script (say ``.venv/bin/memory-summary`` of an inactive venv); else
    ``python -m memory_summary`` with this interpreter.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    name = Path(argv0).name
    if name.startswith("memory-summary"):
        found = shutil.which(name)
        if found and Path(found).resolve() == Path(argv0).resolve():
            return "memory-summary"
        script = Path(shutil.which(argv0) or argv0)
        if script.is_file():
            return shlex.quote(str(script.absolute()))
    beside = Path(sys.executable).parent / "memory-summary"
    found = shutil.which("memory-summary")
    if found and beside.is_file() and Path(found).resolve() == beside.resolve():
        return "memory-summary"
    if beside.is_file():
        return shlex.quote(str(beside))
    return f"{shlex.quote(sys.executable)} -m memory_summary"
