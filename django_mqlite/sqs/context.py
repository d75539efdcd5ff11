"""A request's context for the handlers: the caller, URLs and ARNs, parameter readers."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest
from django.urls import reverse

import django_mqlite as mq

from . import access, store
from .auth import Caller, setting
from .errors import SQSError, invalid, missing, no_queue

URL_NAME = "mqlite-sqs"
_ARN_RE = re.compile(r"arn:aws[\w-]*:sqs:[^:]*:[^:]*:([^:]+)")


class Context:
    def __init__(self, request: HttpRequest, caller: Caller) -> None:
        self.request = request
        self.caller = caller
        self.user = None if caller.username is None else access.load_user(caller.username)
        self.account = str(setting("ACCOUNT_ID"))
        self.region = str(setting("REGION"))

    # -- names, URLs, ARNs ---------------------------------------------------------------

    def base_url(self) -> str:
        try:
            host = self.request.get_host()
        except DisallowedHost:
            raise invalid("The Host header is not allowed by ALLOWED_HOSTS.") from None
        mount = reverse(URL_NAME).rstrip("/")
        return f"{self.request.scheme}://{host}{mount}"

    def url(self, name: str) -> str:
        return f"{self.base_url()}/{self.account}/{name}"

    def arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account}:{name}"

    def name_from_arn(self, arn: Any, what: str) -> str:
        match = _ARN_RE.fullmatch(arn) if isinstance(arn, str) else None
        if match is None:
            raise invalid(f"{what} is not a valid SQS queue ARN.")
        return match.group(1)

    def allow(self, verb: str, name: str | None) -> None:
        if not access.allowed(self.user, verb, name):
            raise SQSError(
                "AccessDenied", "Access to the resource is denied for this credential.", 403
            )

    def queue(self, p: dict[str, Any], verb: str) -> store.QueueInfo:
        """The queue the request's ``QueueUrl`` names (the last path segment; a bare
        name is accepted too), after checking the caller may ``verb`` on it."""
        url = text(p, "QueueUrl", required=True)
        name = url.rstrip("/").rsplit("/", 1)[-1]
        self.allow(verb, name)
        return load(name)


def load(name: str) -> store.QueueInfo:
    try:
        return store.load(name)
    except (mq.QueueNotFoundError, mq.InvalidArgumentError):
        raise no_queue() from None


# -- parameter readers -------------------------------------------------------------------


def text(p: dict[str, Any], name: str, *, required: bool = False) -> str:
    value = p.get(name)
    if value is None or value == "":
        if required:
            raise missing(name)
        return ""
    if not isinstance(value, str):
        raise invalid(f"Value for parameter {name} must be a string.")
    return value


def integer(p: dict[str, Any], name: str, lo: int, hi: int, default: int | None = None) -> int:
    """An integer parameter (a JSON number, or a numeric string from the query protocol)."""
    value = p.get(name)
    if value is None or value == "":
        if default is None:
            raise missing(name)
        return default
    try:
        number = int(value) if not isinstance(value, bool | float) else None
    except (TypeError, ValueError):
        number = None
    if number is None or not lo <= number <= hi:
        raise invalid(
            f"Value {value} for parameter {name} is invalid. Reason: Must be between {lo} and {hi}."
        )
    return number


def strings(p: dict[str, Any], name: str) -> list[str]:
    value = p.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid(f"Value for parameter {name} must be a list of strings.")
    return value


def mapping(p: dict[str, Any], name: str) -> dict[str, Any]:
    value = p.get(name) or {}
    if not isinstance(value, dict):
        raise invalid(f"Value for parameter {name} must be a map.")
    return value
