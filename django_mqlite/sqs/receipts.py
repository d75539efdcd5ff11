"""Receipt handles and message ids.

A receipt handle carries the message's seq and the lock token of the receive that handed
it out, so it is new on every receive and every settlement made with it is fenced on
that receive's token: an old handle can never delete or extend the message that a later
receive now holds. As on SQS a handle outlives its visibility timeout until the next
receive: the SQS settlements are the engine's lapsed ones (``lapsed=True``), which act
while the token is still the message's (``handlers/settle.py`` says what each answers).

A message id is derived from the seq, so a deduplicated resend and a dead letter moved
to another queue keep the id they had.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid

from .errors import SQSError

_PREFIX = "mq1."
_PAYLOAD_RE = re.compile(r"([1-9][0-9]{0,18}):([A-Za-z0-9-]{1,64})")


def encode(seq: int, token: str) -> str:
    return _PREFIX + base64.urlsafe_b64encode(f"{seq}:{token}".encode()).decode()


def decode(handle: str) -> tuple[int, str]:
    """(seq, lock token); ``ReceiptHandleIsInvalid`` when it is not one of ours."""
    match = None
    if handle.startswith(_PREFIX):
        try:
            payload = base64.urlsafe_b64decode(handle[len(_PREFIX) :].encode()).decode()
            match = _PAYLOAD_RE.fullmatch(payload)
        except (binascii.Error, ValueError, UnicodeDecodeError):
            match = None
    if match is None:
        raise SQSError(
            "ReceiptHandleIsInvalid",
            f'The input receipt handle "{handle}" is not a valid receipt handle.',
        )
    return int(match.group(1)), match.group(2)


def message_id(seq: int) -> str:
    # seq 0 is a FIFO resend that was dropped as a duplicate of a different body.
    return str(uuid.UUID(int=seq)) if seq > 0 else str(uuid.uuid4())
