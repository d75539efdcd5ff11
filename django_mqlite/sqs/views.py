"""The endpoint: authenticate, pick the protocol by Content-Type, dispatch, reply.

Every reply, errors included, is in the protocol's own shape: the view is exempt from
CSRF, answers with and without a trailing slash, and turns any failure into an SQS
error instead of one of Django's HTML pages.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

import django_mqlite as mq

from . import wire_json, wire_query
from .auth import verify
from .context import URL_NAME, Context
from .errors import SQSError, from_mqlite
from .handlers import OPERATIONS

logger = logging.getLogger("django_mqlite.sqs")


def _under_mount(request: HttpRequest) -> bool:
    """The path is the mount itself or below it (``/sqs``, ``/sqs/…``, never
    ``/sqsfoo/…``, which the URL patterns alone would also match)."""
    mount = reverse(URL_NAME).rstrip("/")
    return request.path in (mount, f"{mount}/") or request.path.startswith(f"{mount}/")


@csrf_exempt
def endpoint(request: HttpRequest, **_url: Any) -> HttpResponse:
    if not _under_mount(request):
        raise Http404("not an SQS endpoint path")
    request_id = str(uuid.uuid4())
    content_type = request.META.get("CONTENT_TYPE", "")
    wire: Any = wire_json if "x-amz-json" in content_type else wire_query
    try:
        if request.method not in ("POST", "GET"):
            raise SQSError("InvalidAction", "Use POST (or GET for the query protocol).", 405)
        try:
            body = request.body
        except RequestDataTooBig:
            raise SQSError("RequestTooLarge", "The request body is too large.", 413) from None
        caller = verify(request, body)
        op, params = wire.parse(request, body)
        handler = OPERATIONS.get(op)
        if handler is None:
            raise SQSError("InvalidAction", f"The action {op} is not valid for this endpoint.")
        return wire.reply(op, handler(Context(request, caller), params), request_id)
    except SQSError as exc:
        return wire.error(exc, request_id)
    except mq.MQLiteError as exc:
        return wire.error(from_mqlite(exc), request_id)
    except Exception:
        logger.exception("SQS request %s failed", request_id)
        failure = SQSError("InternalError", "The request failed on the server.", 500, sender=False)
        return wire.error(failure, request_id)
