"""The code samples in the docs run: each page's ``python`` blocks are executed in order,
in one namespace, against a fresh database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXECUTED_PAGES = ["README.md", "python-api.md", "migrating.md", "faq.md"]
#: The README's quick start shows files of a project (``# settings.py (append)``).
PROJECT_FILE = re.compile(r"# (?:settings|urls|shop/\w+)\.py\b")


def blocks(page: str) -> list[str]:
    path = DOCS.parent / page if page == "README.md" else DOCS / page
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.django_db
@pytest.mark.parametrize("page", EXECUTED_PAGES)
def test_page_samples_run(page: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = blocks(page)
    assert code, f"{page} has no python blocks"
    namespace: dict[str, object] = {}
    for block in code:
        if page == "README.md" and PROJECT_FILE.match(block):
            continue  # a file of a new project: tests/test_wheel_install.py runs those
        exec(compile(block, f"{page}", "exec"), namespace)


ALL_PAGES = ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_python_block_compiles(page: str) -> None:
    """Fragments that use the reader's own models (``Order``, ``user``) or settings are
    not run, but every one of them is valid Python."""
    import ast
    import textwrap

    for i, block in enumerate(blocks(page)):
        compile(
            textwrap.dedent(block), f"{page}[{i}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )


# Words that point at things a reader of the docs does not have (an internal contract, a
# ticket) or compare the project with an earlier state of itself.
FORBIDDEN = [
    (r"\bSPEC\b", "an internal contract"),
    (r"§", "a section of an internal contract"),
    (r"\bthe issue\b", "a ticket"),
    (r"(?<![\w/])#\d+\b", "a ticket number"),
    (r"\b(?:earlier|previous|older) versions? of (?:django-mqlite|this)\b", "an earlier state"),
    (r"\bthis (?:change|fix|branch)\b", "a change rather than the product"),
]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_pages_speak_to_users(page: str) -> None:
    path = DOCS.parent / page if page == "README.md" else DOCS / page
    text = path.read_text()
    found = [
        f"{what}: {m.group(0)!r}"
        for pattern, what in FORBIDDEN
        for m in re.finditer(pattern, text, flags=re.I if "SPEC" not in pattern else 0)
    ]
    assert found == []


@pytest.mark.django_db(transaction=True)
def test_workers_once_sample_handles_every_message_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sample keys on a business id: three orders are charged, a redelivery is not."""
    import django_mqlite as mq
    from django_mqlite.worker import Worker
    from django_mqlite.worker import registry as registry_mod

    registry = registry_mod.Registry()
    monkeypatch.setattr(registry_mod, "registry", registry)
    [sample] = [b for b in blocks("workers.md") if "mq.once(" in b and "def charge" in b]
    namespace: dict[str, object] = {}
    exec(compile(sample, "workers.md", "exec"), namespace)
    mq.create_queue("payments")
    mq.send_batch("payments", [mq.OutMessage({"order_id": n}) for n in (1, 2, 3)])
    mq.send("payments", {"order_id": 2})  # the same order again: a redelivery in effect
    Worker(["payments"], burst=True, install_signals=False, registry=registry).run()
    assert sorted(namespace["charged"]) == [1, 2, 3]  # type: ignore[call-overload]
    assert mq.stats("payments").totals["completed"] == 4


@pytest.mark.parametrize("page", ["workers.md", "operations.md"])
def test_supervisor_samples_wait_longer_than_the_shutdown_timeout(page: str) -> None:
    """A stop timeout shorter than --shutdown-timeout kills handlers that were finishing."""
    samples = re.findall(r"```ini\n(.*?)```", (DOCS / page).read_text(), flags=re.S)
    checked = 0
    for sample in samples:
        if "runworker" not in sample:
            continue
        shutdown = re.search(r"--shutdown-timeout (\d+)", sample)
        stop = re.search(r"(?:TimeoutStopSec|stopwaitsecs)=(\d+)", sample)
        assert stop, sample
        assert int(stop.group(1)) > (int(shutdown.group(1)) if shutdown else 30), sample
        checked += 1
    assert checked == 2
