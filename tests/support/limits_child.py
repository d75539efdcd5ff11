"""A consumer process for the limit tests: claims from one queue until it has been
empty for a while, and records each claim and completion as a JSON line (real time
before and after each call), for the parent's oracle.

Run as ``python -m tests.support.limits_child QUEUE LOG HOLD_S`` with the worker project's
settings in the environment (see ``tests.support.procs.Workers.env``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time


def main() -> None:
    import django

    django.setup()
    import django_mqlite as mq

    queue, log, hold_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
    rng = random.Random(os.getpid())
    out = open(log, "a", buffering=1)
    empty_since = time.monotonic()
    while time.monotonic() - empty_since < 3.0:
        before = time.time()
        got = mq.receive(queue, max_messages=rng.choice([1, 3, 8]))
        after = time.time()
        if not got:
            time.sleep(0.01)
            continue
        empty_since = time.monotonic()
        seqs = [m.seq for m in got]
        out.write(json.dumps({"claim": seqs, "before": before, "after": after}) + "\n")
        time.sleep(hold_s)
        for m in got:
            done_before = time.time()
            m.complete()
            out.write(json.dumps({"done": m.seq, "before": done_before}) + "\n")
    out.close()


if __name__ == "__main__":
    main()
