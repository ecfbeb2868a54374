"""``python -m memory_summary`` runs the command line."""

from __future__ import annotations

import sys

from memory_summary.cli import main

sys.exit(main())
