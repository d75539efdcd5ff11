"""The code samples in the docs run: each page's ``python`` blocks are executed in order,
in one namespace, against a fresh database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXECUTED_PAGES = ["python-api.md", "migrating.md"]


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.django_db
@pytest.mark.parametrize("page", EXECUTED_PAGES)
def test_page_samples_run(page: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = blocks(page)
    assert code, f"{page} has no python blocks"
    namespace: dict[str, object] = {}
    for block in code:
        exec(compile(block, f"{page}", "exec"), namespace)
