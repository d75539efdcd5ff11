"""The context a Django task with ``takes_context=True`` gets from this backend: Django's
``TaskContext`` (``task_result``, ``attempt``) plus the task control of running work
(``engine.running``), read and written through the task's message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.received import Received
from .compat import TaskContext


@dataclass(frozen=True, kw_only=True)
class MQLiteTaskContext(TaskContext):  # type: ignore[misc,unused-ignore]
    """``TaskContext`` with ``cancel_requested``, ``set_progress``, ``checkpoint`` and
    ``last_checkpoint``, as a consumer has them on its message (``mq.Received``)."""

    message: Received = field(repr=False, compare=False)

    @property
    def cancel_requested(self) -> bool:
        """A cancel of this task was requested while it runs (``backend.cancel`` or
        ``mq.request_cancel``): stop and raise; it then reads FAILED, cancelled."""
        return self.message.cancel_requested

    def set_progress(self, value: Any) -> None:
        """Report progress (JSON, at most 64 KiB), read back as ``result.progress``."""
        self.message.set_progress(value)

    def checkpoint(self, value: Any) -> None:
        """Save where to resume (JSON, at most 64 KiB): a later attempt reads it as
        ``last_checkpoint``."""
        self.message.checkpoint(value)

    @property
    def last_checkpoint(self) -> Any:
        """The last checkpoint saved by this attempt or an earlier one (None: none)."""
        return self.message.last_checkpoint
