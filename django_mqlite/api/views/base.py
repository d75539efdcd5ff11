"""What every API view shares: auth and permissions from ``MQLITE`` (or the project's DRF
defaults), the bounded JSON parser, JSON out, and the API's own exception handler."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.utils import extend_schema as spectacular_extend_schema
from rest_framework.exceptions import NotAcceptable, PermissionDenied, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import BasePermission
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.serializers import Serializer
from rest_framework.utils.mediatypes import media_type_matches, order_by_precedence
from rest_framework.views import APIView

from ... import otel
from ..exceptions import exception_handler
from ..parsers import BoundedJSONParser
from ..permissions import authentication_classes, permission_classes
from ..serializers import ErrorSerializer

_ERROR_TEXT = {
    400: "invalid_argument (malformed JSON, wrong type, unknown field, out of range) "
    "or group_required",
    401: "unauthenticated",
    403: "permission_denied (or unauthenticated, for schemes without a challenge)",
    404: "not_found",
    409: "lock_lost, already_exists or queue_not_empty",
    413: "message_too_large or request_too_large",
    415: "unsupported_media_type (send application/json)",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """Error responses for the schema: 401 and 403 always, plus ``statuses``."""
    wanted = sorted({401, 403, *statuses})
    return {s: OpenApiResponse(ErrorSerializer, description=_ERROR_TEXT[s]) for s in wanted}


#: Errors of every route that takes a JSON body.
BODY_ERRORS = (400, 404, 413, 415)


class Negotiation(DefaultContentNegotiation):
    """Content negotiation by ``Accept`` only: no ``?format=`` override."""

    def select_renderer(
        self, request: Any, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        accepts = self.get_accept_list(request)
        for media_type_set in order_by_precedence(accepts):
            for renderer in renderers:
                for media_type in media_type_set:
                    if media_type_matches(renderer.media_type, media_type):
                        return renderer, (
                            renderer.media_type if media_type == "*/*" else media_type
                        )
        raise NotAcceptable(available_renderers=list(renderers))


class Schema(AutoSchema):
    def _get_format_parameters(self) -> list[Any]:
        return []  # no ?format= override (see Negotiation)


def task_queue_refusal(queue: str) -> str:
    return (
        f"queue {queue!r} runs Django tasks: it takes no messages over HTTP unless "
        'MQLITE["OPEN_TASK_QUEUES"] lists it'
    )


def extend_schema(**kwargs: Any) -> Callable[[Any], Any]:
    """drf-spectacular's ``extend_schema`` over this API's own schema class, so the
    schema builds whatever the project's ``DEFAULT_SCHEMA_CLASS`` is (or without one)."""

    def decorator(f: Any) -> Any:
        f.schema = Schema
        return spectacular_extend_schema(**kwargs)(f)

    return decorator


class TotalJSONRenderer(JSONRenderer):
    """JSON as DRF writes it (UTF-8, non-ASCII as is), except that a response holding a
    string no UTF-8 can carry (a lone surrogate in a row an older version stored, e.g. in
    its properties or reason) is written with ``\\u`` escapes instead of failing after
    a claim. Admission keeps such strings out of new rows; this covers the old ones."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _EscapedJSONRenderer().render(data, accepted_media_type, renderer_context)


class _EscapedJSONRenderer(JSONRenderer):
    ensure_ascii = True


class MQView(APIView):
    """Base of the API views. ``mq_actions`` maps HTTP method to permission action."""

    mq_actions: ClassVar[dict[str, str]] = {}
    parser_classes: ClassVar[list[type[BaseParser]]] = [BoundedJSONParser]  # type: ignore[misc]
    renderer_classes: ClassVar[list[type[BaseRenderer]]] = [TotalJSONRenderer]  # type: ignore[misc]
    content_negotiation_class = Negotiation
    schema = Schema()

    @property
    def mq_action(self) -> str:
        return self.mq_actions.get(self.request.method or "", "manage")

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # A caller's W3C trace context (``traceparent`` header) is the parent of the
        # spans this request makes, unless Django's instrumentation made a server span.
        with otel.remote_parent(request.headers):
            return super().dispatch(request, *args, **kwargs)

    def get_authenticators(self) -> list[Any]:
        return [cls() for cls in authentication_classes()]

    def get_permissions(self) -> list[BasePermission]:
        return [cls() for cls in permission_classes()]

    def get_authenticate_header(self, request: Any) -> str:
        # The first scheme that has a challenge (DRF asks only the first, and session
        # auth has none), so anonymous requests get 401, not 403, when any scheme can.
        for authenticator in self.get_authenticators():
            header = authenticator.authenticate_header(request)
            if header:
                return str(header)
        return ""

    # -- per-queue decisions beyond the route's own queue ---------------------------------

    def queue_allowed(self, action: str, queue: str | None) -> bool:
        """Whether every permission class that decides per queue allows ``action``
        (``queue=None``: across queues, the model permission alone)."""
        for permission in self.get_permissions():
            decide = getattr(permission, "has_queue_permission", None)
            if decide is not None and not decide(self.request, action, queue):
                return False
        return True

    def require_queue(self, action: str, queue: str | None) -> None:
        if not self.queue_allowed(action, queue):
            what = "every queue" if queue is None else f"queue {queue!r}"
            raise PermissionDenied(f"you may not {action} {what}")

    def visible(self, names: Iterable[str]) -> list[str]:
        """The queues among ``names`` this user may read, for listings."""
        return [n for n in names if self.queue_allowed("read", n)]

    def attempt_scope(self) -> str:
        """Whose receive attempt ids these are (``mq.receive(attempt_scope=...)``): the
        calling user, so another user repeating an id never gets this caller's
        messages or tokens, and a Python caller's ids never meet an HTTP caller's."""
        user = getattr(self.request, "user", None)
        if user is not None and user.is_authenticated:
            return f"http:user:{user.pk}"
        return "http:anonymous"

    def get_exception_handler(self) -> Callable[..., Any]:
        return exception_handler

    def valid(self, serializer_class: type[Serializer[Any]], data: Any) -> Any:
        """The validated data, or a 400 ``invalid_argument``."""
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def query(self, serializer_class: type[Serializer[Any]]) -> Any:
        """The query string validated by ``serializer_class``: each of its parameters at
        most once and never empty, or a 400 ``invalid_argument`` (a form's leniency would
        read ``?minutes=`` as no value given and ``?limit=1&limit=900`` as the last)."""
        fields = serializer_class().fields
        params: dict[str, str] = {}
        for key, values in self.request.query_params.lists():
            if key not in fields:
                continue
            if len(values) != 1 or values[0] == "":
                raise ValidationError({key: ["give this parameter once, with a value"]})
            params[key] = values[0]
        return self.valid(serializer_class, params)

    def body(self, serializer_class: type[Serializer[Any]]) -> Any:
        """The JSON body validated by ``serializer_class``; an empty body counts as ``{}``."""
        data = self.request.data
        if data is None or (hasattr(data, "dict") and not data):
            data = {}
        return self.valid(serializer_class, data)
