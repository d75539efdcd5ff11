"""AWS Signature Version 4 verification of incoming requests.

The canonical request is rebuilt from the raw request (method, path, query, the signed
headers exactly as sent, the SHA-256 of the body), signed with the key derived from the
secret of the access key the request names, and compared in constant time. Requests
whose ``X-Amz-Date`` is further than the allowed skew from now are refused, so a
captured request cannot be replayed later, and the credential scope's date must be the
day of ``X-Amz-Date``.

The signature must cover what decides the request: ``host`` and ``x-amz-date`` always,
and ``x-amz-target`` whenever the request carries one (the JSON protocol names its
action there, outside the signed body: unsigned, a captured GetQueueAttributes could be
replayed as PurgeQueue). The query protocol's action is in the body, which the payload
hash covers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote

from django.http import HttpRequest

from ..conf import current
from .errors import SQSError

ALGORITHM = "AWS4-HMAC-SHA256"
#: Headers every signature must cover.
REQUIRED_SIGNED = ("host", "x-amz-date")
_AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*SignedHeaders=([^,\s]+)\s*,"
    r"\s*Signature=([0-9a-f]{64})\s*$"
)
DEFAULT_ACCOUNT = "000000000000"
DEFAULT_REGION = "us-east-1"
DEFAULT_SKEW_S = 300


@dataclass(frozen=True)
class Caller:
    """Who signed the request: the access key id and, for a user-bound key, the username."""

    access_key: str
    username: str | None


def setting(name: str) -> Any:
    """A key of ``MQLITE["SQS"]`` with its default."""
    conf = current().sqs
    defaults = {
        "CREDENTIALS": {},
        "ACCOUNT_ID": DEFAULT_ACCOUNT,
        "REGION": DEFAULT_REGION,
        "MAX_CLOCK_SKEW": DEFAULT_SKEW_S,
    }
    return conf.get(name, defaults[name])


def _denied(code: str, message: str) -> SQSError:
    return SQSError(code, message, 403)


def _secret_of(access_key: str) -> tuple[str, str | None]:
    entry = (setting("CREDENTIALS") or {}).get(access_key)
    if isinstance(entry, str) and entry:
        return entry, None
    if isinstance(entry, dict) and isinstance(entry.get("secret"), str) and entry["secret"]:
        user = entry.get("user")
        return entry["secret"], user if isinstance(user, str) else None
    raise _denied("InvalidClientTokenId", "The security token included in the request is invalid.")


def _header(request: HttpRequest, name: str) -> str:
    if name == "content-type":
        value = request.META.get("CONTENT_TYPE", "")
    elif name == "content-length":
        value = request.META.get("CONTENT_LENGTH", "")
    else:
        value = request.META.get("HTTP_" + name.upper().replace("-", "_"), "")
    return " ".join(str(value).split())


def _canonical_query(raw: str) -> str:
    pairs = parse_qsl(raw, keep_blank_values=True)
    encoded = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def canonical_request(request: HttpRequest, signed: list[str], body: bytes) -> str:
    # Every AWS service but S3 signs the path URI-encoded twice (once on the wire, once
    # when canonicalized).
    path = quote(quote(request.path, safe="/~"), safe="/~")
    headers = "".join(f"{h}:{_header(request, h)}\n" for h in signed)
    return "\n".join(
        [
            request.method or "POST",
            path,
            _canonical_query(request.META.get("QUERY_STRING", "")),
            headers,
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def signature(secret: str, scope: list[str], amz_date: str, canonical: str) -> str:
    to_sign = "\n".join(
        [
            ALGORITHM,
            amz_date,
            "/".join(scope),
            hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        ]
    )
    key = ("AWS4" + secret).encode("utf-8")
    for part in scope:
        key = _hmac(key, part)
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def _covers(request: HttpRequest, signed: list[str]) -> bool:
    """Whether the signed headers include every header that decides the request."""
    required = list(REQUIRED_SIGNED)
    if "HTTP_X_AMZ_TARGET" in request.META:
        required.append("x-amz-target")
    return all(h in signed for h in required)


def verify(request: HttpRequest, body: bytes) -> Caller:
    """The caller of a correctly signed, fresh request; ``SQSError`` (403) otherwise."""
    auth = request.META.get("HTTP_AUTHORIZATION", "")
    if not auth:
        raise _denied("MissingAuthenticationToken", "Request is missing Authentication Token")
    match = _AUTH_RE.match(auth.strip())
    if match is None:
        raise _denied("IncompleteSignature", "The Authorization header is not a valid SigV4 one.")
    credential, signed_list, given = match.groups()
    parts = credential.split("/")
    if len(parts) != 5 or parts[3] != "sqs" or parts[4] != "aws4_request":
        raise _denied("IncompleteSignature", "The credential scope is not a valid SQS one.")
    access_key, scope = parts[0], parts[1:]
    secret, username = _secret_of(access_key)
    amz_date = _header(request, "x-amz-date")
    try:
        signed_at = dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        raise _denied("IncompleteSignature", "X-Amz-Date is missing or malformed.") from None
    if abs(time.time() - signed_at.timestamp()) > float(setting("MAX_CLOCK_SKEW")):
        raise _denied("SignatureDoesNotMatch", "Signature expired: the request time is too skewed.")
    if scope[0] != amz_date[:8]:
        raise _denied("SignatureDoesNotMatch", "The credential scope's date is not X-Amz-Date's.")
    signed = signed_list.split(";")
    if signed != sorted(set(signed)) or not _covers(request, signed):
        raise _denied(
            "SignatureDoesNotMatch",
            "The signed headers must be sorted and include host, x-amz-date and, when "
            "present, x-amz-target.",
        )
    expected = signature(secret, scope, amz_date, canonical_request(request, signed, body))
    if not hmac.compare_digest(expected, given):
        raise _denied(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        )
    return Caller(access_key, username)
