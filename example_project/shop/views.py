"""The checkout: the order and its payment message commit together, or not at all."""

from __future__ import annotations

import json

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

import django_mqlite as mq

from .models import Order


@csrf_exempt  # an API-style endpoint for the demo; use your normal CSRF setup in a site
@require_POST
def checkout(request: HttpRequest) -> JsonResponse:
    try:
        data = json.loads(request.body)
        email, total = str(data["email"]), int(data["total_cents"])
    except (ValueError, KeyError, TypeError):
        return JsonResponse(
            {"code": "invalid_argument", "message": "email, total_cents"}, status=400
        )
    with transaction.atomic():
        order = Order.objects.create(email=email, total_cents=total)
        # The outbox: this row commits (or rolls back) with the order.
        mq.send("payments", {"order": order.pk}, message_id=f"order-{order.pk}")
    return JsonResponse({"order": order.pk}, status=201)
