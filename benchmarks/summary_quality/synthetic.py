"""Generated two-person chats in LoCoMo's shape, for running the benchmark anywhere.

The quality benchmark's quick mode (and CI, which may lack the dataset) replays these:
sessions of greetings, praise and small talk around facts each speaker states about
themselves (a hobby, a pet, a trip, a job, a book), with single-hop and multi-hop
questions about them. Deterministic for a seed; not a substitute for real chats.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

NAMES = (
    ("Ana", "Ben"), ("Carla", "Dev"), ("Elif", "Farid"), ("Greta", "Hugo"),
    ("Ines", "Jonas"), ("Kira", "Liam"),
)  # fmt: skip
HOBBIES = ("aerial yoga", "pottery", "rock climbing", "salsa dancing", "birdwatching",
           "metal detecting", "woodcarving", "kite surfing", "chess")  # fmt: skip
PETS = ("a beagle", "two cats", "a parrot", "a tortoise", "three goldfish", "a ferret")
PET_NAMES = ("Biscuit", "Pepper", "Mochi", "Rufus", "Juniper", "Olive", "Tofu")
PLACES = ("Lisbon", "Kyoto", "Reykjavik", "Marrakesh", "Vancouver", "Tallinn",
          "Cartagena", "Hobart")  # fmt: skip
JOBS = ("a shooting guard", "a pastry chef", "a night nurse", "a sound engineer",
        "a park ranger", "a court reporter")  # fmt: skip
BOOKS = ("The Overstory", "Piranesi", "Educated", "Circe", "The Left Hand of Darkness")
GREETINGS = ("Hey {o}! Good to see you! How have you been?",
             "Hi {o}, long time no chat! What's new?",
             "Hey {o}! Great to hear from you again.")  # fmt: skip
REACTIONS = ("Wow {o}, that's amazing!", "That's so cool, {o}!", "Agreed, {o}!",
             "Haha, love that!", "So happy for you!", "Thanks {o}, you're the best!",
             "That sounds awesome!", "Aww, they're adorable!")  # fmt: skip
SMALL_TALK = ("How's work going for you these days?",
              "What have you been up to lately?",
              "Taking care of ourselves is so important.",
              "Sometimes it's hard, but we keep going.",
              "Anything fun planned for the weekend?")  # fmt: skip


def _facts(rng: random.Random) -> list[tuple[str, str, str]]:
    """Return (statement, question, answer) about one person, in their words."""
    pet, pet_name = rng.choice(PETS), rng.choice(PET_NAMES)
    place, hobby = rng.choice(PLACES), rng.choice(HOBBIES)
    job, book = rng.choice(JOBS), rng.choice(BOOKS)
    return [
        (f"I started doing {hobby} last month and I'm hooked.",
         "What hobby did {p} start?", hobby),
        (f"We adopted {pet}; the youngest is called {pet_name}.",
         "What is the name of {p}'s youngest pet?", pet_name),
        (f"I just got back from a trip to {place} with my sister.",
         "Where did {p} travel with their sister?", place),
        (f"I finally signed as {job} at the new place downtown.",
         "What position did {p} sign for?", job.split(" ", 1)[1]),
        (f"I'm reading {book} for my book club right now.",
         "What book is {p} reading for the book club?", book),
    ]  # fmt: skip


def generate_dialogue(seed: int, index: int, sessions: int = 6) -> dict[str, object]:
    """Return one conversation in LoCoMo's JSON shape (``locomo.parse_locomo``).

    >>> conversation = generate_dialogue(7, 0)
    >>> sorted(conversation)
    ['conversation', 'qa', 'sample_id']
    """
    rng = random.Random(f"dialogue:{seed}:{index}")
    speakers = NAMES[index % len(NAMES)]
    facts = {name: _facts(rng) for name in speakers}
    for said in facts.values():
        rng.shuffle(said)
    body: dict[str, object] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    qa: list[dict[str, object]] = []
    day = date(2023, 1, 9) + timedelta(days=rng.randint(0, 300))
    for number in range(1, sessions + 1):
        day += timedelta(days=rng.randint(5, 30))
        hour = rng.randint(1, 11)
        body[f"session_{number}_date_time"] = (
            f"{hour}:{rng.randint(10, 59)} {rng.choice(('am', 'pm'))} on "
            f"{day.day} {day:%B}, {day.year}"
        )
        turns: list[dict[str, str]] = []

        def say(
            speaker: str,
            text: str,
            turns: list[dict[str, str]] = turns,
            number: int = number,
        ) -> str:
            dia_id = f"D{number}:{len(turns) + 1}"
            turns.append({"speaker": speaker, "dia_id": dia_id, "text": text})
            return dia_id

        first, second = speakers if number % 2 else speakers[::-1]
        say(first, rng.choice(GREETINGS).format(o=second))
        say(second, rng.choice(GREETINGS).format(o=first))
        for _ in range(rng.randint(4, 6)):
            for speaker, other in ((first, second), (second, first)):
                if facts[speaker] and rng.random() < 0.45:
                    statement, question, answer = facts[speaker].pop()
                    dia_id = say(speaker, statement)
                    qa.append(
                        {"question": question.format(p=speaker), "answer": answer,
                         "evidence": [dia_id], "category": 4}
                    )  # fmt: skip
                elif rng.random() < 0.5:
                    say(speaker, rng.choice(REACTIONS).format(o=other))
                else:
                    say(speaker, rng.choice(SMALL_TALK))
        say(first, f"Bye {second}, talk soon!")
        body[f"session_{number}"] = turns
    return {"sample_id": f"generated-{seed}-{index}", "conversation": body, "qa": qa}
