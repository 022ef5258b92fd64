"""Score the sample companion replies and print a table of the Penpal rubric metrics.

Until the scenario runner lands, this scores the recorded exchanges in
`scenarios/sample_replies.jsonl` (or another JSON-lines file given with --file). It is a thin
shell: all reading, scoring and rendering live in `evaluators`.

    python scripts/evaluate_prompts.py [--file PATH] [--rubric PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(PROJECT_ROOT))

import typer  # noqa: E402

from evaluators.cli import RubricOption, evaluate_samples  # noqa: E402

SAMPLE_REPLIES = PROJECT_ROOT / "scenarios" / "sample_replies.jsonl"


def main(
    file: Annotated[
        Path,
        typer.Option("--file", help="JSON-lines file of {id, history, user_message, response} records.",
                     dir_okay=False, show_default="scenarios/sample_replies.jsonl"),
    ] = SAMPLE_REPLIES,
    rubric: RubricOption = None,
) -> None:
    """Score sample replies and print id, the seven metrics, quality level and flags.

    Exit codes: 0 every record scored; 1 some record could not be scored; 2 unreadable file or
    invalid rubric.
    """
    raise typer.Exit(code=evaluate_samples(file, rubric))


if __name__ == "__main__":
    typer.run(main)
