"""How far ``estimate_tokens`` sits above the exact o200k_base and cl100k_base counts.

Run as a script: ``python benchmarks/token_estimate.py [--locomo PATH]``. Corpora:
LoCoMo's conversation turns (English; skipped when the file is absent), LoCoMo's
question/answer records as JSON, the demo's English and Chinese messages and tool
arguments, Chinese as JSON (escaped and not), this repository's Python code in 2,000
character pieces, and the engine_cpu benchmark's chat. Per corpus and encoding it
prints the ratio of the summed estimate to the summed exact count, the smallest
per-text ratio (below 1.0 would be an undercount) and how many texts were
undercounted, then the speed of each.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import engine_cpu

from memory_summary.adapters import TiktokenCounter
from memory_summary.adapters.tokens import ENCODINGS, estimate_tokens
from memory_summary.conversations import session_turns

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"


def corpora(locomo: Path) -> dict[str, list[str]]:
    """Return each corpus's texts."""
    out: dict[str, list[str]] = {}
    if locomo.exists():
        data = json.loads(locomo.read_text())
        out["locomo turns"] = [
            turn["text"]
            for conversation in data
            for value in conversation["conversation"].values()
            if isinstance(value, list)
            for turn in value
            if isinstance(turn, dict) and turn.get("text")
        ]
        out["locomo qa as JSON"] = [
            json.dumps(c["qa"][i : i + 5])
            for c in data
            for i in range(0, len(c["qa"]), 5)
        ]
    english, chinese, tools = [], [], []
    for session in range(40):
        for turn in session_turns(session, 30, 7):
            for message in turn.messages:
                han = any("\u4e00" <= ch <= "\u9fff" for ch in message.text)
                if message.text:
                    (chinese if han else english).append(message.text)
                tools.extend(call.arguments for call in message.tool_calls)
    out["demo english"] = english
    out["demo chinese"] = chinese
    out["demo tool arguments"] = tools
    out["chinese as JSON"] = [json.dumps({"q": t}, ensure_ascii=False) for t in chinese]
    out["chinese as escaped JSON"] = [json.dumps({"q": t}) for t in chinese]
    code = []
    for path in sorted(ROOT.glob("[adm]*/**/*.py")):
        text = path.read_text()
        code += [text[i : i + 2000] for i in range(0, len(text), 2000)]
    out["python code"] = code
    chat = []
    for _, user, rest, _ in engine_cpu.workload(20, 40):
        for message in (user, *rest):
            chat.append(message.text)
            chat.extend(call.arguments for call in message.tool_calls)
    out["engine_cpu chat"] = [t for t in chat if t]
    return out


def main() -> None:
    """Print the estimate against each exact count, per corpus, and the speeds."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    args = parser.parse_args()
    counters = {name: TiktokenCounter(name).count for name in ENCODINGS}
    print(
        f"{'corpus':24} {'encoding':12} {'texts':>6} {'sum ratio':>9} "
        f"{'min ratio':>9} {'under':>5}"
    )
    everything: list[str] = []
    for corpus, texts in corpora(args.locomo).items():
        everything += texts
        estimates = [estimate_tokens(t) for t in texts]
        for name, count in counters.items():
            exact = [count(t) for t in texts]
            under = sum(e < x for e, x in zip(estimates, exact, strict=True))
            low = min(e / x for e, x in zip(estimates, exact, strict=True) if x)
            print(
                f"{corpus:24} {name:12} {len(texts):6} "
                f"{sum(estimates) / sum(exact):9.3f} {low:9.3f} {under:5}"
            )
    chars = sum(map(len, everything))
    for label, count in (("estimate_tokens", estimate_tokens), *counters.items()):
        start = time.perf_counter()
        for text in everything:
            count(text)
        seconds = time.perf_counter() - start
        print(f"{label:16} {chars / seconds / 1e6:6.1f} M chars/s")


if __name__ == "__main__":
    main()
