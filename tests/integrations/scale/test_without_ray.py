"""Without the 'scale' extra: local scoring works, and `--engine ray` says how to install Ray.

Ray is made unimportable in a child process (`sys.modules["ray"] = None`), which is what a
machine without the extra looks like to Python.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import PROJECT_ROOT

SAMPLES = PROJECT_ROOT / "tests" / "data" / "sample_replies.jsonl"
WITHOUT_RAY = ("import sys; sys.modules['ray'] = None; sys.modules['ray.data'] = None; "
               "from evaluators.cli import app; sys.argv = ['penpal-eval', *sys.argv[1:]]; app()")


def penpal_without_ray(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_RAY, *arguments], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300)


def test_engine_ray_without_ray_says_how_to_install_it():
    result = penpal_without_ray("score", str(SAMPLES), "--engine", "ray")
    assert result.returncode == 2, result.stderr
    assert "pip install -e '.[scale]'" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_local_scoring_needs_no_ray():
    result = penpal_without_ray("score", str(SAMPLES))
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(SAMPLES.read_text().splitlines())
