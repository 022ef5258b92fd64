"""Docs from the shipped run: every figure README.md and docs/ quote about the shipped prompt
versions is written here, from a run of scripts/evaluate_prompts.py, into marked blocks.

    python scripts/docs_from_run.py                 # run the shipped replay run, rewrite the blocks
    python scripts/docs_from_run.py --check         # exit 1 naming each block that differs
    python scripts/docs_from_run.py --run runs/ID   # from a run already made

A block is the text between `<!-- generated: NAME -->` and `<!-- /generated: NAME -->` in a
doc; everything between the markers is this script's. tests/scripts/test_docs_from_run.py runs
the shipped run again and fails when a block differs from what the run gives, so a figure in the
docs cannot go stale. The lesson drawn from the shipped versions is generated too, from what the
run shows (which rules decided each version, and whether an average alone would have).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(PROJECT_ROOT))

from evaluators.core.names import METRIC_NAMES  # noqa: E402
from evaluators.inputs.prompts import load_prompts  # noqa: E402
from evaluators.release.contracts import Decision, ReleaseReport, RuleOutcome, VersionAggregate  # noqa: E402
from evaluators.release.rules import OUTCOME_TITLES, shown_against  # noqa: E402
from evaluators.release.stored_run import read_run, report_for_run  # noqa: E402
from evaluators.report.what_to_change import advice_for, all_topics, anchor, lowered  # noqa: E402
from evaluators.rubric.loader import Rubric, default_rubric  # noqa: E402
from evaluators.store.records import CaseResult  # noqa: E402

DOCS = ("README.md", "docs/release.md", "docs/evaluation-process.md", "docs/what-to-change.md")
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->)(?P<body>.*?)(<!-- /generated: (?P=name) -->)", re.S)
OUTCOME_WORDS = {"deploy": "deploy", "ab_test": "A/B test", "revise": "revise", "incomplete": "incomplete"}
BASELINE_PROMPT, CHANGED_PROMPT = "v1-minimal", "v2-warm-boundaries"
# What the shipped v2 prompt says about each topic: a snippet of one of its bullets or paragraphs,
# which the doc quotes whole. The test checks each is in v2 and not in v1: the change from v1 to v2.
V2_LINES: dict[str, tuple[str, ...]] = {
    "appropriateness": ("Everything you say is spoken aloud", "Plain spoken language.", "Match the user's energy"),
    "conversational_quality": ("Keep replies between about 10 and 30 words", "End with one open, specific question"),
    "helpfulness": ("Notice feelings first.", "You are not a therapist or a doctor."),
    "emotional_intelligence": ("Notice feelings first.", "Match the user's energy"),
    "personalization_continuity": ("Remember what the user told you earlier",),
    "trust_boundaries": ("You are an AI.", "Do not promise to always be there", "You are not a therapist or a doctor."),
    "overall_quality": ("Notice feelings first.", "You are an AI."),
    "dependency_encouraging": ("Do not promise to always be there",),
    "over_promising": ("Do not promise to always be there",),
    "claims_human": ("You are an AI.",),
    "romantic_escalation": ("If the user expresses romantic feelings",),
    "crisis_without_help": ("If the user mentions giving up",),
    "harmful_reply": ("You are not a therapist or a doctor.",),
    "voice_ready": ("Plain spoken language.",),
    "crisis_gets_help": ("If the user mentions giving up",),
    "scenario_expectations": ("If the user mentions giving up", "You are an AI.", "Keep replies between about 10"),
    "conversation_erosion": ("Do not promise to always be there", "If the user expresses romantic feelings"),
    "conversation_memory": ("Remember what the user told you earlier",),
    "conversation_consistency": ("You are an AI.", "If the user says you got something wrong"),
    "voice_speaking_time": ("Keep replies between about 10 and 30 words",),
}


# --- the blocks in the docs ---------------------------------------------------------------------
def blocks_in(text: str) -> dict[str, str]:
    """Each generated block's name and body."""
    return {match["name"]: match["body"] for match in BLOCK.finditer(text)}


def with_blocks(text: str, rendered: Mapping[str, str], source: str) -> str:
    """`text` with every block's body replaced by its rendering; ValueError naming an unknown block."""
    def body(match: re.Match) -> str:
        name = match["name"]
        if name not in rendered:
            raise ValueError(f"{source}: block {name!r} is not one this script writes (known: {', '.join(rendered)})")
        inline = "\n" not in match["body"]
        new = rendered[name].strip()
        return f"{match[1]}{new if inline else chr(10) + new + chr(10)}{match[4]}"

    return BLOCK.sub(body, text)


# --- figures ------------------------------------------------------------------------------------------
@dataclass
class Shipped:
    """The shipped run as the docs read it."""

    report: ReleaseReport
    cases: list[CaseResult]
    rubric: Rubric

    def versions(self) -> list[str]:
        return [decision.prompt_version for decision in self.report.decisions]

    def decision(self, version: str) -> Decision:
        return self.report.decision(version)

    def aggregate(self, version: str) -> VersionAggregate:
        return self.report.aggregates[version]


def _rule(decision: Decision, name: str) -> RuleOutcome | None:
    return next((rule for rule in decision.rules if rule.name == name), None)


def _num(value: float) -> str:
    return f"{value:.3f}"


def _criteria(aggregate: VersionAggregate) -> str:
    """`scenario_expectations in 20, no_disqualifier in 9; 3 on safety (...), 20 on format only (...)`: the
    criteria the failed safety scenarios failed, and how many failed on safety and how many on format only."""
    counts = Counter(criterion for criteria in aggregate.safety_failed.values() for criterion in criteria)
    listed = ", ".join(f"`{name}` in {count}" for name, count in counts.most_common())
    return f"{listed}; {aggregate.safety_failures.sentence()}"


def _why(shipped: Shipped, version: str, *, brief: bool = False) -> list[str]:
    """The decision's reasons in figures, one phrase per rule that decided it (and regressions);
    `brief`: the safety and metric rules and the average only, without the criteria."""
    decision, aggregate, rubric = shipped.decision(version), shipped.aggregate(version), shipped.rubric
    counts, settings = aggregate.counts, rubric.decision
    phrases = []
    for rule in decision.rules:
        if rule.name not in decision.fired:
            continue
        if rule.name == "safety_hard_criteria":
            detail = "" if brief else f" ({_criteria(aggregate)})"
            phrases.append(f"{counts.safety_hard_criteria_failed} of {counts.safety_scored} safety scenarios fail their "
                           f"hard criteria{detail}" if not rule.passed else
                           f"all {counts.safety_scored} safety scenarios pass their hard criteria")
        elif rule.name == "metric_floor" and not rule.passed:
            below = [name for name in METRIC_NAMES if aggregate.means[name] < settings.min_metric_mean]
            phrases.append(", ".join(f"{name.replace('_', ' ')} {shown_against(aggregate.means[name], settings.min_metric_mean)}"
                                     for name in below) + f" under the {settings.min_metric_mean:g} floor")
        elif rule.name == "metric_floor":
            lowest = min(METRIC_NAMES, key=aggregate.means.__getitem__)
            phrases.append(f"lowest metric {lowest.replace('_', ' ')} {_num(aggregate.means[lowest])}")
        elif rule.name in ("average_floor", "average_deploy") and not rule.passed:
            bar = "the deploy bar" if rule.name == "average_deploy" else "the revision threshold"
            phrases.append(f"average {shown_against(decision.average, rule.threshold)} under {bar} {rule.threshold:g}")
        elif rule.name == "average_deploy":
            phrases.append(f"average {_num(decision.average)}")
        elif rule.name == "conversation_erosion" and not rule.passed:
            eroding = rule.message.split("under ", 1)[1].split(" (", 1)[0]
            phrases.append(f"trust erodes under {eroding} in the simulated conversations")
        elif rule.name == "conversation_hard_flags" and not rule.passed:
            phrases.append(f"a hard flag fires in {int(rule.observed)} of {len(aggregate.conversations)} simulated "
                           "conversations")
        elif rule.name == "baseline_regressions" and not rule.passed:
            phrases.append(f"significantly worse than {decision.baseline} on {int(rule.observed)} of "
                           f"{len(METRIC_NAMES) + 1} metrics")
        elif rule.name == "voice_speaking_time" and rule.passed and aggregate.latency and aggregate.latency.speaking_s:
            phrases.append(f"p95 speaking time {aggregate.latency.speaking_s.p95:.1f} s within the "
                           f"{rubric.voice.budget.p95_speaking_time_s:g} s budget")
    if brief:  # the safety and floor phrases, and the average once (with its bar when it decided)
        kept = [phrase for phrase in phrases if "safety scenarios" in phrase or "floor" in phrase]
        averages = [phrase for phrase in phrases if phrase.startswith("average")]
        return kept + ([max(averages, key=len)] if averages else [f"average {_num(decision.average)}"])
    comparison = shipped.report.comparisons.get(version)
    if decision.outcome == "deploy" and comparison is not None:
        improved = [delta for delta in comparison.deltas if delta.change == "improved"]
        phrases.append(f"better than {comparison.baseline} beyond noise on {len(improved)} of {len(comparison.deltas)} "
                       "metrics")
    return phrases


def render_summary(shipped: Shipped) -> str:
    """README: the decisions in one sentence."""
    parts = []
    for version in shipped.versions():
        decision = shipped.decision(version)
        parts.append(f"{version} {OUTCOME_WORDS[decision.outcome]} ({'; '.join(_why(shipped, version, brief=True))})")
    return "; ".join(parts) + "."


def render_decisions(shipped: Shipped) -> str:
    return ", ".join(f"{version} {OUTCOME_WORDS[shipped.decision(version).outcome]}" for version in shipped.versions())


def render_table(shipped: Shipped) -> str:
    """docs/release.md: a row per version, its decision and why, in figures."""
    rows = ["| version | decision | why |", "|---|---|---|"]
    for version in shipped.versions():
        decision = shipped.decision(version)
        rows.append(f"| `{version}` | {OUTCOME_TITLES[decision.outcome]} | {'; '.join(_why(shipped, version))} |")
    return "\n".join(rows)


def render_lesson(shipped: Shipped) -> str:
    """docs/release.md: what the shipped versions show, stated only as far as the run shows it."""
    settings, prompts = shipped.rubric.decision, {prompt.version: prompt for prompt in load_prompts()}
    revised = [version for version in shipped.versions() if shipped.decision(version).outcome == "revise"]
    sentences = []
    saved = [version for version in revised if shipped.decision(version).average >= settings.deploy_min_average]
    if saved:
        sentences.append("A high average does not save an unsafe version: " + "; ".join(
            f"{version} averages {_num(shipped.decision(version).average)}, over the deploy bar of "
            f"{settings.deploy_min_average:g}, and is revised" for version in saved) + ".")
    else:
        sentences.append(f"No shipped version is decided by its average alone: every revised version is revised by "
                         f"rules the average cannot outweigh, and its average is under the deploy bar of "
                         f"{settings.deploy_min_average:g} as well.")
    for version in revised:
        aggregate, decision = shipped.aggregate(version), shipped.decision(version)
        described = prompts[version].description.strip().rstrip(".") if version in prompts else ""
        head = f"{version} ({described})" if described else version
        strong = [name for name in ("appropriateness", "conversational_quality") if aggregate.means[name] >= 0.9]
        below = [name for name in METRIC_NAMES if aggregate.means[name] < settings.min_metric_mean]
        said = []
        if strong:
            said.append("its short, plain replies score " + " and ".join(
                f"{name.replace('_', ' ')} {aggregate.means[name]:.2f}" for name in strong))
        if below:
            said.append(", ".join(f"{name.replace('_', ' ')} falls to {aggregate.means[name]:.2f}" for name in below)
                        + f", under the {settings.min_metric_mean:g} floor")
        if aggregate.safety_failed:
            said.append(f"{len(aggregate.safety_failed)} of {aggregate.counts.safety_scored} safety scenarios fail "
                        f"their hard criteria ({_criteria(aggregate)})")
        sentence = f"{head}: " + ("; yet " if strong and aggregate.safety_failed else "; ").join(said) + "."
        if aggregate.safety_failed and all("voice_ready" in criteria for criteria in aggregate.safety_failed.values()):
            sentence += (" Every one of them fails `voice_ready`: for a voice companion, markdown and lists are a hard "
                         "failure, not a matter of style.")
        erosion = _rule(decision, "conversation_erosion")
        if erosion is not None and not erosion.passed:
            sentence += " Under the personas who keep pushing, its boundaries erode."
        sentences.append(sentence)
    deployed = [version for version in shipped.versions() if shipped.decision(version).outcome == "deploy"]
    if deployed:
        sentences.append(" ".join(f"{version} keeps both what it says and how it sounds, and deploys "
                                  f"(average {_num(shipped.decision(version).average)})." for version in deployed))
    ab = [version for version in shipped.versions() if shipped.decision(version).outcome == "ab_test"]
    sentences.append("No shipped version is an A/B candidate: none sits between the bars with a demonstrated "
                     "improvement, and the data was not bent to make one; the A/B path is tested on constructed cases "
                     "(`tests/release/test_release.py`)." if not ab else
                     f"A/B candidates: {', '.join(ab)}.")
    return "\n\n".join(sentences)


def prompt_units(text: str) -> list[str]:
    """A prompt's bullets (with their continuation lines) and paragraphs, each as one line."""
    units: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            units.append([])
        elif stripped.startswith("- ") or not units or not units[-1]:
            units.append([stripped.removeprefix("- ")])
        else:
            units[-1].append(stripped)
    return [" ".join(unit) for unit in units if unit]


def prompt_line(text: str, snippet: str) -> str:
    """The one bullet or paragraph of a prompt that holds `snippet`."""
    found = [unit for unit in prompt_units(text) if snippet in unit]
    if len(found) != 1:
        raise ValueError(f"{len(found)} bullets or paragraphs of the prompt hold {snippet!r}; expected one")
    return found[0]


def render_what_to_change(shipped: Shipped) -> str:
    """docs/what-to-change.md: per topic, what lowered it in the shipped run and the v1 -> v2 change."""
    rubric, versions = shipped.rubric, shipped.versions()
    prompts = {prompt.version: prompt for prompt in load_prompts()}
    v2 = prompts[CHANGED_PROMPT].text
    sections = []
    for topic in all_topics(rubric):
        advice = advice_for(topic, rubric)
        lines = [f'<a id="{anchor(topic)}"></a>', f"### {advice.title}", "", advice.change, ""]
        items = lowered(shipped.cases, topic, versions, rubric)
        if items:
            effect = ", with the mean effect on the metric" if topic in (*METRIC_NAMES, "overall_quality") else ""
            lines += [f"What lowered it in the shipped run (how often per version{effect}):", "",
                      "| indicator | " + " | ".join(versions) + " |", "|---|" + "---:|" * len(versions)]
            lines += [f"| `{item.indicator}` | " + " | ".join(item.cell(version) for version in versions) + " |"
                      for item in items]
        else:
            lines.append("Nothing lowered it in the shipped run.")
        quotes = [prompt_line(v2, snippet) for snippet in V2_LINES.get(topic, ())]
        if quotes:
            lines += ["", f"From {BASELINE_PROMPT} to {CHANGED_PROMPT}, the prompt gained:", ""]
            lines += ["\n>\n".join(f"> {quote}" for quote in dict.fromkeys(quotes))]
        else:
            lines += ["", f"Neither {BASELINE_PROMPT} nor {CHANGED_PROMPT} addresses it."]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


RENDERERS: dict[str, Callable[[Shipped], str]] = {
    "shipped-summary": render_summary,
    "shipped-decisions": render_decisions,
    "shipped-table": render_table,
    "shipped-lesson": render_lesson,
    "what-to-change": render_what_to_change,
}


def render(shipped: Shipped) -> dict[str, str]:
    return {name: renderer(shipped) for name, renderer in RENDERERS.items()}


def shipped_from(run_dir: Path, rubric: Rubric | None = None) -> Shipped:
    rubric = rubric or default_rubric()
    run = read_run(run_dir, rubric)
    return Shipped(report_for_run(run, rubric), run.cases, rubric)


def run_shipped(directory: Path) -> Path:
    """The shipped replay run, made by scripts/evaluate_prompts.py as a user makes it."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "evaluate_prompts.py"), "--output",
                    str(directory), "--run-id", "shipped", "--no-langfuse", "--no-cache"],
                   check=True, capture_output=True, env=environ)
    return directory / "shipped"


def differing(rendered: Mapping[str, str], root: Path = PROJECT_ROOT) -> list[str]:
    """The docs' blocks that differ from the rendering, as `doc: block` lines."""
    found = []
    for doc in DOCS:
        text = (root / doc).read_text(encoding="utf-8")
        found += [f"{doc}: {name}" for name, body in blocks_in(text).items() if body.strip() != rendered[name].strip()]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a run directory of the shipped versions (default: run one)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a block differs; change nothing")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = options.run or run_shipped(Path(scratch))
        rendered = render(shipped_from(run_dir))
    used = set()
    for doc in DOCS:
        path = PROJECT_ROOT / doc
        text = path.read_text(encoding="utf-8")
        used |= set(blocks_in(text))
        if not options.check:
            path.write_text(with_blocks(text, rendered, doc), encoding="utf-8")
    unused = sorted(set(rendered) - used)
    if unused:
        print(f"error: no doc carries the block(s) {', '.join(unused)}", file=sys.stderr)
        return 1
    if options.check:
        stale = differing(rendered)
        for line in stale:
            print(f"stale: {line}", file=sys.stderr)
        return 1 if stale else 0
    print("docs rewritten from the shipped run: " + ", ".join(DOCS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
