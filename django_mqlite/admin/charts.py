"""Charts of a queue's per-minute history, drawn on the server as inline SVG.

No JavaScript: each chart is an ``<svg class="mq-chart" role="img">`` whose ``<title>``
and ``<desc>`` (referenced by ``aria-labelledby``) say in words what the picture shows —
the window, the totals, the busiest minute, the latest value — for screen readers and for
anyone who prefers numbers. Colours come from the admin's CSS variables, so the charts
follow its light and dark themes.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..engine.history import FAILED_TOTALS

#: Series colours: admin CSS variables, with the default theme's values as fallback.
COLOURS = {
    "sent": "var(--body-quiet-color, #666)",
    "completed": "var(--link-fg, #417893)",
    "failed": "var(--error-fg, #ba2121)",
    "active": "var(--link-fg, #417893)",
    "locked": "var(--accent, #f5dd5d)",
    "scheduled": "var(--body-quiet-color, #666)",
    "deferred": "#9467bd",
    "dead_lettered": "var(--error-fg, #ba2121)",
}
DEPTH_STATES = ("active", "locked", "scheduled", "deferred", "dead_lettered")
_ids = itertools.count(1)


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]  # None: nothing known for that column
    kind: str = "bar"  # "bar" or "line"
    gauge: bool = False  # a level (described by its last value), not counts per column


def failed(bucket: dict[str, Any]) -> int:
    return sum(int(bucket[n]) for n in FAILED_TOTALS)


def group(buckets: Sequence[dict[str, Any]], columns: int) -> tuple[int, list[dict[str, Any]]]:
    """Merge consecutive minutes so at most ``columns`` remain: counts add up, the depth
    is the last one known. Returns (minutes per column, merged buckets)."""
    size = max(1, math.ceil(len(buckets) / columns))
    out = []
    for i in range(0, len(buckets), size):
        part = buckets[i : i + size]
        merged = {k: sum(b[k] for b in part) for k in part[0] if k not in ("start", "depth")}
        depths = [b["depth"] for b in part if b["depth"] is not None]
        out.append({**merged, "start": part[0]["start"], "depth": depths[-1] if depths else None})
    return size, out


def _stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _per(size: int) -> str:
    return "per minute" if size == 1 else f"per {size} minutes"


def describe(series: Sequence[Series], starts: Sequence[dt.datetime], size: int) -> str:
    """The text alternative: for each series its total (counts) or latest value (depth),
    and its peak with when it happened."""
    parts = []
    for s in series:
        known = [(v, t) for v, t in zip(s.values, starts, strict=True) if v is not None]
        if not known:
            parts.append(f"{s.name}: no data")
            continue
        peak, peak_at = max(known, key=lambda x: x[0])
        if not s.gauge:
            total = sum(v for v, _ in known)
            parts.append(
                f"{s.name}: {total:,.0f} in total, at most {peak:,.0f} {_per(size)} "
                f"({_stamp(peak_at)})"
            )
        else:
            parts.append(
                f"{s.name}: {known[-1][0]:,.0f} at the end, at most {peak:,.0f} ({_stamp(peak_at)})"
            )
    return "; ".join(parts) + "."


@dataclass(frozen=True)
class _Frame:
    """Where things go: ``n`` columns across ``width``, values up to ``top`` upwards."""

    width: int
    height: int
    n: int
    top: float
    pad_top: int
    pad_bottom: int

    @property
    def col(self) -> float:
        return self.width / self.n

    @property
    def base(self) -> float:
        return self.height - self.pad_bottom

    def y(self, v: float) -> float:
        return self.base - (self.base - self.pad_top) * v / self.top


def _bars(f: _Frame, bars: Sequence[Series], starts: Sequence[dt.datetime]) -> list[SafeString]:
    """Side by side within a column; each bar has a tooltip with its minute and value."""
    out = []
    w = f.col / max(1, len(bars))
    for k, s in enumerate(bars):
        for i, v in enumerate(s.values):
            if v:
                out.append(
                    format_html(
                        '<rect x="{}" y="{}" width="{}" height="{}" '
                        'style="fill: {}"><title>{}: {}</title></rect>',
                        f"{i * f.col + k * w:.2f}",
                        f"{f.y(v):.2f}",
                        f"{max(w - (0.5 if w > 2 else 0), 0.5):.2f}",
                        f"{f.base - f.y(v):.2f}",
                        COLOURS.get(s.name, "currentColor"),
                        _stamp(starts[i]),
                        f"{v:,.0f}",
                    )
                )
    return out


def _lines(f: _Frame, lines: Sequence[Series]) -> list[SafeString]:
    """A run of known values is one polyline; a gap (no sample) breaks the line."""
    out = []
    for s in lines:
        runs: list[list[str]] = [[]]
        for i, v in enumerate(s.values):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{i * f.col + f.col / 2:.2f},{f.y(v):.2f}")
        out += [
            format_html(
                '<polyline points="{}" style="fill: none; stroke: {}; stroke-width: 1.5" '
                'data-series="{}"/>',
                " ".join(run),
                COLOURS.get(s.name, "currentColor"),
                s.name,
            )
            for run in runs
            if run
        ]
    return out


def _axes(f: _Frame, starts: Sequence[dt.datetime]) -> SafeString:
    """The baseline, and (on large charts) the top value and the first and last minute."""
    line = format_html(
        '<line x1="0" x2="{}" y1="{}" y2="{}" style="stroke: var(--hairline-color, #ccc)"/>',
        f.width,
        f.base,
        f.base,
    )
    if f.pad_bottom < 10 or not starts:
        return line
    return format_html(
        '{}<text x="2" y="10" class="mq-chart-max">{}</text>'
        '<text x="2" y="{}" class="mq-chart-from">{}</text>'
        '<text x="{}" y="{}" text-anchor="end" class="mq-chart-to">{}</text>',
        line,
        f"{f.top:,.0f}",
        f.height - 3,
        _stamp(starts[0]),
        f.width - 2,
        f.height - 3,
        _stamp(starts[-1]),
    )


def chart(
    series: Sequence[Series],
    starts: Sequence[dt.datetime],
    *,
    title: str,
    size: int = 1,
    width: int = 720,
    height: int = 160,
    small: bool = False,
) -> SafeString:
    """One SVG chart of ``series`` over the columns starting at ``starts``."""
    top = max([v for s in series for v in s.values if v is not None] + [1])
    f = _Frame(
        width=width,
        height=height,
        n=max(1, len(starts)),
        top=top * 1.2 if small else top,  # headroom: a line level with the bars stays visible
        pad_top=2 if small else 14,
        pad_bottom=2 if small else 16,
    )
    shapes = _bars(f, [s for s in series if s.kind == "bar"], starts)
    shapes += _lines(f, [s for s in series if s.kind == "line"])
    uid = f"mq-chart-{next(_ids)}"
    return format_html(
        '<svg class="mq-chart{}" role="img" aria-labelledby="{}-title {}-desc" '
        'viewBox="0 0 {} {}" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg" '
        'data-series="{}" style="font: 10px sans-serif; fill: var(--body-quiet-color, #666)">'
        '<title id="{}-title">{}</title><desc id="{}-desc">{}</desc>{}{}</svg>',
        " mq-chart-small" if small else "",
        uid,
        uid,
        width,
        height,
        width,
        height,
        " ".join(s.name for s in series),
        uid,
        title,
        uid,
        describe(series, starts, size),
        _axes(f, starts),
        format_html_join("", "{}", ((shape,) for shape in shapes)),
    )


def legend(names: Sequence[str]) -> SafeString:
    return format_html(
        '<p class="mq-chart-legend">{}</p>',
        format_html_join(
            " ",
            '<span><span aria-hidden="true" style="color: {}">&#9632;</span> {}</span>',
            ((COLOURS.get(n, "currentColor"), n.replace("_", " ")) for n in names),
        ),
    )


def sparkline(queue: str, buckets: Sequence[dict[str, Any]]) -> SafeString:
    """The queue list's small chart: messages sent (line) and completed (bars) per minute."""
    starts = [b["start"] for b in buckets]
    return chart(
        [
            Series("completed", [b["completed"] for b in buckets]),
            Series("sent", [b["enqueued"] for b in buckets], kind="line"),
        ],
        starts,
        title=f"{queue}: messages sent and completed per minute, last {len(buckets)} minutes",
        width=120,
        height=28,
        small=True,
    )


def queue_charts(queue: str, buckets: Sequence[dict[str, Any]]) -> SafeString:
    """The queue page's charts: completed, failed and depth over the window."""
    size, cols = group(buckets, 240)
    starts = [b["start"] for b in cols]
    window = f"last {len(buckets):,} minutes, {_per(size)}"
    depth = [
        Series(
            s,
            [None if b["depth"] is None else b["depth"][s] for b in cols],
            kind="line",
            gauge=True,
        )
        for s in DEPTH_STATES
    ]
    parts = [
        ("Completed", [Series("completed", [b["completed"] for b in cols])], ["completed"]),
        ("Failed deliveries", [Series("failed", [failed(b) for b in cols])], ["failed"]),
        ("Messages by state", depth, list(DEPTH_STATES)),
    ]
    return format_html_join(
        "",
        '<div class="mq-chart-block"><h3>{}</h3>{}{}</div>',
        (
            (
                f"{heading} ({window})",
                chart(series, starts, title=f"{queue}: {heading.lower()}, {window}", size=size),
                legend(names),
            )
            for heading, series, names in parts
        ),
    )
