"""Evidence recall@10 question by question, in seconds: for tuning the ranking.

``python benchmarks/recall_questions.py [--data PATH] [--out FILE] [--against FILE]``
saves LoCoMo's conversations (``--data``, by default the shared development half)
turn by turn into an ``InMemoryStore`` (no compression: archiving never changes a
rank) and asks ``search_history`` each question of categories 1, 2 and 4. It prints
recall@10 per half of ``recall.py``'s split (``tuning``, ``measuring``, ``unseen``)
and category, the same figures as ``run.py --only recall`` in about 5 s instead of
minutes; ``--out`` writes each question's result as JSON, and ``--against`` an
earlier such file lists the questions that gained or lost their evidence since. A
ranking rule is kept when it gains on ``tuning`` and loses nothing on ``measuring``
(docs/recall.md). ``--quick`` uses ``recall.py``'s generated conversations.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from recall import CATEGORIES, generated_conversations, half
from summary_quality.locomo import default_locomo_path, load_locomo

from memory_summary import SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore

HALVES = ("tuning", "measuring", "unseen")


def questions(conversations: list) -> dict[str, dict]:
    """Return each question's half, category, text and whether it was found."""
    store = InMemoryStore()
    found: dict[str, dict] = {}
    with SummaryEngine(store, config=SummaryConfig(threshold=10**9)) as engine:
        for conversation in conversations:
            sid = conversation.sample_id
            dia = {}
            for message in conversation.messages(dates="session"):
                dia[store.save_message(sid, message).id] = message.metadata["dia_id"]
            for at, question in enumerate(conversation.questions):
                if question.category not in CATEGORIES or not question.evidence:
                    continue
                hits = engine.search_history(sid, question.question, limit=10)
                ids = {dia.get(hit.message.id) for hit in hits}
                found[f"{sid}#{at}"] = {
                    "half": half(sid),
                    "category": question.category,
                    "question": question.question,
                    "found": bool(ids & set(question.evidence)),
                }
    return found


def table(found: dict[str, dict]) -> list[str]:
    """Return one line per half: recall@10 over all three categories, then each."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in found.values():
        for key in ((row["half"], "all"), (row["half"], str(row["category"]))):
            counts[key][0] += 1
            counts[key][1] += row["found"]
    lines = []
    for part in HALVES:
        cells = [
            f"{c}: {100 * counts[(part, c)][1] / counts[(part, c)][0]:.1f}%"
            for c in ("all", *map(str, CATEGORIES))
            if counts[(part, c)][0]
        ]
        if cells:
            lines.append(f"{part} ({counts[(part, 'all')][0]}): " + ", ".join(cells))
    return lines


def changes(found: dict[str, dict], before: dict[str, dict]) -> list[str]:
    """Return the questions found now and not before (+) or the reverse (-)."""
    lines = []
    for key, row in found.items():
        was = before.get(key)
        if was is not None and was["found"] != row["found"]:
            sign = "+" if row["found"] else "-"
            lines.append(
                f"{sign} {row['half']} {row['category']} {key}: {row['question']}"
            )
    return sorted(lines, key=lambda line: (line.split()[1], line))


def main(argv: list[str] | None = None) -> int:
    """Run the questions; print the table (and the changes); return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--out", type=Path, help="write each question's result here")
    parser.add_argument("--against", type=Path, help="an earlier --out file")
    parser.add_argument("--quick", action="store_true", help="generated conversations")
    args = parser.parse_args(argv)
    path = args.data or default_locomo_path()
    if args.quick:
        conversations = generated_conversations()
    elif path is None or not Path(path).is_file():
        print("no LoCoMo file: give --data PATH", file=sys.stderr)
        return 2
    else:
        conversations = load_locomo(path)
    found = questions(conversations)
    print("\n".join(table(found)))
    if args.against:
        before = json.loads(args.against.read_text(encoding="utf-8"))
        print("\n".join(changes(found, before)) or "no question changed")
    if args.out:
        args.out.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
