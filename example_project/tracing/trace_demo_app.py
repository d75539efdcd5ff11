"""The view, the two tasks and the server-span middleware of ``trace_demo``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import path
from opentelemetry import trace

try:
    from django.tasks import task
except ImportError:
    from django_tasks import task

tracer = trace.get_tracer("shop")


def server_span(get_response: Any) -> Any:
    """What opentelemetry-instrumentation-django does: a SERVER span per request."""

    def middleware(request: HttpRequest) -> HttpResponse:
        with tracer.start_as_current_span(
            f"{request.method} {request.path}", kind=trace.SpanKind.SERVER
        ):
            return get_response(request)

    return middleware


@task(queue_name="orders")
def fulfil_order(order_id: int) -> None:
    send_receipt.enqueue(order_id)


@task(queue_name="emails")
def send_receipt(order_id: int) -> None:
    pass


def checkout(request: HttpRequest) -> HttpResponse:
    fulfil_order.enqueue(42)
    return HttpResponse(status=202)


urlpatterns = [path("checkout/", checkout)]
