from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from django_mqlite import consumers


@pytest.fixture
def register() -> Iterator[Callable[..., Any]]:
    """Register consumers in the global registry (what ``drain`` runs) for one test."""
    added: list[str] = []

    def add(queue: str, func: Callable[..., Any], **options: Any) -> None:
        consumers.register(queue, func, **options)
        added.append(queue)

    yield add
    for queue in added:
        consumers.registry.unregister(queue)
