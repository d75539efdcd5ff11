"""The fixtures of the surfaces' own suites, reused: an HTTP API client with every
permission (``tests/api``), a boto3 SQS client on a live server (``tests/sqs``) and an
in-process Tasks worker (``tests/tasks``)."""

from __future__ import annotations

from ..api.conftest import api, user
from ..sqs.conftest import make_client, sqs, sqs_settings
from ..tasks.conftest import run_worker

__all__ = ["api", "make_client", "run_worker", "sqs", "sqs_settings", "user"]
