"""The package's layout: layers as folders, lowest first (tests/layering.py), no import that
points up, no import cycle, function-local imports only where they defer a heavy import, and
modules and functions small enough to read."""

from __future__ import annotations

import ast

import pytest

from tests.layering import LAYERS, PACKAGE, closure, graph, imports, layer_of, modules

#: What a function may import locally: heavy libraries a command or page may never need (torch
#: and safetensors' torch half, captum with its matplotlib, uvicorn, nltk imported without its
#: scipy and scikit-learn, pandas, which the Python API uses only where it is installed), and the
#: package's modules that import torch.
DEFERRED = (
    "torch",
    "captum",
    "safetensors",
    "uvicorn",
    "pandas",
    "nltk",
    "claimtrace.models.transformer",
    "claimtrace.models.intended",
    "claimtrace.models.lstm",
    "claimtrace.models.train",
)

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (a list of modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def _upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a layer above its own, as ``module (layer) -> target (layer)``."""
    names = [name for name, _ in LAYERS]
    wrong = []
    for source in sorted(edges):
        for target in sorted(edges[source]):
            if layer_of(target) > layer_of(source):
                wrong.append(f"{source} ({names[layer_of(source)]}) -> {target} ({names[layer_of(target)]})")
    return wrong


def test_the_walk_finds_a_cycle_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_layer_check_finds_an_import_that_points_up():
    edges = {"claimtrace.pipeline.retrieval": {"claimtrace.evaluation.scorer", "claimtrace.lib.npsort"}}
    assert _upward(edges) == ["claimtrace.pipeline.retrieval (pipeline) -> claimtrace.evaluation.scorer (evaluation)"]


def test_every_module_is_in_a_layer_and_every_layer_is_a_folder_with_its_rules():
    for name in modules():
        layer_of(name)  # raises for a module in no layer
    for _, prefixes in LAYERS[1:]:
        for prefix in prefixes:
            init = PACKAGE.parent / prefix.replace(".", "/") / "__init__.py"
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            assert "may import" in doc.lower(), f"{init}: its docstring says what the layer may import"


def test_no_import_points_up_a_layer():
    edges = graph()
    assert edges["claimtrace.workdir.reader"]  # the walk sees imports
    assert not _upward(edges), "\n".join(_upward(edges))


def test_no_import_cycle_among_the_packages_modules():
    edges = graph()
    assert _cycle(edges) is None, " -> ".join(_cycle(edges))


def test_local_imports_only_defer_heavy_ones():
    """A function imports locally only what defers a heavy library; the command line's commands
    import their stage when run (``claimtrace --help`` loads no stage)."""
    known = modules()
    wrong = []
    for name, path in known.items():
        if name in ("claimtrace", "claimtrace.web", "claimtrace.api") or name.startswith("claimtrace.cli"):
            # the packages' lazy names; a command's stage
            continue
        for target, local, line in imports(name, path, known):
            if local and not target.startswith(DEFERRED):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {target}")
    assert not wrong, wrong


def test_the_package_loads_its_public_names_from_the_api_alone_and_lazily():
    """``import claimtrace`` imports nothing of the package; its public names come from
    ``claimtrace.api`` when first asked for (tests/layering.py, ``PUBLIC_NAMES``)."""
    known = modules()
    found = [hit for hit in imports("claimtrace", known["claimtrace"], known) if hit[0].startswith("claimtrace")]
    assert found and all(target == "claimtrace.api" and local for target, local, _ in found), found


def test_the_build_is_made_of_the_layers_below_explain():
    """What a build computes depends on nothing that only reads it (the demo build's cache key
    hashes exactly this closure)."""
    made_of = closure("claimtrace.workdir.builder")
    assert "claimtrace.pipeline.retrieval" in made_of or "claimtrace.pipeline.retrieval.retriever" in made_of
    assert not [name for name in made_of if layer_of(name) > layer_of("claimtrace.workdir")]


def _long_functions() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.name} ({length} lines)")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_500_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(PACKAGE.parent)}: {lines} lines"


def test_no_function_is_over_60_lines():
    assert not _long_functions(), "\n".join(_long_functions())
