"""Settling with receipt handles: DeleteMessage, ChangeMessageVisibility and batches."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_mqlite as mq

from .. import receipts
from ..context import Context, integer, text
from ..errors import SQSError, from_mqlite
from . import batches

MAX_VISIBILITY_S = 43200


def _delete(name: str, handle: str) -> None:
    seq, token = receipts.decode(handle)
    try:
        mq.complete(name, seq, token)
    except mq.LockLostError:
        # A handle from an earlier receive: success without deleting, as SQS documents.
        # The fence guarantees it cannot delete what a later receive holds.
        pass


def _change(name: str, handle: str, seconds: int) -> None:
    """Set the message's remaining invisibility to ``seconds``. Longer: the lease is
    extended. Shorter (or 0): the message is handed back, visible again after
    ``seconds``, and this handle is spent."""
    seq, token = receipts.decode(handle)
    if seconds > 0:
        until = mq.renew(name, seq, token, lock_duration=seconds)
        if until - mq.clock.now() <= dt.timedelta(seconds=seconds + 1):
            return
    mq.abandon(name, seq, token, delay=seconds or None)


def delete_message(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "receive")
    _delete(info.name, text(p, "ReceiptHandle", required=True))
    return {}


def change_message_visibility(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "receive")
    handle = text(p, "ReceiptHandle", required=True)
    _change(info.name, handle, integer(p, "VisibilityTimeout", 0, MAX_VISIBILITY_S))
    return {}


def _each(p: dict[str, Any], kind: str, apply: Any) -> dict[str, Any]:
    successful: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for entry in batches.entries(p, kind):
        try:
            apply(entry)
            successful.append({"Id": entry["Id"]})
        except SQSError as exc:
            failed.append(batches.failure(entry["Id"], exc))
        except mq.MQLiteError as exc:
            failed.append(batches.failure(entry["Id"], from_mqlite(exc)))
    return {"Successful": successful, "Failed": failed}


def delete_message_batch(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "receive")
    return _each(
        p,
        "DeleteMessageBatchRequestEntry",
        lambda e: _delete(info.name, text(e, "ReceiptHandle", required=True)),
    )


def change_message_visibility_batch(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "receive")
    return _each(
        p,
        "ChangeMessageVisibilityBatchRequestEntry",
        lambda e: _change(
            info.name,
            text(e, "ReceiptHandle", required=True),
            integer(e, "VisibilityTimeout", 0, MAX_VISIBILITY_S),
        ),
    )
