"""The seeds page's charts, drawn from the page's data as SVG inside the page, as
:mod:`claimtrace.web.pictures` draws Explore's: one panel per evidence and protocol, and in it,
for each model, a dot per seed at its dev accuracy with its 95% Wilson interval as a whisker, a
band from the seeds' lowest to their highest accuracy with a tick at their mean, and a diamond
for the build's own checkpoint (its interval too).

Every panel spans the same width of accuracy (each panel's ``axis``, from a round value below
its lowest bound), so a distance between two marks is the same difference in every panel. The svg carries that axis
(``data-x0``, ``data-xlen``, ``data-xmin``, ``data-xmax``, in user units) and each mark its value
(``data-value``), so a test in a browser measures every mark against them; every value is also
in the mark's title and in the page's tables. No colour is written here: style.css colours the
classes.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from claimtrace.web.pictures import svg_picture, svg_text, whisker

#: A panel's width, its margins (the row labels' column on the left) and its rows' heights, in
#: user units: a model's heading, a seed's (or the checkpoint's) row, the gap after a model.
WIDTH, LEFT, RIGHT, TOP, BOTTOM = 400, 104, 16, 26, 34
HEADING, ROW, GAP = 18, 15, 8
#: The axis's ticks, every twentieth of accuracy.
TICK = 0.05
#: A dot's radius and the diamond's half-width.
DOT, DIAMOND = 3.5, 5


def _f(value: float) -> str:
    return f"{value:.2f}"


class _Axis:
    def __init__(self, low: float, high: float):
        self.low, self.high, self.length = low, high, WIDTH - LEFT - RIGHT

    def x(self, value: float) -> float:
        return LEFT + (value - self.low) / (self.high - self.low) * self.length


def _interval(figure: dict) -> dict:
    return {"estimate": figure["accuracy"], "lower": figure["lower"], "upper": figure["upper"]}


def _said(figure: dict) -> str:
    return f"{figure['accuracy']:.3f} ({figure['correct']}/{figure['claims']}; {figure['lower']:.3f} to {figure['upper']:.3f})"


def _band(model: dict, axis: _Axis, top: float, rows: int) -> list[str]:
    """The seeds' range, lowest to highest accuracy, behind their rows, and a tick at their mean."""
    spread = model["spread"]
    if not spread:
        return []
    x0, x1, height = axis.x(spread["min"]), axis.x(spread["max"]), ROW * rows
    mx = axis.x(spread["mean"])
    said = (
        f"{model['title']}: the seeds range from {spread['min']:.3f} to {spread['max']:.3f}, "
        f"mean {spread['mean']:.3f}, SD {spread['sd']:.3f}"
    )
    return [
        f'<rect class="band m-{model["name"]}" x="{_f(x0)}" y="{_f(top)}" width="{_f(x1 - x0)}" height="{_f(height)}" '
        f'data-min="{spread["min"]!r}" data-max="{spread["max"]!r}"><title>{escape(said)}</title></rect>',
        f'<line class="mean-mark m-{model["name"]}" x1="{_f(mx)}" x2="{_f(mx)}" y1="{_f(top - 2)}" y2="{_f(top + height + 2)}" '
        f'data-value="{spread["mean"]!r}"><title>{escape(said)}</title></line>',
    ]


def _seed_row(model: dict, seed: dict, axis: _Axis, y: float) -> list[str]:
    cy = y + ROW / 2
    said = f"{model['title']}, seed {seed['seed']}: {_said(seed)}"
    return [
        svg_text(LEFT - 8, cy + 4, f"seed {seed['seed']}", "end", "tick"),
        whisker(_interval(seed), (axis.low, axis.high), LEFT, axis.length, cy, f"{model['title']} seed {seed['seed']}"),
        f'<circle class="dot seed-dot m-{model["name"]}" cx="{_f(axis.x(seed["accuracy"]))}" cy="{_f(cy)}" r="{DOT}" '
        f'data-model="{model["name"]}" data-seed="{seed["seed"]}" data-value="{seed["accuracy"]!r}">'
        f"<title>{escape(said)}</title></circle>",
    ]


def _checkpoint_row(model: dict, axis: _Axis, y: float) -> list[str]:
    mark = model["shipped"]
    cy = y + ROW / 2
    if mark is None:
        return [
            svg_text(LEFT - 8, cy + 4, "checkpoint", "end", "tick"),
            svg_text(LEFT, cy + 4, "not built", cls="tick"),
        ]
    cx = axis.x(mark["accuracy"])
    said = f"{model['title']}, the build’s checkpoint ({mark['label']}): {_said(mark)}"
    points = f"{_f(cx)},{_f(cy - DIAMOND)} {_f(cx + DIAMOND)},{_f(cy)} {_f(cx)},{_f(cy + DIAMOND)} {_f(cx - DIAMOND)},{_f(cy)}"
    return [
        svg_text(LEFT - 8, cy + 4, mark["label"], "end", "tick"),
        whisker(_interval(mark), (axis.low, axis.high), LEFT, axis.length, cy, f"{model['title']} checkpoint"),
        f'<polygon class="checkpoint-mark" points="{points}" data-model="{model["name"]}" '
        f'data-value="{mark["accuracy"]!r}"><title>{escape(said)}</title></polygon>',
    ]


def _model_rows(model: dict, axis: _Axis, y: float) -> tuple[list[str], list[str], float]:
    """A model's heading, its band (drawn first, behind), its seeds' rows and its checkpoint's;
    the y after them."""
    heading = [svg_text(0, y + 13, f"{model['title']}: {model['count']} of {model['planned']} seeds", cls="head")]
    y += HEADING
    seeds = model["seeds"]
    behind = _band(model, axis, y, len(seeds))
    rows: list[str] = []
    for seed in seeds:
        rows += _seed_row(model, seed, axis, y)
        y += ROW
    if not seeds:
        rows.append(svg_text(LEFT, y + ROW / 2 + 4, "no seed trained yet", cls="tick"))
        y += ROW
    rows += _checkpoint_row(model, axis, y)
    return heading + behind, rows, y + ROW + GAP


def _title(panel: dict, axis: _Axis) -> str:
    parts = []
    for model in panel["models"]:
        seeds = ", ".join(f"seed {s['seed']} {_said(s)}" for s in model["seeds"]) or "no seed trained yet"
        spread = model["spread"]
        ranged = f"; range {spread['min']:.3f} to {spread['max']:.3f}, mean {spread['mean']:.3f}" if spread else ""
        mark = model["shipped"]
        ours = f"; the build’s checkpoint ({mark['label']}) {_said(mark)}" if mark else ""
        parts.append(f"{model['title']}, {model['count']} of {model['planned']} seeds: {seeds}{ranged}{ours}")
    return (
        f"{panel['title']}: dev accuracy of each seed with its 95% Wilson interval, on an axis from "
        f"{axis.low:g} to {axis.high:g}. " + ". ".join(parts)
    )


def seed_chart(panel: dict) -> Markup:
    """One panel of the seeds page (:func:`claimtrace.web.views.seeds.seeds_page`' panel), on
    its ``axis``."""
    scale = _Axis(panel["axis"]["min"], panel["axis"]["max"])
    body, marks, y = [svg_text(0, 14, panel["title"], cls="ptitle")], [], TOP
    for model in panel["models"]:
        under, rows, y = _model_rows(model, scale, y)
        body += under
        marks += rows
    ticks = round((scale.high - scale.low) / TICK)
    grid = []
    for k in range(ticks + 1):
        value = round(scale.low + k * TICK, 10)
        x = scale.x(value)
        grid.append(f'<line class="grid" x1="{_f(x)}" x2="{_f(x)}" y1="{TOP}" y2="{_f(y)}"/>')
        grid.append(svg_text(x, y + 14, f"{value:.2f}", "middle", "tick"))
    grid.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + scale.length}" y1="{_f(y)}" y2="{_f(y)}"/>')
    grid.append(svg_text(LEFT + scale.length / 2, y + BOTTOM - 4, "dev accuracy", "middle", "tick"))
    attributes = (
        f' data-x0="{LEFT}" data-xlen="{scale.length}" data-xmin="{scale.low!r}" data-xmax="{scale.high!r}"'
        f' data-panel="{panel["id"]}"'
    )
    return svg_picture(
        WIDTH, round(y + BOTTOM), _title(panel, scale), body[:1] + grid + body[1:] + marks, "seeds", attributes
    )
