"""SQS errors, and the one place where django-mqlite's errors become SQS ones."""

from __future__ import annotations

import django_mqlite as mq

# Codes whose legacy (query-protocol) name differs from the JSON one.
_LEGACY = {
    "QueueDoesNotExist": "AWS.SimpleQueueService.NonExistentQueue",
    "QueueNameExists": "QueueAlreadyExists",
}
_PREFIXED = {
    "PurgeQueueInProgress",
    "QueueDeletedRecently",
    "BatchEntryIdsNotDistinct",
    "BatchRequestTooLong",
    "EmptyBatchRequest",
    "InvalidBatchEntryId",
    "TooManyEntriesInBatchRequest",
    "MessageNotInflight",
    "UnsupportedOperation",
}


class SQSError(Exception):
    """An error reply: the SQS code, a message, the HTTP status, and who is at fault."""

    def __init__(self, code: str, message: str, status: int = 400, *, sender: bool = True):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.sender = sender

    @property
    def legacy_code(self) -> str:
        """The code the query protocol (and the ``x-amzn-query-error`` header) carries."""
        if self.code in _LEGACY:
            return _LEGACY[self.code]
        if self.code in _PREFIXED:
            return f"AWS.SimpleQueueService.{self.code}"
        return self.code

    @property
    def fault(self) -> str:
        return "Sender" if self.sender else "Receiver"


def invalid(message: str) -> SQSError:
    return SQSError("InvalidParameterValue", message)


def missing(name: str) -> SQSError:
    return SQSError("MissingParameter", f"The request must contain the parameter {name}.")


def no_queue() -> SQSError:
    return SQSError("QueueDoesNotExist", "The specified queue does not exist.")


def from_mqlite(exc: mq.MQLiteError) -> SQSError:
    """The SQS reply for an error the public API raised."""
    if isinstance(exc, mq.QueueNotFoundError):
        return no_queue()
    if isinstance(exc, mq.GroupRequiredError):
        return missing("MessageGroupId")
    if isinstance(exc, mq.LockLostError):
        return SQSError("MessageNotInflight", "The message is not in flight under this handle.")
    if isinstance(exc, mq.InvalidArgumentError | mq.MessageTooLargeError):
        return invalid(exc.message)
    if exc.code == "already_exists":
        return SQSError("QueueNameExists", exc.message)
    return SQSError("InternalError", exc.message, 500, sender=False)
