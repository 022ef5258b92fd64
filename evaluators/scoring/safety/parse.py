"""Small questions every safety rule asks of the dependency parse: is a token negated, who is
its subject, is its sentence a question, is it quoted, hypothetical or self-talk.

Why a module of its own: the crisis, human-claim, harm, paraphrase and insult rules all read
a statement the same way; answering these questions once keeps the rules consistent.
"""

from __future__ import annotations

from spacy.tokens import Span, Token

from evaluators.scoring.function_words import PARSE_NEGATORS
from evaluators.scoring.rubric_names import reads_rubric
from evaluators.scoring.safety.columns import columns
from evaluators.scoring.safety.words import SafetyWords

# The rubric names this module reads (refused on load when missing: evaluators.scoring.rubric_names).
reads_rubric("safety.parse", word_sets=("hypothetical",))

NEGATORS = PARSE_NEGATORS
WH_TAGS = frozenset({"WDT", "WP", "WP$", "WRB"})
QUOTES = ('"', "“", "”")


def is_negated(token: Token) -> bool:
    """A negation on the token itself; an interjected "No," answers, it does not negate."""
    return any(child.dep_ == "neg" or (child.lower_ in NEGATORS and child.dep_ in ("advmod", "det"))
               for child in token.children)


def subject(token: Token) -> Token | None:
    """The token's subject, looking through xcomp/conj chains ("I want to sleep")."""
    current = token
    for _ in range(4):
        for child in current.children:
            if child.dep_ in ("nsubj", "nsubjpass", "expl"):
                return child
        if current.dep_ in ("xcomp", "conj", "acomp", "attr", "advcl", "ccomp") and current.head.i != current.i:
            current = current.head
            continue
        return None
    return None


def first_person(token: Token) -> bool:
    """Its subject (`subject`) is "I". Read from the doc's columns, which work it out for
    every token at once: the rules ask it of many tokens of the same reply."""
    return columns(token.doc).first_person[token.i]


def is_question(sent: Span) -> bool:
    """Ends in "?", or, spoken questions often losing it, opens with a wh-word or an inverted
    auxiliary ("Do you ...", "Is it ...")."""
    # The last token that is not white space stands for the stripped text's end (read per
    # token: building the sentence's text is the dearer part of a check made ~12 times a reply).
    doc, end = sent.doc, sent.end
    while end > sent.start and doc[end - 1].is_space:
        end -= 1
    last = doc[end - 1].text.rstrip() if end > sent.start else ""
    if last.endswith("?"):
        return True
    if last.endswith((".", "!")) or len(sent) < 3:
        return False
    first = sent[0]
    return first.tag_ in WH_TAGS or (first.pos_ == "AUX" and sent[1].dep_ in ("nsubj", "expl"))


def quoted(token: Token) -> bool:
    """Inside quotation marks in its sentence (an odd number of quotes before it), or inside
    single-asterisk emphasis, which written replies use for titles (*My Octopus Teacher*)."""
    before = token.doc[token.sent.start:token.i].text
    if sum(before.count(mark) for mark in QUOTES) % 2 == 1:
        return True
    return before.replace("**", "").count("*") % 2 == 1


def hypothetical(token: Token, words: SafetyWords) -> bool:
    """Under "if", "would", "could", "imagine"...: a supposition, not a statement."""
    markers = words["hypothetical"] | {"'d"}
    current = token
    for _ in range(6):
        if current.lemma_.lower() in ("wish", "imagine", "pretend", "suppose"):
            return True
        if any(child.dep_ in ("mark", "aux", "advmod") and child.lower_ in markers for child in current.children):
            return True
        if current.head.i == current.i:
            return False
        current = current.head
    return False


def in_self_talk(token: Token, self_talk_starts: list[int]) -> bool:
    """After a self-talk cue ("tell yourself:") in the same or the previous sentence."""
    sent = token.sent
    if any(sent.start <= start < token.i for start in self_talk_starts):
        return True
    previous_end = sent.start
    if previous_end > 0:
        previous = token.doc[previous_end - 1].sent
        if previous.text.rstrip().endswith(":") and any(previous.start <= start < previous.end
                                                      for start in self_talk_starts):
            return True
    return False


def negated_upwards(token: Token) -> bool:
    """Negated itself or through the verbs it completes ("won't be able to breathe")."""
    current = token
    for _ in range(3):
        if is_negated(current):
            return True
        if current.dep_ not in ("xcomp", "acomp", "ccomp") or current.head.i == current.i:
            return False
        current = current.head
    return False


def clause_negated(token: Token) -> bool:
    """The token or the verb it hangs on is negated ("I don't have a sister")."""
    if is_negated(token):
        return True
    head = token.head
    return head.i != token.i and head.pos_ in ("VERB", "AUX") and is_negated(head)
