"""Where the suite's Langfuse lives, read from the environment and checked at once.

Keys come only from the environment (the variables Langfuse's own SDK reads), so they never
sit in a command line, a manifest or a report. With neither key set, Langfuse is simply off:
every command works as before and says that nothing was pushed. With one key but not the
other, that is a mistake worth stopping for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from evaluators.core.locations import url_without_credentials

DEFAULT_BASE_URL = "https://cloud.langfuse.com"
DEFAULT_DATASET = "penpal-scenarios"
DEFAULT_SAFETY_QUEUE = "penpal-safety-disagreements"


class LangfuseConfigError(ValueError):
    """Langfuse is half-configured or misconfigured; the message names the variable to fix."""


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise LangfuseConfigError(f"{name}: expected a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise LangfuseConfigError(f"{name}: must be positive, got {raw!r}")
    return value


@dataclass(frozen=True)
class LangfuseSettings:
    public_key: str
    secret_key: str = field(repr=False)
    base_url: str = DEFAULT_BASE_URL
    timeout_s: float = 10.0  # per HTTP request
    flush_timeout_s: float = 60.0  # the most a run waits at its end for Langfuse to take the data
    dataset: str = DEFAULT_DATASET
    review_queue: str | None = None  # annotation queue (name or id) for cases a human should review
    # Annotation queue (name or id) for the safety judge's disagreements with the rules; created
    # on the first push that has one, found by name after.
    safety_queue: str = DEFAULT_SAFETY_QUEUE

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise LangfuseConfigError(f"LANGFUSE_BASE_URL: expected an http(s) URL, got {url_without_credentials(self.base_url)!r}")

    @property
    def endpoint(self) -> str:
        return url_without_credentials(self.base_url)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> LangfuseSettings | None:
        """The settings, or None when no Langfuse key is set (Langfuse is off)."""
        environ = os.environ if environ is None else environ
        public_key = environ.get("LANGFUSE_PUBLIC_KEY", "").strip()
        secret_key = environ.get("LANGFUSE_SECRET_KEY", "").strip()
        if not public_key and not secret_key:
            return None
        if not public_key or not secret_key:
            missing = "LANGFUSE_PUBLIC_KEY" if not public_key else "LANGFUSE_SECRET_KEY"
            raise LangfuseConfigError(f"{missing} is not set; set both LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY, "
                                      "or neither to run without Langfuse")
        base_url = (environ.get("LANGFUSE_BASE_URL") or environ.get("LANGFUSE_HOST") or DEFAULT_BASE_URL).strip()
        return cls(
            public_key=public_key,
            secret_key=secret_key,
            base_url=base_url.rstrip("/"),
            timeout_s=_number(environ, "PENPAL_LANGFUSE_TIMEOUT", 10.0),
            flush_timeout_s=_number(environ, "PENPAL_LANGFUSE_FLUSH_TIMEOUT", 60.0),
            dataset=environ.get("PENPAL_LANGFUSE_DATASET", "").strip() or DEFAULT_DATASET,
            review_queue=environ.get("PENPAL_LANGFUSE_REVIEW_QUEUE", "").strip() or None,
            safety_queue=environ.get("PENPAL_LANGFUSE_SAFETY_QUEUE", "").strip() or DEFAULT_SAFETY_QUEUE,
        )


def require_settings(environ: Mapping[str, str] | None = None) -> LangfuseSettings:
    """Settings for a command that cannot work without Langfuse."""
    settings = LangfuseSettings.from_environment(environ)
    if settings is None:
        raise LangfuseConfigError("this command talks to Langfuse: set LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and "
                                  f"LANGFUSE_BASE_URL (default {DEFAULT_BASE_URL}); see docs/langfuse.md")
    return settings
