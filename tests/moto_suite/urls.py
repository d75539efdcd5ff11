"""moto's reset URLs (server mode calls them before and after every test), then the SQS
endpoint at the site root."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

import django_mqlite as mq
from django_mqlite.models import SQSQueue


@csrf_exempt
def reset(request: HttpRequest) -> HttpResponse:
    """Forget every queue and message: what moto's ``/moto-api/reset`` does to its
    backends. Only this test project mounts it."""
    for queue in mq.list_queues():
        mq.delete_queue(queue.name, force=True)
    SQSQueue.objects.all().delete()
    return HttpResponse("{}", content_type="application/json")


@csrf_exempt
def reset_auth(request: HttpRequest) -> HttpResponse:
    return HttpResponse("{}", content_type="application/json")


urlpatterns = [
    path("moto-api/reset", reset),
    path("moto-api/reset-auth", reset_auth),
    path("", include("django_mqlite.sqs.urls")),
]
