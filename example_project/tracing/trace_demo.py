"""A trace from a Django view through a task to a second task, printed by the
OpenTelemetry SDK's console exporter (docs/observability.md shows its output).

Run from the repository root, with the ``[otel]`` and ``[tasks]`` extras installed::

    python example_project/tracing/trace_demo.py          # the console exporter's JSON
    python example_project/tracing/trace_demo.py --tree   # and the spans as a tree
    python example_project/tracing/trace_demo.py --png docs/img/trace-view-task-task.png

The view's server span comes from a two-line middleware here; in a project it comes from
``opentelemetry-instrumentation-django``. Everything else is django-mqlite's own tracing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import django
from django.conf import settings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
DEMO = "example_project.tracing.trace_demo_app"
settings.configure(
    SECRET_KEY="demo",
    ALLOWED_HOSTS=["*"],
    USE_TZ=True,
    ROOT_URLCONF=DEMO,
    MIDDLEWARE=[f"{DEMO}.server_span"],
    INSTALLED_APPS=[
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "django_mqlite",
        *(["django_tasks"] if django.VERSION < (6, 1) else []),
    ],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(Path(tempfile.mkdtemp()) / "demo.sqlite3"),
        }
    },
    MQLITE={"QUEUES": {"orders": {}, "emails": {}}},
    TASKS={
        "default": {
            "BACKEND": "django_mqlite.backends.MQLiteBackend",
            "QUEUES": ["orders", "emails"],
        }
    },
)

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
memory = InMemorySpanExporter()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)

django.setup()

from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from django_mqlite.testing import drain  # noqa: E402

call_command("migrate", verbosity=0)
assert Client().post("/checkout/").status_code == 202
drain("orders", "emails")


def tree() -> None:
    """The finished spans as an indented tree, parent before children."""
    spans = sorted(memory.get_finished_spans(), key=lambda s: s.start_time or 0)
    children: dict[int | None, list] = {}
    for s in spans:
        children.setdefault(s.parent.span_id if s.parent else None, []).append(s)
    keys = ("messaging.destination.name", "messaging.message.id", "messaging.mqlite.outcome")

    def show(span, depth: int) -> None:
        attrs = " ".join(
            f"{k.rsplit('.', 1)[-1]}={span.attributes[k]}" for k in keys if k in span.attributes
        )
        kind = str(span.kind).rsplit(".", 1)[-1]
        ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        print(f"{'    ' * depth}{span.name} [{kind}] {ms:.1f} ms {attrs}".rstrip())
        for child in children.get(span.context.span_id, []):
            show(child, depth + 1)

    print(f"trace {spans[0].context.trace_id:032x}")
    for root in children.get(None, []):
        show(root, 0)


if "--tree" in sys.argv:
    tree()


def waterfall(path: str) -> None:
    """The spans as a trace viewer draws them: one bar per span on a shared time axis,
    children under their parent (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spans = sorted(memory.get_finished_spans(), key=lambda s: s.start_time or 0)
    by_id = {s.context.span_id: s for s in spans}

    def depth(span) -> int:
        d = 0
        while span.parent is not None and span.parent.span_id in by_id:
            span, d = by_id[span.parent.span_id], d + 1
        return d

    t0 = min(s.start_time or 0 for s in spans)
    colours = {"SERVER": "#4c72b0", "PRODUCER": "#dd8452", "CONSUMER": "#55a868"}
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(spans) + 1.0))
    for row, span in enumerate(spans):
        start = ((span.start_time or 0) - t0) / 1e6
        width = max(((span.end_time or 0) - (span.start_time or 0)) / 1e6, 0.3)
        kind = str(span.kind).rsplit(".", 1)[-1]
        ax.barh(row, width, left=start, color=colours.get(kind, "#8172b2"), height=0.6)
        outcome = span.attributes.get("messaging.mqlite.outcome")
        label = "  " * depth(span) + span.name + (f"  ({outcome})" if outcome else "")
        ax.text(start + width + 0.5, row, f"{label}  [{kind}]", va="center", fontsize=9)
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds since the request began")
    ax.set_title(f"trace {spans[0].context.trace_id:032x}", fontsize=10)
    end = max(((s.end_time or 0) - t0) / 1e6 for s in spans)
    ax.set_xlim(0, end * 1.9)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if "--png" in sys.argv:
    waterfall(sys.argv[sys.argv.index("--png") + 1])
