"""The curl walk-through of docs/http-api.md, run against a live server."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from .conftest import grant

DOC = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"


def shell_blocks() -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl, jq")
@pytest.mark.django_db(transaction=True)
def test_documented_curl_commands_work(live_server: Any) -> None:
    walker = grant(User.objects.create_user("walker"))  # as docs/http-api.md says
    token = Token.objects.create(user=walker).key
    blocks = shell_blocks()
    assert len(blocks) >= 5
    script = "set -euo pipefail\n" + "\n".join(blocks)
    done = subprocess.run(
        ["bash", "-c", script],
        env={"MQ": f"{live_server.url}/mq", "TOKEN": token, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"seq"' in done.stdout and "lock_token" in done.stdout
