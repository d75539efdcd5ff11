"""Creating a workflow batch over HTTP (``POST batches/``): the children and callbacks
made by the engine's ``mq.batch`` in one transaction, ``send`` asked on every queue
named, and bad input refused with nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

import django_mqlite as mq
from django_mqlite.models import Batch, Message

from .conftest import error, grant, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(make_queue: Any) -> None:
    make_queue("kids")
    make_queue("more")
    make_queue("done")


def counts() -> tuple[int, int]:
    """(messages, batches): what a refused create must not move."""
    return Message.objects.count(), Batch.objects.count()


def test_a_batch_is_made_with_its_children_and_fires_its_callback_once(
    api: APIClient, queues: None
) -> None:
    r = api.post(
        url("batches/"),
        {
            "children": [
                {"queue": "kids", "body": {"n": 1}},
                {"queue": "more", "body": "two", "priority": 5},
            ],
            "on_complete": {"queue": "done", "body": {"all": True}},
        },
        format="json",
    )
    assert r.status_code == 201, r.content
    made = r.json()
    info = mq.get_batch(made["id"])
    assert (info.state, info.total, info.pending) == ("running", 2, 2)
    (kid,) = mq.receive("kids")
    (other,) = mq.receive("more")
    assert [kid.seq, other.seq] == made["seqs"]
    assert (kid.json(), other.text(), other.priority) == ({"n": 1}, "two", 5)
    kid.complete()
    assert not mq.peek("done")  # not before the last child
    other.complete()
    (cb,) = mq.receive("done")
    assert cb.json() == {"all": True}
    assert api.get(url(f"batches/{made['id']}/")).json()["callbacks"] == {"on_complete": cb.seq}


@pytest.mark.parametrize(
    "payload",
    [
        {"children": []},
        {},
        {"children": [{"queue": "kids"}]},  # no body
        {"children": [{"queue": "kids", "body": 1, "colour": "red"}]},  # unknown field
        {"children": [{"queue": "kids", "body": 1}], "on_complete": {"queue": "done"}},
        {"children": [{"queue": "kids", "body": 1}], "then": {"queue": "done", "body": 1}},
        # the engine's refusals: a callback with a unique key, a child in a batch waiting
        # on something (checked after the first child was written: it rolls back)
        {
            "children": [{"queue": "kids", "body": 1}],
            "on_complete": {"queue": "done", "body": 1, "unique_key": "k"},
        },
        {"children": [{"queue": "kids", "body": 1}, {"queue": "more", "body": 2, "ttl": -1}]},
    ],
)
def test_bad_input_is_400_and_writes_nothing(
    api: APIClient, queues: None, payload: dict[str, Any]
) -> None:
    before = counts()
    error(api.post(url("batches/"), payload, format="json"), 400, "invalid_argument")
    assert counts() == before


def test_an_unknown_queue_is_404_and_the_children_before_it_roll_back(
    api: APIClient, queues: None
) -> None:
    before = counts()
    r = api.post(
        url("batches/"),
        {"children": [{"queue": "kids", "body": 1}, {"queue": "nope", "body": 2}]},
        format="json",
    )
    error(r, 404, "not_found")
    assert counts() == before


def test_send_is_asked_on_every_queue_named(queues: None, per_queue: APIClient) -> None:
    """``send`` on the children's queues but not on the callback's: 403, nothing made."""
    from . import queue_perms

    queue_perms.allow("send", "kids", user="pq")
    payload = {
        "children": [{"queue": "kids", "body": 1}],
        "on_complete": {"queue": "done", "body": 1},
    }
    before = counts()
    error(per_queue.post(url("batches/"), payload, format="json"), 403, "permission_denied")
    assert counts() == before
    queue_perms.allow("send", "done", user="pq")
    assert per_queue.post(url("batches/"), payload, format="json").status_code == 201


def test_reading_rights_do_not_create(queues: None) -> None:
    client = APIClient()
    client.force_authenticate(grant(User.objects.create_user("eve"), "view_queue"))
    r = client.post(url("batches/"), {"children": [{"queue": "kids", "body": 1}]}, format="json")
    error(r, 403, "permission_denied")
    assert counts() == (0, 0)
