"""Token prices per model, for the cost each prompt version's run incurred."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from evaluators.core.completion import Usage
from evaluators.core.yaml_io import parse_yaml

PRICING_PATH = Path(__file__).with_name("pricing.yaml")


@dataclass(frozen=True)
class Price:
    input_per_million: float
    output_per_million: float

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input_per_million
                + usage.completion_tokens * self.output_per_million) / 1_000_000


@lru_cache(maxsize=1)
def packaged_prices() -> dict[str, Price]:
    data = parse_yaml(PRICING_PATH.read_text(encoding="utf-8"))
    return {str(model): Price(float(p["input"]), float(p["output"])) for model, p in data.items()}


def parse_price_override(text: str) -> tuple[str, Price]:
    """`MODEL=INPUT,OUTPUT` (dollars per million tokens) -> (model, Price); ValueError if malformed."""
    model, separator, numbers = text.partition("=")
    parts = numbers.split(",")
    if not separator or not model.strip() or len(parts) != 2:
        raise ValueError(f"expected MODEL=INPUT,OUTPUT (dollars per million tokens), got {text!r}")
    try:
        price = Price(float(parts[0]), float(parts[1]))
    except ValueError:
        raise ValueError(f"prices must be numbers, got {numbers!r}") from None
    if price.input_per_million < 0 or price.output_per_million < 0:
        raise ValueError(f"prices must not be negative, got {numbers!r}")
    return model.strip(), price


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of the longest listed name `model` starts with, or None when unknown."""
    table = {**packaged_prices(), **(overrides or {})}
    matches = [name for name in table if model == name or model.startswith(name + "-")]
    return table[max(matches, key=len)] if matches else None
