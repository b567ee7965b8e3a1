"""The layout's dependencies run one way: no module of src/ imports itself back through
others (module-level and deferred imports alike; a package counts as its __init__)."""
from __future__ import annotations

import ast
import functools
import os

import manybench

ROOT = os.path.dirname(manybench.__file__)


def _modules() -> dict[str, str]:
    out = {}
    base = os.path.dirname(ROOT)
    for d, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                out[name.removesuffix(".__init__")] = path
    return out


def _targets(module: str, package: bool, node: ast.AST, known: dict[str, str]) -> list[str]:
    """The modules an import statement loads: `from . import x` loads the submodule x,
    `from .a import B` loads a (its attribute B)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level == 0:
            base = node.module or ""
        else:
            base = module if package else module.rsplit(".", 1)[0]
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            base = f"{base}.{node.module}" if node.module else base
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                 for a in node.names]
    out = []
    for name in names:
        while name not in known and "." in name:     # an attribute of a module, a package
            name = name.rsplit(".", 1)[0]
        if name in known and name != module:
            out.append(name)
    return out


@functools.cache     # read once for the tests of this module (they do not change it)
def import_graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        package = path.endswith("__init__.py")
        graph[module] = {t for node in ast.walk(tree)
                         if isinstance(node, (ast.Import, ast.ImportFrom))
                         for t in _targets(module, package, node, known)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_src():
    graph = import_graph()
    assert "manybench.report.view" in graph["manybench.report.headline"]   # it sees imports
    assert cycles(graph) == []


def test_report_view_is_a_leaf():
    """Every report module fills the view model; it imports none of them."""
    graph = import_graph()
    assert not {m for m in graph["manybench.report.view"] if m.startswith("manybench.report")}
