"""Bounded tables kept by key: what the scoring stream, the sentence encoder and the fine-tuned
reply model hold between the cases of a run.

Why one module: each of them keeps values that are a pure function of a text (a parse, a
sentence vector, a detector's probabilities), reads the same texts many times over a run, and
must keep a long run's memory flat. The least recently used entry goes first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


class LruTable(Generic[Key, Value]):
    """A dict that forgets its least recently used entry once it holds `limit` of them."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"an LRU table holds at least one entry, not {limit}")
        self.limit = limit
        self._entries: OrderedDict[Key, Value] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: Key) -> Value | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: Key, value: Value) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)


class ModelOutputs(Generic[Value]):
    """A model's output per text, computed the first time a text is read and kept within the
    bound; `fill` computes a batch of cases' texts at once, before the cases read them one by
    one (a forward pass over many texts costs less than one per text)."""

    def __init__(self, limit: int) -> None:
        self._table: LruTable[str, Value] = LruTable(limit)

    def __contains__(self, text: object) -> bool:
        return text in self._table

    def __len__(self) -> int:
        return len(self._table)

    def get(self, text: str, compute: Callable[[str], Value]) -> Value:
        """The text's output, computed (and kept) the first time it is read."""
        found = self._table.get(text)
        if found is None:
            found = compute(text)
            self._table.put(text, found)
        return found

    def fill(self, texts: Iterable[str], compute_many: Callable[[list[str]], Sequence[Value]]) -> None:
        """Compute the texts not yet kept, each once, in chunks of at most half the bound (a
        chunk never pushes out the texts computed just before it)."""
        todo = [text for text in dict.fromkeys(texts) if text not in self._table]
        step = max(1, self._table.limit // 2)
        for start in range(0, len(todo), step):
            chunk = todo[start:start + step]
            for text, value in zip(chunk, compute_many(chunk), strict=True):
                self._table.put(text, value)
