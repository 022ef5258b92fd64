"""`cached_property` without the lock that Python 3.11's `functools` version takes.

Why: `functools.cached_property` on 3.11 takes a lock on every first read (3.12 dropped it).
A reply's features are a new object per case, read for the first time dozens of times each,
all on one thread; the lock was a measurable part of scoring a reply. Otherwise the same:
computed on first read and kept in the instance's `__dict__`, which later reads find first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class cached_property(Generic[T]):  # noqa: N801  (named like the functools one it stands for)
    """A property computed once per instance, on first read."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.compute(instance)
        return value
