"""Headless Chromium for the report tests: Debian's /usr/bin/chromium, driven by Playwright over
the DevTools protocol, with no network.

Playwright never downloads a browser here: it is pointed at the system Chromium. The profile is
a fresh temporary directory, and every request that is not to a local file or inline data is
sent to a dead proxy and recorded, so a report that reaches out is caught, not served.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import PROJECT_ROOT

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # No network: every connection goes to a closed local port, every name fails to resolve.
    "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
]
LOCAL_SCHEMES = ("file:", "data:", "about:")


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: install Debian's chromium package (scripts/test.sh does)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing: install the dev extra (bash scripts/setup.sh)"
    return None


@dataclass
class PageLog:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)


def _args(local_origin: str | None) -> list[str]:
    """The Chromium flags; with a local server, its loopback address is the one name left to resolve."""
    if local_origin is None:
        return CHROMIUM_ARGS
    return [arg if not arg.startswith("--host-resolver-rules=") else f"{arg}, EXCLUDE 127.0.0.1"
            for arg in CHROMIUM_ARGS]


@contextmanager
def offline_page(width: int = 1400, height: int = 900, local_origin: str | None = None
                 ) -> Iterator[tuple[object, PageLog]]:
    """A page in a fresh headless Chromium profile, and the log of what went wrong on it.

    `local_origin` (e.g. `http://127.0.0.1:8765`) is a server on this machine the page may talk
    to (the viewer): the browser is then not put offline, because that would cut loopback too;
    every other address still goes to the dead proxy and the resolver that finds nothing, and
    any request elsewhere is logged as outside.
    """
    from playwright.sync_api import sync_playwright

    profile = Path(tempfile.mkdtemp(prefix="penpal-chromium-"))
    log = PageLog()
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(profile), executable_path=str(CHROMIUM), headless=True, chromium_sandbox=False,
                args=_args(local_origin), viewport={"width": width, "height": height}, offline=local_origin is None,
            )
            try:
                page = context.new_page()
                page.on("console", lambda message: log.console_errors.append(message.text)
                        if message.type == "error" else None)
                page.on("pageerror", lambda error: log.page_errors.append(str(error)))
                local = (*LOCAL_SCHEMES, *([local_origin.rstrip("/") + "/"] if local_origin else []))
                page.on("request", lambda request: log.outside_requests.append(request.url)
                        if not request.url.startswith(local) else None)
                page.on("requestfailed", lambda request: log.failed_requests.append(request.url))
                yield page, log
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
