"""Where project files live, and how to name a location in an error message.

Messages name files relative to the project (never this machine's absolute paths) and
fields the way the YAML author wrote them (`turns[0].expect[1]`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename.

    A reader (or a run killed mid-write) never sees half a file: caches, state and summaries
    are either the old content or the new. The file gets the permissions any new file gets
    (0666 less the umask), like the CSVs beside it: mkstemp's private 0600 is for the
    temporary name only.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read_umask() -> int:
    """The process's umask (reading it means setting it; it is set straight back, once, at import)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def cache_dir() -> Path:
    """Where penpal-eval keeps derived local data (``PENPAL_EVAL_CACHE`` overrides)."""
    override = os.environ.get("PENPAL_EVAL_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "penpal-eval"


def display_path(path: Path) -> str:
    """The path as a person pastes it from here: relative to the current directory when it is
    inside it, else absolute (a path relative to the project fails from any other directory)."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(resolved)


def manifest_path(path: Path) -> str:
    """A path as a run's manifest keeps it: relative to the project when inside it (the run
    moves with the checkout), else absolute (it resolves from any directory)."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(PROJECT_ROOT))
    except ValueError:
        return str(resolved)


def url_without_credentials(url: str) -> str:
    """A URL without user info, query or fragment: fit for manifests, logs and reports."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def field_path(loc: Sequence[object]) -> str:
    """A pydantic error location as the file's author wrote it: turns[0].expect[1] ("" for the whole)."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def read_data_file(path: Path) -> str:
    """A data file's UTF-8 text; ValueError naming the file when it is unreadable or not UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{display_path(path)}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ValueError(f"{display_path(path)}: cannot read: {error.strerror}") from None


def short_hash(text: str) -> str:
    """The 16-hex-digit SHA-256 prefix that identifies a file's content in manifests."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
