"""The ``mqlite`` pytest fixture, registered through the ``pytest11`` entry point.

It is defined only where pytest-django is installed (it needs the ``db`` fixture), and
the module imports nothing of Django's at load time, so a project without pytest-django
(or without Django settings) sees no fixture and no error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..engine.clock import FrozenClock
    from ..engine.types import Peeked


class MQLiteFixture:
    """What the ``mqlite`` fixture gives a test: ``drain``, ``sent``, ``tick`` and a
    frozen ``clock`` (``advance(seconds)`` moves it)."""

    def __init__(self, clock: FrozenClock) -> None:
        self.clock = clock

    def drain(self, *queues: str, max_messages: int | None = None) -> dict[str, Any]:
        from . import drain

        return drain(*queues, max_messages=max_messages)

    def sent(self, queue: str, **filters: Any) -> list[Peeked]:
        from . import sent

        return sent(queue, **filters)

    def tick(self) -> int:
        from . import tick

        return tick()

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)


try:
    import pytest_django  # noqa: F401 - only asks whether it is installed
except ImportError:  # no pytest-django: no fixture
    pass
else:

    @pytest.fixture
    def mqlite(db: None) -> Iterator[MQLiteFixture]:
        """Database access (pytest-django's ``db``), the engine's clock frozen at the
        current time for the test, and the testing helpers."""
        from ..engine import clock

        with clock.frozen() as frozen:
            yield MQLiteFixture(frozen)
