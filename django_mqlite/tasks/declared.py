"""The queues to create at ``migrate`` and worker start: ``MQLITE["QUEUES"]``, where a
queue that a Tasks backend serves keeps results for the backend's ``keep_results``
unless its declaration says otherwise (``get_result`` needs the kept row)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..conf import mqlite_settings


def declared_queues() -> Any:
    declared = mqlite_settings.QUEUES
    if not isinstance(declared, Mapping):
        return declared  # sync_declared refuses it with a clear message
    from .support import configured_backends

    out = {name: dict(options or {}) for name, options in declared.items()}
    for backend in configured_backends():
        for name in backend.queues:
            if name in out and "keep_results" not in out[name]:
                out[name]["keep_results"] = backend.queue_options.get("keep_results")
    return out
