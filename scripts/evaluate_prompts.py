"""Evaluate every companion prompt version over the scenario sets: `penpal-eval run`.

A thin shell over evaluators.cli.run, so a checkout works without installing the package:

    python scripts/evaluate_prompts.py                      # all versions, all scenarios
    python scripts/evaluate_prompts.py -p v2-warm-boundaries -f emotional_support -c 16
    python scripts/evaluate_prompts.py --resume runs/RUN_ID
    python scripts/evaluate_prompts.py --judge              # and the LLM judge (PENPAL_JUDGE_*)

It prints a table per version, then the release decision per version (deploy / A/B test /
revise) with the rules that decided it (docs/release.md). With no OPENAI_API_KEY /
OPENAI_BASE_URL it replays the recorded sample replies, offline.
See `python scripts/evaluate_prompts.py --help` for every option and the exit codes.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(PROJECT_ROOT))

from evaluators.cli.lazy import build_command  # noqa: E402
from evaluators.cli.run import run  # noqa: E402

if __name__ == "__main__":
    build_command(run, "evaluate_prompts.py").main(prog_name=Path(sys.argv[0]).name)
