"""The judge's and the heuristics' agreement with human labels on the terminal
(`penpal-eval calibrate`): one row per evaluator, and a confusion table of verdicts each.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table

from evaluators.judge.agreement import Agreement


def agreement_table(results: Sequence[Agreement], total: int) -> Table:
    table = Table(title=f"Agreement with human labels ({total} labelled replies)", header_style="bold",
                  box=box.SIMPLE_HEAD)
    for column in ("evaluator", "n", "Spearman ρ", f"weighted κ ({results[0].weights})", "exact verdict"):
        table.add_column(column, justify="left" if column == "evaluator" else "right", no_wrap=True)
    for result in results:
        def shown(value: float | None, form: str = "{:.3f}") -> str:
            return "—" if value is None else form.format(value)
        table.add_row(result.evaluator, str(result.n), shown(result.spearman), shown(result.kappa),
                      shown(result.exact_agreement, "{:.0%}"))
    table.caption = ("ρ: scores against human_score; κ and exact: the three-point verdict (human_verdict, or "
                     "human_score through the rubric's verdict bands). Judge fallbacks and failures are left out.")
    return table


def confusion_table(result: Agreement) -> Table:
    table = Table(title=f"{result.evaluator}: human verdict (rows) × {result.evaluator} verdict (columns)",
                  header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("human", no_wrap=True)
    for column in result.confusion.columns:
        table.add_column(str(column), justify="right")
    for human, row in result.confusion.iterrows():
        table.add_row(str(human), *(str(int(value)) for value in row))
    return table
