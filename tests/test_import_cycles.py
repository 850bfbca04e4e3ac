"""No import circles in the packages of this repository (aiload, grid, microgrid, scenarios).

The rule, checked from the source with :mod:`ast` (nothing is imported):

- an edge ``A -> B`` is an ``import B`` / ``from B import name`` / relative import in module A,
  at module level **or inside a function or class** (an import hidden in a function still ties
  the two modules together; it only moves the failure to run time);
- ``from P import name`` where ``P.name`` is a module of the tree is an edge to ``P.name``,
  otherwise to ``P`` (for a package, its ``__init__``);
- importing ``P.Q.R`` is an edge to ``P.Q.R`` only, not to the packages ``P`` and ``P.Q`` that
  Python runs first: a package's ``__init__`` that re-exports its submodules is not a circle;
- imports under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) are not edges: they never
  run;
- imports by string (``importlib.import_module``, a lazy ``__getattr__`` table) are not seen.

A circle is a strongly connected component of more than one module (or a module importing
itself); the test names every circle with one concrete path through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("aiload", "grid", "microgrid", "scenarios")


def _modules(root: Path, packages) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under the packages."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the else branch does run
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (see the module docstring for the rule)."""
    modules = _modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:  # relative: from the package of this module
                    base = name.split(".")
                    base = base if is_package else base[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules
                           else module for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
                elif target == name:
                    graph[name].add(target)  # a module importing itself
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One closed path ``[a, b, …, a]`` per circle (strongly connected component)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):  # iterative Tarjan: deep chains need no recursion limit
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        components.append(sorted(component))
    return [_path_through(graph, set(c)) for c in sorted(components)]


def _path_through(graph, component: set[str]) -> list[str]:
    """A shortest closed path from the component's first module back to itself."""
    start = min(component)
    previous = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    chain = [node]
                    while previous[chain[-1]] is not None:
                        chain.append(previous[chain[-1]])
                    return chain[::-1] + [start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{sorted(component)} is not a circle")  # pragma: no cover


def test_no_import_cycles_in_the_tree():
    graph = import_graph(ROOT)
    assert len(graph) > 50 and graph["aiload.facility.model"], "the tree was not read"
    found = cycles(graph)
    assert not found, "import circles (break them: move the shared piece into its own module " \
        "or pass a callable; an import inside a function still counts):\n" + "\n".join(
            " -> ".join(c) for c in found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_sees_function_level_and_relative_imports_not_type_checking(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import f\n",  # a package re-exporting: no circle
        "pkg/a.py": "def f():\n    from pkg import b\n    return b\n",  # in a function
        "pkg/b.py": "from .c import g\n",  # relative
        "pkg/c.py": "import pkg.a\ndef g():\n    pass\n",
        "pkg/d.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from pkg.e import h\nelse:\n    import json\n"),
        "pkg/e.py": "import pkg.d\nimport os\n",
    })
    graph = import_graph(tmp_path, ("pkg",))
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"},
                     "pkg.c": {"pkg.a"}, "pkg.d": set(), "pkg.e": {"pkg.d"}}
    # worked out by hand: a -> b -> c -> a is the only circle; d <- e is one way
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    # a second circle, d <-> e; and e -> pkg (the __init__) -> a is one way, no circle
    _write(tmp_path, {"pkg/e.py": "import pkg.d\nfrom pkg import f\n",
                      "pkg/d.py": "import pkg.e\n"})
    assert cycles(import_graph(tmp_path, ("pkg",))) == [
        ["pkg.a", "pkg.b", "pkg.c", "pkg.a"], ["pkg.d", "pkg.e", "pkg.d"]]


def test_a_module_importing_itself_is_a_circle(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "import pkg.a\n"})
    assert cycles(import_graph(tmp_path, ("pkg",))) == [["pkg.a", "pkg.a"]]
