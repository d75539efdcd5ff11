"""The code samples in the docs run: each page's ``python`` blocks are executed in order,
in one namespace, against a fresh database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXECUTED_PAGES = ["README.md", "python-api.md", "migrating.md"]


def blocks(page: str) -> list[str]:
    path = DOCS.parent / page if page == "README.md" else DOCS / page
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.django_db
@pytest.mark.parametrize("page", EXECUTED_PAGES)
def test_page_samples_run(page: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = blocks(page)
    assert code, f"{page} has no python blocks"
    namespace: dict[str, object] = {}
    for block in code:
        exec(compile(block, f"{page}", "exec"), namespace)


ALL_PAGES = ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_python_block_compiles(page: str) -> None:
    """Fragments that use the reader's own models (``Order``, ``user``) or settings are
    not run, but every one of them is valid Python."""
    import ast
    import textwrap

    for i, block in enumerate(blocks(page)):
        compile(
            textwrap.dedent(block), f"{page}[{i}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
