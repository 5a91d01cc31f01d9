"""Reading what a statement says about the person, on a language pipeline.

Each sentence is parsed (memory/engine/language.py: spaCy's dependencies, tags, lemmas and
entities) and read clause by clause. The parse says who a clause is about (the speaker, "my
sister", someone else), whether it is asserted (not a question, a hypothetical, a wish, a plan
without a date, a passing mood) and in which tense; the lemmas (memory/engine/lexicon.py) say
what it is about: its kind (where they live, work, health, diet, family, a plan, a hobby, …).
A clause about the speaker of a kind that matters later becomes a `Reading`: its kind (slot),
what identifies it within the kind (key), its value, and its text in the third person ("User is
coeliac", "Ingrid is User's sister"). Kinds that one value fills at a time (where they live,
their job, …) are written in one form whatever the wording, so a second telling is the same fact.

Pure and deterministic: the caller passes the text; parses and readings are cached by text.

The modules, each importing only those above it: `clauses` (the `Reading`, a sentence parsed into
clauses, whose each is, whether it is asserted, its tense and negation), `kinds` (what a clause is
about), `words` (the fact's words in the third person, its key, value and what it ends), `people`
(family, friends and pets by name; the speaker's name and age), `slots` (reading one clause) and
`reader` (whole statements: `read`, `read_all`, `mention_of`, their parts, stored facts read as the
speaker's words, and what the clauses missed), and `requests` (a request not to keep: "forget that
I …", "never store this: …"). Their public names are re-exported here.
"""

from .clauses import EXCLUSIVE_SLOTS, SELF, Reading, clauses
from .kinds import value_of
from .reader import in_plain_order, mention_of, normalise_statement, parse_parts, parts_of, read, read_all, read_doc
from .requests import KeptBack, kept_back
from .words import clause_text, third_singular

__all__ = [
    "EXCLUSIVE_SLOTS",
    "KeptBack",
    "SELF",
    "Reading",
    "clause_text",
    "clauses",
    "in_plain_order",
    "kept_back",
    "mention_of",
    "normalise_statement",
    "parse_parts",
    "parts_of",
    "read",
    "read_all",
    "read_doc",
    "third_singular",
    "value_of",
]
