"""The package's layout: no import cycle among its modules, counting every import (top-level and
inside functions), and function-local imports only where they defer a heavy import."""

from __future__ import annotations

import ast
from pathlib import Path

import claimtrace

PACKAGE = Path(claimtrace.__file__).resolve().parent

#: What a function may import locally: heavy libraries a command or page may never need, and the
#: package's modules that import them (torch through the classifier's model, the stages' numba
#: and scikit-learn for the command line), and the web package's lazy names.
DEFERRED = (
    "torch",
    "safetensors",
    "uvicorn",
    "nltk",
    "tqdm",
    "sys",
    "claimtrace.classifier.model",
    "claimtrace.classifier.intended",
    "claimtrace.classifier.train",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """(imported module of the package, local?, line) of every import statement in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            submodules = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in modules]
            targets = submodules if len(submodules) == len(node.names) else [source, *submodules]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        for target in targets:
            found.append((target, id(node) not in top, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _, _ in _imports(name, path, modules):
            if target in modules and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_walk_finds_a_cycle_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_among_the_packages_modules():
    graph = _graph()
    assert "claimtrace.artifacts" in graph and graph["claimtrace.artifacts"]  # the walk sees imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_local_imports_only_defer_heavy_ones():
    """A function imports locally only what defers a heavy library; the command line's commands
    import their stage when run (``claimtrace --help`` loads no stage)."""
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        if name in ("claimtrace.cli", "claimtrace.web"):  # a command's stage; the package's lazy names
            continue
        for target, local, line in _imports(name, path, modules):
            if local and not target.startswith(DEFERRED):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {target}")
    assert not wrong, wrong
