"""The `penpal-eval` command line: the command list, each command imported when it runs.

Commands live in the modules beside this one; this package only names them (see
`evaluators.cli.lazy`), so `penpal-eval --help` answers without loading spaCy or an SDK.
"""

from __future__ import annotations

from typing import Annotated

import typer

from evaluators.cli.lazy import HELP_MARKUP, LazyCommand, lazy_group

LAZY_COMMANDS: dict[str, LazyCommand] = {
    "score": LazyCommand("evaluators.cli.score:score", "Score one reply (--response) or a JSON-lines file of records "
                                                       "(FILE)."),
    "rubric": LazyCommand("evaluators.cli.score:rubric", "Print the rubric summary (dimensions and weights), or "
                                                         "validate a rubric file with --check."),
    "run": LazyCommand("evaluators.cli.run:run", "Evaluate prompt versions over the scenario sets; print a table "
                                                 "and a release decision per version."),
    "decide": LazyCommand("evaluators.cli.release:decide", "Decide deploy / A/B test / revise for each prompt "
                                                           "version of a run, with the rules that fired."),
    "verify": LazyCommand("evaluators.cli.verify:verify", "Judge a stored run's unverified safety-relevant "
                                                          "replies with the safety judge, then decide."),
    "compare": LazyCommand("evaluators.cli.release:compare", "Compare two runs version by version: B minus A per "
                                                             "metric, paired by scenario, with intervals."),
    "report": LazyCommand("evaluators.cli.release:report", "Write the release report of a run: report.html "
                                                           "(self-contained), decisions.json, CSV and Parquet."),
    "pairwise": LazyCommand("evaluators.cli.pairwise:pairwise", "Judge two prompt versions of a run head to head: "
                                                                "win rate with its interval, per family."),
    "judge": LazyCommand("evaluators.cli.judge:judge", "Judge replies with the LLM judge: one JSON line per record, "
                                                       "in order."),
    "calibrate": LazyCommand("evaluators.cli.judge:calibrate", "Agreement of the judge and the heuristics with "
                                                               "human labels."),
    "push": LazyCommand("evaluators.cli.langfuse:push", "Push a stored run to Langfuse: the spans, scores, "
                                                        "experiments and review items it has not yet received."),
    "monitor": LazyCommand("evaluators.cli.langfuse:monitor", "Score the companion's production replies in "
                                                              "Langfuse and write the scores back."),
    "langfuse": LazyCommand("evaluators.cli.langfuse:langfuse_app", "Set up Langfuse for the suite: score configs, "
                                                                    "the scenario dataset and the dashboard."),
    "view": LazyCommand("evaluators.cli.view:view", "Browse a run's cases in a web page on 127.0.0.1: filter by "
                                                    "version, family, flag and failure kind."),
    "scenarios": LazyCommand("evaluators.cli.data:scenarios_app", "Check and list the scenario sets."),
    "prompts": LazyCommand("evaluators.cli.data:prompts_app", "Check and list the companion prompt versions."),
}


app = typer.Typer(
    name="penpal-eval",
    cls=lazy_group(LAZY_COMMANDS),
    help="Score voice-companion replies on the Penpal rubric.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=HELP_MARKUP,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"penpal-eval {version('penpal-eval')}")
        except PackageNotFoundError:  # a checkout run without installing the package
            typer.echo("penpal-eval (not installed: no version recorded)")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False) -> None:
    """Every command is a lazy one, so a callback makes `app` a group (typer needs one registered);
    it also answers --version."""


if __name__ == "__main__":
    app()
