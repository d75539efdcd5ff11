"""The consumer registry (``worker/registry.py``) and its decorator; ``django_mqlite.consumers``
is its documented import path."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

import django_mqlite as mq
from django_mqlite import consumers
from django_mqlite.worker import discovery, registry
from django_mqlite.worker.registry import Registry


def handle_a(msg: Any) -> None:
    pass


def handle_b(msg: Any) -> None:
    pass


def test_register_select_and_replace_same_function() -> None:
    r = Registry()
    r.register("a", handle_a, timeout=5)
    r.register("a", handle_a, timeout=7)  # a module imported twice: replaced
    r.register("b", handle_b)
    assert r.queues() == ["a", "b"]
    got = r.get("a")
    assert got is not None and got.func is handle_a and got.timeout == 7.0
    assert list(r.select(None)) == ["a", "b"]
    assert list(r.select(["b"])) == ["b"]
    r.unregister("b")
    assert r.get("b") is None


def test_conflicts_and_bad_options() -> None:
    r = Registry()
    r.register("a", handle_a)
    with pytest.raises(ImproperlyConfigured, match="already has a consumer"):
        r.register("a", handle_b)
    with pytest.raises(ImproperlyConfigured, match="positive number"):
        r.register("c", handle_a, timeout=0)
    with pytest.raises(mq.InvalidArgumentError):
        r.register("bad name", handle_a)
    with pytest.raises(ImproperlyConfigured, match="no consumer is registered for 'zzz'"):
        r.select(["zzz"])


def test_decorator_registers_in_the_global_registry_and_stacks() -> None:
    @mq.consumer("deco-1", timeout=2)
    @mq.consumer("deco-2")
    def both(msg: Any) -> None:
        pass

    try:
        c1, c2 = registry.registry.get("deco-1"), registry.registry.get("deco-2")
        assert c1 is not None and c1.func is both and c1.timeout == 2.0
        assert c2 is not None and c2.func is both and c2.timeout is None
    finally:
        registry.registry.unregister("deco-1")
        registry.registry.unregister("deco-2")


def test_autodiscover_imports_consumers_and_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(discovery, "autodiscover_modules", lambda *names: seen.append(names))
    discovery.autodiscover()
    assert seen == [("consumers", "tasks")]


def test_the_documented_path_names_the_same_registry() -> None:
    for name in consumers.__all__:
        assert getattr(consumers, name) is getattr(registry, name), name
    assert mq.consumer is registry.consumer


def test_importing_the_package_imports_no_models_and_no_worker_runtime() -> None:
    import subprocess
    import sys

    code = (
        "import sys, django_mqlite; "
        "assert 'django_mqlite.models' not in sys.modules; "
        "assert 'django_mqlite.worker.runner' not in sys.modules; "
        "assert callable(django_mqlite.consumer); "
        "from django_mqlite.worker import Worker; "
        "assert Worker.__module__ == 'django_mqlite.worker.runner'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
