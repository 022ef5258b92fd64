"""YAML reading shared by every data file (rubric, scenarios, prompt front matter).

Duplicate keys are refused: with plain PyYAML the last one silently wins, so a copy-pasted
scenario field or rubric weight would change results without a word. The parser is libyaml's
when PyYAML was built with it (the wheels are): the pure-Python one took a second for the
scenario sets, most of `penpal-eval scenarios list`.
"""

from __future__ import annotations

import yaml

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """A SafeLoader that refuses duplicate keys."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str) -> object:
    """Parse YAML text; raises yaml.YAMLError (with line and column) on bad input."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def describe_yaml_error(error: yaml.YAMLError, line_offset: int = 0) -> str:
    """A one-line reason with the file's line and column, for messages that name the file.

    `line_offset` is how many lines of the file precede the parsed text (front matter).
    """
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None:
        return f"not valid YAML: line {mark.line + 1 + line_offset}, column {mark.column + 1}: {problem}"
    return f"not valid YAML: {problem}"
