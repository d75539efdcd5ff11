"""The Batches page: progress, children by state, callbacks, and redriving failed
children through the engine (which re-opens the batch)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

import django_mqlite as mq

from .conftest import action_post, state_of

pytestmark = pytest.mark.django_db

URL = "/admin/django_mqlite/batch/"


@pytest.fixture
def batch(make_queue: Any) -> tuple[int, list[int]]:
    """A batch of four children on ``kids``: one completed, two dead-lettered (rejected),
    one still waiting; its callbacks go to ``done``."""
    make_queue("kids")
    make_queue("done")
    with mq.batch(
        on_complete=mq.Callback("done", {"cb": "complete"}),
        on_failure=mq.Callback("done", {"cb": "failure"}),
    ) as b:
        seqs = [b.send("kids", {"i": i}) for i in range(4)]
    got = {m.seq: m for m in mq.receive("kids", max_messages=3)}
    got[seqs[0]].complete()
    got[seqs[1]].reject("Bad")
    got[seqs[2]].reject("Bad")
    return b.id, seqs


def _text(response: Any) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def test_the_list_shows_progress_and_state(admin_client: Client, batch: Any) -> None:
    bid, _ = batch
    page = _text(admin_client.get(URL))
    assert "3 of 4 settled (2 failed)" in page
    assert "running" in page
    running = _text(admin_client.get(URL, {"state": "running"}))
    finished = _text(admin_client.get(URL, {"state": "finished"}))
    assert f"/batch/{bid}/change/" in running and f"/batch/{bid}/change/" not in finished


def test_the_detail_page_lists_children_by_state_and_the_callbacks(
    admin_client: Client, batch: Any
) -> None:
    bid, seqs = batch
    page = _text(admin_client.get(f"{URL}{bid}/change/"))
    assert re.search(rf"batch_id={bid}&amp;state=dead_lettered[^>]*>dead_lettered</a>: 2", page)
    assert re.search(r"state=active[^>]*>active</a>: 1", page)
    assert "on_complete → <code>done</code>: not enqueued" in page
    # The children link lands on the Messages page showing exactly them.
    query = {"batch_id": bid, "state": "dead_lettered"}
    listed = _text(admin_client.get("/admin/django_mqlite/message/", query))
    assert f"/message/{seqs[1]}/change/" in listed and f"/message/{seqs[2]}/change/" in listed
    assert f"/message/{seqs[3]}/change/" not in listed
    # The last child settles: the batch finishes and the callbacks link to their messages.
    [last] = mq.receive("kids")
    last.complete()
    info = mq.get_batch(bid)
    page = _text(admin_client.get(f"{URL}{bid}/change/"))
    assert f">#{info.callbacks['on_complete']}</a>" in page
    assert f">#{info.callbacks['on_failure']}</a>" in page
    finished = _text(admin_client.get(URL, {"state": "finished"}))
    running = _text(admin_client.get(URL, {"state": "running"}))
    assert f"/batch/{bid}/change/" in finished and f"/batch/{bid}/change/" not in running


def test_redrive_failed_children_confirms_then_reopens_the_batch(
    admin_client: Client, batch: Any
) -> None:
    bid, seqs = batch
    confirm = _text(admin_client.post(URL, action_post("redrive_failed_children", [bid])))
    assert "Redrive failed children" in confirm
    assert f"#{seqs[1]} in kids" in confirm and f"#{seqs[2]} in kids" in confirm
    assert state_of(seqs[1]) == "dead_lettered"  # nothing moved yet
    response = admin_client.post(
        URL, action_post("redrive_failed_children", [bid], post="yes"), follow=True
    )
    assert "Redrove 2 dead letters." in [str(m) for m in get_messages(response.wsgi_request)]
    assert (state_of(seqs[1]), state_of(seqs[2])) == ("active", "active")
    info = mq.get_batch(bid)
    assert (info.failed, info.pending) == (0, 3)  # re-opened: they count again when settled


def test_redrive_needs_its_permission(staff_client: Any, batch: Any) -> None:
    bid, seqs = batch
    viewer = staff_client("view_batch")
    page = viewer.get(URL)
    assert page.status_code == 200 and "redrive_failed_children" not in page.content.decode()
    viewer.post(URL, action_post("redrive_failed_children", [bid], post="yes"))
    assert state_of(seqs[1]) == "dead_lettered"
    assert staff_client().get(URL).status_code == 403  # no view_batch: no page
    redriver = staff_client("view_batch", "redrive_message")
    assert "redrive_failed_children" in redriver.get(URL).content.decode()


def test_a_messages_own_node_is_not_listed(admin_client: Client, batch: Any) -> None:
    bid, _ = batch
    first = mq.Step("kids", "a").then(mq.Step("kids", "b")).send()
    mq.send("kids", "after", depends_on=[first])
    page = _text(admin_client.get(URL))
    assert f"/batch/{bid}/change/" in page
    assert page.count("/change/") == 1, page


def test_the_children_links_reach_those_behind_a_node(admin_client: Client, batch: Any) -> None:
    """A child something depends on points at its own node within the batch: the
    batch's counts and links include it."""
    bid, seqs = batch
    mq.send("done", "after", depends_on=[seqs[3]])
    page = admin_client.get(f"{URL}{bid}/change/").content.decode()
    (link,) = re.findall(r'href="([^"]*state=active[^"]*)"', page)
    listed = _text(admin_client.get(link.replace("&amp;", "&")))
    assert f"/message/{seqs[3]}/change/" in listed
