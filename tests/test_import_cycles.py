"""The import graph (issue 40): no cycle inside the library (every module of `nsccn/` imports only
modules that do not import it back, directly or through others), and the layers run one way:
the library imports nothing from the processes that run it (`workers/`, `supervisor/`) nor from
the command above them (`nsccn_cli/`); the supervisor nothing from the actors it starts. Imports
inside functions count too: a cycle closed by a late import still ties two modules into one."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PACKAGES = ("nsccn", "workers", "supervisor", "nsccn_cli")
# package -> the packages it may import (besides itself)
BELOW = {"nsccn": set(), "supervisor": {"nsccn"}, "workers": {"nsccn", "supervisor"},
         "nsccn_cli": {"nsccn", "supervisor", "workers"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The project's modules `path` imports anywhere in its text (`from a import b`: the module
    a.b when there is one, else a)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
    out = set()
    for imported in found:
        while imported and imported not in modules:  # `nsccn.store.terms.x` -> the module that holds x
            imported = imported.rpartition(".")[0]
        if imported and imported != name:
            out.add(imported)
    return out


def import_graph() -> dict[str, set[str]]:
    files = sorted(f for p in PACKAGES for f in (PROJECT / p).rglob("*.py"))
    modules = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, modules) for f in files}


GRAPH = import_graph()


def test_the_library_has_no_import_cycle():
    library = {m: {d for d in deps if d.split(".")[0] == "nsccn"} for m, deps in GRAPH.items()
               if m.split(".")[0] == "nsccn"}
    # The scan sees imports at the top and inside functions (else it could pass by seeing nothing).
    assert {"nsccn.query.fusion", "nsccn.ranking"} <= library["nsccn.query.search"]
    assert "nsccn.vectors.semantic" in library["nsccn.query.streams"]  # a late import (onnxruntime only when asked)
    try:
        order = list(TopologicalSorter(library).static_order())
    except CycleError as exc:
        raise AssertionError(f"an import cycle in nsccn/: {' -> '.join(exc.args[1])}") from None
    assert set(order) >= set(library)


def test_each_layer_imports_only_the_layers_below_it():
    assert "supervisor.attach" in GRAPH["workers.mcp_front"]  # the scan reads every package
    upward = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
                    if d.split(".")[0] != m.split(".")[0] and d.split(".")[0] not in BELOW[m.split(".")[0]])
    assert not upward, "imports running up a layer:\n" + "\n".join(upward)
