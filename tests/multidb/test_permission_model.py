"""The permission model every remote surface shares (``django_mqlite.permissions``),
asked directly: the verbs' names, who is refused before any lookup, the per-queue
question an object-permission backend answers with the queue's own row (found on the
queue's own database), and ``permitted_queues``."""

from __future__ import annotations

from typing import Any

import pytest

from django_mqlite import permissions
from django_mqlite.models import Queue

from .conftest import BOTH, FAR, NEAR

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


class User:
    """A user whose backend grants ``perms`` everywhere and ``per_queue`` (perm ->
    queue names) on those queues' rows only; it records the objects it was asked about."""

    def __init__(
        self,
        perms: tuple[str, ...] = (),
        per_queue: dict[str, set[str]] | None = None,
        is_active: Any = True,
    ) -> None:
        self.perms = perms
        self.per_queue = per_queue or {}
        self.asked: list[Any] = []
        if is_active is not None:
            self.is_active = is_active

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        if obj is None:
            return perm in self.perms
        self.asked.append(obj)
        return isinstance(obj, Queue) and obj.name in self.per_queue.get(perm, set())


def test_each_verb_is_a_model_permission_and_an_unknown_one_says_which_are_known() -> None:
    assert permissions.permission_name("send") == "django_mqlite.send_queue"
    with pytest.raises(ValueError, match=r"unknown verb 'purge'; one of view, send, consume"):
        permissions.permission_name("purge")


@pytest.mark.parametrize("user", [None, User(("django_mqlite.send_queue",), is_active=False)])
def test_nobody_and_an_inactive_user_may_do_nothing(user: Any) -> None:
    assert not permissions.has_queue_permission(user, "send", NEAR)
    assert not permissions.has_queue_permission(user, "send", None)


def test_a_user_object_without_is_active_is_refused() -> None:
    user = User(("django_mqlite.send_queue",), is_active=None)
    assert not hasattr(user, "is_active")
    assert not permissions.has_queue_permission(user, "send", NEAR)


def test_every_queue_needs_the_model_permission_not_a_per_queue_grant() -> None:
    user = User(per_queue={"django_mqlite.send_queue": {NEAR, FAR}})
    assert not permissions.has_queue_permission(user, "send", None)
    assert permissions.has_queue_permission(user, "send", NEAR)


def test_the_per_queue_question_carries_the_queue_row_from_its_own_database() -> None:
    """``far`` lives on the second database only: the backend is asked with that row."""
    assert not Queue.objects.using("default").filter(name=FAR).exists()
    user = User(per_queue={"django_mqlite.consume_queue": {FAR}})
    assert permissions.has_queue_permission(user, "consume", FAR)
    [obj] = user.asked
    assert obj.name == FAR and obj._state.db == BOTH[1]
    assert not permissions.has_queue_permission(user, "send", FAR)


def test_a_name_that_is_no_queue_is_refused_without_asking_the_backend() -> None:
    user = User(per_queue={"django_mqlite.view_queue": {"nope"}})
    assert not permissions.has_queue_permission(user, "view", "nope")
    assert not permissions.has_queue_permission(user, "view", "not a queue name!")
    assert user.asked == []


def test_permitted_queues_keeps_the_order_given() -> None:
    names = [FAR, "nope", NEAR]
    everywhere = User(("django_mqlite.view_queue",))
    assert permissions.permitted_queues(everywhere, "view", names) == names
    some = User(per_queue={"django_mqlite.view_queue": {NEAR, FAR}})
    assert permissions.permitted_queues(some, "view", iter(names)) == [FAR, NEAR]
    assert permissions.permitted_queues(User(), "view", names) == []


def test_permitted_queues_asks_once_for_a_user_who_may_everywhere() -> None:
    user = User(("django_mqlite.view_queue",))
    calls: list[Any] = []
    real = user.has_perm
    user.has_perm = lambda perm, obj=None: calls.append(obj) or real(perm, obj)  # type: ignore[method-assign]
    assert permissions.permitted_queues(user, "view", [FAR, NEAR]) == [FAR, NEAR]
    assert calls == [None]


def test_a_tasks_queue_takes_remote_sends_only_when_opened(settings: Any) -> None:
    """A message on a Tasks queue runs project code: remote surfaces may not send there
    unless ``MQLITE["OPEN_TASK_QUEUES"]`` lists it; any other queue takes them."""
    assert "tasks" in permissions.task_queue_names()
    assert not permissions.accepts_remote_sends("tasks")
    assert permissions.accepts_remote_sends(NEAR)
    settings.MQLITE = {**settings.MQLITE, "OPEN_TASK_QUEUES": ["tasks"]}
    assert permissions.accepts_remote_sends("tasks")
    assert not permissions.accepts_remote_sends("tasks-other")
