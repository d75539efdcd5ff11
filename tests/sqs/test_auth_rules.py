"""The SigV4 check itself (``sqs.auth.verify``), request by request and without a server:
a request signed by botocore's own signer over a path, a query, and header values that
each need canonicalising is accepted; each rule refuses with its own code and message,
at its exact boundary (the clock skew, the scope, the signed-header list)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any
from unittest import mock

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from django.http import HttpRequest
from django.test import RequestFactory

from django_mqlite.sqs import auth
from django_mqlite.sqs.errors import SQSError

from .conftest import CREDENTIALS, KEY, SECRET

HOST = "sqs.test:8000"
#: A path and a query that each need encoding (twice, for the path), out of order, with a
#: blank value and a repeated key.
PATH = "/sqs/000000000000/a%20b~c"
QUERY = "b=2&a=x%20y&a=%2Fz&empty=&t=~-_."
NOW = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _credentials(settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "SQS": {"CREDENTIALS": CREDENTIALS}}


def sign(
    body: bytes = b"{}",
    *,
    method: str = "POST",
    key: str = KEY,
    secret: str = SECRET,
    when: dt.datetime = NOW,
    target: str | None = "ListQueues",
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The headers botocore's signer sends for this request."""
    headers = {"X-Amz-Meta-Note": "  several   spaced\twords ", **(extra or {})}
    if body:  # Django's test client sends neither for an empty body
        headers["Content-Type"] = "application/x-amz-json-1.0"
        headers["Content-Length"] = str(len(body))
    if target is not None:
        headers["X-Amz-Target"] = f"AmazonSQS.{target}"
    request = AWSRequest(method, f"http://{HOST}{PATH}?{QUERY}", data=body, headers=headers)
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        SigV4Auth(Credentials(key, secret), "sqs", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def django_request(
    headers: dict[str, str], body: bytes = b"{}", method: str = "POST", query: str = QUERY
) -> HttpRequest:
    """The request Django builds from those headers on the wire."""
    meta: dict[str, str] = {"HTTP_HOST": HOST, "QUERY_STRING": query}
    content_type = ""
    for name, value in headers.items():
        lower = name.lower()
        if lower == "content-type":
            content_type = value
        elif lower != "content-length":  # the factory sets it from the body
            meta["HTTP_" + name.upper().replace("-", "_")] = value
    factory = RequestFactory()
    return factory.generic(method, PATH, body, content_type=content_type, **meta)


def check(
    headers: dict[str, str],
    body: bytes = b"{}",
    method: str = "POST",
    at: dt.datetime | float = NOW,
    query: str = QUERY,
) -> auth.Caller:
    now = at.timestamp() if isinstance(at, dt.datetime) else at
    request = django_request(headers, body, method, query)
    with mock.patch.object(auth.time, "time", return_value=now):
        return auth.verify(request, body)


def refused(headers: dict[str, str], **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(SQSError) as err:
        check(headers, **kwargs)
    assert err.value.status == 403
    return err.value.code, err.value.message


def with_auth(headers: dict[str, str], authorization: str) -> dict[str, str]:
    return {**headers, "Authorization": authorization}


def test_a_request_signed_by_botocore_is_accepted() -> None:
    assert check(sign()) == auth.Caller(KEY, None)


def test_a_get_is_signed_with_its_own_method() -> None:
    assert check(sign(b"", method="GET"), body=b"", method="GET") == auth.Caller(KEY, None)
    # The same signature presented for a POST is not the POST's.
    code, _ = refused(sign(b"", method="GET"), body=b"")
    assert code == "SignatureDoesNotMatch"


def test_a_user_bound_key_names_its_user() -> None:
    caller = check(sign(key="AKIDUSER", secret="user-secret"))
    assert caller == auth.Caller("AKIDUSER", "alice")


def test_a_user_bound_key_whose_user_is_not_a_name_names_none(settings: Any) -> None:
    settings.MQLITE = {"SQS": {"CREDENTIALS": {"AKIDODD": {"secret": "s", "user": 7}}}}
    assert check(sign(key="AKIDODD", secret="s")) == auth.Caller("AKIDODD", None)


@pytest.mark.parametrize(
    "what",
    ["body", "query", "query order", "path", "header value", "signed header spacing"],
)
def test_a_signature_covers_each_part_of_the_request(what: str) -> None:
    headers = sign()
    kwargs: dict[str, Any] = {}
    if what == "body":
        kwargs["body"] = b'{"QueueNamePrefix": "x"}'
    elif what == "query":
        kwargs["query"] = QUERY.replace("b=2", "b=3")
    elif what == "query order":
        # The same pairs in another order are the same canonical query...
        assert check(headers, query="t=~-_.&empty=&a=x%20y&b=2&a=%2Fz") == auth.Caller(KEY, None)
        # ...and another pairing of the repeated key is not.
        kwargs["query"] = "b=2&a=%2Fz&a=x%20y&empty=&t=~-_.".replace("a=%2Fz", "a=%2Fw")
    elif what == "path":
        request = django_request(headers)
        request.path = request.path + "d"
        with (
            mock.patch.object(auth.time, "time", return_value=NOW.timestamp()),
            pytest.raises(SQSError) as err,
        ):
            auth.verify(request, b"{}")
        assert err.value.code == "SignatureDoesNotMatch"
        return
    elif what == "header value":
        headers = {**headers, "X-Amz-Meta-Note": "several spaced other"}
    else:
        # Whitespace inside a value is canonicalised: the request stays valid.
        assert check({**headers, "X-Amz-Meta-Note": "several \t spaced   words"}) == auth.Caller(
            KEY, None
        )
        headers = {**headers, "X-Amz-Meta-Note": "severalspaced words"}
    code, _ = refused(headers, **kwargs)
    assert code == "SignatureDoesNotMatch"


def test_content_type_and_length_are_read_where_django_keeps_them() -> None:
    # Both are signed by botocore; Django keeps them outside the HTTP_ keys.
    headers = sign()
    signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"content-type", "content-length"} <= set(signed)
    code, _ = refused({**headers, "Content-Type": "application/json"})
    assert code == "SignatureDoesNotMatch"
    code, _ = refused(headers, body=b"{} ")  # another length (and body)
    assert code == "SignatureDoesNotMatch"


def test_a_missing_authorization_is_missing_authentication_token() -> None:
    headers = {k: v for k, v in sign().items() if k != "Authorization"}
    assert refused(headers) == (
        "MissingAuthenticationToken",
        "Request is missing Authentication Token",
    )


@pytest.mark.parametrize(
    "change",
    [
        lambda a: a.replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1"),
        lambda a: a.replace("Signature=", "Signature=0"),
        lambda a: a[:-1],  # 63 hex digits
        lambda a: a.replace("SignedHeaders=", "Headers="),
        lambda a: a.replace(", SignedHeaders", " SignedHeaders"),
        lambda a: a + " extra",
    ],
)
def test_a_malformed_authorization_is_an_incomplete_signature(change: Any) -> None:
    headers = sign()
    assert refused(with_auth(headers, change(headers["Authorization"]))) == (
        "IncompleteSignature",
        "The Authorization header is not a valid SigV4 one.",
    )


def test_surrounding_whitespace_and_spacing_of_the_authorization_are_allowed() -> None:
    headers = sign()
    spaced = headers["Authorization"].replace(", ", " ,  ").replace("SHA256 ", "SHA256   ")
    assert check(with_auth(headers, f"  {spaced}  ")) == auth.Caller(KEY, None)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/us-east-1/sqs/aws4_request", "/us-east-1/sqs/aws4_request/x"),
        ("/us-east-1/sqs/aws4_request", "/sqs/aws4_request"),
        ("/sqs/aws4_request", "/sns/aws4_request"),
        ("/sqs/aws4_request", "/sqs/aws4_requests"),
    ],
)
def test_a_scope_that_is_not_sqs_is_an_incomplete_signature(old: str, new: str) -> None:
    headers = sign()
    assert refused(with_auth(headers, headers["Authorization"].replace(old, new))) == (
        "IncompleteSignature",
        "The credential scope is not a valid SQS one.",
    )


@pytest.mark.parametrize("entry", [None, "", {"secret": ""}, {"secret": 5}, {"user": "alice"}, 5])
def test_an_unknown_key_or_one_without_a_secret_is_an_invalid_client_token(
    settings: Any, entry: Any
) -> None:
    settings.MQLITE = {"SQS": {"CREDENTIALS": {} if entry is None else {KEY: entry}}}
    assert refused(sign()) == (
        "InvalidClientTokenId",
        "The security token included in the request is invalid.",
    )


def test_no_sqs_settings_refuse_every_key(settings: Any) -> None:
    settings.MQLITE = {}
    assert refused(sign())[0] == "InvalidClientTokenId"
    settings.MQLITE = {"SQS": {"CREDENTIALS": None}}
    assert refused(sign())[0] == "InvalidClientTokenId"


def test_the_defaults_of_the_sqs_settings(settings: Any) -> None:
    settings.MQLITE = {}
    assert auth.setting("ACCOUNT_ID") == "000000000000"
    assert auth.setting("REGION") == "us-east-1"
    assert auth.setting("MAX_CLOCK_SKEW") == 300
    assert auth.setting("CREDENTIALS") == {}
    settings.MQLITE = {"SQS": {"REGION": "eu-west-3"}}
    assert auth.setting("REGION") == "eu-west-3"


@pytest.mark.parametrize("date", ["", "20261201T120000", "2026-12-01T12:00:00Z"])
def test_a_missing_or_malformed_date_is_an_incomplete_signature(date: str) -> None:
    headers = {**sign(), "X-Amz-Date": date}
    assert refused(headers) == ("IncompleteSignature", "X-Amz-Date is missing or malformed.")


@pytest.mark.parametrize("skew", [-300, 300])
def test_a_request_exactly_at_the_allowed_skew_is_fresh(skew: int) -> None:
    at = NOW.timestamp() + skew
    assert check(sign(), at=at) == auth.Caller(KEY, None)


@pytest.mark.parametrize("skew", [-301, 301])
def test_a_request_past_the_allowed_skew_either_way_is_expired(skew: int) -> None:
    assert refused(sign(), at=NOW.timestamp() + skew) == (
        "SignatureDoesNotMatch",
        "Signature expired: the request time is too skewed.",
    )


def test_the_allowed_skew_is_a_setting(settings: Any) -> None:
    settings.MQLITE = {"SQS": {"CREDENTIALS": CREDENTIALS, "MAX_CLOCK_SKEW": "10"}}
    assert check(sign(), at=NOW.timestamp() + 10) == auth.Caller(KEY, None)
    assert refused(sign(), at=NOW.timestamp() + 11)[0] == "SignatureDoesNotMatch"


def test_the_scope_date_must_be_the_day_of_x_amz_date() -> None:
    headers = sign()
    other = headers["Authorization"].replace(f"/{NOW:%Y%m%d}/", "/20261130/")
    assert refused(with_auth(headers, other)) == (
        "SignatureDoesNotMatch",
        "The credential scope's date is not X-Amz-Date's.",
    )


HEADERS_MESSAGE = (
    "SignatureDoesNotMatch",
    "The signed headers must be sorted and include host, x-amz-date and, when "
    "present, x-amz-target.",
)


def _with_signed(headers: dict[str, str], signed: str) -> dict[str, str]:
    authorization = headers["Authorization"]
    head, rest = authorization.split("SignedHeaders=")
    return with_auth(headers, head + "SignedHeaders=" + signed + "," + rest.split(",", 1)[1])


@pytest.mark.parametrize(
    "signed",
    [
        "content-length;content-type;host;host;x-amz-date;x-amz-target",  # repeated
        "content-type;content-length;host;x-amz-date;x-amz-target",  # unsorted
        "content-length;content-type;x-amz-date;x-amz-target",  # no host
        "content-length;content-type;host;x-amz-target",  # no x-amz-date
        "content-length;content-type;host;x-amz-date",  # no x-amz-target
    ],
)
def test_the_signed_header_list_rules(signed: str) -> None:
    assert refused(_with_signed(sign(), signed)) == HEADERS_MESSAGE


def test_without_a_target_the_target_need_not_be_signed() -> None:
    # botocore signs exactly the headers sent: here neither carries x-amz-target.
    headers = sign(b"Action=ListQueues", target=None)
    assert "x-amz-target" not in headers["Authorization"]
    assert check(headers, body=b"Action=ListQueues") == auth.Caller(KEY, None)


def test_a_wrong_signature_is_signature_does_not_match() -> None:
    headers = sign(secret="not-the-secret")
    assert refused(headers) == (
        "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided.",
    )


def test_a_query_key_is_encoded_like_its_value() -> None:
    headers = sign()
    # botocore's signer over a key holding "/" (encoded %2F in the canonical query).
    request = AWSRequest(
        "POST", f"http://{HOST}{PATH}?a%2Fb=1", data=b"{}", headers={"Content-Type": "x/y"}
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW):
        SigV4Auth(Credentials(KEY, SECRET), "sqs", "us-east-1").add_auth(request)
    headers = dict(request.headers.items())
    assert check(headers, query="a%2Fb=1") == auth.Caller(KEY, None)


def test_a_signed_header_that_did_not_arrive_reads_as_empty() -> None:
    """A header is signed with its value as sent; one the request does not carry (a
    proxy dropped it, or Django keeps none for it) is the empty value, as AWS reads it."""
    headers = sign(extra={"X-Amz-Meta-Absent": ""})
    signed = headers["Authorization"].split("SignedHeaders=")[1].split(",")[0]
    assert "x-amz-meta-absent" in signed.split(";")
    request = django_request(headers)
    del request.META["HTTP_X_AMZ_META_ABSENT"]
    with mock.patch.object(auth.time, "time", return_value=NOW.timestamp()):
        assert auth.verify(request, b"{}") == auth.Caller(KEY, None)


@pytest.mark.parametrize("name", ["CONTENT_TYPE", "CONTENT_LENGTH"])
def test_a_signed_content_header_that_did_not_arrive_reads_as_empty(name: str) -> None:
    header = {"CONTENT_TYPE": "Content-Type", "CONTENT_LENGTH": "Content-Length"}[name]
    signing = AWSRequest("POST", f"http://{HOST}{PATH}?{QUERY}", data=b"{}", headers={header: ""})
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW):
        SigV4Auth(Credentials(KEY, SECRET), "sqs", "us-east-1").add_auth(signing)
    headers = dict(signing.headers.items())
    assert header.lower() in headers["Authorization"]
    request = django_request(headers)
    del request.META[name]
    with mock.patch.object(auth.time, "time", return_value=NOW.timestamp()):
        assert auth.verify(request, b"{}") == auth.Caller(KEY, None)


def test_a_request_without_a_query_string_has_an_empty_canonical_query() -> None:
    request = AWSRequest(
        "POST", f"http://{HOST}{PATH}", data=b"{}", headers={"Content-Type": "x/y"}
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW):
        SigV4Auth(Credentials(KEY, SECRET), "sqs", "us-east-1").add_auth(request)
    django = django_request(dict(request.headers.items()), query="")
    del django.META["QUERY_STRING"]
    with mock.patch.object(auth.time, "time", return_value=NOW.timestamp()):
        assert auth.verify(django, b"{}") == auth.Caller(KEY, None)


@pytest.fixture
def far_timezone(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The process's local time zone nine hours from UTC (Django sets TZ from TIME_ZONE)."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_x_amz_date_is_utc_whatever_the_local_time_zone(far_timezone: Any) -> None:
    assert time.localtime(NOW.timestamp()).tm_hour == 21
    assert check(sign()) == auth.Caller(KEY, None)
