"""Irregular English forms: the words a stemmer cannot join ("met" and "meet").

The Snowball stemmer joins regular forms ("dancing", "danced", "dances" are one
term), not irregular ones: "met" is not "meet", "children" is not "child". A query
that asks "When did Caroline meet her friends?" misses "we met at the park". Every
stored message is indexed under its own stems, so joining the forms in the index
would change what each message is indexed under (a rebuild of every index). This
module joins them at search time instead, on the query's side only:

- ``with_forms`` adds to a query's terms the other forms of each irregular word it
  holds ("meet" -> "meet", "met");
- ``form_of`` tells which terms are forms of one word: the ranking
  (``domain.ranking``) scores them as one term, whose frequency in a message is the
  sum of its forms' and whose document count is the sum of theirs (at least the
  messages that hold any of them), so a message saying "met" scores as one saying
  "meet" would.

The list is general English: about 100 common irregular verbs (base, past, past
participle) and irregular plurals, read as stems (``domain.recall``'s stemmer); a
stem is in one group only. Some forms are other words too ("left", "saw", "won" of
"won't"): their messages then count for the word, and the summed document count
weighs the word down accordingly.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from .recall import MAX_QUERY_TERMS, query_terms

MAX_FORMS_TERMS = 2 * MAX_QUERY_TERMS
"""A query with its forms keeps at most this many terms (its own first)."""

_FORMS = """
go goes went gone
say says said
make makes made
get gets got gotten
know knows knew known
think thinks thought
take takes took taken
see sees saw seen
come comes came
give gives gave given
find finds found
tell tells told
feel feels felt
leave leaves left
keep keeps kept
begin begins began begun
bring brings brought
buy buys bought
build builds built
catch catches caught
choose chooses chose chosen
draw draws drew drawn
drink drinks drank drunk
drive drives drove driven
eat eats ate eaten
fall falls fell fallen
fight fights fought
fly flies flew flown
forget forgets forgot forgotten
grow grows grew grown
hear hears heard
hold holds held
lead leads led
learn learns learnt
lose loses lost
mean means meant
meet meets met
pay pays paid
ride rides rode ridden
ring rings rang rung
rise rises rose risen
run runs ran
sell sells sold
send sends sent
sing sings sang sung
sit sits sat
sleep sleeps slept
speak speaks spoke spoken
spend spends spent
stand stands stood
steal steals stole stolen
swim swims swam swum
teach teaches taught
tear tears tore torn
throw throws threw thrown
understand understands understood
wake wakes woke woken
wear wears wore worn
win wins won
write writes wrote written
break breaks broke broken
blow blows blew blown
shake shakes shook shaken
hide hides hid hidden
bite bites bit bitten
freeze freezes froze frozen
forgive forgives forgave forgiven
sink sinks sank sunk
shine shines shone
shoot shoots shot
stick sticks stuck
strike strikes struck
swing swings swung
dig digs dug
feed feeds fed
bleed bleeds bled
breed breeds bred
flee flees fled
hang hangs hung
lend lends lent
seek seeks sought
slide slides slid
spin spins spun
weep weeps wept
bend bends bent
deal deals dealt
dream dreams dreamt
lay lays laid
bear bears bore born borne
child children
man men
woman women
person people
foot feet
tooth teeth
mouse mice
goose geese
wife wives
knife knives
wolf wolves
shelf shelves
"""


@functools.cache
def _groups() -> Mapping[str, tuple[str, ...]]:
    """Return each form's stem -> its group's stems (the first stem names it)."""
    groups: dict[str, tuple[str, ...]] = {}
    for line in _FORMS.strip().splitlines():
        stems = tuple(dict.fromkeys(query_terms(word)[0] for word in line.split()))
        if len(stems) < 2:
            continue
        stems = tuple(s for s in stems if s not in groups)
        for stem in stems:
            groups[stem] = stems
    return groups


def form_of(term: str) -> str:
    """Return the term that names ``term``'s group of forms (``term`` when none).

    >>> form_of("met"), form_of("children"), form_of("camp")
    ('meet', 'child', 'camp')
    """
    group = _groups().get(term)
    return group[0] if group else term


def with_forms(terms: Sequence[str]) -> tuple[str, ...]:
    """Return ``terms`` followed by the other forms of those that have some.

    At most ``MAX_FORMS_TERMS`` of them, ``terms`` first.

    >>> with_forms(("met", "friend"))
    ('met', 'friend', 'meet')
    """
    groups = _groups()
    extra = [form for term in terms for form in groups.get(term, ())]
    return tuple(dict.fromkeys((*terms, *extra)))[:MAX_FORMS_TERMS]
