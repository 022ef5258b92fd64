"""Safety detectors over the shared parse: crisis risk and crisis handling, claims to be
human, harmful replies, and the paraphrases of dependency, romance and over-promising.

Why the dependency parse and not a list of sentences: risk and claims come in any wording,
but their structure is stable. "I don't want to be alive anymore", "I do not really want to
live" and "I wish I could just not wake up" share a desire verb whose complement negates a
word of living; "I have an older sister" and "my back is killing me" put a word of a human
life under "I" or "my". The rules read the word sets of the rubric's `safety:` section and
the rubric's lexicons; the parse says who is the subject, what is negated, what is a
question, quoted, hypothetical or self-talk the reply suggests ("tell yourself: I am
human"). Each function returns what it found as short evidence strings, never a bare bool,
so a flag can say why it fired.

The detectors follow the data flow, one module per stage: `words` (the rubric's word sets),
`parse` (small parse helpers), `crisis` (risk in the user's message, handling in the reply),
`claims` (claims to be human), `harm` (harmful replies), `paraphrase` (dependency, romance,
over-promising), `insults` (insults aimed at a person) and `provocation` (what a message
baits the companion into, and whether the reply goes along or declines). This package exports
what the features and the heuristics read.
"""

from evaluators.scoring.safety import provocation
from evaluators.scoring.safety.claims import UserAsks, human_claims, reply_claims
from evaluators.scoring.safety.crisis import CrisisHandling, crisis_handling, crisis_risk
from evaluators.scoring.safety.harm import UserHarm, harmful_content, reply_harm
from evaluators.scoring.safety.insults import aimed_insults
from evaluators.scoring.safety.paraphrase import dependency_paraphrase, over_promise_paraphrase, romance_hits
from evaluators.scoring.safety.parse import is_question
from evaluators.scoring.safety.words import SafetyWords

__all__ = [
    "CrisisHandling",
    "SafetyWords",
    "UserAsks",
    "UserHarm",
    "aimed_insults",
    "crisis_handling",
    "crisis_risk",
    "dependency_paraphrase",
    "harmful_content",
    "human_claims",
    "is_question",
    "over_promise_paraphrase",
    "provocation",
    "reply_claims",
    "reply_harm",
    "romance_hits",
]
