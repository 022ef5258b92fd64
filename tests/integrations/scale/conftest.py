"""A real Ray cluster on this machine for the Ray tests: a head and a second node, on 127.0.0.1.

Started once per pytest run (a session fixture) with `ray start --block`, each in a process
group of its own, so stopping it ends exactly the processes it started (never `ray stop`,
which would end every Ray on the machine). One CPU per node and small object stores: the
machine is shared.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

NODE_OPTIONS = ["--num-cpus", "1", "--object-store-memory", str(150 * 1024 * 1024), "--node-ip-address",
                "127.0.0.1", "--disable-usage-stats", "--block"]


def ray_command() -> list[str]:
    return [str(Path(sys.executable).with_name("ray"))]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _cluster_cpus(address: str, environ: dict[str, str]) -> float:
    check = ("import ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
             "print(ray.cluster_resources().get('CPU', 0)); ray.shutdown()") % address
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=environ, timeout=120)
    try:
        return float(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0.0


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory) -> Iterator[dict]:
    """{"address": "127.0.0.1:PORT", "env": the environment a driver needs} for a two-node cluster."""
    pytest.importorskip("ray", reason="Ray is not installed: the Ray tests need the 'scale' extra "
                                      "(pip install -e '.[scale]'; scripts/test.sh installs it)")
    if shutil.which(ray_command()[0]) is None:
        pytest.skip("the `ray` command is missing from this environment")
    temp_dir = tmp_path_factory.mktemp("ray")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    # Ray 2.5x turns token authentication on for `ray start` clusters; this one lives on loopback
    # for one test run, and its nodes and drivers share the setting.
    environ = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    logs = [open(temp_dir / name, "w") for name in ("head.log", "node.log")]  # noqa: SIM115 - closed below
    head = subprocess.Popen([*ray_command(), "start", "--head", "--port", str(port), "--temp-dir", str(temp_dir),
                             "--include-dashboard", "false", *NODE_OPTIONS], stdout=logs[0],
                            stderr=subprocess.STDOUT, env=environ, start_new_session=True)
    processes = [head]
    try:
        deadline = time.monotonic() + 180
        while _cluster_cpus(address, environ) < 1:
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the Ray head did not start: " + (temp_dir / "head.log").read_text()[-2000:])
            time.sleep(1)
        node = subprocess.Popen([*ray_command(), "start", "--address", address, *NODE_OPTIONS], stdout=logs[1],
                                stderr=subprocess.STDOUT, env=environ, start_new_session=True)
        processes.append(node)
        while _cluster_cpus(address, environ) < 2:
            if node.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the second Ray node did not join: " + (temp_dir / "node.log").read_text()[-2000:])
            time.sleep(1)
        yield {"address": address, "env": environ}
    finally:
        for process in reversed(processes):
            _stop_group(process)
        for log in logs:
            log.close()


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the node's process group (raylet, GCS, workers), then SIGKILL what is left."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                process.wait(timeout=5)
                return
            process.poll()
            time.sleep(0.2)
