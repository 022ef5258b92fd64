"""Problems in hand-written files, worded for the person who wrote them.

Validation reports every problem of a file in one pass; this module turns pydantic's errors
into lines that name the field as written (`turns[0].expect[1]`) and, for a key the model
does not know, the key it most likely meant (`temprature` → `temperature`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Sequence
from difflib import get_close_matches

from pydantic import BaseModel, ValidationError

from evaluators.core.locations import field_path


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'temperature'?` for a near miss, else ``; known: a, b, c``.

    A near miss is a close spelling (`temprature`), or the one known name the word is a part of
    (`user` → `user_message`): a shortened name is as common a slip as a typo.
    """
    known = sorted(set(choices))
    close = get_close_matches(word, known, n=1, cutoff=0.6)
    if not close:
        parts = [name for name in known if word.lower() in name.lower().split("_")]
        close = parts if len(parts) == 1 else []
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; known: {', '.join(known)}" if known else ""


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold: X, X | None, tuple[X, ...], list[X], dict[str, X]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return []
    found: list[type[BaseModel]] = []
    for argument in typing.get_args(annotation):
        found += _models_in(argument)
    return found


def _holds_mapping(annotation: object) -> bool:
    """Whether the next part of a location is a dict key (`dimensions.helpfulness`), not a field."""
    if typing.get_origin(annotation) is dict:
        return True
    return any(_holds_mapping(argument) for argument in typing.get_args(annotation)
               if typing.get_origin(annotation) is not dict and isinstance(annotation, types.UnionType))


def _fields_at(model: type[BaseModel], loc: Sequence[object]) -> list[str]:
    """The field names allowed where `loc` points (the model that holds its last part)."""
    current: list[type[BaseModel]] = [model]
    key_next = False
    for part in loc[:-1]:
        if not isinstance(part, str) or key_next:
            key_next = False
            continue  # a list index or a dict key: the same model, one element down
        following: list[type[BaseModel]] = []
        for candidate in current:
            field = candidate.model_fields.get(part)
            if field is not None:
                following += _models_in(field.annotation)
                key_next = key_next or _holds_mapping(field.annotation)
        if not following:
            return []
        current = following
    return [name for candidate in current for name in candidate.model_fields]


def validation_problems(error: ValidationError, model: type[BaseModel],
                        top_level_keys: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(field as written, what is wrong) for every error pydantic found, unknown keys with a suggestion.

    `top_level_keys` are the keys a file may set at the top, when the model has more fields
    than the file's author writes (a prompt's text and hash come from elsewhere).
    """
    problems = []
    for item in error.errors():
        where = field_path(item["loc"])
        if item["type"] == "extra_forbidden":
            key = str(item["loc"][-1])
            allowed = (top_level_keys if len(item["loc"]) == 1 and top_level_keys is not None
                       else _fields_at(model, item["loc"]))
            message = "unknown key" + did_you_mean(key, allowed)
        elif item["type"] == "missing":
            message = "field required"
        else:
            message = item["msg"].removeprefix("Value error, ")
        problems.append((where, message))
    return problems
