"""Explore's pictures, drawn from the page's data as SVG inside the page (no chart library, no
script): the training curves, the confusion matrices as heat maps, and the scoreboard.

Each function returns markup for a ``<figure>``: the SVG (``role="img"`` with a title) and a
caption; the numbers themselves stay in the tables beside each picture. Every coordinate is
computed here from the values, so a picture is exactly as true as the table it repeats.

No colour is written here: every mark carries a class, and style.css colours the classes with
its theme's variables (``svg.picture ...``), so a picture follows the light and the dark theme.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from markupsafe import Markup, escape

from claimtrace.constants import LABELS

#: The class of each series of the training curves (style.css gives each its colour).
SERIES_CLASSES = {
    "course run": "series-course",
    "this checkpoint": "series-checkpoint",
    "the intended model": "series-intended",
}
#: A heat map cell's share above which its count is written in the strong cell's ink.
HEAT_INK_SHARE = 0.6
#: The scoreboard chart: a panel's width, and the length of its largest bar (room left for the number).
SCORE_PANEL = 190
SCORE_BAR = SCORE_PANEL - 46
SHORT = {"SUPPORTS": "SUP", "REFUTES": "REF", "NOT_ENOUGH_INFO": "NEI", "DISPUTED": "DIS"}


def _f(value: float) -> str:
    return f"{value:.1f}"


def svg_picture(width: int, height: int, title: str, body: list[str], cls: str, attributes: str = "") -> Markup:
    """An SVG picture with its title said to a screen reader; ``attributes`` go on the element
    as written (``data-`` axes a browser test measures against)."""
    return Markup(
        f'<svg class="picture {cls}"{attributes} viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def svg_text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    """A text of a picture, escaped."""
    extra = f' class="{cls}"' if cls else ""
    return f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


# --- training curves --------------------------------------------------------------------------------


def training_curves(course_rows: Sequence[dict] | None, intended_curve: Sequence[dict] | None) -> Markup:
    """Two panels, train and dev accuracy by epoch: the course run's log, this checkpoint's and
    the intended model's (when the build has them). Empty markup without any curve."""
    series: dict[str, dict[str, list[tuple[int, float]]]] = {}
    if course_rows:
        series["course run"] = {
            "train": [(r["epoch"], r["course_train"]) for r in course_rows],
            "dev": [(r["epoch"], r["course_dev"]) for r in course_rows],
        }
        mine = [r for r in course_rows if r.get("train") is not None]
        if mine:
            series["this checkpoint"] = {
                "train": [(r["epoch"], r["train"]) for r in mine],
                "dev": [(r["epoch"], r["dev"]) for r in mine],
            }
    if intended_curve:
        series["the intended model"] = {
            "train": [(r["epoch"], r["intended_train"]) for r in intended_curve],
            "dev": [(r["epoch"], r["intended_dev"]) for r in intended_curve],
        }
    if not series:
        return Markup("")
    values = [v for s in series.values() for part in s.values() for _, v in part]
    low = max(0.0, (min(values) * 20 // 1) / 20)  # to the 0.05 below
    high = min(1.0, (max(values) * 20 // 1 + 1) / 20)
    epochs = max(e for s in series.values() for part in s.values() for e, _ in part)
    panels = []
    for which in ("train", "dev"):
        panels.append(_curve_panel(which, {name: s[which] for name, s in series.items()}, low, high, epochs))
    legend = "".join(
        f'<li><svg class="key" width="22" height="10" aria-hidden="true"><line x1="0" y1="5" x2="22" y2="5" '
        f'class="{SERIES_CLASSES[name]}" stroke-width="2.5"{_dash(name)}/></svg> {escape(name)}</li>'
        for name in series
    )
    story = ""
    intended = series.get("the intended model")
    if intended:
        (t0, t1), (d0, d1) = (
            (intended["train"][0][1], intended["train"][-1][1]),
            (intended["dev"][0][1], intended["dev"][-1][1]),
        )
        trend = "falls" if d1 < d0 else "rises"
        story = (
            f" The intended model learns its training claims (train {t0:.3f} → {t1:.3f}) while its dev "
            f"accuracy {trend} ({d0:.3f} → {d1:.3f}){': it overfits' if d1 < d0 and t1 > t0 else ''}."
        )
    return Markup(
        '<figure class="pictures curves" id="training-pictures"><div class="panels">'
        + "".join(panels)
        + f'</div><figcaption>Accuracy by epoch, train and dev: <ul class="legend">{legend}</ul>'
        "The dev accuracy is with gold evidence, as the notebook measured it while training; the "
        f"numbers are in the tables below.{escape(story)}</figcaption></figure>"
    )


def _dash(name: str) -> str:
    return ' stroke-dasharray="5 3"' if name == "course run" else ""


def _curve_panel(which: str, series: dict[str, list[tuple[int, float]]], low: float, high: float, epochs: int) -> str:
    width, height = 340, 220
    left, right, top, bottom = 44, 10, 24, 30
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(epoch: float) -> float:
        return left + (epoch - 1) / max(1, epochs - 1) * plot_w

    def y(value: float) -> float:
        return top + (high - value) / (high - low) * plot_h

    body = [svg_text(left, 14, f"{which} accuracy", cls="ptitle")]
    steps = round((high - low) / 0.05)
    for k in range(steps + 1):
        value = low + k * 0.05
        body.append(f'<line x1="{left}" x2="{width - right}" y1="{_f(y(value))}" y2="{_f(y(value))}" class="grid"/>')
        body.append(svg_text(left - 4, y(value) + 4, f"{value:.2f}", "end", "tick"))
    for epoch in range(1, epochs + 1):
        body.append(svg_text(x(epoch), height - bottom + 14, str(epoch), "middle", "tick"))
    body.append(svg_text(left + plot_w / 2, height - 2, "epoch", "middle", "tick"))
    for name, points in series.items():
        path = " ".join(f"{_f(x(e))},{_f(y(v))}" for e, v in points)
        cls = SERIES_CLASSES[name]
        body.append(f'<polyline points="{path}" fill="none" class="{cls}" stroke-width="2"{_dash(name)}/>')
        body.extend(
            f'<circle cx="{_f(x(e))}" cy="{_f(y(v))}" r="2.5" class="{cls}"><title>{escape(name)}, epoch {e}: {v:.4f}</title></circle>'
            for e, v in points
        )
    summary = "; ".join(f"{name}: {points[0][1]:.3f} to {points[-1][1]:.3f}" for name, points in series.items())
    return svg_picture(width, height, f"{which} accuracy by epoch ({summary})", body, "curve")


# --- confusion heat maps --------------------------------------------------------------------------------


def confusion_map(matrix: Sequence[Sequence[int]], caption: str) -> Markup:
    """A confusion matrix (rows: labels, columns: verdicts) as a heat map, each cell's shade its
    share of the row's claims; a verdict the model never gives is called out under its column."""
    labels = list(LABELS)
    cell, left, top = 46, 62, 34
    never = [j for j in range(len(labels)) if all(row[j] == 0 for row in matrix)]
    width, height = left + cell * len(labels) + 8, top + cell * len(labels) + (34 if never else 10)
    body = [svg_text(left + cell * len(labels) / 2, 12, "verdict", "middle", "tick")]
    for j, label in enumerate(labels):
        body.append(svg_text(left + cell * j + cell / 2, top - 6, SHORT[label], "middle", "head"))
    for i, label in enumerate(labels):
        total = sum(matrix[i]) or 1
        body.append(svg_text(left - 6, top + cell * i + cell / 2 + 4, SHORT[label], "end", "head"))
        for j, n in enumerate(matrix[i]):
            share = n / total
            x, y = left + cell * j, top + cell * i
            # the heat colour at the share's opacity over the page's background: the shade
            # follows the theme (style.css's --heat over --bg)
            cls = "cell diag" if i == j else "cell"
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill-opacity="{share:.4f}" class="{cls}"/>'
            )
            ink = "light" if share > HEAT_INK_SHARE else "dark"
            body.append(svg_text(x + cell / 2, y + cell / 2 + 5, str(n), "middle", f"count {ink}"))
    for j in never:
        x = left + cell * j
        body.append(
            f'<rect x="{x + 2}" y="{top + 2}" width="{cell - 4}" height="{cell * len(labels) - 4}" '
            'class="never-box" stroke-width="2" stroke-dasharray="4 3"/>'
        )
        body.append(svg_text(x + cell / 2, top + cell * len(labels) + 14, "never", "middle", "never"))
        body.append(svg_text(x + cell / 2, top + cell * len(labels) + 27, "predicted", "middle", "never"))
    said = (
        f"; never predicted: {', '.join(labels[j] for j in never)}"
        if never
        else "; every verdict predicted at least once"
    )
    title = f"{caption}: rows are labels, columns verdicts, a cell’s shade its share of the label’s claims{said}"
    return svg_picture(width, height, title, body, "heat")


def never_predicted(matrix: Sequence[Sequence[int]]) -> list[str]:
    """The verdicts a confusion matrix's model never gave (columns all zero)."""
    return [label for j, label in enumerate(LABELS) if all(row[j] == 0 for row in matrix)]


# --- the scoreboard --------------------------------------------------------------------------------


def scoreboard_chart(rows: Sequence[dict], anchor: dict | None, baselines: Sequence[dict] = ()) -> Markup:
    """HM, F and A of every scoreboard row, one panel each on its own scale (0 to the panel's
    largest value or interval bound), rows grouped by retrieval, then the baselines (their bars
    outlined, class ``bar-base``); each row's 95% interval as a whisker over its bar (when the
    rows carry ``intervals``); the course's Table 2 as a dashed line."""
    if not rows:
        return Markup("")
    drawn = list(rows) + [_baseline_row(b) for b in baselines]
    row_h, label_w, panel_w, gap, top = 18, 250, SCORE_PANEL, 18, 40
    metrics = ("HM", "F", "A")
    width = label_w + len(metrics) * (panel_w + gap)
    height = top + row_h * len(drawn) + 8
    body = []
    for k, metric in enumerate(metrics):
        body += _score_panel(drawn, metric, anchor, label_w + k * (panel_w + gap), top, row_h, height)
    previous = None
    for i, row in enumerate(drawn):
        y = top + row_h * i
        if row["retrieval"] != previous and i:
            body.append(f'<line x1="0" x2="{width}" y1="{y}" y2="{y}" class="grid"/>')
        previous = row["retrieval"]
        body.append(
            svg_text(0, y + row_h - 5, f"{row['retrieval']} · {row['model']} · {row['protocol']}", cls="rowname")
        )
    best = max(rows, key=lambda r: r["HM"])
    title = (
        f"HM, F and A of {len(rows)} combinations of retrieval, model and protocol on dev"
        + (f" and of {len(baselines)} baselines below them" if baselines else "")
        + f"; the best HM of the combinations is {best['name']} at {best['HM']:.3f}"
        + (f", against Table 2’s {anchor['HM']:.3f}" if anchor else "")
        + ("; whiskers are 95% intervals" if any(r.get("intervals") for r in rows) else "")
    )
    return svg_picture(width, height, title, body, "scores")


#: How a baseline is named in the scoreboard chart's row labels (after "baseline · ").
BASELINE_LABELS = {
    "baseline:always-SUPPORTS": "always SUPPORTS",
    "baseline:random-label": "random label",
    "baseline:course-file": "the course’s file",
}


def _baseline_row(baseline: dict) -> dict:
    what = BASELINE_LABELS.get(baseline["name"], baseline["name"].split(":")[-1])
    return {**baseline, "retrieval": "baseline", "model": what, "protocol": "—", "changes": ["baseline"]}


def _score_panel(rows: Sequence[dict], metric: str, anchor: dict | None, x0: int, top: int, row_h: int, height: int):
    """One panel of the scoreboard chart: its title and axis, a bar and a whisker per row, the anchor."""
    bounds = [r["intervals"][metric]["upper"] for r in rows if r.get("intervals")]
    scale = max([r[metric] for r in rows] + bounds + ([anchor[metric]] if anchor else []))
    body = [svg_text(x0, 14, f"{metric} (0 to {scale:.3f})", cls="ptitle")]
    body.append(f'<line x1="{x0}" x2="{x0}" y1="{top - 4}" y2="{height - 6}" class="axis"/>')
    for i, row in enumerate(rows):
        y = top + row_h * i
        length = row[metric] / scale * SCORE_BAR if scale else 0
        cls = "bar-ref" if row.get("reference") else ("bar-nb" if not row.get("changes") else "bar")
        cls += " bar-base" if row.get("baseline") else ""
        body.append(
            f'<rect x="{x0}" y="{y + 3}" width="{_f(length)}" height="{row_h - 6}" class="{cls}">'
            f"<title>{escape(row['name'])}: {metric} {row[metric]:.4f}</title></rect>"
        )
        end = length
        interval = (row.get("intervals") or {}).get(metric)
        if interval and scale:
            body.append(whisker(interval, (0.0, scale), x0, SCORE_BAR, y + row_h / 2, f"{row['name']}: {metric}"))
            end = max(length, interval["upper"] / scale * SCORE_BAR)
        body.append(svg_text(x0 + end + 3, y + row_h - 5, f"{row[metric]:.3f}", cls="tick"))
    if anchor:
        ax = x0 + anchor[metric] / scale * SCORE_BAR
        body.append(f'<line x1="{_f(ax)}" x2="{_f(ax)}" y1="{top - 4}" y2="{height - 6}" class="anchor"/>')
        body.append(svg_text(ax, top - 8, "Table 2", "middle", "anchor-label"))
    return body


# --- intervals --------------------------------------------------------------------------------

#: A whisker's end caps, half their height in user units.
CAP = 4


def whisker(interval: dict, domain: tuple[float, float], x0: float, length: float, y: float, name: str) -> str:
    """An interval drawn as a whisker on a horizontal axis that maps ``domain`` (low, high) onto
    ``length`` user units from ``x0``: a line from its lower to its upper bound with a cap at
    each end.

    The group carries what it stands for (``data-lower``, ``data-upper``, ``data-estimate``)
    and the axis it is drawn on (``data-min``, ``data-max``, ``data-x0``, ``data-length``), so a
    test in a browser can measure the drawn line against them.
    """
    low, high = domain

    def x(value: float) -> float:
        return x0 + (value - low) / (high - low) * length

    lo, hi = x(interval["lower"]), x(interval["upper"])
    said = f"{name} {interval['estimate']:.4f}, 95% interval {interval['lower']:.4f} to {interval['upper']:.4f}"
    return (
        f'<g class="whisker" data-estimate="{interval["estimate"]!r}" data-lower="{interval["lower"]!r}" '
        f'data-upper="{interval["upper"]!r}" data-min="{low!r}" data-max="{high!r}" data-x0="{x0!r}" '
        f'data-length="{length!r}"><title>{escape(said)}</title>'
        f'<line class="span" x1="{lo:.2f}" x2="{hi:.2f}" y1="{_f(y)}" y2="{_f(y)}"/>'
        f'<line class="cap" x1="{lo:.2f}" x2="{lo:.2f}" y1="{_f(y - CAP)}" y2="{_f(y + CAP)}"/>'
        f'<line class="cap" x1="{hi:.2f}" x2="{hi:.2f}" y1="{_f(y - CAP)}" y2="{_f(y + CAP)}"/></g>'
    )


def _domain(rows: Sequence[dict], metric: str) -> tuple[float, float]:
    """A panel's axis: 0 to the largest bound for figures, symmetric about 0 for differences
    (when any bound is negative), widened to a round tick."""
    bounds = [b for r in rows if r.get(metric) for b in (r[metric]["lower"], r[metric]["upper"], r[metric]["estimate"])]
    largest = max((abs(b) for b in bounds), default=0.0) or 1.0
    step = 0.05 if largest <= 0.5 else 0.1
    top = min(1.0, round(-(-largest // step) * step, 10)) if largest <= 1 else largest
    if any(b < 0 for b in bounds):
        return (-top, top)
    return (0.0, top)


def interval_chart(rows: Sequence[dict], metrics: Sequence[str], title: str, differences: bool = False) -> Markup:
    """Figures with their 95% intervals, a panel per metric: a dot at each row's estimate and a
    whisker from its lower to its upper bound, every panel on its stated axis (0 to its largest
    bound, or symmetric about a marked 0 when a bound is negative or for ``differences``).

    Parameters
    ----------
    rows : sequence of dict
        ``{"name": str, "kind": str, metric: {"estimate", "lower", "upper"} | None, ...}``;
        ``kind`` ("run", "notebook", "baseline", "row") picks the dot's class.
    metrics : sequence of str
        The panels, left to right.
    title : str
        What the picture shows, said to a screen reader with every row's figures.
    differences : bool
        The rows are differences (a system minus another): every axis symmetric about 0, and
        the figures signed.
    """
    if not rows:
        return Markup("")
    row_h, label_w, panel_w, gap, top = 20, 230, 200, 22, 36
    height = top + row_h * len(rows) + 22
    body = []
    for k, metric in enumerate(metrics):
        low, high = _domain(rows, metric)
        if differences:
            low = -high
        body += _interval_panel(
            rows, metric, (low, high), label_w + k * (panel_w + gap) + 10, panel_w - 20, top, row_h, height, differences
        )
    for i, row in enumerate(rows):
        body.append(svg_text(0, top + row_h * i + row_h - 6, _clip(row["name"], 34), cls="rowname"))
    sign = "+" if differences else ""
    said = "; ".join(
        f"{row['name']}: "
        + ", ".join(
            f"{m} {row[m]['estimate']:{sign}.3f} ({row[m]['lower']:{sign}.3f} to {row[m]['upper']:{sign}.3f})"
            for m in metrics
            if row.get(m)
        )
        for row in rows
    )
    cls = "intervals differences" if differences else "intervals"
    return svg_picture(label_w + len(metrics) * (panel_w + gap), height, f"{title}: {said}", body, cls)


def _interval_panel(
    rows, metric: str, domain, x0: float, length: float, top: int, row_h: int, height: int, differences: bool
):
    """One panel of :func:`interval_chart`: its title and axis with three ticks, 0 marked when
    the axis crosses it, and a whisker and a dot per row."""
    low, high = domain
    sign = "+" if differences else ""
    what = f"{metric} difference" if differences else metric
    body = [svg_text(x0 - 10, 14, f"{what} ({low:{sign}g} to {high:{sign}g})", cls="ptitle")]
    body.append(f'<line x1="{x0}" x2="{x0 + length}" y1="{height - 18}" y2="{height - 18}" class="axis"/>')
    for value in (low, (low + high) / 2, high):
        tx = x0 + (value - low) / (high - low) * length
        body.append(svg_text(tx, height - 4, f"{value:{sign}g}", "middle", "tick"))
    if low < 0:
        zx = x0 + (0 - low) / (high - low) * length
        body.append(f'<line x1="{_f(zx)}" x2="{_f(zx)}" y1="{top - 4}" y2="{height - 18}" class="zero"/>')
    for i, row in enumerate(rows):
        interval = row.get(metric)
        if not interval:
            continue
        y = top + row_h * i + row_h / 2
        body.append(whisker(interval, (low, high), x0, length, y, f"{row['name']}: {metric}"))
        cx = x0 + (interval["estimate"] - low) / (high - low) * length
        body.append(f'<circle cx="{cx:.2f}" cy="{_f(y)}" r="3.5" class="dot dot-{escape(row.get("kind", "row"))}"/>')
    return body


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the threshold sweep --------------------------------------------------------------------------------

#: A sweep chart's width and margins (user units); its two panels: (the figures drawn there,
#: top, height). F, evidence precision and recall, and HM get their own axis, 0 to their largest
#: value rounded up to 0.05, so that their changes show; A and the fallback share are shares, 0 to 1.
SWEEP_WIDTH, SWEEP_MARGINS = 360, (40, 14, 36)  # left, right, bottom
SWEEP_PANELS = ((("F", "P", "R", "HM"), 30, 100), (("A", "fallback"), 160, 120))


class _Axis(NamedTuple):
    y0: float
    length: float
    high: float

    def y(self, value: float) -> float:
        return self.y0 + (1 - value / self.high) * self.length


def _sweep_axes(chart: dict) -> dict[str, _Axis]:
    """Each figure's axis: its panel's top, height and highest value (the lowest is 0)."""
    axes = {}
    for keys, y0, length in SWEEP_PANELS:
        largest = max(p[k] for p in chart["points"] for k in keys)
        high = 1.0 if "A" in keys else max(0.05, math.ceil(round(largest / 0.05, 9)) * 0.05)
        axes.update(dict.fromkeys(keys, _Axis(y0, length, round(high, 2))))
    return axes


def _sweep_grid(axes: dict[str, _Axis], series: Sequence[tuple[str, str]], left: float) -> list[str]:
    """Each panel's grid lines, its ticks (0, half, its top) and its title."""
    body = []
    for keys, y0, _length in SWEEP_PANELS:
        axis = axes[keys[0]]
        for k in range(3):
            value = axis.high * k / 2
            body.append(
                f'<line x1="{left}" x2="{SWEEP_WIDTH - SWEEP_MARGINS[1]}" y1="{_f(axis.y(value))}" y2="{_f(axis.y(value))}" class="grid"/>'
            )
            body.append(svg_text(left - 4, axis.y(value) + 4, f"{value:g}", "end", "tick"))
        shown = [name for key, name in series if key in keys]
        names = " and ".join([", ".join(shown[:-1]), shown[-1]] if len(shown) > 2 else shown)
        body.append(svg_text(left + 4, y0 - 4, f"{names}, 0 to {axis.high:g}", cls="tick"))
    return body


def sweep_chart(chart: dict, series: Sequence[tuple[str, str]]) -> Markup:
    """One rule's sweep of one parameter (:func:`claimtrace.web.views.results.results`' chart):
    a curve per figure, F, precision, recall and HM in the upper panel, A and the fallback share in the lower, the
    notebook's setting marked by a dashed line and the best setting's HM ringed; a hidden cursor
    for app-sweep.js.

    The svg carries its x axis (``data-x0``, ``data-xlen``, ``data-xmin``, ``data-xmax``, in user
    units), and each point its figure, its value and its y axis (``data-series``, ``data-x``,
    ``data-y``; ``data-y0``, ``data-ylen``, ``data-ymax``: its panel's top, height and highest
    value, the lowest being 0), so that a test in a browser measures every drawn point against them.
    """
    left, right, bottom = SWEEP_MARGINS
    height = SWEEP_PANELS[-1][1] + SWEEP_PANELS[-1][2] + bottom
    plot_w = SWEEP_WIDTH - left - right
    values = [p["value"] for p in chart["points"]]
    low, high = min(values), max(values)
    axes = _sweep_axes(chart)

    def x(value: float) -> float:
        return left + (value - low) / (high - low) * plot_w

    body = [svg_text(left - 30, 14, f"{chart['rule']} rule: by {chart['name']}", cls="ptitle")]
    body += _sweep_grid(axes, series, left)
    ticks = values if chart["parameter"] == "top_n" else values[:: 5 if chart["parameter"] == "score" else 4]
    for value in ticks:
        body.append(svg_text(x(value), height - bottom + 14, f"{value:g}", "middle", "tick"))
    body.append(svg_text(left + plot_w / 2, height - 4, chart["name"], "middle", "tick"))
    span = f'y1="{SWEEP_PANELS[0][1]}" y2="{height - bottom}"'
    nx = x(chart["notebook"])
    body.append(f'<line x1="{_f(nx)}" x2="{_f(nx)}" {span} class="notebook-mark"/>')
    body.append(svg_text(nx + 3, SWEEP_PANELS[0][1] + 9, "notebook", cls="mark-label"))
    for key, _name in series:
        a = axes[key]
        path = " ".join(f"{_f(x(p['value']))},{_f(a.y(p[key]))}" for p in chart["points"])
        body.append(f'<polyline points="{path}" class="curve s-{key}"/>')
        body.extend(
            f'<circle cx="{x(p["value"]):.2f}" cy="{a.y(p[key]):.2f}" r="2.5" class="pt s-{key}" data-series="{key}" '
            f'data-x="{p["value"]!r}" data-y="{p[key]!r}" data-y0="{a.y0!r}" data-ylen="{a.length!r}" data-ymax="{a.high!r}"/>'
            for p in chart["points"]
        )
    for p in chart["points"]:
        if p["best"]:
            body.append(f'<circle cx="{x(p["value"]):.2f}" cy="{axes["HM"].y(p["HM"]):.2f}" r="6" class="best-ring"/>')
            body.append(svg_text(x(p["value"]), axes["HM"].y(p["HM"]) - 9, "best HM", "middle", "mark-label"))
    body.append(f'<line x1="{_f(nx)}" x2="{_f(nx)}" {span} class="cursor"/>')
    body.append(
        f'<rect x="{left}" y="{SWEEP_PANELS[0][1]}" width="{plot_w}" height="{height - bottom - SWEEP_PANELS[0][1]}" class="hit"/>'
    )
    said = f"{', '.join(n for _, n in series)} by {chart['name']}, {chart['rule']} rule; {chart['readout']}"
    svg = str(svg_picture(SWEEP_WIDTH, height, said, body, "sweep"))
    extra = f' data-x0="{left}" data-xlen="{plot_w}" data-xmin="{low!r}" data-xmax="{high!r}"'
    return Markup(svg.replace('<svg class="picture sweep"', f'<svg class="picture sweep"{extra}', 1))
