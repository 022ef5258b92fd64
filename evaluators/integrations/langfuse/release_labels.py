"""Release decisions as Langfuse prompt labels: `production` for deploy, an A/B label for
A/B candidates, nothing for revise.

A label only moves to the Langfuse version whose text and settings are the ones the run
evaluated (its fetched version, or the version labelled with the local version's name
by `prompts push` when they still match); anything else would ship a prompt nobody
tested. Each prompt name has one holder per label, so when several versions qualify the one
with the best average gets it and the others are named. Every line says what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluators.inputs.contracts import PromptVersion
from evaluators.integrations.langfuse.connection import connect
from evaluators.integrations.langfuse.prompts import PRODUCTION, get_prompt, prompt_config, version_label
from evaluators.integrations.langfuse.rest import LangfuseRest
from evaluators.integrations.langfuse.settings import require_settings
from evaluators.release.contracts import Decision


@dataclass(frozen=True)
class LabelMove:
    label: str
    prompt_name: str
    langfuse_version: int
    local_version: str
    previous_version: int | None

    def line(self) -> str:
        if self.previous_version == self.langfuse_version:
            return (f"{self.label}: already on {self.prompt_name} version {self.langfuse_version} "
                    f"({self.local_version}); unchanged")
        before = f" (was on version {self.previous_version})" if self.previous_version is not None else ""
        return (f"{self.label}: moved to {self.prompt_name} version {self.langfuse_version} "
                f"({self.local_version}){before}")


class ReleaseLabelError(ValueError):
    """A label cannot be moved safely; the message says which version and why."""


def langfuse_version_of(rest: LangfuseRest, prompt: PromptVersion) -> int:
    """The Langfuse version that holds exactly this prompt, or ReleaseLabelError."""
    if prompt.source == "langfuse" and prompt.langfuse_name and prompt.langfuse_version is not None:
        return prompt.langfuse_version
    fetched = get_prompt(rest, prompt.name, label=version_label(prompt.version))
    if fetched is None:
        raise ReleaseLabelError(f"{prompt.version}: not in Langfuse as prompt {prompt.name}; run "
                                "`penpal-eval prompts push` first")
    if getattr(fetched, "prompt", None) != prompt.text or fetched.config != prompt_config(prompt):
        raise ReleaseLabelError(f"{prompt.version}: Langfuse's {prompt.name} version {fetched.version} differs from "
                                "the evaluated prompt; push the prompts and run the evaluation again")
    return fetched.version


def plan_label_moves(outcomes: Mapping[str, str], averages: Mapping[str, float | None],
                     prompts: Mapping[str, PromptVersion], *, ab_label: str) -> tuple[dict[tuple[str, str], str], list[str]]:
    """Which local version gets which label per prompt name, and notes on versions passed over."""
    wanted: dict[tuple[str, str], list[str]] = {}
    for version, outcome in outcomes.items():
        label = PRODUCTION if outcome == "deploy" else ab_label if outcome == "ab_test" else None
        if label is not None and version in prompts:
            wanted.setdefault((prompts[version].name, label), []).append(version)
    chosen, notes = {}, []
    for (name, label), versions in wanted.items():
        ranked = sorted(versions, key=lambda version: -(averages.get(version) or 0.0))
        chosen[(name, label)] = ranked[0]
        notes += [f"{label}: {other} also qualifies but {ranked[0]} has the higher average; not labelled"
                  for other in ranked[1:]]
    return chosen, notes


def move_labels(rest: LangfuseRest, outcomes: Mapping[str, str], averages: Mapping[str, float | None],
                prompts: Sequence[PromptVersion], *, ab_label: str) -> list[str]:
    """Move the labels the decisions call for; returns one line per change, note or refusal."""
    by_version = {prompt.version: prompt for prompt in prompts}
    chosen, lines = plan_label_moves(outcomes, averages, by_version, ab_label=ab_label)
    for (name, label), version in sorted(chosen.items()):
        try:
            target = langfuse_version_of(rest, by_version[version])
        except ReleaseLabelError as error:
            lines.append(f"{label}: not moved: {error}")
            continue
        holder = get_prompt(rest, name, label=label)
        previous = holder.version if holder is not None else None
        if previous != target:
            rest.call(rest.api.prompt_version.update, name, target, new_labels=[label],
                      what=f"label {name} version {target} {label}")
        lines.append(LabelMove(label, name, target, version, previous).line())
    if not chosen:
        lines.append("no version was decided deploy or A/B test: no label moved")
    return lines


def apply_release_labels(decisions: Sequence[Decision], *, prompts: Sequence[PromptVersion], ab_label: str,
                         environ: Mapping[str, str] | None = None) -> list[str]:
    """`decide --apply`: move the labels for these decisions in the Langfuse of `environ`.

    `prompts` are the versions the run evaluated (its inputs.json). Raises LangfuseConfigError
    without keys and LangfuseCallFailed when Langfuse fails; the lines say what changed before.
    """
    settings = require_settings(environ)
    connection = connect(settings)
    try:
        rest = connection.rest()
        return move_labels(rest, {decision.prompt_version: decision.outcome for decision in decisions},
                           {decision.prompt_version: decision.average for decision in decisions}, prompts,
                           ab_label=ab_label)
    finally:
        connection.shutdown()
