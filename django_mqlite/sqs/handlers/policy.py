"""AddPermission and RemovePermission: statements of the queue's stored ``Policy``.

The ``Policy`` attribute is kept as given and reported back, without effect here (access
through this endpoint is its SigV4 credentials and, for user-bound ones, the Django
permissions of ``docs/security.md``). AddPermission and RemovePermission edit that stored
document the way SQS does — one ``Allow`` statement per label, its principals the given
accounts' roots — so a client that manages a queue's policy with them reads back what it
wrote. They need the queue's ``manage`` permission, like SetQueueAttributes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .. import store
from ..context import Context, strings, text
from ..errors import SQSError, invalid, missing
from .queue_attributes import policy_document

#: The actions a permission may grant (SQS's list: the queue owner keeps the rest).
GRANTABLE = (
    "*",
    "ChangeMessageVisibility",
    "DeleteMessage",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "PurgeQueue",
    "ReceiveMessage",
    "SendMessage",
)
#: SQS's quota of actions in one AddPermission.
MAX_ACTIONS = 7
_LABEL_RE = re.compile(r"[A-Za-z0-9_-]{1,80}")
_ACCOUNT_RE = re.compile(r"[0-9]{12}")


def _document(policy: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The stored policy as (document, its statements); ({}, []) for none."""
    if not policy:
        return {}, []
    document = policy_document(policy)
    if document is None:  # stored before SetQueueAttributes checked policies
        raise invalid("The queue's Policy is no policy document; set one with SetQueueAttributes.")
    found = document.get("Statement", [])
    return document, [found] if isinstance(found, dict) else list(found)


def _edit(ctx: Context, name: str, change: Any) -> None:
    """Apply ``change`` (statements -> statements) to the stored policy of ``name``."""

    def edit(attributes: dict[str, str]) -> dict[str, str]:
        document, statements = _document(attributes.get("Policy", ""))
        statements = change(statements)
        if not statements:
            attributes.pop("Policy", None)  # no statement left: no policy, as on SQS
            return attributes
        document.setdefault("Version", "2012-10-17")
        document.setdefault("Id", f"{ctx.arn(name)}/SQSDefaultPolicy")
        document["Statement"] = statements
        attributes["Policy"] = json.dumps(document, separators=(",", ":"))
        return attributes

    store.edit_attributes(name, edit)


def add_permission(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    label = text(p, "Label", required=True)
    if not _LABEL_RE.fullmatch(label):
        raise invalid(
            f"Value {label} for parameter Label is invalid. Reason: Can only include "
            "alphanumeric characters, hyphens, or underscores. 1 to 80 in length."
        )
    accounts = strings(p, "AWSAccountIds")
    actions = strings(p, "Actions")
    if not actions:
        raise missing("Actions")
    if not accounts:
        raise invalid("Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.")
    bad_account = next((a for a in accounts if not _ACCOUNT_RE.fullmatch(a)), None)
    if bad_account is not None:
        raise invalid(
            f"Value [{bad_account}] for parameter PrincipalId is invalid. Reason: Unable to verify."
        )
    if len(actions) > MAX_ACTIONS:
        found = f"{len(actions)} Actions were found"
        raise SQSError("OverLimit", f"{found}, maximum allowed is {MAX_ACTIONS}.", 403)
    owner_only = next((a for a in actions if a not in GRANTABLE), None)
    if owner_only is not None:
        raise invalid(
            f"Value SQS:{owner_only} for parameter ActionName is invalid. "
            "Reason: Only the queue owner is allowed to invoke this action."
        )
    principals = [f"arn:aws:iam::{account}:root" for account in accounts]
    granted = [f"SQS:{action}" for action in actions]
    statement = {
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
        "Action": granted[0] if len(granted) == 1 else granted,
        "Resource": ctx.arn(info.name),
    }

    def add(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if any(s.get("Sid") == label for s in statements):
            raise invalid(f"Value {label} for parameter Label is invalid. Reason: Already exists.")
        return [*statements, statement]

    _edit(ctx, info.name, add)
    return {}


def remove_permission(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    label = text(p, "Label", required=True)

    def remove(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = [s for s in statements if s.get("Sid") != label]
        if len(kept) == len(statements):
            raise invalid(
                f"Value {label} for parameter Label is invalid. "
                "Reason: can't find label on existing policy."
            )
        return kept

    _edit(ctx, info.name, remove)
    return {}
