"""What every stage shares and nothing in it depends on: the metric names, file and text
helpers, retries, endpoints, the record of one model call and the on-disk answer cache.

The bottom layer of the package (see `[tool.importlinter]` in pyproject.toml): it imports no
other part of `evaluators`.
"""
