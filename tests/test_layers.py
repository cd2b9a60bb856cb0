"""The layers hold: imports point down only (DESIGN.md, "Layout"), front ends reach reading and
analysis through the one door (api, hostmap behind it), and no import circle, lazy imports
inside functions counted, joins tftrace's modules."""

from __future__ import annotations

import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tftrace")
# What each layer may import of tftrace's (a module's own layer included).
ALLOWED = {"model": {"model"}, "read": {"model", "read"}}
FRONT_ENDS = ("cli", "tensorboard", "notebook", "mcp")
DOOR_ONLY = ("analysis", "read")  # the front ends reach these through api (and hostmap) alone


def sources(root: str = PACKAGE) -> dict[str, str]:
    """Every module under tftrace/ by its dotted name, with its source."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), os.path.dirname(root))[:-3].replace(os.sep, ".")
                with open(os.path.join(folder, f), encoding="utf-8") as src:
                    out[rel.removesuffix(".__init__")] = src.read()
    return out


def imports(modules: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the tftrace modules it imports anywhere in its code (inside functions too):
    `from a.b import c` counts as a.b.c where c is a module, else as a.b."""
    graph = {}
    for name, source in modules.items():
        package = name if _is_package(name, modules) else name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _is_package(name: str, modules: dict[str, str]) -> bool:
    return any(m.startswith(name + ".") for m in modules)


def layer(module: str) -> str:
    """tftrace.read.xspace -> read; tftrace.api -> api; tftrace -> ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def violations(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for module, targets in sorted(graph.items()):
        mine = layer(module)
        for target in sorted(targets):
            theirs = layer(target)
            if mine in ALLOWED and theirs not in ALLOWED[mine]:
                out.append(f"{module} imports {target}: {mine}/ may import only {', '.join(sorted(ALLOWED[mine]))}/")
            if mine in FRONT_ENDS and theirs in DOOR_ONLY:
                out.append(f"{module} imports {target}: a front end reaches {theirs}/ through tftrace.api")
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import one another, round and round (Tarjan's strongly connected
    components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH = imports(sources())


def test_the_walk_sees_every_layer_and_lazy_imports():
    assert {layer(m) for m in GRAPH} >= {"model", "read", "analysis", "render", "capture", "cli", "tensorboard", "api"}
    assert "tftrace.hostmap" in GRAPH["tftrace.api"]  # imported inside a function


def test_model_and_read_import_nothing_above_them_and_front_ends_use_the_door():
    assert violations(GRAPH) == []


def test_no_import_circle():
    assert circles(GRAPH) == []


def test_at_most_eight_modules_at_the_top_level():
    top = [m for m in GRAPH if m.count(".") == 1 and not _is_package(m, GRAPH)]
    assert len(top) <= 8, sorted(top)


def test_no_two_modules_share_a_name():
    """A module's name says what it holds: one name, one meaning (packages' __init__ aside)."""
    by_name: dict[str, list[str]] = {}
    for m in GRAPH:
        if not _is_package(m, GRAPH) and m.count(".") > 0:
            by_name.setdefault(m.rsplit(".", 1)[1], []).append(m)
    assert {n: ms for n, ms in by_name.items() if len(ms) > 1} == {}


def test_the_checks_fail_on_a_bad_module():
    bad = {"tftrace.model.report": "from tftrace.analysis.run import analyze_trace\n",
           "tftrace.read.loader": "def f():\n    from tftrace.render import html\n",
           "tftrace.render": "", "tftrace.render.html": "",
           "tftrace.analysis": "", "tftrace.analysis.run": "import tftrace.model.report\n",
           "tftrace.cli.commands": "from tftrace.read import storage\n", "tftrace.read": "",
           "tftrace.read.storage": "", "tftrace.cli": "", "tftrace.model": ""}
    graph = imports(bad)
    assert [v.split(":")[0] for v in violations(graph)] == [
        "tftrace.cli.commands imports tftrace.read.storage", "tftrace.model.report imports tftrace.analysis.run",
        "tftrace.read.loader imports tftrace.render.html"]
    assert circles(graph) == [["tftrace.analysis.run", "tftrace.model.report"]]
    assert circles(imports({"tftrace": "", "tftrace.a": "def f():\n    from tftrace import b\n",
                            "tftrace.b": "from . import a\n"})) == [["tftrace.a", "tftrace.b"]]
