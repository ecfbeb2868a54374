"""Evidence recall@10 question by question, in seconds: for tuning the ranking.

``python benchmarks/recall_questions.py [--data PATH] [--out FILE] [--against FILE]``
saves LoCoMo's conversations (``--data``, by default the shared development half)
turn by turn into an ``InMemoryStore`` (no compression: archiving never changes a
rank) and asks ``search_history`` each question of categories 1, 2 and 4. It prints
recall@10 per half of ``recall.py``'s split (``tuning``, ``measuring``, ``unseen``)
and category, the same figures as ``run.py --only recall`` in about 5 s instead of
minutes, then recall@5 over the three categories (the first five of the same ten
hits); ``--out`` writes each question's result as JSON, and ``--against`` an
earlier such file lists the questions that gained or lost their evidence since, and
per half how many each way with a two-sided sign test's p (a change of a few
questions is within chance). A ranking rule is kept when it gains on ``tuning`` and
loses nothing on ``measuring`` (docs/recall.md). ``--quick`` uses ``recall.py``'s
generated conversations.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

from recall import CATEGORIES, generated_conversations, half
from summary_quality.locomo import default_locomo_path, load_locomo

from memory_summary import SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore

HALVES = ("tuning", "measuring", "unseen")


def questions(conversations: list) -> dict[str, dict]:
    """Return each question's half, category, text, whether it was found and where.

    ``rank``: the place of the first evidence turn among the ten hits (1 to 10), or
    None.
    """
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
                evidence = set(question.evidence)
                ranks = [
                    place
                    for place, hit in enumerate(hits, 1)
                    if dia.get(hit.message.id) in evidence
                ]
                found[f"{sid}#{at}"] = {
                    "half": half(sid),
                    "category": question.category,
                    "question": question.question,
                    "found": bool(ranks),
                    "rank": ranks[0] if ranks else None,
                }
    return found


def table(found: dict[str, dict]) -> list[str]:
    """Return one line per half: recall@10 over all three categories, then each.

    Then recall@5 over all three, when the rows say where (``rank``).
    """
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in found.values():
        for key in ((row["half"], "all"), (row["half"], str(row["category"]))):
            counts[key][0] += 1
            counts[key][1] += row["found"]
        if "rank" in row:
            counts[(row["half"], "@5")][0] += 1
            counts[(row["half"], "@5")][1] += (row["rank"] or 99) <= 5
    lines = []
    for part in HALVES:
        cells = [
            f"{c}: {100 * counts[(part, c)][1] / counts[(part, c)][0]:.1f}%"
            for c in ("all", *map(str, CATEGORIES), "@5")
            if counts[(part, c)][0]
        ]
        if cells:
            lines.append(f"{part} ({counts[(part, 'all')][0]}): " + ", ".join(cells))
    return lines


def changes(found: dict[str, dict], before: dict[str, dict]) -> list[str]:
    """Return the questions found now and not before (+) or the reverse (-).

    Then, per half that changed, how many each way and the sign test's p.
    """
    lines = []
    moved: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key, row in found.items():
        was = before.get(key)
        if was is not None and was["found"] != row["found"]:
            sign = "+" if row["found"] else "-"
            moved[row["half"]][0 if row["found"] else 1] += 1
            lines.append(
                f"{sign} {row['half']} {row['category']} {key}: {row['question']}"
            )
    lines.sort(key=lambda line: (line.split()[1], line))
    for part in HALVES:
        if part in moved:
            gained, lost = moved[part]
            lines.append(
                f"{part}: {gained} gained, {lost} lost "
                f"(sign test p = {sign_test(gained, lost):.2f})"
            )
    return lines


def sign_test(gained: int, lost: int) -> float:
    """Return the two-sided sign test's p of ``gained`` against ``lost`` changes.

    The chance that a fair coin splits ``gained + lost`` flips at least as unevenly.

    >>> sign_test(3, 0), sign_test(6, 0), sign_test(2, 2)
    (0.25, 0.03125, 1.0)
    """
    n = gained + lost
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


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
