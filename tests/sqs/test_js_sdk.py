"""The AWS SDK for JavaScript v3, unmodified, through ``node`` (installed into
``tests/sqs/js`` by ``npm install``, which CI runs when node is present)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import django_mqlite as mq

from .conftest import KEY, SECRET

JS = Path(__file__).resolve().parent / "js"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (JS / "node_modules" / "@aws-sdk" / "client-sqs").exists(),
        reason="@aws-sdk/client-sqs is not installed: run `npm install` in tests/sqs/js",
    ),
]


def test_js_sdk_v3_round_trip(live_server: Any, sqs_settings: Any) -> None:
    done = subprocess.run(
        ["node", "sqs_test.mjs", f"{live_server.url}/sqs", KEY, SECRET],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stdout.strip().endswith("ok")
    assert mq.peek("js-orders") == []
