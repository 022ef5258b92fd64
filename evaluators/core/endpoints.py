"""OpenAI-compatible endpoints as manifests, logs and reports name them: never with credentials.

Shared by the companion's responder and the judge's client, which both talk to such endpoints.
"""

from __future__ import annotations

from evaluators.core.locations import url_without_credentials

OPENAI_DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def safe_endpoint(base_url: str | None) -> str:
    """The endpoint without credentials or query string, fit for manifests and logs."""
    return url_without_credentials(base_url) if base_url else OPENAI_DEFAULT_ENDPOINT
