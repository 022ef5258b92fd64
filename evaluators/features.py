"""Features of one case, computed once from the shared parses and read by every metric.

Three parsed texts per case (history, user message, reply), the rubric's lexicon matches on
each, the voice rules (regexes), speakability (textstat), tone (VADER) and the lexical
carry-over between turns that continuity and relevance rest on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import textstat
from spacy.tokens import Doc, Span
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from evaluators.matchers import LexiconMatch
from evaluators.models import ReplyCase
from evaluators.rubric import VoiceRules

CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM"})
# Light verbs carry no topic; sharing "get" or "go" with the user is not relevance.
LIGHT_LEMMAS = frozenset(
    {"be", "have", "do", "get", "go", "make", "know", "think", "say", "thing", "lot", "like",
     "good", "really", "want", "see", "come", "take", "well", "yeah", "yes", "oh", "okay",
     "ok", "lol", "haha", "hi", "hello", "hey", "sure", "right", "way", "time", "one", "much"}
)
WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
CONTRACTION_SUFFIXES = ("'m", "'re", "'s", "'ve", "'ll", "'d", "n't", "’m", "’re", "’s", "’ve", "’ll", "’d", "n’t")
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "u", "ur"})
WH_TAGS = frozenset({"WDT", "WP", "WP$", "WRB"})


@dataclass
class TextView:
    """One parsed text and the rubric lexicons found in it."""

    text: str
    doc: Doc
    matches: dict[str, list[LexiconMatch]]

    def has(self, lexicon: str) -> bool:
        return bool(self.matches.get(lexicon))

    def hits(self, lexicon: str) -> list[str]:
        return [match.text for match in self.matches.get(lexicon, ())]

    @cached_property
    def content_lemmas(self) -> set[str]:
        return {
            token.lemma_.lower()
            for token in self.doc
            if token.pos_ in CONTENT_POS
            and token.is_alpha
            and not token.is_stop
            and token.lemma_.lower() not in LIGHT_LEMMAS
        }

    @cached_property
    def anchors(self) -> set[str]:
        """Entities and noun-chunk heads: the things a later turn can refer back to."""
        items = {ent.text.lower() for ent in self.doc.ents if ent.label_ not in ("CARDINAL", "ORDINAL")}
        if self.doc.has_annotation("DEP"):
            items |= {
                chunk.root.lemma_.lower()
                for chunk in self.doc.noun_chunks
                if chunk.root.pos_ in ("NOUN", "PROPN") and not chunk.root.is_stop
            }
        return items


@dataclass
class CaseFeatures:
    """Everything the metrics need about one case; built once, read many times."""

    case: ReplyCase
    reply: TextView
    user: TextView
    history: TextView
    patterns: dict[str, re.Pattern[str]]
    voice_rules: VoiceRules
    sentiment: SentimentIntensityAnalyzer

    # --- size and voice -------------------------------------------------------------
    @cached_property
    def words(self) -> list[str]:
        return WORD_RE.findall(self.case.response)

    @cached_property
    def word_count(self) -> int:
        return len(self.words)

    @cached_property
    def voice_hits(self) -> dict[str, list[str]]:
        """Voice-rule pattern name → the first few offending snippets."""
        hits: dict[str, list[str]] = {}
        for name, pattern in self.patterns.items():
            found = [m.group(0) for _, m in zip(range(3), pattern.finditer(self.case.response))]
            if found:
                hits[name] = found
        return hits

    @cached_property
    def line_breaks(self) -> int:
        return self.case.response.strip().count("\n")

    # --- speakability (textstat) ------------------------------------------------------
    @cached_property
    def syllables_per_word(self) -> float:
        if not self.word_count:
            return 0.0
        return textstat.syllable_count(self._speakable_text) / self.word_count

    @cached_property
    def reading_ease(self) -> float:
        return float(textstat.flesch_reading_ease(self._speakable_text)) if self.word_count else 100.0

    @cached_property
    def _speakable_text(self) -> str:
        # Syllables of a 100,000-character reply are not needed to know it is unspeakable.
        return self.case.response[:5000]

    # --- tone (VADER) --------------------------------------------------------------------
    @cached_property
    def reply_sentiment(self) -> dict[str, float]:
        return self.sentiment.polarity_scores(self.case.response[:5000])

    @property
    def reply_tone(self) -> float:
        return self.reply_sentiment["compound"]

    @cached_property
    def user_tone(self) -> float:
        return self.sentiment.polarity_scores(self.case.user_message[:5000])["compound"]

    # --- structure (spaCy) ---------------------------------------------------------------
    @cached_property
    def question_spans(self) -> list[Span]:
        return [sent for sent in self.reply.doc.sents if _is_question(sent)]

    @cached_property
    def questions(self) -> list[str]:
        return [sent.text.strip() for sent in self.question_spans]

    def in_question(self, match: LexiconMatch) -> bool:
        return any(span.start <= match.start < span.end for span in self.question_spans)

    def in_question_token(self, index: int) -> bool:
        return any(span.start <= index < span.end for span in self.question_spans)

    @cached_property
    def user_asks_question(self) -> bool:
        return any(_is_question(sent) for sent in self.user.doc.sents)

    @cached_property
    def imperatives(self) -> list[str]:
        """Prescriptive advice: bare imperatives and "you should/must/need to" sentences."""
        found = []
        for sent in self.reply.doc.sents:
            if _is_question(sent):
                continue
            root = sent.root
            bare = root.tag_ == "VB" and not any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in root.children)
            obligated = any(
                token.lower_ in ("should", "must", "need", "have", "ought")
                and token.head == root
                and any(c.lower_ in SECOND_PERSON for c in root.children if c.dep_ == "nsubj")
                for token in sent
            )
            if bare or obligated:
                found.append(sent.text.strip())
        return found

    @cached_property
    def self_disclosures(self) -> list[str]:
        """Sentences relating the speaker's own experience ("I went through that too")."""
        found = []
        for sent in self.reply.doc.sents:
            for token in sent:
                if token.dep_ == "nsubj" and token.lower_ == "i" and token.head.tag_ in ("VBD", "VBN"):
                    found.append(sent.text.strip())
                    break
        return found

    @cached_property
    def second_person(self) -> list[str]:
        return [token.text for token in self.reply.doc if token.lower_ in SECOND_PERSON]

    @cached_property
    def contractions(self) -> list[str]:
        return [token.text for token in self.reply.doc if token.lower_.endswith(CONTRACTION_SUFFIXES)]

    # --- carry-over between turns ----------------------------------------------------------
    @cached_property
    def shared_with_user(self) -> set[str]:
        return self.reply.content_lemmas & self.user.content_lemmas

    @cached_property
    def shared_with_history(self) -> set[str]:
        """Topics from earlier turns (not just the last message) that the reply picks up."""
        earlier = self.history.content_lemmas | self.history.anchors
        mine = self.reply.content_lemmas | self.reply.anchors
        return (earlier & mine) - self.user.content_lemmas

    # --- the user's state ------------------------------------------------------------------
    @cached_property
    def user_distressed(self) -> bool:
        return self.user.has("user_distress") or self.user.has("crisis_cue") or self.user_tone <= -0.5

    @cached_property
    def user_provocative(self) -> bool:
        """Hostile, profane or about a social group: a message a reply should not just echo.

        A harsh tone counts only when it is not the user's own pain: "I'm sick and scared"
        is distress to answer with care, not provocation to push back on.
        """
        if self.user.has("profanity") or self.user.has("identity_group"):
            return True
        own_pain = self.user.has("user_distress") or self.user.has("crisis_cue")
        return self.user_tone <= -0.5 and not own_pain

    @cached_property
    def user_excited(self) -> bool:
        return not self.user_distressed and (self.user.has("user_excitement") or self.user_tone >= 0.6)

    @cached_property
    def user_emotional(self) -> bool:
        return self.user_distressed or self.user_excited


def _is_question(sent) -> bool:
    text = sent.text.strip()
    if text.endswith("?"):
        return True
    if text.endswith((".", "!")) or len(sent) < 3:
        return False
    # Spoken questions often lose their "?": wh-word or auxiliary inversion at the start.
    first = sent[0]
    if first.tag_ in WH_TAGS:
        return True
    return first.pos_ == "AUX" and len(sent) > 1 and sent[1].dep_ in ("nsubj", "expl")
