from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_mqlite.engine import listen


@pytest.fixture(autouse=True)
def _stop_shared_listeners() -> Iterator[None]:
    """``areceive(wait=...)`` starts a LISTEN connection on PostgreSQL: close it before
    the test database is dropped."""
    yield
    listen.stop_shared_listeners()
