"""The query protocol of older SDKs and kombu: form-encoded ``Action=...`` with
flattened parameters (``Attribute.1.Name``, ``MessageAttribute.1.Value.StringValue``,
``SendMessageBatchRequestEntry.1.Id``...), replies in XML.

Parameters are turned into the JSON protocol's shape, so one set of handlers serves
both protocols; replies are rendered back from that shape.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from django.http import HttpRequest, HttpResponse

from .errors import SQSError

NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
CONTENT_TYPE = "text/xml"
_LISTS = {
    "AttributeName": "AttributeNames",
    "MessageSystemAttributeName": "MessageSystemAttributeNames",
    "MessageAttributeName": "MessageAttributeNames",
    "TagKey": "TagKeys",
    "AWSAccountId": "AWSAccountIds",
    "ActionName": "Actions",
    "StringListValue": "StringListValues",
    "BinaryListValue": "BinaryListValues",
}
_NAME_VALUE_MAPS = {
    "Attribute": "Attributes",
    "MessageAttribute": "MessageAttributes",
    "MessageSystemAttribute": "MessageSystemAttributes",
}
#: The deepest dotted parameter name the protocol uses is
#: ``SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1``; far
#: deeper names, or more parameters than any request needs, are refused as such.
MAX_KEY_PARTS = 12
MAX_FIELDS = 4000
_ENTRY_NAMES = {
    "SendMessageBatch": "SendMessageBatchResultEntry",
    "DeleteMessageBatch": "DeleteMessageBatchResultEntry",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibilityBatchResultEntry",
}


def _tree(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for key, value in pairs:
        node = root
        parts = key.split(".", MAX_KEY_PARTS)
        if len(parts) > MAX_KEY_PARTS:
            raise SQSError("InvalidParameterValue", f"Parameter {key[:80]}... is too deep.")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise SQSError("InvalidParameterValue", f"Parameter {key} conflicts with another.")
            node = child
        node[parts[-1]] = value
    return root


def _ordered(node: Any) -> list[Any]:
    if not isinstance(node, dict):
        raise SQSError("InvalidParameterValue", "A list parameter is not numbered.")
    try:
        return [node[k] for k in sorted(node, key=int)]
    except ValueError:
        raise SQSError("InvalidParameterValue", "A list parameter is not numbered.") from None


def _pairs(node: Any, name_key: str) -> list[tuple[str, Any]]:
    """``X.N.Name`` / ``X.N.Value`` (or ``Key`` / ``Value``) entries as pairs; a name that
    is not a plain value (``X.1.Name.y=...``) is refused."""
    pairs = []
    for item in _ordered(node):
        if not isinstance(item, dict):
            continue
        name = item.get(name_key)
        if not isinstance(name, str):
            raise SQSError("InvalidParameterValue", f"Each entry needs a {name_key}.")
        pairs.append((name, item.get("Value")))
    return pairs


def _normalize(node: dict[str, Any], op: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _LISTS:
            out[_LISTS[key]] = _ordered(value)
        elif key in _NAME_VALUE_MAPS:
            pairs = _pairs(value, "Name")
            out[_NAME_VALUE_MAPS[key]] = {
                name: _normalize(v, op) if isinstance(v, dict) else v for name, v in pairs
            }
        elif key == "Tag":
            tags = {name: "" if v is None else v for name, v in _pairs(value, "Key")}
            out["tags" if op == "CreateQueue" else "Tags"] = tags
        elif key.endswith("BatchRequestEntry"):
            out["Entries"] = [_normalize(e, op) for e in _ordered(value) if isinstance(e, dict)]
        elif isinstance(value, dict):
            out[key] = _normalize(value, op)
        else:
            out[key] = value
    return out


def parse(request: HttpRequest, body: bytes) -> tuple[str, dict[str, Any]]:
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FIELDS)
        pairs += parse_qsl(
            request.META.get("QUERY_STRING", ""), keep_blank_values=True, max_num_fields=MAX_FIELDS
        )
    except UnicodeDecodeError:
        raise SQSError("InvalidParameterValue", "The request body is not UTF-8.") from None
    except ValueError:  # max_num_fields
        raise SQSError("InvalidParameterValue", "The request has too many parameters.") from None
    params = dict(pairs)
    op = params.pop("Action", "")
    if not op:
        raise SQSError("MissingAction", "The request must contain the parameter Action.")
    skip = {"Version", "AWSAccessKeyId", "Signature", "SignatureMethod", "SignatureVersion"}
    return op, _normalize(_tree([(k, v) for k, v in pairs if k not in skip | {"Action"}]), op)


def _el(name: str, inner: str) -> str:
    return f"<{name}>{inner}</{name}>"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return escape(str(value))


def _attribute_value(value: dict[str, Any]) -> str:
    inner = ""
    for key, item in value.items():
        if key in ("StringListValues", "BinaryListValues"):
            inner += "".join(_el(key[:-1], _value(v)) for v in item)
        else:
            inner += _el(key, _value(item))
    return inner


def _render(key: str, value: Any, op: str) -> str:
    if key in ("QueueUrls", "queueUrls"):
        return "".join(_el("QueueUrl", _value(u)) for u in value)
    if key == "Attributes":
        return "".join(
            _el("Attribute", _el("Name", _value(k)) + _el("Value", _value(v)))
            for k, v in value.items()
        )
    if key == "Tags":
        return "".join(
            _el("Tag", _el("Key", _value(k)) + _el("Value", _value(v))) for k, v in value.items()
        )
    if key == "MessageAttributes":
        return "".join(
            _el("MessageAttribute", _el("Name", _value(k)) + _el("Value", _attribute_value(v)))
            for k, v in value.items()
        )
    if key in ("Messages", "Successful", "Failed", "Results"):
        element = {
            "Messages": "Message",
            "Failed": "BatchResultErrorEntry",
            "Results": "ListMessageMoveTasksResultEntry",
        }.get(key) or _ENTRY_NAMES.get(op, "ResultEntry")
        return "".join(_el(element, _fields(item, op)) for item in value)
    return _el(key, _value(value))


def _fields(data: dict[str, Any], op: str) -> str:
    return "".join(_render(k, v, op) for k, v in data.items())


def reply(op: str, data: dict[str, Any], request_id: str) -> HttpResponse:
    result = _el(f"{op}Result", _fields(data, op)) if data else ""
    meta = _el("ResponseMetadata", _el("RequestId", request_id))
    xml = f'<?xml version="1.0"?><{op}Response xmlns="{NAMESPACE}">{result}{meta}</{op}Response>'
    response = HttpResponse(xml, content_type=CONTENT_TYPE)
    response["x-amzn-RequestId"] = request_id
    return response


def error(exc: SQSError, request_id: str) -> HttpResponse:
    detail = (
        _el("Type", exc.fault) + _el("Code", exc.legacy_code) + _el("Message", _value(exc.message))
    )
    xml = (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{NAMESPACE}">'
        f"{_el('Error', detail + '<Detail/>')}{_el('RequestId', request_id)}</ErrorResponse>"
    )
    response = HttpResponse(xml, content_type=CONTENT_TYPE, status=exc.status)
    response["x-amzn-RequestId"] = request_id
    return response
