"""The fault suite's history checker: what the producers logged as committed, what the
consumers logged as delivered, the side effects and business rows in the database, the
engine's settlement receipts and counters, read after the drain.

Each check returns a list of violations (an empty list passes):

- ``lost``: a committed send (logged, or a business row) whose message no delivery
  completed;
- ``phantom``: a delivered message with no business row (a rolled-back send delivered);
- ``unexplained_duplicates``: a side effect no fault explains: one that ran after its
  message had been completed by another delivery (a stale start), or twice under one
  lease; a start after a freeze of its worker that came between the start-margin check
  and the handler's first line is explained by that freeze. (Other repeats are the
  at-least-once contract at work: a delivery whose worker
  was killed, frozen past its lease, failed or lost its completion to a database fault);
- ``stale_settlements``: the lease oracle of ``tests/reliability/harness.py`` (never two
  live leases, nothing delivered after completion, exactly one completing delivery, each
  lease settled at most once);
- ``group_order``: within a group, a delivery of a message that started before the
  group's previous message was completed;
- ``delivery_bound``: a delivery count over the queue's ``max_delivery_count``;
- ``totals``: the lifetime counters' identities (``harness.check_totals``);
- ``stuck_locks``: a message still locked (or live at all) after the drain;
- ``dead_lettered``: an ordinary message dead-lettered (nothing here asks for one);
- ``tasks``: a task whose final state is not recorded (not SUCCESSFUL or FAILED, or an
  attempt without its error).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from django.db import connection

import django_mqlite as mq

from ..reliability.harness import check_totals, lease_violations, live_messages, receipts

QUEUES = ("chaos", "chaos-groups")


def read_lines(path: Path) -> list[dict[str, Any]]:
    """JSON lines; one cut short by a SIGKILL is skipped."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def table(sql: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchall())


class History:
    def __init__(
        self,
        sends: list[dict[str, Any]],
        deliveries: list[dict[str, Any]],
        freezes: list[dict[str, Any]] = (),  # type: ignore[assignment]
    ) -> None:
        self.sends = sends
        self.freezes = list(freezes)
        self.deliveries = [d for d in deliveries if d.get("event") == "start"]
        self.rows = {r[0] for r in table("SELECT ref FROM reliability_order")}
        self.effects = table("SELECT ref, token, delivery, pid FROM reliability_effect")
        self.settled = receipts()
        self.completing = {
            d["token"]
            for d in self.deliveries
            if any(v == "complete" for v, _t in self.settled.get(d["token"], []))
        }
        self.by_ref: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for d in self.deliveries:
            self.by_ref[d["ref"]].append(d)

    def completed_at(self, ref: str) -> int | None:
        times = [
            t
            for d in self.by_ref.get(ref, [])
            for v, t in self.settled.get(d["token"], [])
            if v == "complete"
        ]
        return min(times) if times else None

    # -- the checks ---------------------------------------------------------------------

    def lost(self) -> list[str]:
        committed = {s["ref"] for s in self.sends} | self.rows
        return sorted(r for r in committed if self.completed_at(r) is None)

    def phantom(self) -> list[str]:
        return sorted(r for r in self.by_ref if r not in self.rows)

    def unexplained_duplicates(self) -> list[str]:
        bad = []
        per_token = Counter(e[1] for e in self.effects)
        bad += [f"lease {t}: its side effect ran {n} times" for t, n in per_token.items() if n > 1]
        for ref, ds in self.by_ref.items():
            done = self.completed_at(ref)
            for d in ds:
                if done is None or d["token"] in self.completing or d["start_ms"] <= done:
                    continue
                if self.frozen_between_check_and_start(d):
                    continue
                bad.append(
                    f"{ref}: delivery {d['delivery']} (pid {d['pid']}) started "
                    f"{d['start_ms'] - done} ms after the message was completed "
                    f"(start margin checked at {d.get('checked_ms')}, started at "
                    f"{d['start_ms']}; {self.last_freeze_before(d)})"
                )
        return bad

    def last_freeze_before(self, d: dict[str, Any]) -> str:
        """The last freeze of ``d``'s process that ended before its start, said for the
        report (what a diagnosis of an unexplained start needs first)."""
        before = [
            f for f in self.freezes if d["pid"] in f["pids"] and f["resumed_ms"] <= d["start_ms"]
        ]
        if not before:
            return "its process was never frozen before it"
        f = max(before, key=lambda f: f["resumed_ms"])
        return f"its process was frozen from {f['stopped_ms']} to {f['resumed_ms']}"

    def frozen_between_check_and_start(self, d: dict[str, Any]) -> bool:
        """Whether the nemesis froze ``d``'s worker process after the worker checked
        its start margin and before the handler started (the one start after a
        completion elsewhere that the worker cannot prevent: a process frozen between
        any check and the handler's first line). ``checked_ms`` is the clock reading the
        worker checked the lease against, so a freeze that lands inside the check, after
        that reading, is one of these too."""
        checked = d.get("checked_ms")
        return checked is not None and any(
            d["pid"] in f["pids"]
            and checked <= f["stopped_ms"]
            and d["start_ms"] >= f["resumed_ms"]
            for f in self.freezes
        )

    def frozen_starts(self) -> int:
        """Starts after a completion elsewhere that a freeze between the start-margin
        check and the start explains (reported, not failed)."""
        return sum(
            1
            for ref, ds in self.by_ref.items()
            if (done := self.completed_at(ref)) is not None
            for d in ds
            if d["token"] not in self.completing
            and d["start_ms"] > done
            and self.frozen_between_check_and_start(d)
        )

    def duplicates(self) -> int:
        """Side effects beyond one per message (explained or not)."""
        per_ref = Counter(e[0] for e in self.effects)
        return sum(n - 1 for n in per_ref.values() if n > 1)

    def stale_settlements(self, lock_ms: int) -> list[str]:
        bad = lease_violations(self.deliveries, self.settled, lock_ms)
        bad += [
            f"lease {t} settled {len(v)} times: {v}" for t, v in self.settled.items() if len(v) > 1
        ]
        return bad

    def group_order(self) -> list[str]:
        groups: dict[str, list[int]] = defaultdict(list)
        ref_of: dict[int, str] = {}
        for d in self.deliveries:
            if d.get("group"):
                ref_of[d["seq"]] = d["ref"]
                if d["seq"] not in groups[d["group"]]:
                    groups[d["group"]].append(d["seq"])
        bad = []
        for group, seqs in groups.items():
            for a, b in itertools.pairwise(sorted(seqs)):
                done = self.completed_at(ref_of[a])
                early = [d for d in self.by_ref[ref_of[b]] if done is None or d["start_ms"] < done]
                bad += [
                    f"{group}: #{b} delivery {d['delivery']} started before #{a} completed"
                    for d in early
                ]
        return bad

    def delivery_bound(self) -> list[str]:
        bound = {q: mq.get_queue(q).max_delivery_count for q in QUEUES}
        return [
            f"{d['ref']}: delivery {d['delivery']} > {bound[d['queue']]}"
            for d in self.deliveries
            if d["delivery"] > bound[d["queue"]]
        ]


def totals() -> dict[str, dict[str, int]]:
    return {q: check_totals(q) for q in QUEUES}


LIVE = ("active", "locked", "deferred", "scheduled")


def stuck_locks() -> list[str]:
    """Messages still live after the drain (a lock nobody settles or reclaims)."""
    return [f"{q} #{m.seq} {m.state}" for q in QUEUES for m in live_messages(q) if m.state in LIVE]


def live() -> int:
    return sum(mq.stats(q).counts[s] for q in QUEUES for s in LIVE)


def dead_lettered() -> list[str]:
    return [
        f"{q} #{m.seq}: {m.dead_letter_reason}"
        for q in QUEUES
        for m in mq.peek(q, state="dead_lettered", limit=1000)
    ]


def unrecorded_tasks(results: list[Any]) -> list[str]:
    from django_mqlite.tasks.compat import TaskResultStatus

    bad = []
    for r in results:
        r.refresh()
        if r.status not in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED):
            bad.append(f"task {r.id}: {r.status}")
            continue
        failed_attempts = r.attempts - (r.status == TaskResultStatus.SUCCESSFUL)
        if len(r.errors) != failed_attempts or r.attempts > 3:
            bad.append(f"task {r.id}: {r.status}, {r.attempts} attempts, {len(r.errors)} errors")
    return bad
