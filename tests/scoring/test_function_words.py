"""Negators and listener words have one definition (evaluators/scoring/function_words.py).

Three modules once wrote their own lists, with different members; a fourth list would drift
the same way. The readers' memberships are pinned here, so a change to one is a decision.
"""

from __future__ import annotations

import ast
from pathlib import Path

import evaluators
from evaluators.scoring import function_words as words
from evaluators.scoring.expectations import find_unnegated_phrases

PACKAGE = Path(evaluators.__file__).parent
MARKERS = ({"not", "n't"}, {"never", "no"}, {"you", "u"})


def test_no_module_but_one_spells_out_a_negator_or_listener_list():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "function_words.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Set, ast.Tuple)):
                members = {element.value for element in node.elts if isinstance(element, ast.Constant)}
                if any(marker <= members for marker in MARKERS):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {sorted(members)}")
    assert not found, found


def test_each_reader_keeps_its_members():
    assert words.NEGATORS == {"not", "no", "never", "n't", "nope", "nah"}
    assert words.PARSE_NEGATORS == words.NEGATORS | {"nt", "cannot"}
    assert words.PHRASE_NEGATORS == {"not", "no", "never", "n't", "nt", "cannot"}
    assert words.WRITTEN_NEGATORS == {"not", "no", "never", "n't", "nt"}
    assert words.VERB_NEGATORS == {"not", "never", "n't"}
    assert words.VOCATIVE_LISTENER == {"you", "u", "ya", "your"}
    assert words.AIMED_AT_PERSON == {"you", "u", "your", "you're", "ur", "they", "he", "she"}
    assert words.QUESTIONED_LISTENER == {"you", "u", "yours", "yourself"}
    assert words.INSULTED_LISTENER == {"you", "u", "ya"}
    assert words.SECOND_PERSON == {"you", "u", "your", "yours", "yourself", "ur"}


def test_text_negators_read_whole_words_with_their_contractions():
    assert find_unnegated_phrases("I can't promise I'll always be here", ["I'll always be here"]) == []
    assert find_unnegated_phrases("I won't say I'll always be here", ["I'll always be here"]) == []
    # "nope" answers; it does not negate what follows, and "note" is no "not".
    assert find_unnegated_phrases("Nope, I'll always be here", ["I'll always be here"]) == ["I'll always be here"]
    assert find_unnegated_phrases("Note: I'll always be here", ["I'll always be here"]) == ["I'll always be here"]
