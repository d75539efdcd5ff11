from __future__ import annotations

from django.db import models


class Order(models.Model):
    email = models.EmailField()
    total_cents = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    # How many times the payment provider was charged: must end at exactly 1.
    charges = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"order {self.pk} ({self.total_cents / 100:.2f})"
