"""Errors on the wire: every failure is ``{"code": ..., "message": ...}`` with a status.

``describe`` is the one place that maps an exception to (status, code, message); the
views use ``exception_handler`` (wired per view, never through the project's
``REST_FRAMEWORK`` setting) so other DRF APIs of the project keep their own handler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

import django_mqlite as mq

from ..exceptions import database_busy


class RequestTooLarge(drf.APIException):
    """The request body is larger than ``MQLITE["API_MAX_REQUEST_BYTES"]``."""

    status_code = 413
    default_code = "request_too_large"
    default_detail = "request body is too large"


class InvalidRequest(drf.APIException):
    """The request is malformed in a way no serializer saw (bad JSON text, bad text)."""

    status_code = 400
    default_code = "invalid_argument"
    default_detail = "invalid request"


# Library errors by code: (status, wire code). QueueNotEmptyError is an
# InvalidArgumentError in Python, but on the wire it is a conflict with its own code.
_MQ_STATUS: dict[str, int] = {
    "not_found": 404,
    "lock_lost": 409,
    "already_exists": 409,
    "group_required": 400,
    "message_too_large": 413,
    "invalid_argument": 400,
    "finished": 409,
}

# DRF's own exceptions, by class, to stable codes.
_DRF_CODES: tuple[tuple[type[drf.APIException], str], ...] = (
    (RequestTooLarge, "request_too_large"),
    (InvalidRequest, "invalid_argument"),
    (drf.ParseError, "invalid_argument"),
    (drf.ValidationError, "invalid_argument"),
    (drf.NotAuthenticated, "unauthenticated"),
    (drf.AuthenticationFailed, "unauthenticated"),
    (drf.PermissionDenied, "permission_denied"),
    (drf.NotFound, "not_found"),
    (drf.MethodNotAllowed, "method_not_allowed"),
    (drf.NotAcceptable, "not_acceptable"),
    (drf.UnsupportedMediaType, "unsupported_media_type"),
    (drf.Throttled, "throttled"),
)

#: Every (status, code) the API can answer with, for the documentation and the schema.
ERROR_CODES: dict[str, int] = {
    **_MQ_STATUS,
    "queue_not_empty": 409,
    "request_too_large": 413,
    "unauthenticated": 401,
    "permission_denied": 403,
    "method_not_allowed": 405,
    "not_acceptable": 406,
    "unsupported_media_type": 415,
    "throttled": 429,
}


def describe(exc: Exception) -> tuple[int, str, str] | None:
    """(status, code, message) for an exception the API answers; None for a bug (500)."""
    if isinstance(exc, mq.QueueNotEmptyError):
        return 409, "queue_not_empty", exc.message
    if isinstance(exc, mq.MQLiteError):
        return _MQ_STATUS.get(exc.code, 500), exc.code, exc.message
    if isinstance(exc, RequestDataTooBig):  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE
        return 413, "request_too_large", "request body is larger than the server accepts"
    if isinstance(exc, Http404):
        return 404, "not_found", str(exc) or "not found"
    if database_busy(exc):
        return 503, "database_busy", "the database is busy; retry shortly"
    if isinstance(exc, drf.APIException):
        code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), "error")
        return exc.status_code, code, flatten(exc.detail)
    return None


def flatten(detail: Any, path: str = "") -> str:
    """DRF's nested error detail as one readable line: ``field.0.name: message; ...``."""
    if isinstance(detail, Mapping):
        parts = [flatten(v, f"{path}.{k}" if path else str(k)) for k, v in detail.items()]
        return "; ".join(p for p in parts if p)
    if isinstance(detail, Sequence) and not isinstance(detail, str):
        nested = any(isinstance(d, Mapping | list) for d in detail)
        if nested:
            parts = [flatten(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(detail)]
            return "; ".join(p for p in parts if p)
        text = " ".join(str(d) for d in detail)
    else:
        text = str(detail)
    if path in ("", "non_field_errors"):
        return text
    return f"{path}: {text}"


def exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response | None:
    described = describe(exc)
    if described is None:
        return None
    status, code, message = described
    response = Response({"code": code, "message": message}, status=status)
    if code == "database_busy":
        response["Retry-After"] = "1"
    if isinstance(exc, drf.APIException):
        if getattr(exc, "auth_header", None):
            response["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
        if getattr(exc, "wait", None) is not None:
            response["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
    return response
