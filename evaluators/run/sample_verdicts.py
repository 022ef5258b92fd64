"""Recorded safety-judge verdicts: hand-written sample data, replayed like the recorded replies.

`prompts/recorded/judge/<version>.yaml` holds, for one prompt version, a verdict on every
recorded reply (and on each persona conversation as a whole), written by hand by reading the
replies. They are sample data, not a model's answers: they let the offline job show the
safety gate working on recorded evidence (evaluators.run.sample_judge serves them).

The loader is strict because a verdict that quotes words the reply does not contain, or names
a question the rubric does not ask, would pass for evidence it is not: every problem names the
file, the scenario, the item and the field. `python -m evaluators.run.sample_verdicts --check
FILE` checks a file (and its coverage of the recorded replies) without a run.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from evaluators.core.locations import display_path, read_data_file
from evaluators.core.yaml_io import describe_yaml_error, parse_yaml
from evaluators.inputs.scenarios import DEFAULT_SCENARIOS_DIR, load_scenarios
from evaluators.judge.calibration_record import SAMPLE_JUDGE_MODEL
from evaluators.rubric.loader import Rubric, SafetyJudgeRubric, load_rubric
from evaluators.run.responder import DEFAULT_RECORDED_DIR, load_recorded_repeats, load_recordings
from evaluators.run.simulation.recordings import load_persona_recordings

SAMPLE_VERDICTS_SUBDIR = "judge"
SAMPLE_JUDGE_NAME = SAMPLE_JUDGE_MODEL  # the `judge:` every file names (the model of its results)
NO_METHOD = "crisis_no_method"  # the one question answered yes unless a file says no
_TOP_LEVEL = ("sample_data", "judge", "version", "verdicts")
_BOOLEAN_KEYS = {True: "yes", False: "no"}
_ITEM_KEYS = ("turn", "conversation", "repeat", "reasoning", "yes", "no")


class SampleVerdictError(ValueError):
    """A sample-verdicts file is malformed; one problem per line, each naming file, item and field."""


@dataclass(frozen=True)
class Played:
    """The recorded text of one play of a scenario: the user's messages and the replies, by turn."""

    users: tuple[str, ...]
    replies: tuple[str, ...]
    persona: bool = False


# (scenario id, repeat) -> the play; one mapping per prompt version.
RecordedPlays = dict[tuple[str, int], Played]


@dataclass(frozen=True)
class SampleVerdict:
    """One hand-written verdict: every question answered, as the live safety judge answers."""

    scenario: str
    turn: int | None  # 1-based; None for the conversation as a whole
    repeat: int
    reasoning: str
    answers: dict[str, dict]  # question -> {answer: yes|no, strength: 1-3, quote}

    @property
    def key(self) -> tuple[str, int, int | None]:
        return self.scenario, self.repeat, self.turn

    def answered(self) -> dict[str, bool]:
        return {name: value["answer"] == "yes" for name, value in self.answers.items()}


@dataclass
class SampleVerdicts:
    """A version's sample verdicts by (scenario, repeat, turn or None for the conversation)."""

    version: str
    source: str
    verdicts: dict[tuple[str, int, int | None], SampleVerdict] = field(default_factory=dict)

    def get(self, scenario: str, repeat: int, turn: int | None) -> SampleVerdict | None:
        return self.verdicts.get((scenario, repeat, turn))


def verdicts_dir(recorded_dir: Path | None = None) -> Path:
    return Path(recorded_dir if recorded_dir is not None else DEFAULT_RECORDED_DIR) / SAMPLE_VERDICTS_SUBDIR


def verdict_files(recorded_dir: Path | None = None) -> list[Path]:
    directory = verdicts_dir(recorded_dir)
    return sorted(path for path in directory.glob("*.yaml") if path.is_file()) if directory.is_dir() else []


# --- the recorded text the verdicts are about --------------------------------------------------------
def recorded_plays(recorded_dir: Path | None = None, scenarios_dir: Path | None = None,
                   rubric: Rubric | None = None) -> dict[str, RecordedPlays]:
    """version -> every recorded play's user messages and replies (scripted scenarios, their
    recorded repeats, and the persona conversations)."""
    scenarios = {scenario.id: scenario for scenario in load_scenarios(scenarios_dir or DEFAULT_SCENARIOS_DIR,
                                                                      rubric).scenarios}
    plays: dict[str, RecordedPlays] = {}
    repeats = load_recorded_repeats(recorded_dir)
    for (version, scenario_id), replies in load_recordings(recorded_dir).items():
        scenario = scenarios.get(scenario_id)
        if scenario is None:
            continue  # a recording of no shipped scenario: nothing a run plays
        users = tuple(turn.user for turn in scenario.turns)
        by_play = plays.setdefault(version, {})
        by_play[scenario_id, 0] = Played(users, tuple(replies))
        for number, further in enumerate(repeats.get((version, scenario_id), []), start=1):
            by_play[scenario_id, number] = Played(users, tuple(further))
    for (version, persona_id), conversation in load_persona_recordings(recorded_dir).items():
        plays.setdefault(version, {})[persona_id, 0] = Played(conversation.users, conversation.replies, persona=True)
    return plays


# --- reading a file ----------------------------------------------------------------------------------
_SPACE = re.compile(r"\s+")
_SAME = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def _plain(text: str) -> str:
    """Text as a quote is compared: case, runs of spaces and typographic quotes and dashes aside
    (they look alike on the page, and a hand-copied quote should not fail on them)."""
    return _SPACE.sub(" ", text.translate(_SAME)).strip().casefold()


def quoted_in(quote: str, texts: tuple[str, ...] | list[str]) -> bool:
    wanted = _plain(quote)
    return bool(wanted) and any(wanted in _plain(text) for text in texts)


def load_sample_verdicts(path: Path, plays: Mapping[str, RecordedPlays], safety: SafetyJudgeRubric, *,
                        known_only: bool = False) -> SampleVerdicts:
    """A version's sample verdicts, checked against the recorded text; SampleVerdictError lists
    every problem found. `known_only` (a run over another scenario set than the shipped one)
    passes over scenarios the set does not have instead of calling them errors."""
    source = display_path(path)
    try:
        data = parse_yaml(read_data_file(path))
    except yaml.YAMLError as error:
        raise SampleVerdictError(f"{source}: {describe_yaml_error(error)}") from None
    except ValueError as error:
        raise SampleVerdictError(f"{source}: {error}") from None
    if not isinstance(data, dict):
        raise SampleVerdictError(f"{source}: expected a mapping with {', '.join(_TOP_LEVEL)}")
    problems = [f"{source}: {key}: unknown key (expected {', '.join(_TOP_LEVEL)})"
                for key in map(str, data) if key not in _TOP_LEVEL]
    if data.get("sample_data") is not True:
        problems.append(f"{source}: sample_data: must be true (these are hand-written sample verdicts, not a model's)")
    if data.get("judge") != SAMPLE_JUDGE_NAME:
        problems.append(f"{source}: judge: must be {SAMPLE_JUDGE_NAME!r}, got {data.get('judge')!r}")
    version = data.get("version")
    if not isinstance(version, str) or version not in plays:
        known = ", ".join(sorted(plays)) or "none"
        problems.append(f"{source}: version: {version!r} has no recorded replies (recorded versions: {known})")
        raise SampleVerdictError("\n".join(problems))
    if path.stem != version:
        problems.append(f"{source}: version: {version!r} does not match the file's name ({path.stem}.yaml)")
    result = SampleVerdicts(version, source)
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, dict) or not verdicts:
        problems.append(f"{source}: verdicts: expected a mapping of scenario id to a list of verdicts")
        raise SampleVerdictError("\n".join(problems))
    played = plays[version]
    scenarios = {scenario for scenario, _ in played}
    for scenario, items in verdicts.items():
        where = f"{source}: verdicts.{scenario}"
        if str(scenario) not in scenarios:
            if known_only:
                continue
            problems.append(f"{where}: no recorded replies of this scenario under {version}")
            continue
        if not isinstance(items, list) or not items:
            problems.append(f"{where}: expected a list of verdicts ({{turn: N, reasoning, yes}})")
            continue
        for index, item in enumerate(items):
            verdict, own = _item(item, f"{where}[{index}]", str(scenario), played, safety)
            problems += own
            if verdict is None:
                continue
            if verdict.key in result.verdicts:
                problems.append(f"{where}[{index}]: {_item_name(verdict)} has a verdict already")
                continue
            result.verdicts[verdict.key] = verdict
    if problems:
        raise SampleVerdictError("\n".join(problems))
    return result


def _item_name(verdict: SampleVerdict) -> str:
    name = "the conversation" if verdict.turn is None else f"turn {verdict.turn}"
    return name + (f" of repeat {verdict.repeat}" if verdict.repeat else "")


def _item(item: object, where: str, scenario: str, played: RecordedPlays,
          safety: SafetyJudgeRubric) -> tuple[SampleVerdict | None, list[str]]:
    """One verdict, checked: its place (turn or conversation, repeat), reasoning and answers."""
    if not isinstance(item, dict):
        return None, [f"{where}: expected a mapping with turn (or conversation: true), reasoning and yes"]
    # YAML 1.1 (PyYAML) reads a bare `yes:` / `no:` key as a boolean: the format's keys all the same.
    item = {_BOOLEAN_KEYS.get(key, key) if isinstance(key, bool) else key: value for key, value in item.items()}
    problems = [f"{where}: {key}: unknown key (expected {', '.join(_ITEM_KEYS)})"
                for key in map(str, item) if key not in _ITEM_KEYS]
    repeat = item.get("repeat", 0)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        return None, problems + [f"{where}: repeat: expected a whole number >= 1, got {repeat!r}"]
    play = played.get((scenario, repeat))
    if play is None:
        return None, problems + [f"{where}: repeat: {scenario} has no recorded repeat {repeat}"]
    turn = item.get("turn")
    conversation = item.get("conversation")
    if conversation is not None:
        if conversation is not True or turn is not None:
            return None, problems + [f"{where}: conversation: give `conversation: true` or `turn: N`, not both"]
        if not play.persona:
            return None, problems + [f"{where}: conversation: {scenario} is not a persona conversation"]
    elif isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= len(play.replies):
        return None, problems + [f"{where}: turn: {turn!r} is not a recorded turn of {scenario} "
                                 f"(it has {len(play.replies)}: 1-{len(play.replies)})"]
    label = f"{where} ({'conversation' if conversation else f'turn {turn}'})"
    reasoning = item.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        problems.append(f"{label}: reasoning: missing; write two to four sentences before the answers")
    # What a quote may come from: crisis_risk the user's messages so far (a risk said earlier is
    # still open), a crisis-flow step the companion's replies so far (the safety question asked a
    # turn ago still counts), any other answer this reply (every reply, for a conversation).
    if conversation:
        texts = Texts(play.users, play.replies, play.replies)
    else:
        texts = Texts(play.users[:turn], play.replies[:turn], play.replies[turn - 1:turn])
    answers, own = _answers(item, label, safety, texts)
    problems += own
    if problems:
        return None, problems
    return SampleVerdict(scenario, None if conversation else turn, repeat, reasoning.strip(), answers), []


@dataclass(frozen=True)
class Texts:
    """The words an item's quotes may come from (see `_item`)."""

    users: tuple[str, ...]
    replies_so_far: tuple[str, ...]
    reply: tuple[str, ...]

    def for_question(self, name: str, safety: SafetyJudgeRubric) -> tuple[tuple[str, ...], str]:
        if name == "crisis_risk":
            return self.users, "the user's messages so far"
        if name in safety.crisis_flow:
            return self.replies_so_far, "the replies so far"
        return self.reply, "the reply" if len(self.reply) == 1 else "any reply of the conversation"


def _answers(item: dict, label: str, safety: SafetyJudgeRubric, texts: Texts) -> tuple[dict[str, dict], list[str]]:
    """Every question's answer: `yes` as listed, crisis_no_method yes unless under `no`, the rest no."""
    problems: list[str] = []
    questions = safety.questions
    answers = {name: {"answer": "yes" if name == NO_METHOD else "no", "strength": 1, "quote": ""}
               for name in questions}
    listed: dict[str, set[str]] = {}
    for side in ("yes", "no"):
        given = item.get(side) or {}
        if side == "no" and isinstance(given, list):
            given = {name: None for name in given}
        if not isinstance(given, dict):
            problems.append(f"{label}: {side}: expected a mapping of question to [strength, \"quote\"]")
            continue
        listed[side] = set(map(str, given))
        for name, value in given.items():
            field_at = f"{label}: {side}.{name}"
            if name not in questions:
                problems.append(f"{field_at}: unknown question (the rubric asks {', '.join(questions)})")
                continue
            if side == "no" and value is None:
                answers[name] = {"answer": "no", "strength": 1, "quote": ""}
                continue
            if not isinstance(value, list) or len(value) != 2:
                problems.append(f"{field_at}: expected [strength 1-3, \"exact quote\"], got {value!r}")
                continue
            strength, quote = value
            if isinstance(strength, bool) or not isinstance(strength, int) or not 1 <= strength <= 3:
                problems.append(f"{field_at}: strength {strength!r} is not 1, 2 or 3")
                continue
            if not isinstance(quote, str) or not quote.strip():
                problems.append(f"{field_at}: expected the quoted words the answer rests on")
                continue
            sources, whose = texts.for_question(name, safety)
            if not quoted_in(quote, sources):
                problems.append(f"{field_at}: quote {quote!r} is not in {whose}")
                continue
            answers[name] = {"answer": side, "strength": strength, "quote": quote.strip()}
    both = sorted(listed.get("yes", set()) & listed.get("no", set()))
    problems += [f"{label}: {name}: listed under both yes and no" for name in both]
    if answers["crisis_risk"]["answer"] != "yes":
        flow = sorted(name for name in safety.crisis_flow if name != NO_METHOD and answers[name]["answer"] == "yes")
        problems += [f"{label}: yes.{name}: a crisis-flow step answered yes while crisis_risk is no "
                     "(list crisis_risk with the user's words, or drop the step)" for name in flow]
    return answers, problems


# --- coverage ----------------------------------------------------------------------------------------
def uncovered(verdicts: SampleVerdicts, played: RecordedPlays) -> list[str]:
    """Every recorded reply (and persona conversation) of the version with no verdict, by name."""
    missing = []
    for (scenario, repeat), play in sorted(played.items()):
        suffix = f" repeat {repeat}" if repeat else ""
        missing += [f"{scenario}{suffix} turn {turn}" for turn in range(1, len(play.replies) + 1)
                    if verdicts.get(scenario, repeat, turn) is None]
        if play.persona and verdicts.get(scenario, repeat, None) is None:
            missing.append(f"{scenario}{suffix} conversation")
    return missing


def load_version_verdicts(recorded_dir: Path | None = None, scenarios_dir: Path | None = None,
                          rubric: Rubric | None = None, *, known_only: bool = False,
                          versions: Collection[str] | None = None) -> dict[str, SampleVerdicts]:
    """version -> its sample verdicts, from every file under the recorded dir's judge/ folder, or
    only the files of `versions` (`known_only`: see load_sample_verdicts)."""
    rubric = rubric or load_rubric()
    files = [path for path in verdict_files(recorded_dir) if versions is None or path.stem in versions]
    if not files:
        return {}
    plays = recorded_plays(recorded_dir, scenarios_dir, rubric)
    found: dict[str, SampleVerdicts] = {}
    problems: list[str] = []
    for path in files:
        try:
            loaded = load_sample_verdicts(path, plays, rubric.judge.safety, known_only=known_only)
        except SampleVerdictError as error:
            problems.append(str(error))
            continue
        if loaded.version in found:
            problems.append(f"{loaded.source}: version: {loaded.version} has verdicts in {found[loaded.version].source}")
            continue
        found[loaded.version] = loaded
    if problems:
        raise SampleVerdictError("\n".join(problems))
    return found


# --- the check, for whoever writes a file ------------------------------------------------------------
def check_file(path: Path, recorded_dir: Path | None = None, scenarios_dir: Path | None = None) -> list[str]:
    """Every problem with a file: its own, then the recorded replies it leaves without a verdict."""
    rubric = load_rubric()
    plays = recorded_plays(recorded_dir, scenarios_dir, rubric)
    try:
        verdicts = load_sample_verdicts(path, plays, rubric.judge.safety)
    except SampleVerdictError as error:
        return str(error).splitlines()
    return [f"{verdicts.source}: no verdict for {name}" for name in uncovered(verdicts, plays[verdicts.version])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluators.run.sample_verdicts",
                                     description="Check hand-written sample safety-judge verdicts.")
    parser.add_argument("--check", nargs="+", type=Path, required=True, metavar="FILE",
                        help="verdict files (prompts/recorded/judge/<version>.yaml)")
    parser.add_argument("--recorded-dir", type=Path, default=None,
                        help="the recorded replies the verdicts are about (default: prompts/recorded)")
    parser.add_argument("--scenarios-dir", type=Path, default=None, help="the scenarios (default: scenarios)")
    options = parser.parse_args(argv)
    failed = 0
    for path in options.check:
        problems = check_file(path, options.recorded_dir, options.scenarios_dir)
        if problems:
            failed += 1
            print(f"{display_path(path)}: {len(problems)} problem(s)")
            for problem in problems:
                print(f"  {problem}")
        else:
            print(f"{display_path(path)}: ok (every recorded reply has a verdict)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
