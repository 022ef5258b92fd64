"""Does Ray scoring cost little beyond the scoring itself, and does it scale with workers?

Run from the project root: ``python benchmarks/scale.py [--records 20000]`` (needs the
'scale' extra). Builds the throughput benchmark's deterministic records, writes them as
JSON lines, and in one run measures replies per second of:

- local scoring on one core (``score_frame`` in this process, models loaded beforehand);
- local scoring on two cores (two forked processes, each scoring half; the same-core
  reference for two Ray workers);
- ``score --engine ray`` with 1 and with 2 workers on a local Ray of two CPUs, end to end:
  reading the file, starting the actors (each loads spaCy), scoring, writing JSON lines.

Overhead is 1 - Ray / local at the same number of cores (target: at most 15%); scaling
efficiency is Ray with 2 workers / (2 x Ray with 1 worker). A job's fixed cost (actor
start-up) is measured apart on a small input. The machine may be shared: compare the ratios
of one run, and repeat (``--repeat N`` keeps the best of N).
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.throughput import build_records  # noqa: E402
from evaluators.integrations.scale.engine import RayUnavailable, connect  # noqa: E402
from evaluators.integrations.scale.ray_scoring import RayScoring, score_file_on_ray  # noqa: E402
from evaluators.scoring.api import default_evaluator, score_frame  # noqa: E402

TARGET_OVERHEAD = 0.15
SMALL_JOB = 40  # records in the job that measures the fixed cost


def write_jsonl(frame: pd.DataFrame, path: Path) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in frame.to_dict(orient="records")))
    return path


def timed(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _score_part(part: pd.DataFrame) -> int:
    return len(score_frame(part))  # the forked child has the parent's loaded evaluator


def local_two_cores(frame: pd.DataFrame) -> float:
    """Two forked processes (models already loaded), each scoring half of the records."""
    halves = [frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2:]]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(_score_part, [frame.head(8), frame.head(8)]))  # both children up before the clock starts
        return timed(lambda: list(pool.map(_score_part, halves)))


def ray_job(source: Path, workers: int) -> float:
    return timed(lambda: score_file_on_ray(str(source), str(source.with_suffix(f".ray{workers}.jsonl")),
                                           RayScoring(workers=workers), stdout=io.StringIO()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000, help="reply records (default 20000)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per measurement; the best is kept")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    frame = build_records(args.records)
    try:
        ray, _ = connect(None, 2)  # a local Ray of two CPUs, kept for every Ray job of the run
    except RayUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    score_frame(frame.head(64), evaluator=default_evaluator())  # load the models before any clock
    with tempfile.TemporaryDirectory() as directory:
        source = write_jsonl(frame, Path(directory) / "replies.jsonl")
        small = write_jsonl(frame.head(SMALL_JOB), Path(directory) / "small.jsonl")
        fixed = ray_job(small, 2)
        works = {  # each Ray job right after its local reference, so both see the same load on a shared machine
            ("local", 1): lambda: timed(lambda: score_frame(frame)),
            ("ray", 1): lambda: ray_job(source, 1),
            ("local", 2): lambda: local_two_cores(frame),
            ("ray", 2): lambda: ray_job(source, 2),
        }
        seconds: dict[tuple[str, int], float] = {}
        for _ in range(args.repeat):
            for key, work in works.items():
                seconds[key] = min(seconds.get(key, float("inf")), work())
    ray.shutdown()
    rate = {key: args.records / value for key, value in seconds.items()}
    print(f"{args.records} records; a Ray job's fixed cost (actors start, spaCy loads) is about {fixed:.1f} s "
          f"({SMALL_JOB}-record job)")
    print(f"{'engine':<8}{'cores':>6}{'seconds':>10}{'replies/s':>11}{'per core':>10}{'overhead':>10}")
    for engine, cores in (("local", 1), ("local", 2), ("ray", 1), ("ray", 2)):
        value = seconds[engine, cores]
        overhead = "" if engine == "local" else f"{1 - rate[engine, cores] / rate['local', cores]:.1%}"
        print(f"{engine:<8}{cores:>6}{value:>10.1f}{rate[engine, cores]:>11.1f}{rate[engine, cores] / cores:>10.1f}"
              f"{overhead:>10}")
    efficiency = rate["ray", 2] / (2 * rate["ray", 1])
    local_efficiency = rate["local", 2] / (2 * rate["local", 1])
    print(f"scaling efficiency, 1 -> 2 workers: Ray {efficiency:.0%} (local processes {local_efficiency:.0%})")
    worst = max(1 - rate["ray", cores] / rate["local", cores] for cores in (1, 2))
    verdict = "met" if worst <= TARGET_OVERHEAD else "NOT met"
    print(f"target: Ray overhead at most {TARGET_OVERHEAD:.0%} against local at the same cores: {verdict} "
          f"(worst {worst:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
