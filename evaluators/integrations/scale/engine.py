"""Connecting to Ray, or saying how to install it.

`ray.init()` with no address starts a local Ray on this machine (a laptop run); an address
(`auto`, `ray://host:10001`, or a head's `host:6379`) joins a running cluster: KubeRay,
Anyscale, or `ray start` on VMs.
"""

from __future__ import annotations

import logging
from types import ModuleType

ENGINES: tuple[str, ...] = ("local", "ray")
INSTALL_HINT = ("the Ray engine needs the optional 'scale' extra: pip install -e '.[scale]' "
                "(or bash scripts/setup.sh dev,scale)")


class RayUnavailable(RuntimeError):
    """Ray is not installed here; the message says how to install it."""


def require_ray() -> ModuleType:
    try:
        import ray
        import ray.data  # noqa: F401 - the Data library comes with the [data] extra only
    except ImportError as error:
        raise RayUnavailable(f"{INSTALL_HINT} ({error})") from None
    return ray


def connect(address: str | None, workers: int) -> tuple[ModuleType, bool]:
    """Ray, initialised; and whether this call started it (so the caller shuts down only its own).

    Without an address a local Ray gets `workers` CPUs and a small object store: the machine
    is shared, and scoring needs little memory beyond one spaCy pipeline per worker.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray, False
    options: dict = {"logging_level": logging.WARNING, "include_dashboard": False, "log_to_driver": False}
    if address is None:
        options |= {"num_cpus": workers, "object_store_memory": 200 * 1024 * 1024}
    ray.init(address=address, **options)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # output rows in input order, as local scoring writes them
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    # The execution plan, per-dataset notices and "progress bars disabled" would drown the summary.
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    return ray, True
