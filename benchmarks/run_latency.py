"""Does the run keep the API busy? Wall time of a run against a server with fixed latency.

Run from the project root: ``python benchmarks/run_latency.py [--latency 0.2] [--concurrency 16]``.
Starts the tests' local OpenAI-compatible server, which answers every call after a fixed
delay, and runs every shipped prompt version over every shipped scenario through the real
`openai` SDK (no response cache), streamed as the responder always does. The ideal time is
the larger of

    calls x latency / concurrency          (the API kept fully busy)
    longest conversation's calls x latency (turns of one conversation are sequential)

plus the scoring time measured in the same run. Target: wall time <= 1.3 x ideal. The
evaluator loads in a warm-up that is not timed. It also prints the time to first token the
run measured (p50 and p95 over every turn) beside the server's delay, which is the floor
of it: what streaming and scoring in the same process add to the measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from evaluators.pipeline import execute, prepare_run  # noqa: E402
from evaluators.release.latency import spread  # noqa: E402
from evaluators.run.config import RunConfig  # noqa: E402
from evaluators.scoring.api import default_evaluator, score_reply  # noqa: E402
from tests.servers.openai_compat import OpenAICompatServer  # noqa: E402

TARGET_RATIO = 1.3


def measure(latency_s: float, concurrency: int) -> dict:
    evaluator = default_evaluator()
    score_reply("Hello!", "Hi there, how are you?", evaluator=evaluator)  # warm-up, not timed
    with OpenAICompatServer(latency_s=latency_s) as server, tempfile.TemporaryDirectory() as scratch:
        environ = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "benchmark"}
        config = RunConfig(responder="openai", concurrency=concurrency, use_cache=False,
                           output_dir=Path(scratch), run_id="latency")
        prepared = prepare_run(config, evaluator, environ)
        started = time.perf_counter()
        report = asyncio.run(execute(prepared, evaluator))
        wall = time.perf_counter() - started
        calls = len(server.calls)
    first_token = spread(turn.time_to_first_token_s for case in report.outcome.cases for turn in case.turns)
    # A conversation's calls are sequential: its replies, plus a simulated user's own calls.
    longest = max(len(case.turns) + (case.simulation or {}).get("calls", 0) for case in report.outcome.cases)
    busy = calls * latency_s / concurrency
    sequential = longest * latency_s
    ideal = max(busy, sequential) + report.outcome.scoring_s
    return {
        "versions": len(prepared.plan.prompts),
        "scenarios": len(prepared.plan.scenarios),
        "cases": len(report.outcome.cases),
        "failed": sum(case.status != "ok" for case in report.outcome.cases),
        "calls": calls,
        "longest_conversation_calls": longest,
        "latency_s": latency_s,
        "concurrency": concurrency,
        "api_bound_s": round(max(busy, sequential), 3),
        "scoring_s": round(report.outcome.scoring_s, 3),
        "ideal_s": round(ideal, 3),
        "wall_s": round(wall, 3),
        "ratio": round(wall / ideal, 3),
        "target_ratio": TARGET_RATIO,
        "time_to_first_token_p50_s": first_token.p50 if first_token else None,
        "time_to_first_token_p95_s": first_token.p95 if first_token else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="server delay per call, seconds")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.latency, args.concurrency)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"run latency: {figures['versions']} versions x {figures['scenarios']} scenarios = "
              f"{figures['cases']} cases ({figures['failed']} failed), {figures['calls']} calls, "
              f"longest conversation {figures['longest_conversation_calls']} calls")
        print(f"  server latency {figures['latency_s']:.3f} s, concurrency {figures['concurrency']}")
        print(f"  ideal   {figures['ideal_s']:8.3f} s  = API-bound {figures['api_bound_s']:.3f} s "
              f"+ scoring {figures['scoring_s']:.3f} s (measured in this run)")
        print(f"  actual  {figures['wall_s']:8.3f} s")
        if figures["time_to_first_token_p50_s"] is not None:
            print(f"  time to first token p50 {figures['time_to_first_token_p50_s']:.3f} s, "
                  f"p95 {figures['time_to_first_token_p95_s']:.3f} s (server delay {figures['latency_s']:.3f} s)")
        verdict = "PASS" if figures["ratio"] <= TARGET_RATIO else "FAIL"
        print(f"  ratio   {figures['ratio']:8.3f}   (target <= {TARGET_RATIO})  {verdict}")
    return 0 if figures["ratio"] <= TARGET_RATIO and not figures["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
