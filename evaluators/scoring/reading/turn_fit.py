"""How a reply fits the turn before it, read from the parse: answers, stances, contradictions.

Why the parse and not shared words: "Where do you live?" is answered by "Near the coast in
Oregon", which shares no word with it, and "Do you like jazz?" by "Yeah, a lot". What a
question asks for is in its question word (who → a person, where → a place, how many → an
amount), and a yes/no question is answered by a stance. A contradiction is the same subject
saying the opposite about the same thing: one predicate negated, or its opposite.
The word lists are the rubric's (`meaning` section), none fitted to rated data.
"""

from __future__ import annotations

from dataclasses import dataclass

from spacy.tokens import Doc, Span, Token

from evaluators.rubric.loader import MeaningRules
from evaluators.scoring.function_words import QUESTIONED_LISTENER, WRITTEN_NEGATORS
from evaluators.scoring.safety import is_question
from evaluators.scoring.safety.columns import columns

WH_WORDS = frozenset({"what", "who", "whom", "whose", "where", "when", "why", "how", "which"})
FIRST_PERSON = frozenset({"i", "we"})
# The listener as a person asked about ("I like pizza" does not answer "what did your sister say?").
LISTENER = QUESTIONED_LISTENER
NAMING_POS = frozenset({"NOUN", "PROPN"})
NEGATIONS = WRITTEN_NEGATORS


@dataclass(frozen=True)
class Question:
    """A question in the user's message: its text, and what it asks for."""

    text: str
    kind: str  # an answer kind of the rubric, "yes_no", or "open" (what/which/how ...)
    about_listener: bool = False  # it asks about "you": the one who answers


def questions_asked(doc: Doc, rules: MeaningRules) -> list[Question]:
    """The user's questions and their kinds, in order."""
    found = []
    for sent in doc.sents:
        if not is_question(sent):
            continue
        about_listener = any(token.lower_ in LISTENER for token in sent)
        found.append(Question(sent.text.strip(), question_kind(sent, rules), about_listener))
    return found


def question_kind(sent: Span, rules: MeaningRules) -> str:
    """The kind a question asks for, from its first question word; yes/no when it has none.

    A question without a question word asks for a stance whatever its word order: "Do you
    have a dog?", and in speech "You have a dog?" or "So you don't get sick a lot?" too.
    """
    words = [token for token in sent if not token.is_punct]
    for index, token in enumerate(words):
        if token.lower_ in WH_WORDS:
            opening = " ".join(word.lower_ for word in words[index:index + 3])
            return rules.kind_of_question(opening) or "open"
    return "yes_no" if words else "open"


def statements(doc: Doc) -> list[Span]:
    """The reply's sentences that are not questions and hold a word."""
    return [sent for sent in doc.sents if not is_question(sent) and any(token.is_alpha for token in sent)]


def supplies(kind: str, sents: list[Span], rules: MeaningRules) -> str:
    """The words in ``sents`` that supply what a question of ``kind`` asks for ("" when none)."""
    if kind == "yes_no":
        return stance(sents, rules)
    answer = rules.answer_kinds.get(kind)
    if answer is None:
        return ""
    labels = set(answer.entities)
    words = {word.lower() for word in answer.words}
    for sent in sents:
        for ent in sent.ents:
            if ent.label_ in labels:
                return ent.text
        for token in sent:
            if token.lower_ in words or (kind == "amount" and token.like_num):
                return token.text
    return ""


def open_answer(question: Question, sents: list[Span]) -> str:
    """What answers an open question ("what", "which"), read from the first statement.

    A statement with no verb that names something answers "what" ("What's your favourite
    show?" "The Walking Dead."); and a question about the listener ("What do you do?",
    "What about you?") is answered by the speaker speaking of themself ("I own a bakery"),
    as a yes/no question about "you" is answered "I do".
    """
    if not sents:
        return ""
    first = sents[0]
    if first.root.pos_ in NAMING_POS:
        return first.root.text
    subject = next((token for token in first if token.dep_ in ("nsubj", "nsubjpass")), None)
    if question.about_listener and subject is not None and subject.lower_ in FIRST_PERSON:
        return f"{subject.text} {subject.head.text}"
    return ""


def stance(sents: list[Span], rules: MeaningRules) -> str:
    """A yes/no answer: a stance word opening the first statement, or a first-person statement.

    "I do", "Nope", "Of course" take a stance; so does "I love it" to "Do you like jazz?"
    (the question's "you" answered as "I").
    """
    if not sents:
        return ""
    first = sents[0]
    opening = " ".join(token.lower_ for token in first if not token.is_punct)
    for word in sorted(rules.stance_words, key=len, reverse=True):
        if opening == word or opening.startswith(word + " "):
            return word
    subject = next((token for token in first if token.dep_ in ("nsubj", "nsubjpass")), None)
    if subject is not None and subject.lower_ in FIRST_PERSON:
        return f"{subject.text} {subject.head.text}"
    return ""


# --- contradiction ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One predicate a turn states: its subject, verb or adjective, object, and polarity."""

    subject: str
    predicate: str
    object: str
    negated: bool
    text: str


def claims(span: Span | Doc) -> list[Claim]:
    """First-person statements ("I love dogs", "I'm not a student") in a turn, questions excluded.

    Only the speaker's own "I" is read: a turn about someone else cannot contradict the
    speaker's other turns, and "you" changes meaning between speakers.
    """
    found: list[Claim] = []
    doc = span if isinstance(span, Doc) else span.doc
    low, high = (0, len(doc)) if isinstance(span, Doc) else (span.start, span.end)
    # Only "I" or "we" as a subject makes a claim: most turns have none, and need no more reading.
    cols = columns(doc)
    speakers = [index for index in range(low, high)
                if cols.dep[index] in ("nsubj", "nsubjpass") and cols.lower[index] in FIRST_PERSON]
    if not speakers:
        return found
    for whole in span.sents:
        # A sentence may run past the turn in a joined history; keep the turn's part of it.
        sent = doc[max(whole.start, low):min(whole.end, high)]
        if not len(sent) or is_question(whole):
            continue
        for token in (doc[index] for index in speakers if sent.start <= index < sent.end):
            head = token.head
            predicate, obj = _predicate(head)
            if not predicate:
                continue
            negated = any(child.dep_ == "neg" or child.lower_ in NEGATIONS for child in head.children)
            found.append(Claim(token.lower_, predicate, obj, negated, sent.text.strip()))
    return found


def _predicate(head: Token) -> tuple[str, str]:
    """The verb's lemma and its object's lemma; for "I am (not) X", "be" and X."""
    obj = next((child for child in head.children if child.dep_ in ("dobj", "attr", "acomp", "xcomp", "ccomp")),
               None)
    if head.lemma_ == "be" and obj is None:
        return "", ""
    return head.lemma_.lower(), "" if obj is None else obj.lemma_.lower()


def contradiction(earlier: list[Claim], reply: list[Claim], rules: MeaningRules) -> tuple[Claim, Claim] | None:
    """The first reply claim that says the opposite of an earlier claim by the same speaker."""
    opposites = {frozenset(pair) for pair in rules.opposite_predicates}
    for said in earlier:
        for now in reply:
            if said.subject != now.subject or said.object != now.object:
                continue
            same = said.predicate == now.predicate
            if same and said.negated != now.negated:
                return said, now
            if frozenset((said.predicate, now.predicate)) in opposites and said.negated == now.negated:
                return said, now
    return None
