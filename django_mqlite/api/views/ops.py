"""Operating: redrive and purge dead letters; liveness, metrics and the schema."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import DatabaseError, connections
from django.http import HttpResponse
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.settings import patched_settings
from drf_spectacular.types import OpenApiTypes
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

import django_mqlite as mq

from ...conf import current
from ...permissions import accepts_remote_sends
from .. import metrics
from .. import serializers as s
from .base import BODY_ERRORS, MQView, errors, extend_schema, task_queue_refusal


class RedriveView(MQView):
    mq_actions = {"POST": "manage"}

    @extend_schema(
        operation_id="redrive",
        request=s.RedriveSerializer,
        responses={200: s.CountSerializer, **errors(*BODY_ERRORS)},
        description="Move dead letters back to active (in place or into `to_queue`).",
    )
    def post(self, request: Request, name: str) -> Response:
        options = self.body(s.RedriveSerializer)
        target = options.get("to_queue")
        if target is not None and target != name:
            # Redriving into another queue sends to it.
            self.require_queue("send", target)
            if not accepts_remote_sends(target):
                raise PermissionDenied(task_queue_refusal(target))
        return Response({"count": mq.redrive(name, **options)})


class PurgeView(MQView):
    mq_actions = {"POST": "manage"}

    @extend_schema(
        operation_id="purge",
        request=s.PurgeSerializer,
        responses={200: s.CountSerializer, **errors(*BODY_ERRORS)},
        description="Remove messages in `state` (dead letters by default; never locked ones).",
    )
    def post(self, request: Request, name: str) -> Response:
        return Response({"count": mq.purge(name, **self.body(s.PurgeSerializer))})


class HealthView(MQView):
    """Liveness; the one route open to everyone. Says whether the database answers."""

    authentication_classes: ClassVar[list[Any]] = []  # type: ignore[misc]

    def get_authenticators(self) -> list[Any]:
        return []

    def get_permissions(self) -> list[BasePermission]:
        return [AllowAny()]

    @extend_schema(
        operation_id="healthz",
        auth=[],
        responses={200: s.HealthSerializer, 503: s.HealthSerializer},
    )
    def get(self, request: Request) -> Response:
        try:
            with connections[current().database].cursor() as cursor:
                cursor.execute("SELECT 1")
        except DatabaseError:
            return Response({"status": "unavailable", "database": False}, status=503)
        return Response({"status": "ok", "database": True})


class PlainTextRenderer(JSONRenderer):
    """Accepts ``text/plain`` so scrapers asking for it get the metrics (errors as JSON)."""

    media_type = "text/plain"
    format = "txt"


class MetricsView(MQView):
    mq_actions = {"GET": "read"}
    renderer_classes: ClassVar[list[type[BaseRenderer]]] = [JSONRenderer, PlainTextRenderer]  # type: ignore[misc]

    @extend_schema(
        operation_id="metrics",
        responses={(200, "text/plain"): OpenApiTypes.STR, **errors()},
    )
    def get(self, request: Request) -> HttpResponse:
        # Queue series for the queues the user may view; the worker gauges (hosts, pids,
        # counters of every queue) only with the view permission across queues. A user
        # who may view nothing is refused, as on every other route.
        everywhere = self.queue_allowed("read", None)
        if not everywhere and not self.visible(q.name for q in mq.list_queues()):
            raise PermissionDenied("you may not read the metrics of any queue")
        body = metrics.render(queues=self.visible, workers=everywhere)
        return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


class SchemaView(MQView):
    """The OpenAPI 3 document of this API (JSON, or YAML when asked for)."""

    mq_actions = {"GET": "read"}
    renderer_classes: ClassVar[list[type[BaseRenderer]]] = [  # type: ignore[misc]
        OpenApiJsonRenderer,
        OpenApiYamlRenderer,
    ]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response(build_schema(request))


def build_schema(request: Request | None = None) -> dict[str, Any]:
    """The schema with paths relative to where the API is mounted (its ``servers`` entry)."""
    with patched_settings(
        {
            "TITLE": "django-mqlite HTTP API",
            "DESCRIPTION": "The project's database as a message queue.",
            "VERSION": "1",
            "COMPONENT_SPLIT_REQUEST": True,
        }
    ):
        generator = SchemaGenerator(urlconf="django_mqlite.api.urls")
        schema: dict[str, Any] = generator.get_schema(request=None, public=True)
    _tighten(schema)
    if request is not None:
        mount = request.path[: -len("schema/")] if request.path.endswith("schema/") else "/"
        schema["servers"] = [{"url": mount.rstrip("/") or "/"}]
    return schema


_PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "name": {"type": "string", "pattern": r"^[A-Za-z0-9._-]{1,80}$"},
    "seq": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
}


def _tighten(schema: dict[str, Any]) -> None:
    """What the generator cannot infer: request objects refuse unknown fields, a message
    has exactly one of ``body``/``body_base64``, and the path parameters' formats."""
    for name, component in schema["components"]["schemas"].items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
    out = schema["components"]["schemas"]["OutMessageRequest"]
    out["oneOf"] = [{"required": ["body"]}, {"required": ["body_base64"]}]
    out["not"] = {"required": ["delay", "scheduled_at"]}
    for item in schema["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] in _PATH_PARAMETERS:
                    parameter["schema"] = dict(_PATH_PARAMETERS[parameter["name"]])


class NotFoundView(MQView):
    """Any other path under the API: a JSON 404, like every other error."""

    def get_authenticators(self) -> list[Any]:
        return []

    def get_permissions(self) -> list[BasePermission]:
        return [AllowAny()]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        raise NotFound(f"no API route {request.path!r}")
