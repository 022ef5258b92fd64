"""Inline SVG charts for the HTML report, drawn in Python: no script, no network, no fonts.

Each chart is one `<svg class="chart ...">` string whose marks carry `data-*` attributes
(the version, metric and value they show), so a test can check what was drawn. Every text
from data is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

SERIES_COLOURS = ("#3b6fb6", "#d9822b", "#6b4fa0", "#2e8b57", "#b23a48", "#7a7a7a")
FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif"


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value % 1 else f"{value:.0f}"


def _open(css_class: str, title: str, width: float, height: float) -> list[str]:
    """A chart's opening tag and title. `--natural` is its drawn width: on a narrow screen the page
    keeps the chart at least that wide, in a box that scrolls, so no label renders below its size
    (every label is 10 units or more: 10 px or more on screen)."""
    return [f'<svg class="chart {_attr(css_class)}" role="img" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
            f'height="{height:g}" xmlns="http://www.w3.org/2000/svg" style="--natural:{width:g}px;{FONT}">',
            f"<title>{escape(title)}</title>"]


@dataclass(frozen=True)
class Threshold:
    """A rule's figure drawn as a dashed line. `categories`: the rows of a bar chart it applies to
    (None: all), so a line is drawn only where its rule holds (a metric's floor across the metrics,
    the deploy bar across the average alone)."""

    value: float
    label: str
    categories: tuple[str, ...] | None = None

    def applies_to(self, category: str) -> bool:
        return self.categories is None or category in self.categories


THRESHOLD_GAP_PX = 3.0  # a bar below a threshold ends at least this far left of its line


def _side_of(value: float, thresholds: Sequence[Threshold]) -> tuple[bool, ...]:
    return tuple(value < threshold.value for threshold in thresholds)


def value_label(value: float, thresholds: Sequence[Threshold] = (), digits: int = 2) -> str:
    """`digits` decimals, or as many more as it takes to stay on the same side of every
    threshold (0.4998 under a 0.5 floor reads 0.4998, never 0.50)."""
    for places in range(digits, 10):
        text = f"{value:.{places}f}"
        if _side_of(float(text), thresholds) == _side_of(value, thresholds):
            return text
    return repr(value)


def bar_end(value: float, thresholds: Sequence[Threshold], x: Callable[[float], float]) -> float:
    """Where a bar ends: at its value, but never on or past the line of a threshold it is below."""
    end = x(value)
    for threshold in thresholds:
        line = x(threshold.value)
        if value < threshold.value and end > line - THRESHOLD_GAP_PX:
            end = line - THRESHOLD_GAP_PX
    return end


def nice_ticks(bound: float, most: int = 3) -> list[float]:
    """Symmetric ticks at round steps (0.05, 0.1, 0.25...) covering ±bound with at most `most` per side."""
    for step in (0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0):
        count = max(1, math.ceil(round(bound / step, 9)))
        if count <= most:
            return [round(step * index, 6) for index in range(-count, count + 1)]
    return [-bound, 0.0, bound]


THRESHOLD_COLOURS = ("#b23a48", "#1e7b45", "#b26a00", "#6b4fa0")


def bar_chart(title: str, categories: Sequence[str], series: Sequence[tuple[str, Mapping[str, float | None]]],
              *, labels: Mapping[str, str] | None = None, thresholds: Sequence[Threshold] = (),
              css_class: str = "metric-chart") -> str:
    """Horizontal grouped bars on a 0-1 axis: one group per category, one bar per series.

    Each threshold is a dashed line across the rows it applies to only (`Threshold.categories`),
    named in the legend above the bars in its colour; a bar below a line that applies to its row
    ends short of it, and its label has the decimals that keep it below.
    """
    labels = labels or {}
    left, right, top, bar_height, gap = 190, 44, 48 + (20 if thresholds else 0), 14, 12
    plot_width = 560
    group_height = bar_height * max(len(series), 1) + gap
    height = top + group_height * len(categories) + 40
    width = left + plot_width + right
    x = lambda value: left + plot_width * max(0.0, min(1.0, value))  # noqa: E731
    parts = _open(css_class, title, width, height)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{height - 34}" '
                     'stroke="#e3e3e3"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 20}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{_num(tick)}</text>')
    colours = {threshold: THRESHOLD_COLOURS[index % len(THRESHOLD_COLOURS)]
               for index, threshold in enumerate(thresholds)}
    for index, category in enumerate(categories):
        y0 = top + index * group_height
        applying = [threshold for threshold in thresholds if threshold.applies_to(category)]
        parts.append(f'<text x="{left - 8}" y="{y0 + group_height / 2 - gap / 2 + 4:.1f}" font-size="12" '
                     f'text-anchor="end" fill="#222">{escape(labels.get(category, category))}</text>')
        for position, (name, values) in enumerate(series):
            value = values.get(category)
            y = y0 + position * bar_height
            colour = SERIES_COLOURS[position % len(SERIES_COLOURS)]
            if value is None:
                continue
            end = bar_end(value, applying, x)
            shown = value_label(value, applying)
            parts.append(
                f'<rect class="bar" data-series="{_attr(name)}" data-category="{_attr(category)}" '
                f'data-value="{value:.4f}" x="{left}" y="{y}" width="{max(end - left, 0.5):.1f}" '
                f'height="{bar_height - 2}" fill="{colour}"><title>{escape(name)} · '
                f'{escape(labels.get(category, category))}: {value_label(value, applying, 3)}</title></rect>')
            parts.append(f'<text x="{end + 4:.1f}" y="{y + bar_height - 4}" font-size="10" '
                         f'fill="#333">{shown}</text>')
        for threshold in applying:
            parts.append(f'<line class="threshold" data-value="{threshold.value:g}" '
                         f'data-category="{_attr(category)}" x1="{x(threshold.value):.1f}" '
                         f'x2="{x(threshold.value):.1f}" y1="{y0 - 4}" y2="{y0 + group_height - gap + 2}" '
                         f'stroke="{colours[threshold]}" stroke-width="1.5" stroke-dasharray="4 3">'
                         f'<title>{escape(threshold.label)}</title></line>')
    legend_x = left
    for position, (name, _) in enumerate(series):
        colour = SERIES_COLOURS[position % len(SERIES_COLOURS)]
        parts.append(f'<rect x="{legend_x}" y="6" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{legend_x + 14}" y="15" font-size="11" fill="#222">{escape(name)}</text>')
        legend_x += 24 + 7 * len(name)
    legend_x = left
    for threshold in thresholds:
        parts.append(f'<line x1="{legend_x}" x2="{legend_x + 16}" y1="31" y2="31" stroke="{colours[threshold]}" '
                     'stroke-width="1.5" stroke-dasharray="4 3"/>')
        parts.append(f'<text class="threshold-label" x="{legend_x + 20}" y="35" font-size="11" '
                     f'fill="{colours[threshold]}">{escape(threshold.label)}</text>')
        legend_x += 36 + 6 * len(threshold.label)
    parts.append("</svg>")
    return "".join(parts)


def heatmap(title: str, rows: Sequence[str], columns: Sequence[str], values: Mapping[tuple[str, str], float | None],
            colour_for: Callable[[float], str], *, column_labels: Mapping[str, str] | None = None,
            row_notes: Mapping[str, str] | None = None, css_class: str = "heatmap") -> str:
    """A rows × columns grid of 0-1 values, each cell coloured by `colour_for(value)`."""
    column_labels = column_labels or {}
    row_notes = row_notes or {}
    left, top, cell_width, cell_height = 190, 30, 74, 26
    width = left + cell_width * len(columns) + 10
    height = top + cell_height * len(rows) + 10
    parts = _open(css_class, title, width, height)
    for column_index, column in enumerate(columns):
        parts.append(f'<text x="{left + column_index * cell_width + cell_width / 2:.1f}" y="{top - 10}" '
                     f'font-size="11" text-anchor="middle" fill="#222">'
                     f'{escape(column_labels.get(column, column))}</text>')
    for row_index, row in enumerate(rows):
        y = top + row_index * cell_height
        note = f" ({row_notes[row]})" if row in row_notes else ""
        parts.append(f'<text x="{left - 8}" y="{y + cell_height / 2 + 4:.1f}" font-size="12" text-anchor="end" '
                     f'fill="#222">{escape(row + note)}</text>')
        for column_index, column in enumerate(columns):
            value = values.get((row, column))
            x = left + column_index * cell_width
            fill = "#f0f0f0" if value is None else colour_for(value)
            shown = "—" if value is None else f"{value:.2f}"
            data = "" if value is None else f' data-value="{value:.4f}"'
            parts.append(f'<rect class="cell" data-row="{_attr(row)}" data-column="{_attr(column)}"{data} '
                         f'x="{x + 1}" y="{y + 1}" width="{cell_width - 2}" height="{cell_height - 2}" '
                         f'fill="{fill}"><title>{escape(row)} · {escape(column_labels.get(column, column))}: '
                         f'{shown}</title></rect>')
            parts.append(f'<text x="{x + cell_width / 2:.1f}" y="{y + cell_height / 2 + 4:.1f}" font-size="11" '
                         f'text-anchor="middle" fill="#111">{shown}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Interval:
    label: str
    key: str
    estimate: float
    low: float
    high: float
    change: str  # improved | regressed | no_difference


_CHANGE_COLOURS = {"improved": "#2e8b57", "regressed": "#b23a48", "no_difference": "#7a7a7a"}


def interval_chart(title: str, intervals: Sequence[Interval], *, css_class: str = "delta-chart") -> str:
    """A forest plot: each row a difference with its interval, around a zero line."""
    left, right, top, row_height = 190, 40, 26, 24
    plot_width = 440
    largest = max([0.05] + [abs(value) for item in intervals for value in (item.low, item.high, item.estimate)])
    ticks = nice_ticks(largest * 1.05)
    bound = ticks[-1]
    width = left + plot_width + right
    height = top + row_height * len(intervals) + 34
    x = lambda value: left + plot_width * (value + bound) / (2 * bound)  # noqa: E731
    parts = _open(css_class, title, width, height)
    for tick in ticks:
        parts.append(f'<line class="tick" data-value="{tick:g}" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 8}" '
                     f'y2="{height - 28}" stroke="{"#444" if tick == 0 else "#e3e3e3"}"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 12}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{"0" if tick == 0 else f"{tick:+g}"}</text>')
    for index, item in enumerate(intervals):
        y = top + index * row_height + row_height / 2
        colour = _CHANGE_COLOURS.get(item.change, "#7a7a7a")
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="12" text-anchor="end" fill="#222">'
                     f'{escape(item.label)}</text>')
        parts.append(f'<line class="interval" data-metric="{_attr(item.key)}" data-low="{item.low:.4f}" '
                     f'data-high="{item.high:.4f}" x1="{x(item.low):.1f}" x2="{x(item.high):.1f}" y1="{y:.1f}" '
                     f'y2="{y:.1f}" stroke="{colour}" stroke-width="3"/>')
        parts.append(f'<circle class="estimate" data-metric="{_attr(item.key)}" data-value="{item.estimate:.4f}" '
                     f'cx="{x(item.estimate):.1f}" cy="{y:.1f}" r="5" fill="{colour}"><title>{escape(item.label)}: '
                     f'{item.estimate:+.3f} [{item.low:+.3f}, {item.high:+.3f}] {escape(item.change)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class WinTieLoss:
    """One row of a head-to-head chart: counts of comparisons, and the win rate with its interval."""

    label: str
    key: str
    wins: int
    ties: int
    losses: int
    rate: float | None
    low: float | None
    high: float | None


_OUTCOME_COLOURS = {"win": "#2e8b57", "tie": "#c7c7c7", "loss": "#b23a48"}


def win_tie_loss_chart(title: str, rows: Sequence[WinTieLoss]) -> str:
    """Per row a bar split into wins, ties and losses (shares of its comparisons), and over it the
    win rate (ties half) with its interval, against a line at 50%."""
    left, right, top, row_height = 150, 24, 26, 30
    plot_width = 440
    width, height = left + plot_width + right, top + row_height * len(rows) + 34
    x = lambda share: left + plot_width * share  # noqa: E731
    parts = _open("head-to-head-chart", title, width, height)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        style = 'stroke="#444" stroke-dasharray="4 3"' if tick == 0.5 else 'stroke="#e3e3e3"'
        parts.append(f'<line class="tick" data-value="{tick:g}" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 8}" '
                     f'y2="{height - 28}" {style}/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 12}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{tick:.0%}</text>')
    for index, row in enumerate(rows):
        y = top + index * row_height
        parts.append(f'<text x="{left - 8}" y="{y + row_height / 2 + 4:.1f}" font-size="12" text-anchor="end" '
                     f'fill="#222">{escape(row.label)}</text>')
        total = row.wins + row.ties + row.losses
        start = 0.0
        for outcome, count in (("win", row.wins), ("tie", row.ties), ("loss", row.losses)):
            if not total or not count:
                continue
            share = count / total
            parts.append(f'<rect class="{outcome}" data-family="{_attr(row.key)}" data-count="{count}" '
                         f'x="{x(start):.1f}" y="{y + 6}" width="{plot_width * share:.1f}" height="{row_height - 12}" '
                         f'fill="{_OUTCOME_COLOURS[outcome]}"><title>{escape(row.label)}: {count} '
                         f'{outcome}{"" if count == 1 else ("es" if outcome == "loss" else "s")}</title></rect>')
            start += share
        if row.rate is not None and row.low is not None and row.high is not None:
            middle = y + row_height / 2
            parts.append(f'<line class="interval" data-family="{_attr(row.key)}" data-low="{row.low:.4f}" '
                         f'data-high="{row.high:.4f}" x1="{x(row.low):.1f}" x2="{x(row.high):.1f}" '
                         f'y1="{middle:.1f}" y2="{middle:.1f}" stroke="#111" stroke-width="2"/>')
            parts.append(f'<circle class="estimate" data-family="{_attr(row.key)}" data-value="{row.rate:.4f}" '
                         f'cx="{x(row.rate):.1f}" cy="{middle:.1f}" r="4" fill="#111" stroke="#fff">'
                         f'<title>{escape(row.label)}: win rate {row.rate:.0%} [{row.low:.0%}, {row.high:.0%}]'
                         f'</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Guide:
    """A rule's figure on a line chart: a dashed line through (turn, value) points, named in the legend."""

    label: str
    points: tuple[tuple[float, float], ...]
    kind: str  # a CSS class for the line, e.g. "floor" or "slope"


def line_chart(title: str, series: Sequence[tuple[str, Sequence[float]]], *, thresholds: Sequence[Threshold] = (),
               guides: Sequence[Guide] = (), css_class: str = "line-chart") -> str:
    """Lines of 0-1 values over turns 1, 2, ...: one line per series (e.g. trust per turn per version).

    Each line carries its values (`data-values`) and each point its turn and value, so what was
    drawn can be checked; a point's tooltip names the series, the turn and the value. `guides`
    draw a rule's own figures over the turns they apply to (e.g. a floor over the second half).
    """
    left, right, top, bottom = 48, 150, 20, 34
    plot_width, plot_height = 520, 180
    turns = max((len(values) for _, values in series), default=1)
    width, height = left + plot_width + right, top + plot_height + bottom
    x = lambda turn: left + plot_width * ((turn - 1) / (turns - 1) if turns > 1 else 0.5)  # noqa: E731
    y = lambda value: top + plot_height * (1 - max(0.0, min(1.0, value)))  # noqa: E731
    parts = _open(css_class, title, width, height)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{left}" x2="{left + plot_width}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     'stroke="#e3e3e3"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" text-anchor="end" '
                     f'fill="#555">{_num(tick)}</text>')
    for turn in range(1, turns + 1):
        parts.append(f'<text x="{x(turn):.1f}" y="{top + plot_height + 16}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{turn}</text>')
    parts.append(f'<text x="{left + plot_width / 2:.1f}" y="{height - 2}" font-size="11" text-anchor="middle" '
                 'fill="#555">turn</text>')
    for threshold in thresholds:
        parts.append(f'<line class="threshold" x1="{left}" x2="{left + plot_width}" y1="{y(threshold.value):.1f}" '
                     f'y2="{y(threshold.value):.1f}" stroke="#b23a48" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{left + plot_width + 4}" y="{y(threshold.value) + 4:.1f}" font-size="10" '
                     f'fill="#b23a48">{escape(threshold.label)}</text>')
    for index, guide in enumerate(guides):
        colour = THRESHOLD_COLOURS[index % len(THRESHOLD_COLOURS)]
        drawn = " ".join(f"{x(turn):.1f},{y(value):.1f}" for turn, value in guide.points)
        parts.append(f'<polyline class="guide {_attr(guide.kind)}" '
                     f'data-points="{_attr(" ".join(f"{turn:g}:{value:.4f}" for turn, value in guide.points))}" '
                     f'points="{drawn}" fill="none" stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 3">'
                     f'<title>{escape(guide.label)}</title></polyline>')
        legend_y = top + 14 * (len(series) + index) + 12
        parts.append(f'<line x1="{left + plot_width + 12}" x2="{left + plot_width + 22}" y1="{legend_y + 5}" '
                     f'y2="{legend_y + 5}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="3 2"/>')
        parts.append(f'<text class="guide-label" x="{left + plot_width + 26}" y="{legend_y + 9}" font-size="10" '
                     f'fill="{colour}">{escape(guide.label)}</text>')
    for position, (name, values) in enumerate(series):
        colour = SERIES_COLOURS[position % len(SERIES_COLOURS)]
        points = " ".join(f"{x(turn):.1f},{y(value):.1f}" for turn, value in enumerate(values, start=1))
        parts.append(f'<polyline class="line" data-series="{_attr(name)}" '
                     f'data-values="{_attr(" ".join(f"{value:.4f}" for value in values))}" points="{points}" '
                     f'fill="none" stroke="{colour}" stroke-width="2"/>')
        for turn, value in enumerate(values, start=1):
            parts.append(f'<circle class="point" data-series="{_attr(name)}" data-turn="{turn}" '
                         f'data-value="{value:.4f}" cx="{x(turn):.1f}" cy="{y(value):.1f}" r="3" fill="{colour}">'
                         f'<title>{escape(name)} · turn {turn}: {value:.2f}</title></circle>')
        legend_y = top + 14 * position + 6
        parts.append(f'<rect x="{left + plot_width + 12}" y="{legend_y}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{left + plot_width + 26}" y="{legend_y + 9}" font-size="11" fill="#222">'
                     f'{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Spread:
    label: str
    p50: float
    p95: float


def round_ticks(largest: float, most: int = 4) -> list[float]:
    """Ticks from zero at a round step (1, 2, 2.5 or 5 × a power of ten) reaching past
    `largest`, at most `most` steps."""
    rough = max(largest, 1e-9) / most
    magnitude = 10 ** math.floor(math.log10(rough))
    step = next(factor * magnitude for factor in (1, 2, 2.5, 5, 10) if factor * magnitude >= rough)
    count = max(1, math.ceil(round(largest / step, 9)))
    return [round(step * index, 9) for index in range(count + 1)]


def spread_chart(title: str, rows: Sequence[Spread], *, budget: Threshold | None = None, unit: str = "s",
                 css_class: str = "spread-chart") -> str:
    """Per row a bar to the median and a whisker on to the 95th percentile, on an axis from zero
    in `unit`, with the budget (which applies to the p95) as a dashed line; a p95 over it is red."""
    left, right, top, row_height = 190, 60, 34, 26
    plot_width = 440
    ticks = round_ticks(max([0.001] + [row.p95 for row in rows] + ([budget.value] if budget else [])) * 1.08)
    bound = ticks[-1]
    width = left + plot_width + right
    height = top + row_height * len(rows) + 34
    x = lambda value: left + plot_width * max(0.0, min(1.0, value / bound))  # noqa: E731
    parts = _open(css_class, title, width, height)
    for tick in ticks:
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{height - 28}" '
                     'stroke="#e3e3e3"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 12}" font-size="11" text-anchor="middle" '
                     f'fill="#555">{_num(tick)} {escape(unit)}</text>')
    for index, row in enumerate(rows):
        y = top + index * row_height
        over = budget is not None and round(row.p95, 9) > round(budget.value, 9)
        colour = "#b23a48" if over else SERIES_COLOURS[0]
        parts.append(f'<text x="{left - 8}" y="{y + row_height / 2 + 4:.1f}" font-size="12" text-anchor="end" '
                     f'fill="#222">{escape(row.label)}</text>')
        parts.append(f'<rect class="median" data-series="{_attr(row.label)}" data-value="{row.p50:.4f}" x="{left}" '
                     f'y="{y + 5}" width="{max(x(row.p50) - left, 0.5):.1f}" height="{row_height - 10}" '
                     f'fill="{colour}" fill-opacity="0.75"><title>{escape(row.label)}: p50 {row.p50:.2f} '
                     f'{escape(unit)}</title></rect>')
        middle = y + row_height / 2
        parts.append(f'<line class="p95" data-series="{_attr(row.label)}" data-value="{row.p95:.4f}" '
                     f'x1="{x(row.p50):.1f}" x2="{x(row.p95):.1f}" y1="{middle:.1f}" y2="{middle:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<line x1="{x(row.p95):.1f}" x2="{x(row.p95):.1f}" y1="{y + 4}" y2="{y + row_height - 4}" '
                     f'stroke="{colour}" stroke-width="2"><title>{escape(row.label)}: p95 {row.p95:.2f} '
                     f'{escape(unit)}</title></line>')
        parts.append(f'<text x="{x(row.p95) + 4:.1f}" y="{middle + 4:.1f}" font-size="10" fill="#333">'
                     f'{row.p50:.2f} / {row.p95:.2f}</text>')
    if budget is not None:
        parts.append(f'<line class="threshold" data-value="{budget.value:g}" x1="{x(budget.value):.1f}" '
                     f'x2="{x(budget.value):.1f}" y1="{top - 10}" y2="{height - 28}" stroke="#b23a48" '
                     'stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x(budget.value) + 3:.1f}" y="{top - 14}" font-size="10" fill="#b23a48">'
                     f'{escape(budget.label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
