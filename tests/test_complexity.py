"""No function of the package is too tangled to read: radon's cyclomatic complexity stays at
most `CEILING` for every function and method in evaluators/.

Why: a rule with a hundred branches (the implied-human-life rule was 103) cannot be read,
reviewed or tested branch by branch; one function per kind of rule can. This is what
`radon cc evaluators` shows, read through radon's API so the test names each offender.
"""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class

import evaluators

CEILING = 40
PACKAGE = Path(evaluators.__file__).parent


def functions_over(ceiling: int, source: str) -> list[tuple[str, int, int]]:
    """(name, line, complexity) of every function and method in `source` above `ceiling`."""
    # cc_visit lists each method on its own too, beside its class.
    return [(block.fullname, block.lineno, block.complexity) for block in cc_visit(source)
            if not isinstance(block, Class) and block.complexity > ceiling]


def test_no_function_of_the_package_is_above_the_ceiling():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({complexity})"
                 for path in sorted(PACKAGE.rglob("*.py"))
                 for name, line, complexity in functions_over(CEILING, path.read_text(encoding="utf-8"))]
    assert not offenders, f"complexity above {CEILING}: " + "; ".join(offenders)


def test_the_check_sees_a_tangled_function():
    """The measure this test relies on: 41 branches in one function are over the ceiling."""
    branches = "\n".join(f"    if x == {n}:\n        return {n}" for n in range(CEILING + 1))
    source = f"def tangled(x):\n{branches}\n    return -1\n\n\nclass Holder:\n    def method(self, x):\n" + \
        "\n".join(f"        if x == {n}:\n            return {n}" for n in range(CEILING + 1)) + "\n        return -1\n"
    assert [(name, complexity) for name, _, complexity in functions_over(CEILING, source)] == [
        ("tangled", CEILING + 2), ("Holder.method", CEILING + 2)]
