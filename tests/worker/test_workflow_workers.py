"""Chains and dependencies drained by real worker processes, one of them SIGKILLed
mid-run: every chain step is enqueued exactly once and in order (each carries its
predecessor's result), though the killed worker's steps came back by its stale
heartbeat and ran again; every dependent is released exactly when its dependencies
all completed, and dead-lettered ``DependencyFailed`` when one was rejected."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST_HEARTBEAT = {"HEARTBEAT_INTERVAL": 0.2, "WORKER_STALE_AFTER": 1.0, "REAP_INTERVAL": 0.2}
CHAINS = 15
STEPS = 4
DEPENDENTS = 20


def test_sigkill_mid_chain_loses_and_repeats_no_step(workers: Any) -> None:
    mq.create_queue("work", lock_duration=600)
    mq.create_queue("slow")  # the worker project's other consumer
    mq.create_queue("held")  # no consumer: released dependents stay to be counted
    for c in range(CHAINS):
        steps = [mq.Step("work", {"sleep": 0.2, "chain": c, "step": k}) for k in range(STEPS)]
        mq.Chain(steps).send()
    rng = random.Random(3)
    ups = [mq.send("work", {"sleep": 0.05}) for _ in range(20)]
    poison = mq.send("work", {"reject": "poison"})
    deps: dict[int, list[int]] = {}
    for i in range(DEPENDENTS):
        wanted = rng.sample(ups, 3) + ([poison] if i % 4 == 0 else [])
        deps[mq.send("held", i, depends_on=wanted)] = wanted
    victim = workers.start("--concurrency", "4", overrides=FAST_HEARTBEAT)
    # Killed while it holds steps (only it runs, so every locked message is its own): a
    # kill between its batches would leave nothing behind, and test nothing.
    wait_for(
        lambda: len(workers.events("step")) >= 8 and mq.stats("work").counts["locked"] > 0,
        timeout=60,
        what="eight steps run, and steps held",
    )
    victim.kill()
    victim.wait()
    survivor = workers.start("--concurrency", "4", overrides=FAST_HEARTBEAT)

    def finished() -> bool:
        last = {e["chain"] for e in workers.events("step") if e["step"] == STEPS - 1}
        held = mq.stats("held").counts
        return (
            len(last) == CHAINS
            and held["waiting"] == 0
            and mq.stats("work").counts["active"] + mq.stats("work").counts["locked"] == 0
        )

    wait_for(finished, timeout=120, what="every chain and dependent")
    code, _out, err = workers.stop(survivor)
    assert code == 0, err
    seqs: dict[tuple[int, int], set[int]] = defaultdict(set)
    for e in workers.events("step"):
        seqs[(e["chain"], e["step"])].add(e["seq"])
        k = e["step"]
        assert e["previous"] == (None if k == 0 else {"chain": e["chain"], "step": k - 1})
    assert len(seqs) == CHAINS * STEPS
    assert all(len(s) == 1 for s in seqs.values())  # each step enqueued once
    active = {p.seq for p in mq.peek("held", state="active", limit=100)}
    dead = {p.seq: p for p in mq.peek("held", state="dead_lettered", limit=100)}
    for seq, wanted in deps.items():
        if poison in wanted:
            assert dead[seq].dead_letter_reason == "DependencyFailed"
        else:
            assert seq in active
    assert mq.stats("work").totals["reclaimed"] >= 1  # the kill did leave steps behind
