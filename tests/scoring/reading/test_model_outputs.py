"""ModelOutputs: values kept by text, computed once, the least recently read dropped first."""

from __future__ import annotations

from evaluators.scoring.reading.lru import ModelOutputs


def test_a_text_is_computed_once_and_the_least_recently_read_goes_first():
    computed: list[str] = []
    cache: ModelOutputs[int] = ModelOutputs(limit=2)

    def length(text: str) -> int:
        computed.append(text)
        return len(text)

    assert cache.get("ab", length) == 2 and cache.get("abc", length) == 3
    assert cache.get("ab", length) == 2  # kept: not computed again, and now the most recent
    cache.get("abcd", length)  # over the bound: "abc" (least recently read) is dropped
    assert computed == ["ab", "abc", "abcd"]
    assert "ab" in cache and "abc" not in cache and len(cache) == 2


def test_fill_computes_only_texts_not_kept_each_once_in_chunks_of_half_the_bound():
    calls: list[list[str]] = []
    cache: ModelOutputs[str] = ModelOutputs(limit=4)
    cache.get("kept", str.upper)

    def upper_many(texts: list[str]) -> list[str]:
        calls.append(texts)
        return [text.upper() for text in texts]

    cache.fill(["kept", "a", "b", "a", "c"], upper_many)
    assert calls == [["a", "b"], ["c"]]
    assert cache.get("c", lambda text: "not computed again") == "C"
