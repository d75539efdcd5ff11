"""Settling with receipt handles: DeleteMessage, ChangeMessageVisibility and batches."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_mqlite as mq

from .. import receipts, store
from ..context import Context, integer, text
from ..errors import SQSError, from_mqlite, invalid
from . import batches

MAX_VISIBILITY_S = 43200


def _expired(handle: str) -> SQSError:
    return invalid(
        f"Value {handle} for parameter ReceiptHandle is invalid. "
        "Reason: The receipt handle has expired."
    )


def _not_a_handle(handle: str) -> SQSError:
    return SQSError(
        "ReceiptHandleIsInvalid",
        f'The input receipt handle "{handle}" is not a valid receipt handle.',
    )


def _delete(info: store.QueueInfo, handle: str) -> None:
    """DeleteMessage, as SQS answers it. A standard queue deletes by a handle whose
    visibility timeout ran out as long as nobody received the message since (the
    engine's lapsed settlement); a handle from an earlier receive, or of a message
    already deleted, succeeds without deleting (SQS documents it; the fence keeps it
    from deleting what a later receive holds); a handle of a message that is no longer
    in the queue otherwise (purged, expired, moved) is ``ReceiptHandleIsInvalid``. A
    FIFO queue takes only a live handle: any other is "the receipt handle has
    expired" (``InvalidParameterValue``), as on SQS."""
    seq, token = receipts.decode(handle)
    try:
        mq.complete(info.name, seq, token, lapsed=not info.fifo)
    except mq.MessageGoneError:
        raise _not_a_handle(handle) from None
    except mq.LockLostError:
        if info.fifo:
            raise _expired(handle) from None


def _change(name: str, handle: str, seconds: int) -> None:
    """Set the message's remaining invisibility to ``seconds``. Longer: the lease is
    extended. Shorter (or 0): the message is handed back, visible again after
    ``seconds``, and this handle is spent. A handle whose timeout ran out with nobody
    receiving the message since hides it again (the engine's lapsed settlement), as on
    SQS; a message no longer in the queue is ``InvalidParameterValue``, as on SQS; a
    handle from an earlier receive is ``MessageNotInflight``."""
    seq, token = receipts.decode(handle)
    try:
        if seconds > 0:
            until = mq.renew(name, seq, token, lock_duration=seconds, lapsed=True)
            if until - mq.clock.now() <= dt.timedelta(seconds=seconds + 1):
                return
        mq.abandon(name, seq, token, delay=seconds or None, lapsed=True)
    except mq.MessageGoneError:
        raise invalid(
            f"Value {handle} for parameter ReceiptHandle is invalid. Reason: Message does "
            "not exist or is not available for visibility timeout change."
        ) from None


def delete_message(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "receive")
    _delete(info, text(p, "ReceiptHandle", required=True))
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
        lambda e: _delete(info, text(e, "ReceiptHandle", required=True)),
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
