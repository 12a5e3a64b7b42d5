"""A small inline-SVG histogram: the report must stay one file with no scripts or assets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from evidence.report.tables import format_value

__all__ = ["histogram_svg"]

BINS = 10
_WIDTH, _HEIGHT = 480, 200
_LEFT, _TOP, _PLOT_W, _PLOT_H = 48, 24, 416, 140
_TINY_SCALE = 2.0**64


def histogram_svg(values: Sequence[float], *, title: str, unit: str) -> str:
    """Render ``values`` as a histogram of up to :data:`BINS` equal-width bins.

    The same values always give the same text. Each bar carries a ``<title>`` with its range
    and count so the numbers stay readable without a script. An empty ``unit`` (a reward has
    none) is left out of the title and the tips.
    """
    label = escape(f"{title} ({unit})" if unit else title)
    unit = f" {unit}" if unit else ""
    head = (
        f'<svg class="histogram" role="img" aria-label="{label}" '
        f'width="{_WIDTH}" height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}">'
        f"<title>{label}</title>"
        f'<text x="{_LEFT}" y="14" class="h-title">{label}</text>'
    )
    if not values:
        return head + f'<text x="{_LEFT}" y="{_TOP + _PLOT_H // 2}">no data</text></svg>'
    low, high = min(values), max(values)
    counts, width, scale = _bin(values, low, high)
    tallest = max(counts)
    bar_w = _PLOT_W / len(counts)
    parts = [head]
    for index, count in enumerate(counts):
        height = _PLOT_H * count / tallest
        start = low * scale + index * width
        tip = escape(f"{format_value(start / scale)}\u2013{format_value((start + width) / scale)}{unit}: {count}")
        parts.append(
            f'<rect class="bar" data-count="{count}" x="{_LEFT + index * bar_w:.1f}" '
            f'y="{_TOP + _PLOT_H - height:.1f}" width="{bar_w - 2:.1f}" height="{height:.1f}">'
            f"<title>{tip}</title></rect>"
        )
    base = _TOP + _PLOT_H
    parts.append(f'<line x1="{_LEFT}" y1="{base}" x2="{_LEFT + _PLOT_W}" y2="{base}" class="axis"/>')
    parts.append(f'<text x="{_LEFT}" y="{base + 16}">{escape(format_value(low))}</text>')
    parts.append(f'<text x="{_LEFT + _PLOT_W}" y="{base + 16}" text-anchor="end">{escape(format_value(high))}</text>')
    parts.append(f'<text x="{_LEFT - 6}" y="{_TOP + 10}" text-anchor="end">{tallest}</text>')
    parts.append(f'<text x="{_LEFT - 6}" y="{base}" text-anchor="end">0</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bin(values: Sequence[float], low: float, high: float) -> tuple[list[int], float, float]:
    """Counts per bin, the bin width and the scale it is measured at; identical values share one bin.

    The values are finite, but their range may not be (-1e308 to 1e308 is wider than the
    largest float): such a range is binned at half scale, where it and its bin edges fit. A
    range narrower than ten of the smallest floats (0 to 5e-324) would give bins of width zero;
    it is binned at a scale of 2^64 (exact: all its values are that small).
    """
    if high == low:
        return [len(values)], 0.0, 1.0
    span = high - low
    scale = 0.5 if math.isinf(span) else _TINY_SCALE if span / BINS == 0 else 1.0
    width = (high * scale - low * scale) / BINS
    counts = [0] * BINS
    for value in values:
        counts[min(int((value * scale - low * scale) / width), BINS - 1)] += 1
    return counts, width, scale
