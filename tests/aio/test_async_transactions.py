"""A send from async code joins the caller's transaction: the twins run on the caller's
thread-sensitive thread and its connection, never on a connection of their own."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


class RollbackError(Exception):
    pass


def test_asend_inside_an_atomic_block_rolls_back_with_it(q: str) -> None:
    async def scenario() -> None:
        block = transaction.atomic()
        await sync_to_async(block.__enter__)()
        try:
            await mq.asend(q, {"order": 1})
            await mq.asend_batch(q, [mq.OutMessage({"order": 2})])
            # Visible inside the transaction, to the same connection...
            assert [p.json() for p in await mq.apeek(q)] == [{"order": 1}, {"order": 2}]
            raise RollbackError
        except RollbackError as exc:
            await sync_to_async(block.__exit__)(type(exc), exc, exc.__traceback__)

    async_to_sync(scenario)()
    assert mq.peek(q) == []  # ...and gone with its rollback


def test_asend_inside_an_atomic_block_commits_with_it(q: str) -> None:
    async def scenario() -> None:
        block = transaction.atomic()
        await sync_to_async(block.__enter__)()
        await mq.asend(q, {"order": 1})
        await sync_to_async(block.__exit__)(None, None, None)

    async_to_sync(scenario)()
    assert [p.json() for p in mq.peek(q)] == [{"order": 1}]


def test_sync_code_in_atomic_calling_the_async_twin_stays_in_the_transaction(q: str) -> None:
    """``async_to_sync(mq.asend)`` from inside ``atomic()``: the twin's statement comes
    back to this thread and its transaction."""

    def outbox(fail: bool) -> Any:
        with transaction.atomic():
            async_to_sync(mq.asend)(q, {"fail": fail})
            if fail:
                raise RollbackError

    with pytest.raises(RollbackError):
        outbox(True)
    outbox(False)
    assert [p.json() for p in mq.peek(q)] == [{"fail": False}]
