"""A trace from a Django view through a task to a second task, printed by the
OpenTelemetry SDK's console exporter (docs/observability.md shows its output).

Run from the repository root, with the ``[otel]`` and ``[tasks]`` extras installed::

    python example_project/tracing/trace_demo.py          # the console exporter's JSON
    python example_project/tracing/trace_demo.py --tree   # and the spans as a tree

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
