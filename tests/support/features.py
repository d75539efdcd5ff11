"""Tests gated by what the database can do (a dialect feature), not by its vendor name."""

from __future__ import annotations

import pytest

from django_mqlite.engine.dialects import dialect_for


@pytest.fixture
def needs_notify() -> None:
    """Skip the test where the database has no LISTEN/NOTIFY."""
    if not dialect_for("default").has_listen_notify:
        pytest.skip("the database has no LISTEN/NOTIFY")
