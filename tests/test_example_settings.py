"""The example project is safe to copy: DEBUG off by default, no start without a
secret key outside DEBUG, ``check --deploy`` clean apart from the HTTPS settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent / "example_project"
HTTPS_ONLY = {"security.W004", "security.W008", "security.W012", "security.W016"}
KEY = "k3y-" + "x7Qp2Lm9Zr4Tn8Vb" * 4


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def warnings(out: str) -> set[str]:
    return {w.split(")")[0].split("(")[-1] for w in out.splitlines() if "(security." in w}


def test_refuses_to_start_without_a_secret_key() -> None:
    done = manage("check")
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY" in done.stderr


def test_check_deploy_is_clean_apart_from_https() -> None:
    done = manage("check", "--deploy", DJANGO_SECRET_KEY=KEY)
    assert warnings(done.stdout + done.stderr) <= HTTPS_ONLY, done.stdout + done.stderr
    # With DJANGO_HTTPS=1 it is clean: HSTS for a year, subdomains included, preload.
    https = manage("check", "--deploy", DJANGO_SECRET_KEY=KEY, DJANGO_HTTPS="1")
    assert https.returncode == 0, https.stderr
    assert warnings(https.stdout + https.stderr) == set(), https.stdout + https.stderr
    # Loosening HSTS takes a variable per choice, and check --deploy then says so.
    loose = manage(
        "check",
        "--deploy",
        DJANGO_SECRET_KEY=KEY,
        DJANGO_HTTPS="1",
        DJANGO_HSTS_INCLUDE_SUBDOMAINS="0",
        DJANGO_HSTS_PRELOAD="0",
    )
    assert warnings(loose.stdout + loose.stderr) == {"security.W005", "security.W021"}


def test_debug_is_off_unless_asked() -> None:
    code = "from django.conf import settings; print(settings.DEBUG, settings.ALLOWED_HOSTS)"
    off = manage("shell", "-c", code, DJANGO_SECRET_KEY=KEY)
    assert off.stdout.splitlines()[-1].startswith("False"), off.stderr
    on = manage("shell", "-c", code, DJANGO_DEBUG="1")
    assert on.stdout.splitlines()[-1].startswith("True"), on.stderr
