"""The rubric's names are a contract: a renamed lexicon, word set or pattern is refused on load.

Signals and the modules they share declare what they read from the rubric by name
(evaluators/scoring/rubric_names.py); a copy of the packaged rubric with one of those names
edited must be refused by the evaluators, with the name and who reads it, instead of leaving
a signal silently off. A pattern's groups are fields of the pattern: "#music" is a hashtag,
in both the `formatting` and the `voice_blocker` groups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from evaluators.rubric.loader import DEFAULT_RUBRIC_PATH, Rubric, RubricError, default_rubric, parse_rubric
from evaluators.scoring.expectations import check_reply, voice_blockers
from evaluators.scoring.heuristics import check_signals
from evaluators.scoring.rubric_names import READERS, pattern_groups

Mutation = Callable[[dict[str, Any]], None]


def edited(mutate: Mutation) -> Rubric:
    """The packaged rubric's YAML with `mutate` applied, parsed (the loader's own checks pass)."""
    data = yaml.safe_load(DEFAULT_RUBRIC_PATH.read_text(encoding="utf-8"))
    mutate(data)
    return parse_rubric(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), source="edited.yaml")


def refusal(mutate: Mutation) -> str:
    with pytest.raises(RubricError) as info:
        check_signals(edited(mutate))
    return str(info.value)


def rename(section: Callable[[dict[str, Any]], dict[str, Any]], old: str, new: str) -> Mutation:
    """Rename key `old` of the mapping `section(data)` to `new`, keeping its place and value."""
    def mutate(data: dict[str, Any]) -> None:
        mapping = section(data)
        items = [(new if key == old else key, value) for key, value in mapping.items()]
        mapping.clear()
        mapping.update(items)
    return mutate


def rename_lexicon(old: str, new: str) -> Mutation:
    """Rename a lexicon everywhere the rubric file itself names it (its own sections that list
    lexicons by name, e.g. simulation_checks), so only the Python readers still want the old name."""
    def mutate(data: dict[str, Any]) -> None:
        rename(lambda d: d["lexicons"], old, new)(data)
        for key, section in data.items():
            if key != "lexicons" and isinstance(section, dict):
                for field, value in section.items():
                    if isinstance(value, list) and old in value and field.endswith("lexicons"):
                        section[field] = [new if item == old else item for item in value]
    return mutate


def test_the_packaged_rubric_holds_every_declared_name():
    check_signals(default_rubric())


def test_a_renamed_lexicon_is_refused_naming_it_and_its_readers():
    message = refusal(rename_lexicon("ai_transparency", "honesty"))
    line = next(line for line in message.splitlines() if "lexicons.ai_transparency" in line)
    # The signal of that name, the claims rules and the says_ai expectation all read it.
    assert "signal ai_transparency" in line and "safety.claims" in line and "expectations" in line


def test_a_renamed_word_set_is_refused_naming_it_and_its_readers():
    message = refusal(rename(lambda data: data["safety"]["word_sets"], "kin", "family"))
    line = next(line for line in message.splitlines() if "safety.word_sets.kin" in line)
    assert "missing" in line and "safety.claims" in line and "safety.crisis" in line


def test_a_renamed_pattern_is_refused_naming_it():
    message = refusal(rename(lambda data: data["patterns"], "hashtag", "hash_tag"))
    line = next(line for line in message.splitlines() if "patterns.hashtag" in line)
    assert "signal voice_formatting" in line and "expectations" in line


def test_a_pattern_taken_out_of_a_group_a_reader_names_it_in_is_refused():
    def ungroup(data: dict[str, Any]) -> None:
        data["patterns"]["hashtag"]["groups"] = ["formatting"]

    assert "patterns.hashtag.groups: lacks voice_blocker; read so by expectations" in refusal(ungroup)


def test_a_misspelt_group_is_refused_with_the_known_ones():
    def misspell(data: dict[str, Any]) -> None:
        data["patterns"]["line_break"]["groups"] = ["formating"]

    message = refusal(misspell)
    assert "patterns.line_break.groups: no reader reads group 'formating'" in message
    assert "formatting" in message and "voice_blocker" in message


def test_every_problem_is_named_in_one_pass():
    def break_three(data: dict[str, Any]) -> None:
        rename_lexicon("ai_transparency", "honesty")(data)
        rename(lambda d: d["safety"]["word_sets"], "kin", "family")(data)
        rename(lambda d: d["patterns"], "emoji", "emojis")(data)

    message = refusal(break_three)
    assert all(key in message for key in ("lexicons.ai_transparency", "safety.word_sets.kin", "patterns.emoji"))


def test_a_new_pattern_joins_a_group_in_the_rubric_alone():
    """No code names it: its group decides what reads it."""
    def add(data: dict[str, Any]) -> None:
        data["patterns"]["footnote"] = {"regex": r"\[\^\d+\]", "groups": ["formatting", "voice_blocker"]}

    rubric = edited(add)
    check_signals(rubric)
    assert "footnote" in pattern_groups(rubric)["voice_blocker"]
    assert voice_blockers("As the study shows[^1], sleep helps.", rubric) == ["footnote"]


def test_every_reader_declares_names_the_packaged_rubric_has():
    rubric = default_rubric()
    for reader, names in READERS.items():
        assert set(names.lexicons) <= set(rubric.lexicons), reader
        assert set(names.word_sets) <= set(rubric.safety.word_sets), reader
        assert set(names.patterns) <= set(rubric.patterns), reader


# --- a hashtag is unspeakable -----------------------------------------------------------------

MUSIC = "That playlist sounds perfect for a rainy evening. #music"


def test_a_reply_ending_in_a_hashtag_fails_voice_ready():
    assert voice_blockers(MUSIC, default_rubric()) == ["hashtag"]
    [outcome] = check_reply([_voice_ready()], MUSIC)
    assert not outcome.passed and outcome.detail == "hashtag"


def test_the_same_reply_without_the_hashtag_is_voice_ready():
    [outcome] = check_reply([_voice_ready()], MUSIC.removesuffix(" #music"))
    assert outcome.passed


def test_a_hashtag_fires_voice_formatting_too(score):
    evidence = score("Any music tips?", MUSIC).metrics["appropriateness"].evidence
    assert any(item.indicator == "voice_formatting" and "hashtag" in item.text for item in evidence)


def _voice_ready():
    from evaluators.inputs.contracts import Expectation

    return Expectation(kind="voice_ready", value=True)


# --- the declarations are complete ----------------------------------------------------------


def test_every_name_a_scoring_module_spells_out_is_declared_by_that_module():
    """A module that asks for a lexicon, word set or pattern by its name (a string in its
    source) declares it, for a signal of the module or for the module's helpers: a new
    `f.reply.has("...")` without its declaration fails here."""
    import ast
    from pathlib import Path

    import evaluators.scoring as scoring
    from evaluators.scoring.heuristics.registry import SIGNALS

    rubric = default_rubric()
    known = set(rubric.lexicons) | set(rubric.safety.word_sets) | set(rubric.patterns)
    root = Path(scoring.__file__).parent
    declared: dict[str, set[str]] = {}
    for reader, names in READERS.items():
        if reader.startswith("signal "):
            module = SIGNALS[reader.removeprefix("signal ")].__module__.removeprefix("evaluators.scoring.")
        else:
            module = reader
        declared.setdefault(module, set()).update(names.lexicons, names.word_sets, names.patterns)
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        strings = {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        undeclared = sorted((strings & known) - declared.get(module, set()))
        assert not undeclared, f"{module} reads {undeclared} by name without declaring them"
