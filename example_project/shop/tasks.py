"""Tasks of the shop, run by ``manage.py runworker`` through Django's Tasks framework."""

from __future__ import annotations

import datetime as dt

from django.core import mail
from django.utils import timezone

from .models import Order

try:
    from django.tasks import task  # Django 6.x
except ImportError:  # Django 5.2 with the django-tasks backport
    from django_tasks import task  # type: ignore[no-redef]


@task(queue_name="emails", max_attempts=3, backoff=0.5, timeout=30)
def send_confirmation(order_id: int) -> str:
    order = Order.objects.get(pk=order_id)
    mail.send_mail(
        subject=f"Order {order.pk} received",
        message=f"Thank you! We are charging {order.total_cents / 100:.2f}.",
        from_email="shop@example.com",
        recipient_list=[order.email],
    )
    return order.email


@task(queue_name="maintenance")
def cleanup_unpaid(days: int = 30) -> int:
    """Delete orders that stayed unpaid for ``days`` (run by a periodic schedule)."""
    cutoff = timezone.now() - dt.timedelta(days=days)
    deleted, _ = Order.objects.filter(paid_at=None, created_at__lt=cutoff).delete()
    return deleted
