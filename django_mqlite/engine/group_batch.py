"""Group batches: the pick of a claim that takes, behind each group's head, the active
messages that follow it in its group (``receive(..., group_batch=True)``, what an SQS
FIFO receive asks; the rule is in ``claim``'s docstring). The claim wraps this pick in
its own statement, as it wraps the plain one."""

from __future__ import annotations

from .dialects import Dialect
from .lines import LIVE_SQL

#: Above every seq: the end of a line that has no end within reach.
_NO_END = 2**63 - 1


def group_pick(dialect: Dialect, heads: str) -> str:
    """A group batch's pick (see the module's docstring): ``heads`` (the plain pick, with
    its queue, order key and priority) and the active messages behind each head in its
    line, within the next ``max_messages - 1`` live ones (``line_end``) and before the
    first that is not active (``stop``), taken by head in claim order, then by seq, up
    to ``max_messages``. Each head's window is found first, so every follower is read
    from the line index as a range of at most ``max_messages`` rows, however deep the
    group. Parameters: the heads', then queue id, max - 2, queue id, queue id, now, max."""
    line = f"FROM mqlite_message {{a}} {dialect.index_hint('mqlite_msg_line')}"

    def behind(a: str, head: str) -> str:
        return (
            f"{a}.queue_id = %s AND {a}.order_key = {head}.order_key AND {a}.blocked = 1"
            f" AND {a}.seq > {head}.seq AND {a}.state IN {LIVE_SQL}"
        )

    window = (
        f"SELECT w.seq {line.format(a='w')} WHERE {behind('w', 'h')}"
        " ORDER BY w.seq LIMIT 1 OFFSET %s"
    )
    stop = (
        f"SELECT MIN(x.seq) {line.format(a='x')} WHERE {behind('x', 'e')}"
        " AND x.state <> 'active' AND x.seq <= e.line_end"
    )
    return (
        "SELECT seq FROM mqlite_message WHERE seq IN ("
        f"WITH h AS ({heads}), "
        "e AS (SELECT h.seq, h.order_key, h.priority, "
        f"COALESCE(({window}), {_NO_END}) AS line_end FROM h), "
        "s AS (SELECT e.seq, e.order_key, e.priority, e.line_end, "
        f"COALESCE(({stop}), {_NO_END}) AS stop FROM e), "
        "c AS (SELECT seq, priority AS head_priority, seq AS head_seq FROM s UNION ALL "
        "SELECT f.seq, s.priority, s.seq FROM s JOIN mqlite_message f "
        f"ON {behind('f', 's')} AND f.seq <= s.line_end AND f.seq < s.stop "
        "AND f.state = 'active' AND (f.expires_at IS NULL OR f.expires_at > %s)) "
        "SELECT seq FROM c ORDER BY head_priority DESC, head_seq, seq LIMIT %s)"
    )
