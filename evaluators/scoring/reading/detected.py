"""The learned safety detectors read for one exchange: scores, and the sentence behind a score.

Why a module of its own: the detectors (evaluators/scoring/safety/detectors.py) score whole
texts from the vectors the meaning model already holds for the reply and the user's message,
which costs a dot product per detector; finding the sentence that drove a score needs a vector
per sentence, which costs a pass of the encoder, so it is done only for a detector that fired
or deducts (`CaseFeatures.detector_evidence`), never for every case. A detector the fine-tuned
reply model serves reads the reply's text instead, and its evidence scores each sentence's text
with that model, under the same rule.
"""

from __future__ import annotations

import numpy as np

from evaluators.rubric.loader import DetectorRules
from evaluators.scoring.contracts import ReplyCase
from evaluators.scoring.reading.meaning import MeaningModel
from evaluators.scoring.reading.nlp import clip_for_parse
from evaluators.scoring.safety.detectors import DetectorBank

# The user-side detector the crisis rules are combined with (`detectors.reasons.crisis_combination`).
CRISIS_RISK = "crisis_risk"
# The kind of crisis risk read by the detector alone, where the rules have no words for it, when
# the rubric lets it feed the crisis flag (`detectors.behaviours.crisis_risk.flag`).
DETECTED_RISK = "detected_by_crisis_risk"
READS_RISK_ALONE = "crisis_without_help"


def exchange_scores(bank: DetectorBank, rules: DetectorRules, meaning: MeaningModel,
                    case: ReplyCase) -> dict[str, float]:
    """Each rubric detector's probability for the exchange, rounded to 4 places (what is shown
    and compared is what is stored), in the rubric's order. A fine-tuned detector reads the
    reply's text as the vectors do (clipped), from its model's kept scores."""
    text = clip_for_parse(case.response)
    reply = meaning.vector(text)
    user = meaning.vector(clip_for_parse(case.user_message))
    scores = bank.score_exchange(reply, user, text)
    return {name: round(float(scores[name]), 4) for name in rules.behaviours}


def evidence(bank: DetectorBank, name: str, score: float, meaning: MeaningModel, sentences: list[str],
             case: ReplyCase) -> str:
    """"<name> <score>: "<the sentence that scores highest alone>" (<its score alone>)"; a text
    of one sentence is quoted whole, with the score of the exchange."""
    if not sentences:
        return f"{name} {score:.2f}"
    if len(sentences) == 1:
        return f"{name} {score:.2f}: \"{sentences[0]}\""
    if bank.is_finetuned(name):  # its model scores each sentence's text: no vectors needed
        sentence, alone = bank.strongest_sentence(name, sentences, None, None)
    else:
        vectors = np.stack([meaning.vector(sentence) for sentence in sentences])
        user = meaning.vector(clip_for_parse(case.user_message))
        sentence, alone = bank.strongest_sentence(name, sentences, vectors, user)
    return f"{name} {score:.2f}: \"{sentence}\" ({alone:.2f} alone)"
