"""`penpal-eval view RUN`: browse a run's cases in a web page served on 127.0.0.1.

Presentation only: the server and the page are evaluators.report.viewer.
"""

from __future__ import annotations

import signal
from typing import Annotated

import typer
from rich.text import Text

from evaluators.cli.common import EXIT_OK, EXIT_USAGE, RubricOption, fail, terminate_as_interrupt
from evaluators.cli.release import RunDirArgument, load_rubric_option
from evaluators.core.locations import display_path
from evaluators.report.console import stderr_console, stdout_console
from evaluators.report.viewer import ViewerServer
from evaluators.store.run_store import RunStore, StoreError

DEFAULT_PORT = 8765


def view(
    run_dir: RunDirArgument,
    port: Annotated[int, typer.Option(
        "--port", min=0, max=65535, help="Port on 127.0.0.1 to serve on; 0 picks a free one.")] = DEFAULT_PORT,
    rubric_path: RubricOption = None,
) -> None:
    """Browse a run's cases in a web page on 127.0.0.1: filter by version, family, flag and failure kind.

    Open a case to see each turn with its scores, evidence, flags and judge reasoning, and the
    other versions' replies to the same scenario side by side. The page is read-only and
    offline (it asks nothing of any other server). Ctrl-C stops it.

    Exit codes: 0 stopped with Ctrl-C; 2 bad arguments (no run there, the port is taken).
    """
    rubric = load_rubric_option(rubric_path)
    try:
        store = RunStore.open(run_dir)
    except StoreError as error:
        raise fail(f"error: {error}", EXIT_USAGE) from None
    cases = store.read_cases()
    if not cases:
        raise fail(f"error: {display_path(run_dir)} holds no cases yet", EXIT_USAGE)
    try:
        server = ViewerServer(cases, rubric, run_id=str(store.manifest.get("run_id", run_dir.name)), port=port)
    except OSError as error:
        raise fail(f"error: --port {port}: cannot listen on 127.0.0.1:{port} ({error.strerror or error}); "
                   "choose another port, or --port 0 for a free one", EXIT_USAGE) from None
    stdout_console().print(Text(f"viewing {display_path(store.directory)} ({len(cases)} cases) at {server.url}"),
                           soft_wrap=True)
    stderr_console().print(Text("read-only, on this machine only; Ctrl-C stops it"))
    # Ctrl-C is how the viewer stops, also where it was started with SIGINT ignored (a job a
    # script or a test runner put in the background inherits that, and would never stop).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with terminate_as_interrupt():
            server.serve_forever()
    except KeyboardInterrupt:
        stderr_console().print(Text("viewer stopped"))
    finally:
        server.server_close()
    raise typer.Exit(code=EXIT_OK)


