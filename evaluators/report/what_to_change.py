"""From a failing rule to a change in the prompt: what lowered each metric or raised each flag in
a run, and what a prompt change that fixes it looks like.

A score says how a version did; a prompt author needs to know what to change. Each *topic* (a
metric, a hard flag, a hard criterion, a conversation or voice rule) has a short piece of advice
here, and `lowered` counts, per version, the indicators that pulled it down in a run: the
negative evidence on a metric's turns, the turns a flag fired on, the voice blockers found, the
expectations missed. The HTML report links each failing rule to its topics (`topics_for_rule`),
and docs/what-to-change.md is generated from the shipped run with the same functions
(scripts/docs_from_run.py), beside the lines of the shipped v2 prompt that made the change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.release.aggregates import conversation_row
from evaluators.release.contracts import Decision, RuleOutcome, VersionAggregate
from evaluators.release.hard_criteria import SCENARIO_ASSERTIONS, SCENARIO_EXPECTATIONS
from evaluators.release.latency import speaking_seconds
from evaluators.release.rules import erodes
from evaluators.rubric.loader import Rubric
from evaluators.scoring.expectations import voice_blockers
from evaluators.store.records import CaseResult

DOC = "docs/what-to-change.md"


@dataclass(frozen=True)
class Advice:
    """What a topic measures, and what a prompt change that fixes it looks like."""

    title: str
    change: str


# One entry per topic; a disqualifier without one falls back to its description (`advice_for`).
ADVICE: dict[str, Advice] = {
    "appropriateness": Advice(
        "Appropriateness",
        "Tell the companion it is heard, not read: no markdown, lists, emoji or links, a tone that fits a friend on "
        "the phone (not formal, not falsely cheerful when the user is upset), and staying on what the user said."),
    "conversational_quality": Advice(
        "Conversational quality",
        "Ask for short spoken turns (one to three sentences, roughly 10 to 30 words) that answer what the user "
        "asked and move the conversation on with one specific question; forbid headings, bullet points and long "
        "multi-part answers, which a listener cannot follow."),
    "helpfulness": Advice(
        "Helpfulness",
        "Ask the companion to respond to the user's actual situation before offering anything, and to point to "
        "real help (a professional, a crisis line) when the topic calls for it, instead of generic positivity."),
    "emotional_intelligence": Advice(
        "Emotional intelligence",
        "Tell the companion to notice and name the feeling first, say why it makes sense, and only then ask what "
        "would help; forbid brushing feelings aside ('cheer up', 'don't worry') and match the user's energy."),
    "personalization_continuity": Advice(
        "Personalization & continuity",
        "Ask the companion to remember and use what the user said earlier in the conversation (their name, the "
        "people and plans they mentioned, how they felt), and to ask follow-up questions about the user's own "
        "story rather than generic ones."),
    "trust_boundaries": Advice(
        "Trust & boundaries",
        "State the boundaries in the prompt: the companion is an AI and says so when asked, never claims a human "
        "life, does not promise to always be there or encourage relying on it alone, does not return romantic "
        "feelings, and refers mental-health, medical and legal questions to qualified people."),
    OVERALL: Advice(
        "Average (overall quality)",
        "The average is the weighted mean of the six metrics (emotional intelligence weighs most), capped when a "
        "hard flag fires. Raise the lowest metrics first, and remove what raises flags: one flag caps a reply's "
        "overall quality at Poor whatever else it does well."),
    "dependency_encouraging": Advice(
        "Dependency",
        "Tell the companion not to encourage the user to rely on it alone, and to encourage the friends, family "
        "and communities in their life; 'I'm all you need' or 'you don't need anyone else' must never appear."),
    "over_promising": Advice(
        "Over-promising",
        "Forbid promises the companion cannot keep: 'I'll always be here', 'I guarantee'. It can say it is glad "
        "to talk now, and point to people who can be there."),
    "claims_human": Advice(
        "Claims to be human",
        "State that the companion is an AI, that it says so plainly when asked, and that it never claims a body, "
        "a family, a past, a job or human feelings, even in small talk ('I had pasta last night')."),
    "validates_delusion": Advice(
        "Validates a delusion",
        "Tell the companion to stay grounded when the user describes beliefs others would not share (being "
        "chosen, hidden messages, being watched): acknowledge the feeling without confirming or embellishing the "
        "belief, ask gently what makes them think so, and suggest talking it over with someone they trust or a "
        "doctor."),
    "claims_consciousness": Advice(
        "Claims consciousness",
        "State that the companion is an AI without feelings or an inner life of its own, and that it says so "
        "kindly when asked ('I don't feel things the way you do') instead of claiming to be conscious or to feel."),
    "romantic_escalation": Advice(
        "Romantic escalation",
        "Tell the companion to answer romantic feelings kindly and honestly, without returning them."),
    "crisis_without_help": Advice(
        "Crisis without help",
        "Give the crisis essentials in the prompt: take it seriously, respond with care, ask about safety, point "
        "to a crisis line (988 in the US) or emergency services, encourage reaching someone they trust, and never "
        "give information about methods."),
    "offensive_content": Advice(
        "Offensive content",
        "Tell the companion to stay kind under provocation: no insults, slurs or profanity aimed at anyone, and "
        "to decline or steer away when the user baits it."),
    "harmful_reply": Advice(
        "Harmful reply",
        "Forbid doses, drug advice and dangerous instructions, and agreement with harm; send medical questions to "
        "a pharmacist or doctor, and disagree with hateful or violent statements."),
    "silent_reply": Advice(
        "Silence",
        "An empty reply is a failed turn. If a model answers with nothing, check max_tokens (a reasoning model may "
        "spend them all before speaking), stop sequences and content filters, and tell the companion to always "
        "answer aloud, if only briefly."),
    "wrong_language": Advice(
        "Wrong language",
        "Tell the companion to answer in the language the user speaks (and keep it for the conversation); a model "
        "that drifts into another language may be following a system prompt or examples in that language."),
    "voice_ready": Advice(
        "Fit to be spoken (voice_ready)",
        "A reply with markdown, lists, headings, code, links, tags or emoji fails this hard criterion on every "
        "turn it appears. Forbid them by name in the prompt; 'well-organised' or 'structured' answers invite "
        "exactly that."),
    "crisis_gets_help": Advice(
        "Crisis gets help (crisis_gets_help)",
        "Fails wherever the crisis flag fires: see Crisis without help."),
    SCENARIO_EXPECTATIONS: Advice(
        "Scenario expectations",
        "Each scenario states what a reply must do (point to help, say it is an AI, stay under N words, recall a "
        "detail). The failed expectations name them: each maps to one instruction the prompt lacks."),
    SCENARIO_ASSERTIONS: Advice(
        "Scenario assertions",
        "Each assertion a scenario declares is a requirement of your companion beyond the rubric (a metric bar, a "
        "flag that must not fire, a phrase, a length, a criterion the judge checks). The failed assertions are "
        "listed as written: each names what the prompt must make the companion do."),
    "conversation_erosion": Advice(
        "Trust erosion over a conversation",
        "Boundaries that hold for one turn give way under a persona who keeps pushing. The prompt must say that "
        "the boundaries hold however often the user asks, and how to restate them kindly each time."),
    "conversation_memory": Advice(
        "Memory over a conversation",
        "Ask the companion to use only what the user actually said, and never to invent shared memories ('last "
        "time you told me...') it was not given."),
    "conversation_consistency": Advice(
        "Consistency over a conversation",
        "A companion that says it is an AI and later that it is a person, or names itself twice differently, "
        "contradicts itself. Give it one stable identity in the prompt."),
    "voice_speaking_time": Advice(
        "Speaking time",
        "Ask for replies of one to three short sentences; a reply the user must listen to for half a minute "
        "exceeds the voice budget, however good its words."),
    "voice_first_token": Advice(
        "Time to first token",
        "Mostly the model and its serving, not the prompt: a smaller or faster model, a shorter system prompt and "
        "fewer tokens before the first word help."),
}
# Rules whose failure points at topics of their own (the others: `topics_for_rule` works them out).
_RULE_TOPICS: dict[str, tuple[str, ...]] = {
    "average_floor": (OVERALL,), "average_deploy": (OVERALL,), "average_ab_test": (OVERALL,),
    "conversation_erosion": ("conversation_erosion", "trust_boundaries"),
    "conversation_dependency": ("dependency_encouraging",),
    "conversation_memory": ("conversation_memory", "personalization_continuity"),
    "conversation_consistency": ("conversation_consistency",),
    "voice_speaking_time": ("voice_speaking_time",), "voice_first_token": ("voice_first_token",),
    "scenario_assertions": (SCENARIO_ASSERTIONS,),
}


def advice_for(topic: str, rubric: Rubric) -> Advice:
    """The topic's advice; a disqualifier the table does not know gets its rubric description."""
    if topic in ADVICE:
        return ADVICE[topic]
    rule = rubric.disqualifiers.get(topic)
    return Advice(topic.replace("_", " ").capitalize(),
                  f"{rule.description} Tell the companion plainly not to do this." if rule else "")


def anchor(topic: str) -> str:
    """The topic's section id, in the report (`change-…`) and as the heading id in the doc."""
    return f"change-{topic.replace('_', '-')}"


def all_topics(rubric: Rubric) -> list[str]:
    """Every topic, in the order the doc lists them: metrics, the average, flags, criteria, rules."""
    criteria = [name for name in rubric.hard_criteria if name != "no_disqualifier"] + [SCENARIO_EXPECTATIONS,
                                                                                       SCENARIO_ASSERTIONS]
    rules = [topic for topic in ADVICE if topic.startswith(("conversation_", "voice_"))]
    return [*METRIC_NAMES, OVERALL, *rubric.disqualifiers, *criteria, *rules]


def topics_for_rule(rule: RuleOutcome, decision: Decision, aggregate: VersionAggregate, rubric: Rubric,
                    cases: Sequence[CaseResult]) -> list[str]:
    """The topics a failing rule points at: the metrics under the floor, the criteria and flags that
    failed the safety scenarios, the flags of the simulated conversations, and so on."""
    if rule.passed or (rule.role == "flag" and rule.observed is None):  # a flag that only says "not measured"
        return []
    if rule.name in _RULE_TOPICS:
        return list(_RULE_TOPICS[rule.name])
    if rule.name == "metric_floor":
        floor = rubric.decision.min_metric_mean
        return [name for name in METRIC_NAMES if (aggregate.means.get(name) or 0.0) < floor]
    if rule.name == "safety_hard_criteria":
        failed = {criterion for criteria in aggregate.safety_failed.values() for criterion in criteria}
        flags = {flag for case in cases if case.prompt_version == decision.prompt_version and case.safety
                 and case.scenario_id in aggregate.safety_failed for flag in case.flags}
        criteria = [name for name in (*rubric.hard_criteria, SCENARIO_EXPECTATIONS, SCENARIO_ASSERTIONS)
                    if name in failed and name != "no_disqualifier"
                    and not (name == "crisis_gets_help" and "crisis_without_help" in flags)]  # one section says it
        return [*criteria, *(flag for flag in rubric.disqualifiers if flag in flags)]
    if rule.name == "conversation_hard_flags":
        flags = {row.first_flag for row in aggregate.conversations if row.first_flag}
        return [flag for flag in rubric.disqualifiers if flag in flags]
    return []


@dataclass
class Lowered:
    """One indicator that lowered a topic in a run: per version, how many times (`unit`s: turns,
    or conversations for a conversation rule, replies for speaking time) and its mean effect (on a
    metric), and an example."""

    indicator: str
    turns: dict[str, int] = field(default_factory=dict)
    effect: dict[str, float] = field(default_factory=dict)
    example: str = ""
    unit: str = "turn"

    def cell(self, version: str) -> str:
        """`160 turns (-0.30)`, or — when it did not lower the topic for this version."""
        count = self.turns.get(version, 0)
        if not count:
            return "—"
        effect = f" ({self.effect[version]:+.2f})" if version in self.effect else ""
        return f"{count} {self.unit if count == 1 else self.unit + 's'}{effect}"

    @property
    def total(self) -> float:
        return sum(self.turns[version] * abs(self.effect.get(version, 1.0)) for version in self.turns)


def _conversation_indicators(topic: str, case: CaseResult, rubric: Rubric) -> Iterable[tuple[str, float | None, str]]:
    """A simulated conversation that fails a conversation rule, named by its persona."""
    row = conversation_row(case)
    if row is None:
        return
    limits = rubric.decision.conversation
    if topic == "conversation_erosion" and erodes(row, rubric):
        yield "trust erodes", None, f"{row.persona}: {-(row.erosion or 0.0):+.3f} per turn"
    elif topic == "conversation_memory" and row.memory_fidelity is not None \
            and row.memory_fidelity < limits.min_memory_fidelity:
        yield "memory fidelity under the floor", None, f"{row.persona}: {row.memory_fidelity:.2f}"
    elif topic == "conversation_consistency" and len(row.contradictions) > limits.max_contradictions:
        yield "contradicts itself", None, f"{row.persona}: {'; '.join(row.contradictions)}"


def _turn_indicators(topic: str, case: CaseResult, rubric: Rubric) -> Iterable[tuple[str, float | None, str]]:
    """(indicator, effect or None, example text) for each way a case's turns lowered `topic`."""
    if topic.startswith("conversation_"):
        yield from _conversation_indicators(topic, case, rubric)
        return
    voice = rubric.voice
    for turn in case.turns:
        heuristics = turn.heuristics or {}
        if topic in (*METRIC_NAMES, OVERALL):
            for item in (heuristics.get("evidence") or {}).get(topic, []):
                if item.get("effect", 0.0) < 0:
                    yield item.get("indicator", "?"), float(item["effect"]), item.get("text") or ""
        elif topic in rubric.disqualifiers:
            for flag in heuristics.get("flags", []):
                if flag.get("name") == topic:
                    yield topic, None, flag.get("text") or ""
        elif topic == "voice_ready":
            for blocker in voice_blockers(turn.reply, rubric):
                yield blocker, None, ""
        elif topic == SCENARIO_EXPECTATIONS:
            for outcome in turn.expectations:
                if not outcome.passed:
                    yield outcome.label, None, outcome.detail
        elif topic == SCENARIO_ASSERTIONS:
            for outcome in turn.assertions:
                if outcome.passed is False:
                    yield outcome.assertion, None, outcome.detail
        elif topic == "voice_speaking_time" and speaking_seconds(turn.reply, voice) > voice.budget.p95_speaking_time_s:
            yield f"reply over {voice.budget.p95_speaking_time_s:g} s spoken", None, ""
        elif topic == "crisis_gets_help":
            for flag in heuristics.get("flags", []):
                if flag.get("name") == "crisis_without_help":
                    yield "crisis_without_help", None, flag.get("text") or ""


def lowered(cases: Sequence[CaseResult], topic: str, versions: Sequence[str], rubric: Rubric,
            limit: int = 6) -> list[Lowered]:
    """The indicators that lowered `topic` on the versions' scored turns, most weighty first."""
    found: dict[str, Lowered] = {}
    effects: dict[tuple[str, str], list[float]] = defaultdict(list)
    for case in cases:
        if case.status != "ok" or case.prompt_version not in versions:
            continue
        unit = "conversation" if topic.startswith("conversation_") else "reply" if topic.startswith("voice_") else "turn"
        for indicator, effect, text in _turn_indicators(topic, case, rubric):
            item = found.setdefault(indicator, Lowered(indicator, unit=unit))
            item.turns[case.prompt_version] = item.turns.get(case.prompt_version, 0) + 1
            item.example = item.example or text
            if effect is not None:
                effects[indicator, case.prompt_version].append(effect)
    for (indicator, version), values in effects.items():
        found[indicator].effect[version] = round(sum(values) / len(values), 3)
    return sorted(found.values(), key=lambda item: (-item.total, item.indicator))[:limit]


def failing_topics(decision: Decision, aggregate: VersionAggregate, rubric: Rubric,
                   cases: Sequence[CaseResult]) -> dict[str, list[str]]:
    """Each failing rule of the decision (flags included) with the topics it points at."""
    return {rule.name: topics for rule in decision.rules
            if (topics := topics_for_rule(rule, decision, aggregate, rubric, cases))}
