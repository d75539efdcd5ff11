"""Linux inotify on one file, through ``ctypes`` (the standard library has no binding):
what lets the SQLite commit watcher sleep until the write-ahead log is written instead of
waking a hundred times a second to look (each such wake-up costs about 0.2 ms of CPU
here, 2-3% of a core at 100 Hz; a blocked ``select`` costs nothing).

``FileChanges(path)`` raises ``OSError`` where inotify is not available (not Linux, no
libc with it, a file that does not exist, the watch limit reached); callers then poll.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
from typing import Any

IN_MODIFY = 0x00000002
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_IGNORED = 0x00008000
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "inotify_init1") else None


class FileChanges:
    """Writes to one file, as a readable descriptor: ``select`` on it, then ``drain()``."""

    def __init__(self, path: str) -> None:
        libc = _libc()
        if libc is None:
            raise OSError("inotify is not available here")
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        wd = libc.inotify_add_watch(
            fd, os.fsencode(path), IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF
        )
        if wd < 0:
            errno = ctypes.get_errno()
            os.close(fd)
            raise OSError(errno, f"cannot watch {path}: {os.strerror(errno)}")
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def drain(self) -> bool:
        """Read the pending events; True when the file went away (deleted, moved), after
        which this watch sees nothing more."""
        gone = False
        while True:
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                return gone
            if not data:
                return gone
            offset = 0
            while offset + _EVENT.size <= len(data):
                _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                gone = gone or bool(mask & _GONE)
                offset += _EVENT.size + length

    def close(self) -> None:
        os.close(self.fd)
