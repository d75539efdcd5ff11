"""The process's resident memory, for ``--max-memory`` recycling."""

from __future__ import annotations

import os
import resource
import sys


def rss_mb() -> float:
    """Current resident set size in MiB (peak RSS where the current one is unknown)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # Linux reports KiB, macOS bytes.
        return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
