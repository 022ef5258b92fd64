"""The names every stage uses for what is scored: the six metrics, the overall, the families.

They live below the rubric loader so that the data contracts of each stage can use them
without loading the rubric; the rubric file is validated against them.
"""

from __future__ import annotations

METRIC_NAMES: tuple[str, ...] = (
    "appropriateness",
    "conversational_quality",
    "helpfulness",
    "emotional_intelligence",
    "personalization_continuity",
    "trust_boundaries",
)
OVERALL = "overall_quality"
# The per-case score columns: the six metrics, then the overall.
SCORE_COLUMNS: tuple[str, ...] = (*METRIC_NAMES, OVERALL)
# The scenario families; the judge has guidance for each (inputs.contracts.FAMILIES is this tuple).
SCENARIO_FAMILIES: tuple[str, ...] = (
    "basic", "emotional_support", "small_talk", "trust_building", "continuity", "demographics",
    "personas",  # simulated conversations: scenarios/personas/, played by evaluators.run.simulation
)
