"""A JSON parser that enforces the request-size cap before it parses anything.

The cap is ``MQLITE["API_MAX_REQUEST_BYTES"]``: a declared ``Content-Length`` above it is
refused without reading; a body without one is read up to the cap and refused past it.
Documents are parsed as strict JSON (``django_mqlite.admission.strict_loads``: no NaN, no
lone surrogate, bounded depth), so a request that is not JSON any reader could show back is
a 400 ``invalid_request``; what a message may hold is then the engine's admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.parsers import BaseParser

import django_mqlite as mq

from ..conf import current
from .exceptions import InvalidRequest, RequestTooLarge

#: A request document may nest a few levels more than a body (its envelope:
#: ``{"messages": [{"body": ...}]}``), so any body admission accepts can be sent.
_MAX_DEPTH = mq.admission.MAX_JSON_DEPTH + 8


class BoundedJSONParser(BaseParser):
    # Not a JSONParser subclass: DRF reads ``request.body`` for those, which applies
    # Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB, an HTML 400) before this cap.
    media_type = "application/json"

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        cap = current().api_max_request_bytes
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        try:
            if declared and int(declared) > cap:
                raise RequestTooLarge(f"request body is {int(declared)} bytes; the cap is {cap}")
        except ValueError:
            raise InvalidRequest("Content-Length is not a number") from None
        raw = stream.read(cap + 1)
        if len(raw) > cap:
            raise RequestTooLarge(f"request body is larger than the cap of {cap} bytes")
        try:
            text = raw.decode("utf-8")
            data = mq.admission.strict_loads(text, _MAX_DEPTH)
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidRequest(f"malformed JSON: {exc}") from None
        return data
