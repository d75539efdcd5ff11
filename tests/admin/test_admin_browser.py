"""End to end in a real browser: Debian's chromium, driven by Playwright, against the
live server. Log in, open the dead letters page, redrive one message, purge another
through the confirmation page, and watch the queue gauges change.

Set ``MQLITE_ADMIN_SCREENSHOTS=docs/img`` to (re)write the documentation's screenshots.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

import django_mqlite as mq

from .conftest import state_of

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)",
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls
    # are still synchronous and safe, so let Django allow them.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                ],
            )
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser: Any, live_server: Any) -> Iterator[Any]:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1920, "height": 720})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def _screenshot(page: Any, name: str) -> None:
    where = os.environ.get("MQLITE_ADMIN_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / name), full_page=True)


def _bury(queue: str, body: Any, reason: str, description: str, error: str | None = None) -> int:
    seq = mq.send(queue, body)
    [got] = mq.receive(queue)
    mq.reject(queue, got.seq, got.lock_token or "", reason, description, error=error)
    return seq


def _gauge(page: Any, queue: str, state: str) -> str:
    return str(page.inner_text(f'[data-queue="{queue}"][data-state="{state}"]')).strip()


def _run_action(page: Any, seq: int, action: str) -> None:
    page.check(f'input[name="_selected_action"][value="{seq}"]')
    page.select_option('select[name="action"]', action)
    page.click('button[name="index"]')


def test_redrive_and_purge_in_the_browser(page: Any) -> None:
    User.objects.create_superuser("ops", "ops@example.com", "s3cret-pass")
    mq.create_queue("orders", max_delivery_count=5)
    mq.create_queue("emails", lock_duration=120)
    mq.create_queue("reports", ordering="strict_fifo", default_ttl=86400)
    redrive_me = _bury(
        "orders",
        {"order": 1017, "total": "42.00"},
        "PaymentFailed",
        "card declined",
        'Traceback (most recent call last):\n  File "shop/consumers.py", line 31, in handle\n'
        "    charge(order)\nshop.errors.CardDeclined: card declined",
    )
    purge_me = _bury("orders", b"\x00\x01garbage\xff", "BadPayload", "not JSON")
    stays = _bury("orders", "order 1019 for a deleted customer", "MaxDeliveryCountExceeded", "")
    for i in range(3):
        mq.send("emails", {"to": f"user{i}@example.com", "template": "welcome"})
    mq.send("reports", {"report": "daily"}, delay=3600)

    # Log in.
    page.goto("/admin/login/?next=/admin/django_mqlite/queue/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "s3cret-pass")
    page.click('input[type="submit"]')
    page.wait_for_url("**/admin/django_mqlite/queue/")
    assert _gauge(page, "orders", "dead_lettered") == "3"
    assert _gauge(page, "orders", "active") == "0"
    assert _gauge(page, "emails", "active") == "3"
    _screenshot(page, "admin-queues.png")

    # The dead letters page.
    # The orders row's dead-letter gauge links to its dead letters.
    page.click('a:has([data-queue="orders"][data-state="dead_lettered"])')
    page.wait_for_url("**/admin/django_mqlite/deadletter/**")
    assert page.locator('input[name="_selected_action"]').count() == 3
    assert "PaymentFailed" in page.content()
    page.goto("/admin/django_mqlite/deadletter/")
    _screenshot(page, "admin-deadletters.png")

    # Redrive one: straight away, reported in the message list.
    _run_action(page, redrive_me, "redrive_selected")
    assert "Redrove 1 dead letter." in page.inner_text(".messagelist")
    assert page.locator('input[name="_selected_action"]').count() == 2

    # Purge another: a confirmation page first.
    _run_action(page, purge_me, "purge_selected")
    assert "Are you sure?" in page.inner_text("#content")
    assert f"#{purge_me} in orders" in page.inner_text("#content")
    page.click('input[name="confirm"]')
    assert "Purged 1 dead letter." in page.inner_text(".messagelist")
    assert page.locator('input[name="_selected_action"]').count() == 1

    # The queue gauges moved.
    page.goto("/admin/django_mqlite/queue/")
    assert _gauge(page, "orders", "active") == "1"
    assert _gauge(page, "orders", "dead_lettered") == "1"
    assert (state_of(redrive_me), state_of(purge_me), state_of(stays)) == (
        "active",
        None,
        "dead_lettered",
    )


def test_dead_letter_detail_in_the_browser(page: Any) -> None:
    User.objects.create_superuser("ops", "ops@example.com", "s3cret-pass")
    mq.create_queue("orders")
    seq = _bury("orders", {"order": 7}, "Boom", "it broke", "Traceback...\nValueError: nope")
    page.goto(f"/admin/login/?next=/admin/django_mqlite/deadletter/{seq}/change/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "s3cret-pass")
    page.click('input[type="submit"]')
    page.wait_for_url(f"**/deadletter/{seq}/change/")
    assert "ValueError: nope" in page.inner_text("pre.mqlite-traceback")
    assert '"order": 7' in page.inner_text(".mqlite-body pre")


def _an_hour_of_traffic(clock: Any) -> None:
    """Sixty sampled minutes: a morning rush on orders, a steady trickle of emails, and a
    few failures."""
    import math

    mq.create_queue("orders", max_delivery_count=3)
    mq.create_queue("emails")
    for minute in range(60):
        rush = int(20 + 18 * math.sin(minute / 9))
        mq.send_batch("orders", [mq.OutMessage({"order": minute})] * rush)
        mq.send_batch("emails", [mq.OutMessage("hello")] * 4)
        done = mq.receive("orders", max_messages=max(1, rush - 3 + minute % 7))
        for i, m in enumerate(done):
            if i % 11 == 5:
                m.abandon()
            else:
                m.complete()
        for m in mq.receive("emails", max_messages=4):
            m.complete()
        clock.advance(60)
        mq.reap()


def test_history_charts_in_the_browser(page: Any) -> None:
    import datetime as dt
    import re

    User.objects.create_superuser("ops", "ops@example.com", "s3cret-pass")
    # The clock is frozen for every thread, the live server's included.
    with mq.clock.frozen(dt.datetime(2026, 3, 2, 8, 0, tzinfo=dt.UTC)) as clock:
        _an_hour_of_traffic(clock)
        page.goto("/admin/login/?next=/admin/django_mqlite/queue/")
        page.fill("#id_username", "ops")
        page.fill("#id_password", "s3cret-pass")
        page.click('input[type="submit"]')
        page.wait_for_url("**/admin/django_mqlite/queue/")

        # The queue list: one small chart per queue, named by its text alternative.
        small = page.locator("svg.mq-chart.mq-chart-small")
        assert small.count() == 2
        chart = page.get_by_role("img", name=re.compile(r"^orders: messages sent and completed"))
        box = chart.bounding_box()
        assert box is not None and box["width"] >= 100 and box["height"] >= 20
        assert chart.locator("rect").count() >= 55  # a bar for (almost) every minute
        _screenshot(page, "admin-queues-history.png")

        # The queue's page: completed, failed and depth, larger.
        page.click("text=orders")
        page.wait_for_url("**/queue/*/change/")
        charts = page.locator("svg.mq-chart")
        assert charts.count() == 3
        for name in ("completed", "failed deliveries", "messages by state"):
            img = page.get_by_role("img", name=re.compile(f"^orders: {name}, last 60 minutes"))
            box = img.bounding_box()
            assert box is not None and box["width"] >= 600 and box["height"] >= 100
        depth = page.get_by_role("img", name=re.compile("^orders: messages by state"))
        assert depth.locator("polyline").count() >= 1
        desc = page.locator("svg.mq-chart desc").first.text_content() or ""
        assert re.match(r"completed: [\d,]+ in total, at most \d+ per minute", desc)
        where = os.environ.get("MQLITE_ADMIN_SCREENSHOTS")
        if where:  # just the charts: the rest of the page is in the other screenshots
            Path(where).mkdir(parents=True, exist_ok=True)
            page.locator("fieldset.mq-history").screenshot(
                path=str(Path(where) / "admin-queue-history.png")
            )

        # Another window.
        page.click("text=24 hours")
        page.wait_for_url("**/change/?minutes=1440")
        assert page.get_by_role(
            "img", name=re.compile("^orders: completed, last 1,440 minutes, per 6 minutes")
        ).is_visible()
