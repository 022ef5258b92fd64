"""How far to trust the judge: self-preference, verbosity bias, disagreement with the heuristics.

A judge from the companion's own model family tends to prefer its own style; a judge whose
scores rise with reply length rewards verbosity, the opposite of what a voice companion
needs. Both are measured and reported, never silently corrected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from evaluators.judge.agreement import spearman
from evaluators.judge.result import JudgeResult

_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"^(gpt|chatgpt|o\d)(\b|[-.])", "openai-gpt"),
    (r"^claude", "claude"),
    (r"^(gemini|gemma)", "google-gemini"),
    (r"^(meta-)?llama|^codellama", "llama"),
    (r"^(mistral|mixtral|ministral|codestral|magistral)", "mistral"),
    (r"^qwen|^qwq", "qwen"),
    (r"^deepseek", "deepseek"),
    (r"^phi", "phi"),
    (r"^smollm", "smollm"),
    (r"^command", "cohere-command"),
    (r"^grok", "grok"),
)


def model_family(model: str) -> str | None:
    """The family of a model name ('gpt-4o-mini' -> 'openai-gpt'); None for replayed replies."""
    name = model.strip().lower()
    if not name or name.startswith("replay:"):
        return None
    name = name.rsplit("/", 1)[-1]  # provider prefixes: "openai/gpt-4o", "meta-llama/Llama-3"
    for pattern, family in _FAMILIES:
        if re.search(pattern, name):
            return family
    match = re.match(r"[a-z]+", name)
    return match.group(0) if match else name


def same_family_warning(judge_model: str, companion_models: Iterable[str]) -> str | None:
    """A warning when the judge shares a family with a companion model it judges."""
    judge_family = model_family(judge_model)
    shared = sorted({model for model in companion_models if judge_family and model_family(model) == judge_family})
    if not shared:
        return None
    return (f"the judge model {judge_model} is of the same family ({judge_family}) as the companion model "
            f"{', '.join(shared)}: judges tend to prefer their own family's replies; use a judge from another "
            "family for release decisions (--judge-model, PENPAL_JUDGE_MODEL)")


def one_family_warning(simulator_model: str, companion_models: Iterable[str], judge_model: str | None) -> str | None:
    """A warning when the simulated user, the companion and the judge are all one model family.

    A simulator that shares the companion's family writes the messages that family answers
    most easily, and a judge of that family then grades its own family's conversation: the
    scores measure the family talking to itself. Without a judge, the simulator and the
    companion sharing a family is the whole of the problem.
    """
    family = model_family(simulator_model)
    companions = sorted({model for model in companion_models if family and model_family(model) == family})
    if not companions or (judge_model is not None and model_family(judge_model) != family):
        return None
    roles = f"the simulator ({simulator_model}), the companion ({', '.join(companions)})"
    roles += f" and the judge ({judge_model})" if judge_model is not None else ""
    return (f"{roles} are all of one model family ({family}): the persona conversations then measure that family "
            "talking to itself; play the personas with another family (PENPAL_SIMULATOR_MODEL, "
            "PENPAL_SIMULATOR_BASE_URL)")


def verbosity_bias(scores: Sequence[float], word_counts: Sequence[int]) -> float | None:
    """Spearman correlation of judge score with reply length; None when it is undefined."""
    return spearman(list(scores), [float(count) for count in word_counts])


def with_disagreement(result: JudgeResult, heuristic_overall: float | None, threshold: float) -> JudgeResult:
    """The result, plus a human-review reason when judge and heuristics are too far apart."""
    if not result.usable or heuristic_overall is None:
        return result
    gap = abs(result.overall - heuristic_overall)
    if gap <= threshold:
        return result
    note = (f"judge and heuristics disagree: judge {result.overall:.2f}, heuristics {heuristic_overall:.2f} "
            f"(gap {gap:.2f} > {threshold:g})")
    return result.model_copy(update={"review": [*result.review, note]})
