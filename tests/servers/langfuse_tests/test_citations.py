"""Every rule of the stand-in names the server file it mirrors, and every file it names is one
the research read (server_paths.txt). A rule is a function that refuses a request: it raises
one of the refusals below or answers a 4xx itself. A missing object's 404 is not a rule."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import tests.servers.langfuse as stand_in
from tests.servers.langfuse.core import CITATIONS, SERVER_PATHS

PACKAGE = Path(stand_in.__file__).parent
REFUSALS = {"ApiFailure", "invalid", "bad_request", "conflict", "_rule", "ScoreRejected", "ScoreDropped"}
SERVER_LINE = re.compile(r"^langfuse/langfuse (\S+) [0-9a-f]{40}\s+(read|exists-only)( \(.+\))?$")
SDK_LINE = re.compile(r"^langfuse/langfuse-python (\S+) \(read from the PyPI wheel langfuse \d+\.\d+\.\d+\)$")


def listed_paths() -> dict[str, str]:
    """Path -> its line in server_paths.txt; every line that is not a comment must be well formed."""
    paths = {}
    for line in SERVER_PATHS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = SERVER_LINE.match(line) or SDK_LINE.match(line)
        assert match, f"server_paths.txt: malformed line: {line}"
        assert match.group(1) not in paths, f"server_paths.txt: listed twice: {match.group(1)}"
        paths[match.group(1)] = line
    return paths


def _refuses(node: ast.AST) -> bool:
    if isinstance(node, ast.Raise) and node.exc is not None:
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(target, ast.Name) and target.id in REFUSALS
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
        call = node.value
        return (isinstance(call.func, ast.Name) and call.func.id == "Reply" and call.args
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, int)
                and call.args[0].value >= 400)
    return False


def _own_nodes(function: ast.AST):
    """The nodes of a function's body, without those of functions defined inside it."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _functions(tree: ast.Module, prefix: str = ""):
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node


def rules() -> dict[str, bool]:
    """"module.function" -> whether it carries @cites, for every function that refuses."""
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        module = f"tests.servers.langfuse.{path.stem}" if path.stem != "__init__" else "tests.servers.langfuse"
        importlib.import_module(module)  # registers its citations
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, function in _functions(tree):
            if any(_refuses(node) for node in _own_nodes(function)):
                cited = any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "cites"
                            for d in function.decorator_list)
                found[f"{module}.{name}"] = cited
    return found


def test_the_paths_list_is_well_formed_and_names_both_repositories():
    paths = listed_paths()
    assert any(line.startswith("langfuse/langfuse ") for line in paths.values())
    assert any(line.startswith("langfuse/langfuse-python ") for line in paths.values())


def test_every_citation_names_a_listed_server_path():
    listed = listed_paths()
    rules()  # imports every module, so every @cites has run
    assert CITATIONS, "no citations were registered"
    unknown = {f"{function}: {path}" for function, paths in CITATIONS.items() for path in paths if path not in listed}
    assert not unknown, "cited but not in server_paths.txt:\n" + "\n".join(sorted(unknown))


def test_every_rule_carries_a_citation():
    found = rules()
    # The finder must see the rules this suite depends on (otherwise it checks nothing).
    for known in ("tests.servers.langfuse.dashboards.validated_widget", "tests.servers.langfuse.scores.checked_body",
                  "tests.servers.langfuse.scores.inflated", "tests.servers.langfuse.core.ServerCore._authorized"):
        assert known in found, known
    uncited = sorted(name for name, cited in found.items() if not cited)
    assert not uncited, "rules without @cites:\n" + "\n".join(uncited)
    assert all(name in CITATIONS for name in found)
