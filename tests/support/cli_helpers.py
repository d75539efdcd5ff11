"""The ``mqlite`` management command run in-process, its output as text or parsed JSON."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

from django.core.management import call_command


def mqlite(*args: str) -> str:
    out = StringIO()
    call_command("mqlite", *args, stdout=out)
    return out.getvalue()


def mqlite_json(*args: str) -> Any:
    return json.loads(mqlite(*args, "--json"))
