"""The AWS JSON 1.0 protocol: ``X-Amz-Target: AmazonSQS.<Op>`` and a JSON body."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse

from ..admission import too_deep
from .errors import SQSError

#: How deep a request body may nest: SQS's own shapes go four levels down (a batch's
#: entries, their attributes, an attribute's value). Deeper is refused before parsing:
#: the parser would recurse to the interpreter's limit, and anything that ran at that
#: depth (a garbage collection's finalizers) would fail with it.
MAX_DEPTH = 32
CONTENT_TYPE = "application/x-amz-json-1.0"
_PREFIX = "AmazonSQS."


def parse(request: HttpRequest, body: bytes) -> tuple[str, dict[str, Any]]:
    target = request.META.get("HTTP_X_AMZ_TARGET", "")
    if not target.startswith(_PREFIX):
        raise SQSError("InvalidAction", "The X-Amz-Target header does not name an SQS action.")
    try:
        text = (body or b"{}").decode("utf-8")
        if too_deep(text, MAX_DEPTH):
            raise ValueError("nested too deeply")
        params = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise SQSError("SerializationException", "The request body is not valid JSON.") from None
    if not isinstance(params, dict):
        raise SQSError("SerializationException", "The request body must be a JSON object.")
    return target[len(_PREFIX) :], params


def reply(op: str, data: dict[str, Any], request_id: str) -> HttpResponse:
    response = HttpResponse(json.dumps(data), content_type=CONTENT_TYPE)
    response["x-amzn-RequestId"] = request_id
    return response


def error(exc: SQSError, request_id: str) -> HttpResponse:
    body = {"__type": f"com.amazonaws.sqs#{exc.code}", "message": exc.message}
    response = HttpResponse(json.dumps(body), content_type=CONTENT_TYPE, status=exc.status)
    response["x-amzn-RequestId"] = request_id
    response["x-amzn-query-error"] = f"{exc.legacy_code};{exc.fault}"
    return response
