"""A JSON parser that enforces the request-size cap before it parses anything.

The cap is ``MQLITE["API_MAX_REQUEST_BYTES"]``: a declared ``Content-Length`` above it is
refused without reading; a body without one is read up to the cap and refused past it.
Parsed documents are also checked for text that cannot be stored (lone surrogates), so
such input is a 400 and never reaches the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.parsers import BaseParser

from ..conf import mqlite_settings
from .bodies import strict_json
from .exceptions import InvalidRequest, RequestTooLarge

_MAX_DEPTH = 64


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
        cap = int(mqlite_settings.API_MAX_REQUEST_BYTES)
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
            data = strict_json(text)
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidRequest(f"malformed JSON: {exc}") from None
        except RecursionError:
            raise InvalidRequest("malformed JSON: nested too deeply") from None
        check_text(data)
        return data


def check_text(value: Any, depth: int = 0) -> None:
    """Refuse documents nested deeper than 64 levels or holding unencodable strings."""
    if depth > _MAX_DEPTH:
        raise InvalidRequest(f"JSON is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, str):
        _check_str(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_str(k)
            check_text(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            check_text(v, depth + 1)


def _check_str(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("a string holds an unpaired surrogate (not valid UTF-8)") from None
