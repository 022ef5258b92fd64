"""Heuristic scoring past one machine: the same scorer on a Ray cluster.

Ray is an optional extra (`pip install -e '.[scale]'`); nothing here imports it until a
command asks for the Ray engine, so the package, its CLI and its tests work without it.
"""

from evaluators.integrations.scale.engine import ENGINES, RayUnavailable, require_ray

__all__ = ["ENGINES", "RayUnavailable", "require_ray"]
