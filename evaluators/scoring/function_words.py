"""Negators and the words for the person spoken to: one definition each, for every reader.

Why a module of its own: these are grammar, not rubric policy (no threshold to argue with), yet
three modules had each written their own list, with different members. Each list is now a
base every reader shares plus named additions, so what a reader reads beyond the base is said
where the base is, with its reason, and a reader's membership is the same as before.
"""

from __future__ import annotations

import re

# --- negators -------------------------------------------------------------------------------
# Words that negate, as spaCy's tokens show them ("don't" is "do" + "n't").
NEGATOR_BASE = frozenset({"not", "no", "never", "n't"})
# Answers that say no: a reply opening "Nope" or "Nah" pushes back as "No" does.
ANSWERED_NO = frozenset({"nope", "nah"})
# Heuristic signals read a reply that says no or pushes back.
NEGATORS = NEGATOR_BASE | ANSWERED_NO
# A negation in any writing: "nt" is a "dont" split by the tokenizer.
WRITTEN_NEGATORS = NEGATOR_BASE | {"nt"}
# Lexicon phrases are dropped when negated: "cannot" (one token in spaCy) negates too; "nope"
# and "nah" answer, they negate no phrase.
PHRASE_NEGATORS = WRITTEN_NEGATORS | {"cannot"}
# The safety parse rules read both: negation in any writing, and a no said as an answer.
PARSE_NEGATORS = PHRASE_NEGATORS | ANSWERED_NO
# Words that deny a verb ("I do not", "I never have"); "no" is an answer or a determiner.
VERB_NEGATORS = NEGATOR_BASE - {"no"}
# Scenario expectations read raw text, not tokens: there a negation is a whole word, the
# contracted forms included, and "n't" is never a word of its own.
TEXT_NEGATORS = (NEGATOR_BASE - {"n't"}) | {
    "cannot", "can't", "won't", "don't", "doesn't", "isn't", "couldn't", "wouldn't", "shouldn't"}
TEXT_NEGATOR_PATTERN = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, TEXT_NEGATORS))) + r")\b")

# --- the listener ---------------------------------------------------------------------------
# "you" and its text-speak form: the person a sentence is said to, as its subject or object.
LISTENER = frozenset({"you", "u"})
# A question about the listener ("What do you do?", "Is that yours?"); "your" is left out:
# "What did your sister say?" asks about the sister.
QUESTIONED_LISTENER = LISTENER | {"yours", "yourself"}
# An insult called at the listener, in the spellings insults come in ("ya idiot").
INSULTED_LISTENER = LISTENER | {"ya"}
# Any word of the second person: a reply that speaks to or about the user.
SECOND_PERSON = LISTENER | {"your", "yours", "yourself", "ur"}
# A name called at the listener ("you idiot", "ya moron", "your stupid ...").
VOCATIVE_LISTENER = INSULTED_LISTENER | {"your"}
# A sentence aimed at a person: the listener, or one spoken of ("they", "he", "she").
AIMED_AT_PERSON = LISTENER | {"your", "you're", "ur", "they", "he", "she"}
