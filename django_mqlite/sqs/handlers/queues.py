"""Queue operations: create, find, list, delete, purge, attributes, tags, DLQ sources."""

from __future__ import annotations

import base64
import re
from typing import Any

import django_mqlite as mq

from .. import access, store
from ..context import Context, integer, load, mapping, strings, text
from ..errors import SQSError, invalid, missing
from . import queue_attributes as qa

_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,80}")
#: SQS's tag quotas: 50 tags a queue, keys of 1-128 characters, values of up to 256.
MAX_TAGS = 50
MAX_TAG_KEY = 128
MAX_TAG_VALUE = 256


def _check_name(name: str) -> None:
    base = name[: -len(".fifo")] if name.endswith(".fifo") else name
    if len(name) > 80 or not _NAME_RE.fullmatch(base):
        raise invalid(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
        )


def create_queue(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    # An empty name is an invalid one, as on SQS (not a missing one).
    name = text(p, "QueueName", required=p.get("QueueName") is None)
    _check_name(name)
    ctx.allow("manage", name)
    attrs = {str(k): v for k, v in mapping(p, "Attributes").items()}
    fifo = name.endswith(".fifo")
    if fifo and "FifoQueue" not in attrs:
        raise invalid("A queue whose name ends in .fifo needs the attribute FifoQueue=true.")
    engine, stored = qa.parse(ctx, name, attrs, creating=True)
    tags = _tags(mapping(p, "tags"))
    try:
        info = store.load(name)
    except mq.QueueNotFoundError:
        info = None
    if info is not None:
        if info.fifo != fifo or not qa.matches(info, engine, stored):
            raise SQSError(
                "QueueNameExists",
                "A queue already exists with the same name and different attributes.",
            )
        return {"QueueUrl": ctx.url(name)}
    options = {**qa.CREATE_DEFAULTS, **engine}
    options["ordering"] = "group_fifo" if fifo else "standard"
    mq.create_queue(name, **options)
    store.save(name, attributes=stored, tags=tags)
    return {"QueueUrl": ctx.url(name)}


def _tags(tags: dict[Any, Any]) -> dict[str, str]:
    ok = len(tags) <= MAX_TAGS and all(
        isinstance(k, str)
        and 0 < len(k) <= MAX_TAG_KEY
        and isinstance(v, str)
        and len(v) <= MAX_TAG_VALUE
        for k, v in tags.items()
    )
    if not ok:
        raise invalid(
            f"Tags are at most {MAX_TAGS} keys of 1-{MAX_TAG_KEY} characters with string "
            f"values of up to {MAX_TAG_VALUE}."
        )
    return dict(tags)


def get_queue_url(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    name = text(p, "QueueName", required=True)
    ctx.allow("read", name)
    load(name)
    return {"QueueUrl": ctx.url(name)}


def _page(
    ctx: Context, names: list[str], p: dict[str, Any], key: str, *, paged: bool
) -> dict[str, Any]:
    """Names in order after ``NextToken``, at most ``MaxResults`` of them, as URLs."""
    token = text(p, "NextToken")
    if token:
        try:
            after = base64.urlsafe_b64decode(token.encode()).decode()
        except (ValueError, UnicodeDecodeError):
            raise invalid("Invalid NextToken.") from None
        names = [n for n in names if n > after]
    limit = integer(p, "MaxResults", 1, 1000, 1000)
    out: dict[str, Any] = {}
    if names[:limit] or key == "queueUrls":
        out[key] = [ctx.url(n) for n in names[:limit]]
    if paged and len(names) > limit:
        out["NextToken"] = base64.urlsafe_b64encode(names[limit - 1].encode()).decode()
    return out


def list_queues(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    prefix = text(p, "QueueNamePrefix")
    ctx.allow("read", None)
    names = [
        q.name
        for q in mq.list_queues()
        if q.name.startswith(prefix) and access.allowed(ctx.user, "read", q.name)
    ]
    return _page(ctx, sorted(names), p, "QueueUrls", paged="MaxResults" in p)


def delete_queue(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    mq.delete_queue(info.name, force=True)
    store.forget(info.name)
    return {}


def purge_queue(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    mq.purge_everything(info.name)  # in-flight messages too, as SQS purges them
    return {}


def get_queue_attributes(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "read")
    attrs = qa.render(ctx, info, strings(p, "AttributeNames"))
    return {"Attributes": attrs} if attrs else {}


def set_queue_attributes(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    attrs = {str(k): v for k, v in mapping(p, "Attributes").items()}
    if not attrs:
        raise SQSError("MissingParameter", "The request must contain the parameter Attributes.")
    engine, stored = qa.parse(ctx, info.name, attrs, creating=False)
    qa.update_engine(info.name, engine)
    store.save(info.name, attributes={**info.attributes, **stored})
    return {}


def tag_queue(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    given = mapping(p, "Tags")
    if not given:
        raise missing("Tags")
    if len({**info.tags, **given}) > MAX_TAGS:
        raise invalid(f"Too many tags added for queue {info.name}.")
    tags = _tags({**info.tags, **given})
    store.save(info.name, tags=tags)
    return {}


def untag_queue(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "manage")
    drop = set(strings(p, "TagKeys"))
    if not drop:
        raise invalid(f"Tag keys must be between 1 and {MAX_TAG_KEY} characters in length.")
    if len(drop) > MAX_TAGS:
        raise invalid(f"TagKeys must name 1 to {MAX_TAGS} tags.")
    store.save(info.name, tags={k: v for k, v in info.tags.items() if k not in drop})
    return {}


def list_queue_tags(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "read")
    return {"Tags": info.tags} if info.tags else {}


def list_dead_letter_source_queues(ctx: Context, p: dict[str, Any]) -> dict[str, Any]:
    info = ctx.queue(p, "read")
    names = sorted(
        q.name
        for q in mq.list_queues()
        if q.forward_dead_letters_to == info.name and access.allowed(ctx.user, "read", q.name)
    )
    return _page(ctx, names, p, "queueUrls", paged=True)
