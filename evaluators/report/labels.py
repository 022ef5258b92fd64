"""How the reports name and colour what they show: short metric keys for table columns, and a
colour per quality level (the terminal's and the HTML page's tables read the same ones).
"""

from __future__ import annotations

from evaluators.rubric.loader import Rubric

_LEVEL_STYLES = ("bold green", "green", "yellow", "dark_orange", "red")


def level_style(rubric: Rubric, level: str) -> str:
    """Colour for a quality level by its rank in the rubric (best green, worst red)."""
    names = [item.name for item in sorted(rubric.quality_levels, key=lambda item: -item.min)]
    if level not in names:
        return ""
    rank = names.index(level)
    position = round(rank * (len(_LEVEL_STYLES) - 1) / max(len(names) - 1, 1))
    return _LEVEL_STYLES[position]


# Column headers for tables with one column per metric.
SHORT_NAMES = {
    "appropriateness": "appr",
    "conversational_quality": "conv",
    "helpfulness": "help",
    "emotional_intelligence": "emo",
    "personalization_continuity": "pers",
    "trust_boundaries": "trust",
    "overall_quality": "overall",
}
