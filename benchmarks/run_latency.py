"""Does the run keep the API busy, and does it measure time to first token faithfully?

Run from the project root: ``python benchmarks/run_latency.py [--latency 0.2] [--concurrency 8 64]``.
Starts the tests' local OpenAI-compatible server in a process of its own (as an API is), which
answers every call after a fixed delay, and runs every shipped prompt version over every
shipped scenario through the real `openai` SDK (no response cache), streamed as the responder
always does, once per concurrency. For each it prints:

- the wall time against the ideal, the larger of

      calls x latency / concurrency          (the API kept fully busy)
      longest conversation's calls x latency (turns of one conversation are sequential)

  plus the scoring time measured in the same run. Target: wall time <= 1.3 x ideal. The
  evaluator loads in a warm-up that is not timed.
- the time to first token the run measured (p50 and p95 over every turn), and the client's
  added first-token time: for each turn, the run's measurement minus the server's own time
  from that request to its first word (the server's log, paired call by call). That is what the
  client puts into the figure the voice budget checks; it should not grow with concurrency,
  since the calls are made in a process that does nothing else (evaluators/run/responder_process.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from evaluators.pipeline import execute, prepare_run  # noqa: E402
from evaluators.release.latency import spread  # noqa: E402
from evaluators.run.config import RunConfig  # noqa: E402
from evaluators.run.responder import build_messages  # noqa: E402
from evaluators.scoring.api import default_evaluator, score_reply  # noqa: E402
from evaluators.store.records import CaseResult  # noqa: E402
from tests.servers.openai_compat import conversation_key  # noqa: E402

TARGET_RATIO = 1.3


def _server(latency_s: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "tests.servers.openai_compat", "--latency", str(latency_s)],
                               cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def _server_first_tokens(base_url: str) -> dict[str, float]:
    """The server's own first-token time of each conversation prefix's last call, by its key."""
    with urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/_test/first-tokens") as answer:
        calls = json.loads(answer.read())
    return {call["key"]: call["seconds"] for call in sorted(calls, key=lambda call: call["attempt"])}


def _added_first_token_s(cases: list[CaseResult], scenarios: dict, prompts: dict,
                         server: dict[str, float]) -> list[float]:
    """Per timed turn: the client's time to first token minus the server's, for the same call."""
    added = []
    for case in cases:
        messages = build_messages(prompts[case.prompt_version], scenarios[case.scenario_id])
        for turn in case.turns:
            messages.append({"role": "user", "content": turn.user})
            own = server.get(conversation_key(messages))
            if turn.time_to_first_token_s is not None and own is not None and not turn.cached:
                added.append(turn.time_to_first_token_s - own)
            messages.append({"role": "assistant", "content": turn.reply})
    return added


def measure(latency_s: float, concurrency: int) -> dict:
    evaluator = default_evaluator()
    score_reply("Hello!", "Hi there, how are you?", evaluator=evaluator)  # warm-up, not timed
    server, base_url = _server(latency_s)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            environ = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "benchmark"}
            config = RunConfig(responder="openai", concurrency=concurrency, use_cache=False,
                               output_dir=Path(scratch), run_id="latency")
            prepared = prepare_run(config, evaluator, environ)
            started = time.perf_counter()
            report = asyncio.run(execute(prepared, evaluator))
            wall = time.perf_counter() - started
        server_first_tokens = _server_first_tokens(base_url)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    calls = sum(len(case.turns) + (case.simulation or {}).get("calls", 0) for case in report.outcome.cases)
    cases = report.outcome.cases
    first_token = spread(turn.time_to_first_token_s for case in cases for turn in case.turns)
    added = spread(_added_first_token_s(cases, {s.id: s for s in prepared.plan.scenarios},
                                        {p.version: p for p in prepared.plan.prompts}, server_first_tokens))
    server_own = spread(server_first_tokens.values())
    # A conversation's calls are sequential: its replies, plus a simulated user's own calls.
    longest = max(len(case.turns) + (case.simulation or {}).get("calls", 0) for case in cases)
    busy = calls * latency_s / concurrency
    sequential = longest * latency_s
    ideal = max(busy, sequential) + report.outcome.scoring_s
    return {
        "versions": len(prepared.plan.prompts),
        "scenarios": len(prepared.plan.scenarios),
        "cases": len(cases),
        "failed": sum(case.status != "ok" for case in cases),
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
        "server_first_token_p50_s": server_own.p50 if server_own else None,
        "server_first_token_p95_s": server_own.p95 if server_own else None,
        "client_added_first_token_p50_s": added.p50 if added else None,
        "client_added_first_token_p95_s": added.p95 if added else None,
        "paired_turns": added.count if added else 0,
    }


def _print(figures: dict) -> None:
    print(f"run latency at concurrency {figures['concurrency']}: {figures['versions']} versions x "
          f"{figures['scenarios']} scenarios = {figures['cases']} cases ({figures['failed']} failed), "
          f"{figures['calls']} calls, longest conversation {figures['longest_conversation_calls']} calls")
    print(f"  server latency {figures['latency_s']:.3f} s")
    print(f"  ideal   {figures['ideal_s']:8.3f} s  = API-bound {figures['api_bound_s']:.3f} s "
          f"+ scoring {figures['scoring_s']:.3f} s (measured in this run)")
    print(f"  actual  {figures['wall_s']:8.3f} s")
    verdict = "PASS" if figures["ratio"] <= TARGET_RATIO else "FAIL"
    print(f"  ratio   {figures['ratio']:8.3f}   (target <= {TARGET_RATIO})  {verdict}")
    if figures["time_to_first_token_p50_s"] is not None:
        print(f"  time to first token measured: p50 {figures['time_to_first_token_p50_s']:.3f} s, "
              f"p95 {figures['time_to_first_token_p95_s']:.3f} s")
        print(f"  the server's own (request to first word): p50 {figures['server_first_token_p50_s']:.3f} s, "
              f"p95 {figures['server_first_token_p95_s']:.3f} s")
        print(f"  client's added first-token time, call by call over {figures['paired_turns']} turns: "
              f"p50 {figures['client_added_first_token_p50_s']:.3f} s, "
              f"p95 {figures['client_added_first_token_p95_s']:.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="server delay per call, seconds")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 64], help="one run per value")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    results = [measure(args.latency, concurrency) for concurrency in args.concurrency]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for figures in results:
            _print(figures)
        if len(results) > 1:
            added = ", ".join(f"-c {figures['concurrency']}: p50 {figures['client_added_first_token_p50_s']:.3f} s, "
                              f"p95 {figures['client_added_first_token_p95_s']:.3f} s" for figures in results)
            print(f"client's added first-token time: {added}")
    return 0 if all(figures["ratio"] <= TARGET_RATIO and not figures["failed"] for figures in results) else 1


if __name__ == "__main__":
    sys.exit(main())
