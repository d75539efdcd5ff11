"""One handler per SQS operation: ``handler(ctx, params) -> reply``, both in the JSON
protocol's shape (the query protocol is translated to and from it).

May import: the rest of ``sqs`` and what ``sqs`` may import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..context import Context
from . import messages, moves, policy, queues, settle

Handler = Callable[[Context, dict[str, Any]], dict[str, Any]]

OPERATIONS: dict[str, Handler] = {
    "CreateQueue": queues.create_queue,
    "GetQueueUrl": queues.get_queue_url,
    "ListQueues": queues.list_queues,
    "DeleteQueue": queues.delete_queue,
    "PurgeQueue": queues.purge_queue,
    "GetQueueAttributes": queues.get_queue_attributes,
    "SetQueueAttributes": queues.set_queue_attributes,
    "TagQueue": queues.tag_queue,
    "UntagQueue": queues.untag_queue,
    "ListQueueTags": queues.list_queue_tags,
    "ListDeadLetterSourceQueues": queues.list_dead_letter_source_queues,
    "AddPermission": policy.add_permission,
    "RemovePermission": policy.remove_permission,
    "SendMessage": messages.send_message,
    "SendMessageBatch": messages.send_message_batch,
    "ReceiveMessage": messages.receive_message,
    "DeleteMessage": settle.delete_message,
    "DeleteMessageBatch": settle.delete_message_batch,
    "ChangeMessageVisibility": settle.change_message_visibility,
    "ChangeMessageVisibilityBatch": settle.change_message_visibility_batch,
    "StartMessageMoveTask": moves.start_message_move_task,
    "ListMessageMoveTasks": moves.list_message_move_tasks,
    "CancelMessageMoveTask": moves.cancel_message_move_task,
}
