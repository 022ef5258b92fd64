"""On-disk caches of API answers (companion replies, judgements), so a re-run costs nothing.

The key is everything that determines a reply: endpoint, model, sampling parameters and the
full message list. Entries are written atomically (temp file + rename), so a run killed
mid-write never leaves a half entry that a later run would trust.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from evaluators.core.completion import Completion
from evaluators.core.locations import cache_dir, write_text_atomic


def default_cache_dir() -> Path:
    return cache_dir() / "responses"


def cache_key(endpoint: str, model: str, parameters: dict, messages: list[dict]) -> str:
    payload = json.dumps(
        {"endpoint": endpoint, "model": model, "parameters": parameters, "messages": messages},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JsonFileCache:
    """JSON documents on disk under a hex key, one file each, written atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get_json(self, key: str) -> dict | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent or unreadable: a miss, the caller recomputes and rewrites it
        return data if isinstance(data, dict) else None

    def put_json(self, key: str, data: dict) -> None:
        write_text_atomic(self._path(key), json.dumps(data, ensure_ascii=False))


class ResponseCache(JsonFileCache):
    def __init__(self, directory: Path | None = None) -> None:
        super().__init__(directory if directory is not None else default_cache_dir())

    def get(self, key: str) -> Completion | None:
        data = self.get_json(key)
        if data is None:
            return None
        try:
            completion = Completion.model_validate(data)
        except ValueError:
            return None
        return completion.model_copy(update={"cached": True, "attempts": 0})

    def put(self, key: str, completion: Completion) -> None:
        self.put_json(key, completion.model_dump(mode="json"))
