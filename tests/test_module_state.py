"""No hidden state: the package's modules, read with ``ast``, keep no mutable state at module level
but the caches named here, each with its bound checked.

The rule, as this test checks it:

* no ``global`` statement anywhere (a function rebinding a module's name);
* a module-level name bound to a mutable container (a dict, list or set display or
  comprehension, or a call of :data:`CONTAINERS`: ``dict()``, ``defaultdict``,
  ``WeakKeyDictionary``, ``LRU``, ``itertools.count``...) is a constant table only when its name
  is UPPER_CASE (``__all__`` too) and nothing in the package mutates it (subscript assignment or
  deletion, an augmented assignment, a mutating method such as ``.append``, ``.update``,
  ``.add`` or ``.setdefault``), in its module or through an import of it; a lower-case one is
  state whatever is done with it;
* an instance of a container class the module defines (``class Table(dict)``) is state: its own
  methods may fill it;
* a ``functools`` cache on a module-level function that takes arguments is a cache (one without
  arguments holds one value, made once).

State the rule allows is a cache in :data:`ALLOWED_CACHES`, whose bound the test checks: the
templates' compiled code, shared by every renderer of a process (``web.render``); every other
cache lives on the object that owns it, with its bound, e.g.
``pipeline.preprocess.Preprocessor``'s stems and ``pipeline.tagging.Restemmer``'s table.
"""

from __future__ import annotations

import ast
import importlib

from tests.layering import modules

#: Calls that make a mutable container, a counter or a per-thread store (matched by the called
#: name: ``collections.deque`` or ``deque``).
CONTAINERS = frozenset(
    {
        "dict",
        "list",
        "set",
        "bytearray",
        "defaultdict",
        "OrderedDict",
        "Counter",
        "deque",
        "ChainMap",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
        "LRU",
        "count",
        "local",
        "Queue",
        "SimpleQueue",
    }
)
#: Methods that change the container they are called on.
MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "add",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "popleft",
        "appendleft",
        "extendleft",
        "clear",
        "remove",
        "discard",
        "sort",
        "reverse",
        "put",
        "move_to_end",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
        "__setitem__",
        "__delitem__",
    }
)
#: The module-level caches allowed, ``"module:name"`` -> the bound checked: a ``functools``
#: cache's ``maxsize``, an :class:`~claimtrace.lib.lru.LRU`'s ``entries``.
ALLOWED_CACHES: dict[str, int] = {"claimtrace.web.render:COMPILED_TEMPLATES": 256}

MODULES = modules()


def _called_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _module_level(body: list[ast.stmt]):
    """The statements run at import: the module's, and those in its top-level if/try/with blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.With):
            yield from _module_level(node.body + getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            handlers = [line for handler in node.handlers for line in handler.body]
            yield from _module_level(node.body + handlers + node.orelse + node.finalbody)


def _container_classes(tree: ast.Module) -> set[str]:
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(_called_name(base) in CONTAINERS for base in node.bases)
    }


def _bindings(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a mutable container: name -> ``"container"``, or ``"instance"``
    of a container class of the module."""
    classes = _container_classes(tree)
    bound = {}
    for node in _module_level(tree.body):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        displays = ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp
        called = _called_name(value) if isinstance(value, ast.Call) else None
        if isinstance(value, displays) or called in CONTAINERS:
            what = "container"
        elif called in classes:
            what = "instance"
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                bound[target.id] = what
    return bound


def _imports(tree: ast.Module) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """The module's imports of the package: names (alias -> (module, name)) and modules (alias -> module)."""
    names, aliases = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in MODULES:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                else:
                    names[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES and alias.asname:
                    aliases[alias.asname] = alias.name
    return names, aliases


def _mutated(tree: ast.Module, module: str) -> set[tuple[str, str]]:
    """What the module mutates of the package's module-level names: (module, name) pairs."""
    names, aliases = _imports(tree)

    def owner(node: ast.expr) -> tuple[str, str] | None:
        if isinstance(node, ast.Name):
            return names.get(node.id, (module, node.id))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            return aliases[node.value.id], node.attr
        return None

    changed: set[tuple[str, str] | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
            changed.add(owner(node.target))  # ``TABLE += [...]`` changes a list in place
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            changed.add(owner(node.func.value))
            continue
        else:
            continue
        changed.update(owner(target.value) for target in targets if isinstance(target, ast.Subscript))
    return {found for found in changed if found is not None}


def _caches(tree: ast.Module) -> dict[str, bool]:
    """Module-level functions with a ``functools`` cache that take arguments: name -> bounded."""
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        given = node.args
        if not (given.posonlyargs or given.args or given.kwonlyargs or given.vararg or given.kwarg):
            continue  # one value, made once
        for decorator in node.decorator_list:
            name = _called_name(decorator)
            if name == "cache":
                found[node.name] = False
            elif name == "lru_cache":
                call = decorator if isinstance(decorator, ast.Call) else ast.Call(func=decorator, args=[], keywords=[])
                sizes = [keyword.value for keyword in call.keywords if keyword.arg == "maxsize"] + call.args[:1]
                unbounded = bool(sizes) and isinstance(sizes[0], ast.Constant) and sizes[0].value is None
                found[node.name] = not unbounded
    return found


TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}
MUTATED = frozenset().union(*(_mutated(tree, name) for name, tree in TREES.items()))


def findings(module: str, tree: ast.Module | None = None, mutated: frozenset = MUTATED) -> set[str]:
    """What the rule finds in ``module`` (its source read from the package unless ``tree`` is
    given), each named without its line (lines move)."""
    tree = TREES[module] if tree is None else tree
    found = {f"global {name}" for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    for name, what in _bindings(tree).items():
        if f"{module}:{name}" in ALLOWED_CACHES:
            continue
        if what == "instance":
            found.add(f"{name}: an instance of a container class of the module")
        elif (module, name) in mutated:
            found.add(f"{name}: a mutable container, mutated")
        elif name != "__all__" and not name.isupper():
            found.add(f"{name}: a mutable container with a lower-case name")
    for name, bounded in _caches(tree).items():
        if f"{module}:{name}" not in ALLOWED_CACHES:
            found.add(f"{name}: a functools cache {'not named in ALLOWED_CACHES' if bounded else 'without a bound'}")
    return found


def test_the_rule_finds_each_kind_of_module_state():
    """The checker on a made-up module: what it must find, and the constant tables it must not."""
    source = """
import functools
from collections import defaultdict
TABLE = {"a": 1}
NAMES = ["x"]
_SEEN = {}
kept = {}
COUNTS = defaultdict(int)
class Words(dict):
    pass
WORDS = Words()
@functools.lru_cache(maxsize=None)
def stem(word):
    return word
@functools.lru_cache(maxsize=64)
def tag(word):
    return word
@functools.cache
def library():
    return 1
def remember(key):
    global LAST
    _SEEN[key] = 1
    COUNTS[key] += 1
"""
    tree = ast.parse(source)
    assert findings("made_up", tree, MUTATED | _mutated(tree, "made_up")) == {
        "global LAST",
        "_SEEN: a mutable container, mutated",
        "COUNTS: a mutable container, mutated",
        "kept: a mutable container with a lower-case name",
        "WORDS: an instance of a container class of the module",
        "stem: a functools cache without a bound",
        "tag: a functools cache not named in ALLOWED_CACHES",
    }


def test_no_module_keeps_state_at_module_level():
    """Every module: no module-level state but the allowed caches."""
    found = {module: sorted(findings(module)) for module in MODULES}
    assert not {module: lines for module, lines in found.items() if lines}


#: The modules that may change what is the whole process's (the environment, the collector,
#: malloc), and why there.
PROCESS_SETTINGS = {
    "claimtrace.web.process_settings": "a server process's settings: serve's one start-up function, the "
    "collector's freeze once warm and the memory returned every so many typed claims",
    "claimtrace.cli.main": "OMP_WAIT_POLICY, at the command line's entry, before any command imports torch",
    "claimtrace.workdir.builder": "the cyclic collector paused while a build runs (cyclic_gc_paused), then put back",
}
_COLLECTOR = frozenset({"freeze", "unfreeze", "set_threshold", "disable", "enable"})


def _process_settings(tree: ast.Module) -> set[str]:
    """What a module changes of its whole process: ``os.environ`` written, ``os.putenv``, the
    collector's settings, glibc's ``mallopt`` and ``malloc_trim``."""

    def dotted(node: ast.expr) -> str:
        return f"{dotted(node.value)}.{node.attr}" if isinstance(node, ast.Attribute) else getattr(node, "id", "?")

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = dotted(node.func)
            owner, _, method = name.rpartition(".")
            if (
                (owner == "os.environ" and method in MUTATORS)
                or name in ("os.putenv", "os.unsetenv")
                or (owner == "gc" and method in _COLLECTOR)
                or method in ("mallopt", "malloc_trim")
            ):
                found.add(name)
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else []
        found.update(
            "os.environ[...]" for t in targets if isinstance(t, ast.Subscript) and dotted(t.value) == "os.environ"
        )
    return found


def test_the_process_wide_settings_are_changed_in_their_places_only():
    """The environment, the collector and malloc are changed only where :data:`PROCESS_SETTINGS`
    says (library code passes a thread count to torch instead)."""
    changed = {module: sorted(_process_settings(tree)) for module, tree in TREES.items()}
    assert {module for module, names in changed.items() if names} == set(PROCESS_SETTINGS), changed


def test_each_allowed_cache_has_its_bound():
    for cache, bound in ALLOWED_CACHES.items():
        module, _, name = cache.partition(":")
        kept = getattr(importlib.import_module(module), name)
        size = kept.cache_info().maxsize if hasattr(kept, "cache_info") else kept.entries
        assert size == bound, cache
