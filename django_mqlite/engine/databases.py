"""Which database a call runs on, decided in one place: a queue's declared database
(``MQLITE["QUEUES"][name]["database"]``), else the caller's ``using``, else
``MQLITE["DATABASE"]``; the databases that hold queues; and ``ctx``, the cursor and
dialect a verb executes on."""

from __future__ import annotations

from collections.abc import Callable

from django.db.backends.utils import CursorWrapper

from ..conf import current
from ..exceptions import InvalidArgumentError
from .arguments import check_queue_name
from .cursor import cursor_for
from .dialects import Dialect, dialect_for


def declared_database(queue: str) -> str | None:
    """The database alias ``MQLITE["QUEUES"]`` declares for ``queue``, if it names one."""
    options = current().queues.get(queue)
    alias = options.get("database") if isinstance(options, dict) else None
    return alias if isinstance(alias, str) and alias else None


def alias_of(using: str | None, queue: str | None = None) -> str:
    """The database a call runs on: the one ``queue`` is declared on, else ``using``,
    else ``MQLITE["DATABASE"]``. The one place this is decided.

    An explicit ``using`` that names another database than the queue's declared one is
    refused: the call would act on a queue of the same name somewhere else.
    """
    if queue is not None:
        declared = declared_database(queue)
        if declared is not None:
            if using is not None and using != declared:
                raise InvalidArgumentError(
                    f"queue {queue!r} lives on database {declared!r} "
                    f'(MQLITE["QUEUES"]), not {using!r}'
                )
            return declared
    return using or current().database


def database_of(queue: str, *, using: str | None = None) -> str:
    """The database alias every call for ``queue`` uses (``mq.database_of``): open
    ``transaction.atomic(using=mq.database_of(queue))`` around a send to make it part
    of that database's transaction."""
    return alias_of(using, check_queue_name(queue))


def queue_databases() -> list[str]:
    """Every database that holds queues: ``MQLITE["DATABASE"]`` first, then each alias
    a declared queue names (in declaration order). Listing calls without ``using=``
    (``list_queues``, ``stats()``, ``reap``) cover all of them."""
    conf = current()
    aliases = [conf.database]
    for name in conf.queues:
        alias = declared_database(name)
        if alias is not None and alias not in aliases:
            aliases.append(alias)
    return aliases


def listed_on(using: str | None) -> list[tuple[str, Callable[[str], bool]]]:
    """For a listing call: each database to read, with a filter on queue names. With
    ``using``, that database and all its queues; without, every queue database and on
    each only the queues a call without ``using`` reaches there."""
    if using:
        return [(using, lambda name: True)]
    return [
        (alias, lambda name, alias=alias: alias_of(None, name) == alias)  # type: ignore[misc]
        for alias in queue_databases()
    ]


def ctx(alias: str) -> tuple[CursorWrapper, Dialect]:
    """The cursor and dialect for the engine's statements on database ``alias``."""
    return cursor_for(alias), dialect_for(alias)
