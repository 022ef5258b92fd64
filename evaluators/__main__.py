"""`python -m evaluators` runs the penpal-eval command line."""

from evaluators.cli import app

app()
