"""The package's layers, lowest first, and the imports of its modules read from their source
(top-level and inside functions): what ``test_layout.py`` holds the code to, and what the demo
build's cache key (``conftest._demo_key``) follows to find the code a build is made of."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "claimtrace"

#: The layers, lowest first: a module may import from its own layer and the layers below it,
#: never from one above. The facts (the notebook's constants, the errors, the course's printed
#: figures, the shipped assets) are the package's top-level modules.
LAYERS = (
    ("facts", ("claimtrace", "claimtrace.constants", "claimtrace.errors", "claimtrace.course", "claimtrace.assets")),
    ("lib", ("claimtrace.lib",)),
    ("data", ("claimtrace.data",)),
    ("pipeline", ("claimtrace.pipeline",)),
    ("models", ("claimtrace.models",)),
    ("evaluation", ("claimtrace.evaluation",)),
    ("workdir", ("claimtrace.workdir",)),
    ("explain", ("claimtrace.explain",)),
    ("compare", ("claimtrace.compare",)),
    ("web", ("claimtrace.web",)),
    ("cli", ("claimtrace.cli",)),
    ("api", ("claimtrace.api",)),
)

#: The package's public names (``claimtrace.open_build``...) are the Python API's, loaded from it
#: when first asked for (``claimtrace.__getattr__``): the one import that points up, from the
#: package's ``__init__`` to ``claimtrace.api`` and only inside a function. It is no edge of
#: :func:`graph` (nothing the facts compute depends on it, and the demo build's cache key
#: follows the graph); ``test_layout.py`` holds the package's ``__init__`` to it.
PUBLIC_NAMES = ("claimtrace", "claimtrace.api")


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of a module of the package (its longest matching prefix)."""
    best, depth = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = module == prefix
            if (exact or module.startswith(prefix + ".")) and prefix != "claimtrace" and len(prefix) > depth:
                best, depth = index, len(prefix)
            if exact and prefix == "claimtrace" and depth < 0:
                best = index
    if best is None:
        raise ValueError(f"{module} is in no layer of tests/layering.py")
    return best


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, bool, int]]:
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
            submodules = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in known]
            targets = submodules if len(submodules) == len(node.names) else [source, *submodules]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        for target in targets:
            found.append((target, id(node) not in top, node.lineno))
    return found


def graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a package's ``__init__`` included)."""
    known = modules()
    edges = {name: set() for name in known}
    for name, path in known.items():
        for target, _, _ in imports(name, path, known):
            if (name, target) == PUBLIC_NAMES:
                continue
            if target in known and target != name and not name.startswith(target + "."):
                edges[name].add(target)
    return edges


def closure(start: str, edges: dict[str, set[str]] | None = None) -> set[str]:
    """``start`` and every module of the package it imports, directly or not (with the
    packages that hold them: importing ``a.b`` runs ``a/__init__.py``)."""
    edges = graph() if edges is None else edges
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in edges:
            continue
        seen.add(name)
        todo.extend(edges[name])
        parts = name.split(".")
        todo.extend(".".join(parts[:k]) for k in range(1, len(parts)))
    return seen
