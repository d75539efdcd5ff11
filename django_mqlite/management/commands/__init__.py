"""``runworker``, ``runreaper`` and ``mqlite``: thin shells (parsing only) over
``worker``, ``worker.reaper`` and ``cli``. May import every package."""
