"""An on-disk cache of companion replies, so re-running an evaluation costs nothing.

The key is everything that determines a reply: endpoint, model, sampling parameters and the
full message list. Entries are written atomically (temp file + rename), so a run killed
mid-write never leaves a half entry that a later run would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from evaluators.models import Completion
from evaluators.offline import cache_dir


def default_cache_dir() -> Path:
    return cache_dir() / "responses"


def cache_key(endpoint: str, model: str, parameters: dict, messages: list[dict]) -> str:
    payload = json.dumps(
        {"endpoint": endpoint, "model": model, "parameters": parameters, "messages": messages},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            return Completion.model_validate(data).model_copy(update={"cached": True, "attempts": 0})
        except (OSError, ValueError):
            return None  # absent or unreadable: treat as a miss, the call will rewrite it

    def put(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(completion.model_dump_json())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
