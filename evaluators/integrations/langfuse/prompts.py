"""Companion prompts in Langfuse prompt management: pushed from prompts/, fetched by label.

Each local prompt version becomes a version of the Langfuse prompt named by its front
matter `name`, with the text as the prompt and the model settings as `config`. The local
version's name is also a label on it (e.g. `v2-warm-boundaries`), so the two can always be
matched, and pushing an unchanged version creates nothing. Deployment labels (`staging`,
`production`) are separate and move only when asked: `prompts push --label` or
`decide --apply`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langfuse.api import CreateTextPromptRequest
from pydantic import ValidationError

from evaluators.core.locations import field_path, short_hash
from evaluators.inputs.contracts import PromptVersion
from evaluators.integrations.langfuse.connection import connect
from evaluators.integrations.langfuse.rest import LangfuseCallFailed, LangfuseRest
from evaluators.integrations.langfuse.settings import LangfuseConfigError, require_settings

PRODUCTION = "production"
CONFIG_KEYS = ("model", "temperature", "max_tokens")
# What Langfuse accepts as a prompt label (packages/shared/src/features/prompts/constants.ts).
LABEL_PATTERN = re.compile(r"^[a-z0-9_\-.]+$")
MAX_LABEL_LENGTH = 36
_LABEL_UNSAFE = re.compile(r"[^a-z0-9_.-]+")


class LangfusePromptError(ValueError):
    """A Langfuse prompt cannot be used as a companion prompt; the message names prompt, label and field."""


def label_problem(label: str) -> str | None:
    """Why Langfuse would refuse this prompt label, or None when it takes it."""
    if not LABEL_PATTERN.match(label):
        return (f"{label!r} is not a Langfuse prompt label: lowercase letters, digits, '_', '-' and '.' only")
    if len(label) > MAX_LABEL_LENGTH:
        return f"{label!r} is not a Langfuse prompt label: at most {MAX_LABEL_LENGTH} characters"
    return None


def version_label(version: str) -> str:
    """The Langfuse label that marks the Langfuse version of a local prompt version: the name in
    Langfuse's label alphabet, cut to its length with a short hash so two long names stay apart."""
    label = _LABEL_UNSAFE.sub("-", version.lower()).strip("-") or "version"
    if len(label) <= MAX_LABEL_LENGTH:
        return label
    suffix = short_hash(version)[:8]
    return f"{label[:MAX_LABEL_LENGTH - len(suffix) - 1].rstrip('-')}-{suffix}"


def label_problems(labels: Sequence[str]) -> list[str]:
    """Every label Langfuse would refuse, each with why (all of them, not the first)."""
    return [problem for problem in map(label_problem, labels) if problem]


def prompt_config(prompt: PromptVersion) -> dict:
    """What Langfuse keeps beside the text: the model settings and where the version came from."""
    return {"model": prompt.model, "temperature": prompt.temperature, "max_tokens": prompt.max_tokens,
            "penpal_version": prompt.version, "baseline": prompt.baseline, "description": prompt.description}


@dataclass(frozen=True)
class PushOutcome:
    version: str
    name: str
    langfuse_version: int
    created: bool
    labels_added: tuple[str, ...]

    def line(self) -> str:
        action = "created" if self.created else "unchanged"
        labels = f"; labels {', '.join(self.labels_added)} moved here" if self.labels_added else ""
        return f"{self.version}: {action} as {self.name} version {self.langfuse_version}{labels}"


def get_prompt(rest: LangfuseRest, name: str, *, label: str | None = None, version: int | None = None):
    """The Langfuse prompt, or None when there is no such name, label or version."""
    try:
        return rest.call(rest.api.prompts.get, name, label=label, version=version,
                         what=f"get prompt {name}" + (f" label {label}" if label else ""))
    except LangfuseCallFailed as error:
        if error.status == 404:
            return None
        raise


def push_prompt(rest: LangfuseRest, prompt: PromptVersion, labels: Sequence[str] = ()) -> PushOutcome:
    """Create a Langfuse version for `prompt` unless an identical one exists; add `labels` to it."""
    marker = version_label(prompt.version)
    config = prompt_config(prompt)
    current = get_prompt(rest, prompt.name, label=marker)
    wanted = [marker, *labels]
    if current is not None and getattr(current, "prompt", None) == prompt.text and current.config == config:
        missing = [label for label in labels if label not in current.labels]
        if missing:
            rest.call(rest.api.prompt_version.update, prompt.name, current.version, new_labels=missing,
                      what=f"label {prompt.name} version {current.version}")
        return PushOutcome(prompt.version, prompt.name, current.version, False, tuple(missing))
    request = CreateTextPromptRequest(name=prompt.name, prompt=prompt.text, config=config, labels=wanted,
                                      tags=["penpal-eval"],
                                      commit_message=f"penpal-eval {prompt.version} ({prompt.content_hash})")
    created = rest.call(rest.api.prompts.create, request=request, what=f"create prompt {prompt.name}")
    return PushOutcome(prompt.version, prompt.name, created.version, True, tuple(labels))


def prompt_from_langfuse(fetched, label: str) -> PromptVersion:
    """A Langfuse text prompt with penpal config as a PromptVersion (source "langfuse")."""
    where = f"Langfuse prompt {fetched.name} (label {label}, version {fetched.version})"
    text = getattr(fetched, "prompt", None)
    if not isinstance(text, str):
        system = [m for m in text or [] if getattr(m, "role", None) == "system"]
        if len(system) != 1:
            raise LangfusePromptError(f"{where}: prompt: a chat prompt needs exactly one system message")
        text = system[0].content
    config = fetched.config if isinstance(fetched.config, dict) else {}
    missing = [key for key in CONFIG_KEYS if key not in config]
    if missing:
        raise LangfusePromptError(f"{where}: config.{missing[0]}: field required (push prompts with "
                                  "`penpal-eval prompts push`, or add model, temperature and max_tokens to its config)")
    try:
        return PromptVersion(
            name=fetched.name, version=str(config.get("penpal_version") or f"{fetched.name}-v{fetched.version}"),
            model=config["model"], temperature=config["temperature"], max_tokens=config["max_tokens"],
            baseline=config.get("baseline"), description=config.get("description") or "", text=text,
            source="langfuse", content_hash=short_hash(f"{fetched.name}/{fetched.version}/{text}/{sorted(config.items())}"),
            langfuse_name=fetched.name, langfuse_version=fetched.version)
    except ValidationError as error:
        item = error.errors()[0]
        raise LangfusePromptError(f"{where}: config.{field_path(item['loc'])}: {item['msg']}") from None


def fetch_prompts(rest: LangfuseRest, names: Sequence[str], labels: Sequence[str]) -> list[PromptVersion]:
    """The prompts with these names under these labels, as companion prompt versions.

    A version fetched under two labels is evaluated once. Baselines name fetched versions
    only; a version without one is compared with the `production` version when that was fetched.
    """
    fetched: dict[str, PromptVersion] = {}
    production: set[str] = set()
    problems = label_problems(labels)
    if problems:
        raise LangfusePromptError("; ".join(problems))
    for name in names:
        for label in labels:
            prompt = get_prompt(rest, name, label=label)
            if prompt is None:
                problems.append(f"Langfuse prompt {name}: no version has the label {label!r}")
                continue
            candidate = prompt_from_langfuse(prompt, label)
            version = fetched.setdefault(candidate.version, candidate)
            if label == PRODUCTION:
                production.add(version.version)
    if problems:
        raise LangfusePromptError("; ".join(problems))
    versions = []
    for version in fetched.values():
        baseline = version.baseline if version.baseline in fetched else None
        if baseline is None and len(production) == 1 and version.version not in production:
            baseline = next(iter(production))
        versions.append(version.model_copy(update={"baseline": baseline}))
    return versions


def fetch_run_prompts(names: Sequence[str], labels: Sequence[str], environ: Mapping[str, str]) -> list[PromptVersion]:
    """`run --prompt-source langfuse`: the prompts under `labels` from the Langfuse of `environ`.

    Every way this can fail (no keys, Langfuse down, an unusable prompt) is a
    LangfusePromptError whose message says what to fix.
    """
    try:
        settings = require_settings(environ)
        rest = connect(settings).rest()
        return fetch_prompts(rest, names, labels)
    except (LangfuseConfigError, LangfuseCallFailed) as error:
        raise LangfusePromptError(str(error)) from None
