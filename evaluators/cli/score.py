"""`penpal-eval score` and `penpal-eval rubric`: the heuristics on one reply or on JSON lines.

Scoring happens in `evaluators.scoring.api`; this module only parses arguments, reads and writes
JSON lines, and renders results. Results go to stdout, diagnostics to stderr.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, BinaryIO

import typer
from rich.console import Console
from rich.text import Text

from evaluators.cli.common import (
    EXIT_RECORD_ERRORS,
    EXIT_USAGE,
    RubricOption,
    fail,
    fail_all,
    load_evaluator,
    open_input,
    open_output,
)
from evaluators.cli.scale import AddressOption, Engine, EngineOption, WorkersOption
from evaluators.core.jsonl import JsonLine, read_json_lines
from evaluators.core.text import plural
from evaluators.report.console import stderr_console, stderr_is_tty, stdout_console
from evaluators.report.score_card import render_card, render_unscored_card, rubric_summary
from evaluators.rubric.loader import RubricError, default_rubric, load_rubric

if TYPE_CHECKING:
    from evaluators.scoring.heuristics import HeuristicEvaluator


# --- JSON lines in, JSON lines out -----------------------------------------------------------
@dataclass(frozen=True)
class LineOutcome:
    """One input line's output record: a scored record, or an error record with the reason."""

    line: int
    record: dict
    error: str | None = None
    invalid: bool = False  # the line is not a record by the contract (bad JSON, unknown key, wrong type)


def _record_id(record: object) -> str | None:
    if isinstance(record, dict) and record.get("id") is not None:
        return str(record["id"])
    return None


def score_jsonl(stream: BinaryIO, evaluator: HeuristicEvaluator | None = None, *,
                strict: bool = False) -> Iterator[LineOutcome]:
    """Score a JSON-lines stream in input order, without reading it all first.

    Lines flow through `score_records`, which scores them in batches; a record without an
    id is named after its line number. `strict` reads each record by the contract
    (evaluators.scoring.contracts.StrictReplyRecord).
    """
    from evaluators.scoring.api import Unscored, score_records

    pending: deque[JsonLine] = deque()

    def records() -> Iterator[object]:
        for line in read_json_lines(stream):
            pending.append(line)
            record = line.record
            if isinstance(record, dict) and _record_id(record) is None:
                record = {**record, "id": str(line.number)}
            # A line that is not JSON still takes its place in the stream; its reason wins below.
            yield record if line.error is None else None

    for outcome in score_records(records(), evaluator=evaluator, strict=strict):
        line = pending.popleft()
        if line.error is None and not isinstance(outcome, Unscored):
            yield LineOutcome(line.number, outcome.to_record())
            continue
        reason = line.error or outcome.error
        record = {"id": _record_id(line.record), "line": line.number, "error": reason}
        if line.error is None and outcome.notices:
            record["notices"] = outcome.to_record()["notices"]
        yield LineOutcome(line.number, record, reason, invalid=line.error is not None or not outcome.notices)


@contextmanager
def _progress(console: Console, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """A spinner with a running count on `console`, or a no-op when disabled.

    Diagnostics must be printed through the same console, so they scroll above the spinner.
    """
    if not enabled:
        yield lambda scored, failed: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("scoring", total=None)

        def update(scored: int, failed: int) -> None:
            progress.update(task, description=f"scored {plural(scored, 'record')}, {failed} failed")

        yield update


def _write_jsonl(stream: BinaryIO, out: IO[str], evaluator: HeuristicEvaluator, strict: bool) -> tuple[int, int]:
    """Score every line to `out`; returns (lines that are not records by the contract, lines left
    unscored for their text, e.g. a user message in another language)."""
    errors = stderr_console()
    scored = failed = invalid = 0
    with _progress(errors, enabled=stderr_is_tty()) as update:
        for outcome in score_jsonl(stream, evaluator, strict=strict):
            if outcome.error is None:
                scored += 1
                for notice in outcome.record.get("notices", []):  # scored, but not quite as written: say so
                    errors.print(Text(f"line {outcome.line}: {notice['text']}", style="yellow"))
            else:
                failed += 1
                invalid += outcome.invalid
                errors.print(Text(f"line {outcome.line}: {outcome.error}"))
            out.write(json.dumps(outcome.record) + "\n")
            update(scored, failed)
    out.flush()
    if not scored and not failed:  # an empty input is worth saying, not a silent success
        errors.print(Text("no records: the input has no non-blank lines", style="yellow"))
    return invalid, failed - invalid


# --- commands ---------------------------------------------------------------------------------
def score(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="JSON-lines file of records {id, history, user_message, response}; '-' reads stdin.",
            metavar="FILE", dir_okay=False, allow_dash=True, show_default=False,
        ),
    ] = None,
    response: Annotated[
        str | None, typer.Option("--response", "-r", help="Score this one reply and print a card.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="The user message the reply answers (with --response).")
    ] = None,
    history: Annotated[
        list[str] | None,
        typer.Option("--history", help="An earlier conversation turn, oldest first; repeat for several (with --response)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --response: print the JSON record instead of the card.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="With FILE: write the JSON lines here instead of stdout.",
                     dir_okay=False, show_default=False),
    ] = None,
    lenient: Annotated[bool, typer.Option(
        "--lenient", help="Read FILE records as before the contract was enforced: unknown keys ignored, a missing "
                          "user_message empty, a lone string history one turn.")] = False,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    rubric_path: RubricOption = None,
) -> None:
    """Score one reply (--response) or a JSON-lines file of records (FILE).

    A FILE record is {"id", "history", "user_message", "response"}: response and user_message
    are required (user_message "" for an opening line), history (a list of strings, oldest
    first) and id (text or a number) may be left out. A key the contract does not know, a
    value of the wrong type or a missing required key is an error naming the line and the
    key, with the key most likely meant; --lenient reads such records as before.

    FILE mode writes one JSON line per input line, in order: the record's id, each metric,
    quality_level, evidence, flags and detectors (each learned safety detector's probability,
    by name). A line that is not valid JSON or not a valid record is
    reported on stderr as 'line N: reason' and written as {"id", "line", "error"}; the other
    lines are still scored. An empty reply is scored as silence (the silent_reply flag), a
    reply in another language than the user's as wrong_language; a record whose user message
    is not in English is left unscored, its line carrying an unsupported_language notice.
    Blank lines are skipped; a record without an id gets its line number. Ids are always text
    ("7" for an id of 7); --response --json has none (null).

    With `--engine ray` FILE may also be Parquet or an object-store URI, and the output (JSON
    lines, or Parquet when --output ends in .parquet) has the columns of `score_frame`, an
    error row in place of each record that could not be scored (see docs/scale.md).

    Exit codes: 0 every record scored; 1 some record left unscored (a user message in another
    language; with --lenient, any record that could not be read); 2 bad arguments, an invalid
    --rubric file, or some line that is not a record by the contract (the others are scored).
    """
    if file is not None and response is not None:
        raise typer.BadParameter("give either FILE or --response, not both", param_hint="FILE / --response")
    if file is None and response is None:
        raise typer.BadParameter("give a FILE of JSON lines (or '-' for stdin), or --response",
                                 param_hint="FILE / --response")
    if file is not None and (user is not None or history):
        raise typer.BadParameter("--user and --history go with --response; in FILE mode each record has them",
                                 param_hint="--user / --history")
    if lenient and file is None:
        raise typer.BadParameter("--lenient reads FILE records; --response is one reply", param_hint="--lenient")
    if response is not None and output is not None:
        raise typer.BadParameter("--output goes with FILE; use --json and redirect stdout",
                                 param_hint="--output")

    if engine is Engine.ray:
        if file is None:
            raise typer.BadParameter("--engine ray scores a FILE, not --response", param_hint="--engine")
        from evaluators.cli.scale import score_with_ray

        score_with_ray(file, output, address, workers, rubric_path, strict=not lenient)
        return
    evaluator = load_evaluator(rubric_path)
    if response is not None:
        _score_one(evaluator, user or "", response, history or [], as_json)
        return

    with ExitStack() as stack:
        invalid, unscored = _write_jsonl(open_input(stack, file), open_output(stack, output), evaluator,
                                         strict=not lenient)
    if invalid and not lenient:
        stderr_console().print(Text(f"{plural(invalid, 'line')} not a record by the contract "
                                    "{id, history, user_message, response}; --lenient reads records as before",
                                    style="yellow"))
        raise typer.Exit(code=EXIT_USAGE)
    if invalid or unscored:
        raise typer.Exit(code=EXIT_RECORD_ERRORS)


def _score_one(evaluator: HeuristicEvaluator, user: str, response: str, history: list[str], as_json: bool) -> None:
    from evaluators.scoring.api import Unscored, score_records

    record = {"user_message": user, "response": response, "history": history}
    result = next(score_records([record], evaluator=evaluator))
    if isinstance(result, Unscored) and not result.notices:
        raise fail(f"error: {result.error}", EXIT_RECORD_ERRORS)
    if as_json:
        # The same shape as a FILE line; a single reply has no id (null), not a made-up "0".
        typer.echo(json.dumps({**result.to_record(), "id": None}))
    elif isinstance(result, Unscored):
        stdout_console().print(render_unscored_card(result, user_message=user, response=response, history=history))
    else:
        stdout_console().print(render_card(result, evaluator.rubric, user_message=user, response=response,
                                           history=history))
    if isinstance(result, Unscored):  # left unscored (e.g. another language): not a score to rely on
        raise typer.Exit(code=EXIT_RECORD_ERRORS)


def rubric(
    check: Annotated[
        Path | None,
        typer.Option("--check", help="Validate this rubric YAML file; exit 2 with the reason if it is invalid.",
                     metavar="PATH", show_default=False),
    ] = None,
) -> None:
    """Print the rubric summary (dimensions and weights), or validate a rubric file with --check."""
    if check is None:
        loaded = default_rubric()
    else:
        try:
            loaded = load_rubric(check)
            from evaluators.scoring.heuristics import check_signals, detectors_of

            check_signals(loaded)
            detectors_of(loaded)  # every behaviour it reads has a detector in the weights file it names
        except RubricError as error:
            raise fail_all(error.problems, EXIT_USAGE) from None
        stdout_console().print(Text(f"✓ {check}: valid rubric", style="green"))
    stdout_console().print(rubric_summary(loaded))

