"""OpenTelemetry tracing of sends and handler calls (the ``[otel]`` extra).

``configure()`` runs in ``AppConfig.ready()`` and again when ``MQLITE`` changes: with
``MQLITE["TRACING"]`` False, or None with ``opentelemetry-api`` not installed, it
imports nothing and leaves the engine's and the worker's hooks unset (``engine.tracing``,
``worker.tracing``), so tracing costs nothing. Otherwise ``spans`` installs them; they
follow OpenTelemetry's messaging semantic conventions (see ``spans`` and
docs/observability.md).

Spans go to the global tracer provider (``opentelemetry.trace.set_tracer_provider``), or
to the one given to ``configure(tracer_provider=...)`` (tests). While no SDK provider is
configured nothing would be recorded, so nothing is done per send or handler call beyond
asking the API which provider is set.

``remote_parent(headers)`` is for a surface that receives requests (the HTTP API): a
request's W3C ``traceparent``/``tracestate`` headers become the current context for the
spans it makes, unless a span is current already (Django's own OpenTelemetry
instrumentation made the server's span: it wins).

May import: ``engine`` and ``worker`` (their tracing hooks, and the types the spans
read), ``conf`` and ``opentelemetry`` (in ``spans``, ``claims`` and ``carried`` only,
imported once tracing is on); never ``models``, ``api``, ``sqs``, ``admin`` or ``tasks``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..conf import mqlite_settings
from ..engine import tracing as engine_tracing
from ..worker import tracing as worker_tracing

_provider: Any = None


def configure(tracer_provider: Any = None) -> bool:
    """Install or remove the tracing hooks as ``MQLITE["TRACING"]`` says; returns whether
    tracing is on. ``tracer_provider`` replaces the global provider (None: the global)."""
    global _provider
    # A malformed MQLITE is system check E005's to report; tracing takes the default.
    wanted = mqlite_settings.TRACING if isinstance(_user_settings(), dict) else None
    if wanted is False:
        engine_tracing.hook = worker_tracing.hook = None
        return False
    try:
        from . import spans
    except ImportError as exc:
        engine_tracing.hook = worker_tracing.hook = None
        if wanted:
            raise ImproperlyConfigured(
                'MQLITE["TRACING"] is True but OpenTelemetry is not installed: '
                'pip install "django-mqlite[otel]"'
            ) from exc
        return False
    _provider = tracer_provider
    spans.install(tracer_provider)
    return True


@contextmanager
def remote_parent(headers: Mapping[str, str]) -> Iterator[None]:
    """The remote context of a request's ``headers`` (read by the configured propagator,
    W3C trace context by default) is current inside, when tracing is on and no span is
    current already; otherwise nothing is done (with tracing off, nothing imported)."""
    if engine_tracing.hook is None:
        yield
        return
    from . import spans

    token = spans.attach_remote(headers)
    try:
        yield
    finally:
        if token is not None:
            spans.detach(token)


def _user_settings() -> Any:
    from django.conf import settings

    return getattr(settings, "MQLITE", None) or {}


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == "MQLITE":
        configure(_provider)
