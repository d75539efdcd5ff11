"""Settlement receipts: how an exact retry of a settlement that committed succeeds.

The rule (SPEC §2.1): a settlement that changed a row writes a receipt in the same
transaction, kept for ``RECEIPT_TTL``. A receipt is keyed by the whole request: the queue,
the seq, the lock token, the verb and the verb's effect-bearing arguments (abandon's
and snooze's delay, reject's reason and description). A settlement that matched no row is an exact
replay when a live receipt has that same key, and is stale otherwise; a request that
differs in any part of the key (another queue, another verb, another delay or reason) is
stale, even with the right token: a snooze's receipt never answers an abandon with the
same token and delay, nor the other way round.

One format for every path: the ``verb`` column holds the verb, and ``args`` holds the
queue's id and the verb's arguments as ``"q<queue id>|<arguments>"``, where the arguments
are written by ``abandon_args`` (abandon and snooze) and ``reject_args`` (empty for
complete and defer).
Renewals write no receipt: renewing a live lease again is harmless, and an expired one
may never be revived.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db.backends.utils import CursorWrapper

from ..conf import current
from . import batches, canonical_json

#: (seq, lock_token, the verb's arguments as ``abandon_args``/``reject_args`` wrote them)
Request = tuple[int, str, str]


def abandon_args(delay_ms: int) -> str:
    return f"delay_ms={delay_ms}"


def reject_args(reason: str, description: str) -> str:
    return canonical_json.dumps([reason, description])


def _key(queue_id: int, args: str) -> str:
    return f"q{queue_id}|{args}"


def write(
    cursor: CursorWrapper, queue_id: int, verb: str, requests: Sequence[Request], now: int
) -> None:
    """Record that these settlements committed (in the caller's transaction)."""
    if not requests:
        return
    expires = now + current().receipt_ttl_ms
    if cursor.db.vendor == "postgresql":
        # One statement text whatever the batch's size, with five parameters: psycopg
        # converts (and caches) it in a fraction of the time a VALUES row per receipt
        # takes, five parameters each.
        cursor.execute(
            "INSERT INTO mqlite_receipt (seq, lock_token, verb, args, expires_at) "
            "SELECT r.seq, r.token, %s, r.args, %s "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS r (seq, token, args)",
            [
                verb,
                expires,
                [seq for seq, _, _ in requests],
                [token for _, token, _ in requests],
                [_key(queue_id, args) for _, _, args in requests],
            ],
        )
        return
    params: list[Any] = []
    for seq, token, args in requests:
        params += [seq, token, verb, _key(queue_id, args), expires]
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(requests))
    cursor.execute(
        f"INSERT INTO mqlite_receipt (seq, lock_token, verb, args, expires_at) VALUES {values}",
        params,
    )


def replayed(
    cursor: CursorWrapper, queue_id: int, verb: str, requests: Iterable[Request], now: int
) -> set[int]:
    """The seqs of ``requests`` that repeat a settlement whose receipt is still live."""
    wanted = {(seq, token, _key(queue_id, args)) for seq, token, args in requests}
    if not wanted:
        return set()
    seqs = sorted({seq for seq, _, _ in wanted})
    cursor.execute(
        "SELECT seq, lock_token, args FROM mqlite_receipt WHERE verb = %s AND expires_at > %s "
        f"AND seq IN ({batches.placeholders(len(seqs))})",
        [verb, now, *seqs],
    )
    return {row[0] for row in cursor.fetchall() if tuple(row) in wanted}


def settled(
    cursor: CursorWrapper, queue_id: int, verb: str, requests: Iterable[Request], now: int
) -> set[int]:
    """The seqs of ``requests`` settled by ``verb`` with the same arguments under any
    token (a live receipt): what a lapsed settlement tells from a message that is gone."""
    wanted = {(seq, _key(queue_id, args)) for seq, _, args in requests}
    if not wanted:
        return set()
    seqs = sorted({seq for seq, _ in wanted})
    cursor.execute(
        "SELECT seq, args FROM mqlite_receipt WHERE verb = %s AND expires_at > %s "
        f"AND seq IN ({batches.placeholders(len(seqs))})",
        [verb, now, *seqs],
    )
    return {row[0] for row in cursor.fetchall() if tuple(row) in wanted}
