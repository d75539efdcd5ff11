"""The API uses the public Python API only: no engine module, and no absolute import of
the package beyond ``api`` and ``conf`` (that only the API imports DRF, and the engine
rule on resolved names, are in ``tests/test_layers.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_mqlite"


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = "." * node.level + (node.module or "")
            names.add(prefix)
            names.update(
                f"{prefix}.{a.name}" if node.module else prefix + a.name for a in node.names
            )
    return names


def test_the_api_never_reaches_into_the_engine() -> None:
    for path in (PACKAGE / "api").rglob("*.py"):
        for name in imported(path):
            assert "engine" not in name.split("."), (path, name)
            assert not name.startswith("django_mqlite.") or name.startswith(
                ("django_mqlite.api", "django_mqlite.conf")
            ), (path, name)
