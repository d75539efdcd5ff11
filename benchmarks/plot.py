"""The two PNGs of ``docs/benchmark.md``, drawn from a results file (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

THROUGHPUT = [  # (label, mqlite key, django-tasks-db key)
    ("produce single", "produce_single", "produce_single"),
    ("produce batch 256", "produce_batch_256", "produce_batch_256"),
    ("drain, 1 worker", "drain_1proc", "drain_1proc"),
    ("drain, 2 workers", "drain_2proc", "drain_2proc"),
    ("end to end", "end_to_end", "end_to_end"),
]


def flatten(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"mqlite.drain_1proc": summary, ...}`` of one database's results."""
    out: dict[str, dict[str, Any]] = {}
    for group in results.values():
        if isinstance(group, dict):
            out.update({k: v for k, v in group.items() if isinstance(v, dict)})
    return out


def draw(data: dict[str, Any], outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    dbs = list(data["results"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for db in dbs:
        flat = flatten(data["results"][db])
        for who, style in (("mqlite", "-o"), ("tasks_db", "--s")):
            points = sorted(
                (v["backlog"], v["median"], v["min"], v["max"])
                for k, v in flat.items()
                if k.startswith(f"{who}.claim_")
                and "backlog" in v
                and "median" in v
                and not k.endswith("behind_blocked")
            )
            if points:
                xs, ys, lo, hi = zip(*points, strict=True)
                err = [
                    [y - a for y, a in zip(ys, lo, strict=True)],
                    [b - y for y, b in zip(ys, hi, strict=True)],
                ]
                name = "django-mqlite" if who == "mqlite" else "django-tasks-db"
                ax.errorbar(xs, ys, yerr=err, fmt=style, capsize=3, label=f"{name} ({db})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("backlog (messages)")
    ax.set_ylabel("claim latency, median (ms)")
    ax.set_title("Claim latency against backlog")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(outdir / "bench-claim-latency.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(dbs), figsize=(6 * len(dbs), 4.5), squeeze=False)
    for ax, db in zip(axes[0], dbs, strict=True):
        flat = flatten(data["results"][db])
        labels = [label for label, _, _ in THROUGHPUT]
        ours = [flat.get(f"mqlite.{k}", {}).get("median", 0) for _, k, _ in THROUGHPUT]
        peer = [flat.get(f"tasks_db.{k}", {}).get("median", 0) for _, _, k in THROUGHPUT]
        ys = range(len(labels))
        ax.barh([y + 0.2 for y in ys], ours, height=0.4, label="django-mqlite")
        ax.barh([y - 0.2 for y in ys], peer, height=0.4, label="django-tasks-db")
        ax.set_yticks(list(ys), labels)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("messages (tasks) per second, median")
        ax.set_title(db)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Throughput per scenario")
    fig.tight_layout()
    fig.savefig(outdir / "bench-throughput.png", dpi=110)
    plt.close(fig)
