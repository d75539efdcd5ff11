"""The payment consumer: charge each order exactly once, however often it is delivered."""

from __future__ import annotations

import time

from django.db import transaction
from django.utils import timezone

import django_mqlite as mq

from .models import Order


class PaymentDeclinedError(Exception):
    pass


@mq.consumer("payments", timeout=30)
def charge(msg: mq.Received) -> None:
    order_id = msg.json()["order"]
    with transaction.atomic():
        # The key is recorded in the same transaction as the charge: a redelivery after
        # a crash finds it and skips; a failure rolls both back and the retry charges.
        with mq.once(f"charge:{order_id}") as first:
            if not first:
                return
            order = Order.objects.select_for_update().get(pk=order_id)
            if order.total_cents == 0:
                raise PaymentDeclinedError(f"order {order_id}: card declined for a zero amount")
            order.charges += 1
            order.paid_at = timezone.now()
            order.save(update_fields=["charges", "paid_at"])


@mq.consumer("reports", timeout=120)
def build_report(msg: mq.Received) -> None:
    """A slow job (the demo kills a worker in the middle of one)."""
    time.sleep(float(msg.json().get("seconds", 1)))
