"""The three layers import one way (STYLE.md): the engine never imports models, admin or
DRF; only django_mqlite.api imports rest_framework; the API uses the public package."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "django_mqlite"


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    package = ".".join(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, module]) if module else ".".join(base)
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


def test_engine_imports_only_stdlib_django_db_and_itself() -> None:
    for path in (PKG / "engine").rglob("*.py"):
        for name in imports(path):
            top = name.split(".")[0]
            if top == "django":
                assert name.startswith(
                    ("django.db", "django.conf", "django.core.signals", "django.dispatch")
                ), (
                    path,
                    name,
                )
            elif top == "django_mqlite":
                assert name.startswith(
                    ("django_mqlite.engine", "django_mqlite.exceptions", "django_mqlite.conf")
                ), (path, name)
            else:
                assert top not in {"rest_framework", "psycopg"}, (path, name)


def test_only_the_api_imports_rest_framework() -> None:
    for path in PKG.rglob("*.py"):
        if "api" in path.relative_to(PKG).parts:
            continue
        assert not any(n.startswith("rest_framework") for n in imports(path)), path


def test_api_uses_the_public_package_not_engine_internals() -> None:
    for path in (PKG / "api").rglob("*.py") if (PKG / "api").exists() else []:
        assert not any(n.startswith("django_mqlite.engine") for n in imports(path)), path


def test_importing_the_package_does_not_import_models() -> None:
    import subprocess
    import sys

    code = (
        "import sys, django_mqlite; "
        "assert 'django_mqlite.models' not in sys.modules, 'models imported'; "
        "assert 'rest_framework' not in sys.modules, 'DRF imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PKG.parent)


def test_sqs_is_an_adapter_over_the_public_package() -> None:
    """The SQS endpoint translates its wire formats to ``django_mqlite``'s public API:
    no engine internals, no DRF."""
    paths = list((PKG / "sqs").rglob("*.py"))
    assert paths
    for path in paths:
        for name in imports(path):
            assert not name.startswith("django_mqlite.engine"), (path, name)
            assert not name.startswith("django_mqlite.api"), (path, name)
            assert not name.startswith("rest_framework"), (path, name)


def test_the_worker_does_not_import_the_tasks_integration() -> None:
    """Worker <- Tasks, one way: Tasks registers its queues' handler and the periodic
    ticker through the registration any consumer uses (``tasks/plugin.py``)."""
    paths = list((PKG / "worker").rglob("*.py"))
    assert paths
    for path in paths:
        for name in imports(path):
            assert not name.startswith("django_mqlite.tasks"), (path, name)


def test_every_package_says_what_it_may_import() -> None:
    """Each package's docstring says what it is and what it may import, so the layers
    can be read from the code (the tests above enforce the lines that matter most)."""
    for init in PKG.rglob("__init__.py"):
        if "migrations" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "may import" in doc.lower(), init


def test_the_top_level_holds_the_app_roles_and_the_documented_paths() -> None:
    """A Django app's standard roles and the documented import paths, nothing else: a
    new module goes in the package of its layer (docs/how-it-works.md, "Where things
    are")."""
    roles = {"apps", "models", "checks", "conf", "exceptions", "signals"}
    documented_paths = {"consumers", "permissions", "admission", "backends"}
    found = {p.stem for p in PKG.glob("*.py")} - {"__init__"}
    assert found == roles | documented_paths
