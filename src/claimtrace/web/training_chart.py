"""The training logs' charts (:func:`claimtrace.web.views.training.training_logs`), drawn as every
picture of the site is (SVG in the page, no colour written: style.css colours the classes): for
one model, a panel of loss and a panel of accuracy by epoch, train and dev, this checkpoint's
curves solid and the notebook's printed log's dashed where it printed the figure.

The svg of a panel carries its axes (``data-x0``, ``data-xlen``, ``data-xmin``, ``data-xmax``;
``data-y0``, ``data-ylen``, ``data-ymin``, ``data-ymax``, in user units), and each point its value
(``data-series``, ``data-x``, ``data-y``), so a test in a browser measures every point against them.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

from claimtrace.web.pictures import svg_picture, svg_text

#: A panel's size and margins, in user units.
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 340, 220, 46, 10, 24, 30
#: Each panel: (its name, the figures it draws, its tick step).
PANELS = (("loss", ("train_loss", "dev_loss"), 0.1), ("accuracy", ("train_accuracy", "dev_accuracy"), 0.05))


def _f(value: float) -> str:
    return f"{value:.2f}"


def _series(model: dict, keys: tuple[str, ...]) -> list[tuple[str, str, list[tuple[int, float]]]]:
    """(name, class, points) of each curve of a panel: the checkpoint's, then the printed log's."""
    out = []
    for source, cls in (("this checkpoint", ""), ("notebook’s printed log", " printed")):
        for key in keys:
            split = key.split("_")[0]
            points = [
                (e["epoch"], e[key] if source == "this checkpoint" else e["notebook"][key]) for e in model["epochs"]
            ]
            points = [(x, y) for x, y in points if y is not None]
            if points:
                out.append((f"{source}, {split}", f"tc tc-{split}{cls}", points))
    return out


def _panel(model: dict, name: str, keys: tuple[str, ...], step: float) -> str:
    series = _series(model, keys)
    values = [y for *_, points in series for _, y in points]
    low = math.floor(round(min(values) / step, 9)) * step
    high = math.ceil(round(max(values) / step, 9)) * step
    high = high if high > low else low + step
    epochs = [e["epoch"] for e in model["epochs"]]
    first, last = min(epochs), max(epochs)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(epoch: float) -> float:
        return LEFT + (epoch - first) / max(1, last - first) * plot_w

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    body = [svg_text(LEFT, 14, f"{model['title']}: {name} by epoch", cls="ptitle")]
    for k in range(round((high - low) / step) + 1):
        value = low + k * step
        body.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(y(value))}" y2="{_f(y(value))}" class="grid"/>')
        body.append(svg_text(LEFT - 4, y(value) + 4, f"{value:.2f}", "end", "tick"))
    for epoch in epochs:
        body.append(svg_text(x(epoch), HEIGHT - BOTTOM + 14, str(epoch), "middle", "tick"))
    body.append(svg_text(LEFT + plot_w / 2, HEIGHT - 2, "epoch", "middle", "tick"))
    for label, cls, points in series:
        path = " ".join(f"{_f(x(e))},{_f(y(v))}" for e, v in points)
        body.append(f'<polyline points="{path}" class="curve {cls}"/>')
        body.extend(
            f'<circle cx="{_f(x(e))}" cy="{_f(y(v))}" r="2.5" class="pt {cls}" data-series="{escape(label)}" '
            f'data-x="{e!r}" data-y="{v!r}"><title>{escape(label)}, epoch {e}: {v:.4f}</title></circle>'
            for e, v in points
        )
    said = "; ".join(f"{label}: {points[0][1]:.4f} to {points[-1][1]:.4f}" for label, _, points in series)
    axes = (
        f' data-panel="{name}" data-x0="{LEFT}" data-xlen="{plot_w}" data-xmin="{first}" data-xmax="{last}" '
        f'data-y0="{TOP}" data-ylen="{plot_h}" data-ymin="{low!r}" data-ymax="{high!r}"'
    )
    return str(svg_picture(WIDTH, HEIGHT, f"{model['title']}, {name} by epoch ({said})", body, "training", axes))


def training_chart(model: dict) -> Markup:
    """A model's two panels, loss and accuracy, side by side (empty markup without epochs)."""
    if not model.get("epochs"):
        return Markup("")
    return Markup("".join(_panel(model, name, keys, step) for name, keys, step in PANELS))
