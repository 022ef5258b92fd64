"""One scored reply on the terminal: a card with each metric's value, bar and level, the
evidence per metric and the hard flags; and the rubric's summary table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from evaluators.core.names import METRIC_NAMES, OVERALL
from evaluators.report.labels import level_style
from evaluators.rubric.loader import Rubric

if TYPE_CHECKING:
    from evaluators.scoring.contracts import HeuristicResult, Unscored


_BAR_WIDTH = 10
_EIGHTHS = " ▏▎▍▌▋▊▉"


def score_bar(value: float, width: int = _BAR_WIDTH) -> str:
    """A fixed-width bar for a 0-1 value, in eighths of a cell."""
    eighths = round(max(0.0, min(1.0, value)) * width * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (_EIGHTHS[part] if part else "")
    return bar.ljust(width)


def _exchange(user_message: str, response: str, history: Sequence[str]) -> Table:
    exchange = Table.grid(padding=(0, 1))
    exchange.add_column(style="dim", no_wrap=True)
    exchange.add_column(overflow="fold")
    for turn in history:
        exchange.add_row("history", Text(turn))
    if user_message:
        exchange.add_row("user", Text(user_message))
    exchange.add_row("reply", Text(response))
    return exchange


def render_unscored_card(outcome: Unscored, *, user_message: str = "", response: str = "",
                         history: Sequence[str] = ()) -> Panel:
    """The card for a reply left unscored: the exchange and why, with no number to misread."""
    names = ", ".join(dict.fromkeys(notice.name for notice in outcome.notices)) or "error"
    parts = [_exchange(user_message, response, history), Text(""),
             Text("Not scored", style="bold underline"), Text(outcome.error, style="yellow")]
    return Panel(Group(*parts), title=Text(f"unscored · {names}", style="bold yellow"), title_align="left",
                 expand=False)


def render_card(
    result: HeuristicResult,
    rubric: Rubric,
    *,
    user_message: str = "",
    response: str = "",
    history: Sequence[str] = (),
) -> Panel:
    """A readable card: metric values with bars and levels, evidence per metric, hard flags."""
    parts: list = [_exchange(user_message, response, history)]

    values = result.values()
    metrics = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    metrics.add_column("metric", no_wrap=True)
    metrics.add_column("value", justify="right", no_wrap=True)
    metrics.add_column("", no_wrap=True)
    metrics.add_column("level", no_wrap=True)
    for name in (*METRIC_NAMES, OVERALL):
        level = result.quality_level if name == OVERALL else rubric.quality_level(values[name])
        style = level_style(rubric, level)
        metrics.add_row(
            Text(name, style="bold" if name == OVERALL else ""),
            f"{values[name]:.2f}",
            Text(score_bar(values[name]), style=style),
            Text(level, style=style),
        )
    parts += [Text(""), metrics]

    evidence = Table.grid(padding=(0, 1))
    evidence.add_column(no_wrap=True)
    evidence.add_column(justify="right", no_wrap=True)
    evidence.add_column(overflow="fold")
    for name in (*METRIC_NAMES, OVERALL):
        items = result.metrics[name].evidence if name in result.metrics else result.overall_evidence
        if name == OVERALL and not items:
            continue  # overall is the weighted sum; it has evidence only when a flag capped it
        evidence.add_row(Text(name, style="bold"), "", "" if items else Text("no indicator fired", style="dim"))
        for item in items:
            style = "green" if item.effect > 0 else "red" if item.effect < 0 else "dim"
            evidence.add_row(Text(f"  {item.indicator}"), Text(f"{item.effect:+.2f}", style=style), Text(item.text))
    parts += [Text(""), Text("Evidence", style="bold underline"), evidence]

    parts += [Text(""), Text("Hard flags", style="bold underline")]
    if result.flags:
        for flag in result.flags:
            line = Text(f"✖ {flag.name}", style="bold red")
            line.append(f" — {flag.description}", style="red")
            if flag.text:
                line.append(f" ({flag.text})", style="red")
            parts.append(line)
    else:
        parts.append(Text("none", style="green"))

    headline = f"overall {result.overall_quality:.2f} · {result.quality_level}"
    if result.flags:
        names = ", ".join(flag.name for flag in result.flags)
        headline += f" · capped by {names}" if result.overall_evidence else f" · ✖ {names}"
    title = Text(headline, style=level_style(rubric, result.quality_level))
    return Panel(Group(*parts), title=title, title_align="left", expand=False)


def rubric_summary(loaded: Rubric) -> Table:
    """Dimensions with their titles and weights, and the quality levels."""
    table = Table(title=f"{loaded.name} v{loaded.version} ({loaded.content_hash})", header_style="bold")
    table.add_column("dimension", no_wrap=True)
    table.add_column("title")
    table.add_column("weight", justify="right", no_wrap=True)
    for name, dimension in loaded.dimensions.items():
        table.add_row(name, dimension.title, f"{dimension.weight:.2f}")
    table.add_section()
    table.add_row(OVERALL, loaded.overall.title, f"{sum(loaded.weights.values()):.2f}")
    levels = ", ".join(f"{level.name} ≥ {level.min:g}" for level in loaded.quality_levels)
    table.caption = f"quality levels: {levels}"
    return table
