"""No two modules of django_mqlite import each other, directly or around a loop, counting
imports made inside functions (they run too, just later) and the parent packages an
import runs first (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` before
``a.b.c``, unless they already ran: a module's own parents have, before it). Imports
under ``if TYPE_CHECKING:`` are left out: they never run, so they cannot form a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "django_mqlite"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py") if "migrations" not in p.parts}


def type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def parents(name: str) -> set[str]:
    """The packages whose ``__init__`` importing ``name`` runs first."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its body. ``from pkg import
    name`` points at the submodule ``pkg.name`` when there is one, else at ``pkg``; each
    import also points at the parent packages it runs first, those of the importing
    module aside (they ran before it)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        skip = type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base]) if base else ".".join(parts)
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in known:
                        found.add(target)
                    elif base in known:
                        found.add(base)
        found |= {p for target in found for p in parents(target) if p in known}
        found -= parents(name) | {name}
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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


def test_no_import_cycles_in_the_package() -> None:
    assert cycles(import_graph()) == []


def test_the_detector_sees_a_cycle_through_a_function_level_import() -> None:
    graph = import_graph()
    # registry -> tasks.runner would close a loop (the runner imports the registry).
    graph["django_mqlite.worker.registry"].add("django_mqlite.tasks.runner")
    pair = {"django_mqlite.worker.registry", "django_mqlite.tasks.runner"}
    assert any(pair <= set(c) for c in cycles(graph))


def test_the_graph_counts_imports_inside_functions() -> None:
    # The Tasks plug-in imports the task runner only inside register_task_queues().
    assert "django_mqlite.tasks.runner" in import_graph()["django_mqlite.tasks.plugin"]


def test_the_graph_counts_the_parent_packages_an_import_runs() -> None:
    graph = import_graph()
    # tasks.runner imports worker.retry, which runs worker/__init__ (all of the worker) first.
    assert "django_mqlite.worker" in graph["django_mqlite.tasks.runner"]
    # A module's own parents ran before it: no edge back to them.
    assert "django_mqlite.worker" not in graph["django_mqlite.worker.runner"]
    # So a worker module importing tasks.periodic again would close a loop through
    # worker/__init__: the loop the worker <- Tasks rule broke.
    graph["django_mqlite.worker.runner"] |= {"django_mqlite.tasks.periodic", "django_mqlite.tasks"}
    assert any(
        {"django_mqlite.worker", "django_mqlite.worker.runner"} <= set(c) for c in cycles(graph)
    )


def test_the_tasks_integration_is_one_package() -> None:
    loose = {"task_runner.py", "task_results.py", "tasks_compat.py", "periodic.py"}
    assert not loose & {p.name for p in PKG.iterdir()}
    # The documented TASKS path stays importable as a re-export.
    from django_mqlite.backends import MQLiteBackend
    from django_mqlite.tasks.backend import MQLiteBackend as MovedBackend

    assert MQLiteBackend is MovedBackend
