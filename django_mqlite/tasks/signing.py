"""Task envelopes are signed: what the signature covers, and with which keys.

A message on a Tasks queue names code to run, so the Tasks backend (and the front that
enqueues for HTTP/SQS producers on an ``OPEN_TASK_QUEUES`` queue) signs every envelope
it writes, and a worker runs only an envelope whose signature verifies.

The signature is an HMAC-SHA256, keyed as Django's ``salted_hmac`` keys it: the key is
``SHA-256(SALT + secret)`` for ``settings.SECRET_KEY``, and verification also accepts
each key of ``settings.SECRET_KEY_FALLBACKS`` (key rotation). The derived keys are kept
until a setting changes (the enqueue and the run are hot paths).

It covers everything that decides what runs and how: the queue the envelope was enqueued
to, the backend alias, the task's dotted path, the arguments, ``run_after``, the timeout
(``properties.timeout``) and the priority. The covered values are the parsed JSON values,
serialised canonically (:func:`payload`), so any re-encoding of the body on its way
(admission, a redrive, a move) leaves the signature valid while any change of a value
does not. What the signature proves, and what it does not: ``docs/security.md``.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

from ..engine import canonical_json

#: The salt of the key derivation: keys of other uses of SECRET_KEY never sign a task.
SALT = "django_mqlite.tasks.envelope"
#: Marks the payload's format, so a later format cannot be confused with this one.
VERSION = b"mqlite-task-envelope-v1\n"

_keys: tuple[bytes, ...] | None = None


def _derive(secret: str | bytes) -> bytes:
    raw = secret if isinstance(secret, bytes) else secret.encode("utf-8")
    return hashlib.sha256(SALT.encode("utf-8") + raw).digest()


def keys() -> tuple[bytes, ...]:
    """The signing key first, then the fallback keys (derived once per settings)."""
    global _keys
    if _keys is None:
        secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())]
        _keys = tuple(_derive(s) for s in secrets)
    return _keys


def forget_keys(**kwargs: Any) -> None:
    """Drop the derived keys (connected to ``setting_changed``)."""
    global _keys
    _keys = None


setting_changed.connect(forget_keys)


def payload(
    *,
    queue: Any,
    backend: Any,
    task: Any,
    args: Any,
    kwargs: Any,
    run_after: Any,
    timeout: Any,
    priority: int,
) -> bytes:
    """The bytes a signature covers: the values, canonically serialised (any JSON
    values: a received envelope is checked for its shape only once it verified)."""
    fields = [queue, backend, task, args, kwargs, run_after, timeout, priority]
    return VERSION + canonical_json.dumps(fields).encode("ascii")


def sign(data: bytes) -> str:
    """The signature of ``data`` with the current ``SECRET_KEY``."""
    return hmac.digest(keys()[0], data, "sha256").hex()


def verify(data: bytes, signature: str) -> bool:
    """Whether ``signature`` signs ``data`` with SECRET_KEY or one of its fallbacks."""
    if not isinstance(signature, str) or len(signature) != 64 or not signature.isascii():
        return False
    return any(
        hmac.compare_digest(hmac.digest(key, data, "sha256").hex(), signature) for key in keys()
    )


def envelope_payload(body: dict[str, Any], *, timeout: Any, priority: int) -> bytes:
    """The payload of an envelope ``body`` whose message carries ``timeout``
    (``properties.timeout``) and ``priority``."""
    return payload(
        queue=body.get("queue"),
        backend=body.get("backend"),
        task=body.get("task"),
        args=body.get("args"),
        kwargs=body.get("kwargs"),
        run_after=body.get("run_after"),
        timeout=timeout,
        priority=priority,
    )


def seal(body: dict[str, Any], *, timeout: Any, priority: int) -> dict[str, Any]:
    """``body`` (an envelope naming its queue) with its ``signature`` added."""
    body["signature"] = sign(envelope_payload(body, timeout=timeout, priority=priority))
    return body
