"""claimtrace.web.seed_chart: every mark of a seeds panel at its value on the panel's stated axis
(the svg's own coordinates; tests/web/test_seeds_page.py measures them drawn in Chromium), its
value in its title, no colour written, and the panel's states: seeds, none yet, no checkpoint."""

from __future__ import annotations

import re

from claimtrace.evaluation.statistics import wilson
from claimtrace.web.seed_chart import LEFT, RIGHT, WIDTH, seed_chart


def _figure(correct: int, **extra) -> dict:
    interval = wilson(correct, 154)
    return {
        "correct": correct,
        "claims": 154,
        "accuracy": correct / 154,
        "lower": interval.lower,
        "upper": interval.upper,
        **extra,
    }


def _model(name: str, rights: list[int], checkpoint: int | None) -> dict:
    seeds = [_figure(right, seed=seed) for seed, right in zip((1, 2, 42), rights)]
    values = [right / 154 for right in rights]
    spread = None
    if values:
        mean = sum(values) / len(values)
        spread = {"n": len(values), "min": min(values), "max": max(values), "mean": mean, "sd": 0.01}
    shipped = None if checkpoint is None else _figure(checkpoint, label="shipped, seed 0", seed=0)
    return {
        "name": name,
        "title": name.upper(),
        "count": len(seeds),
        "planned": 5,
        "seeds": seeds,
        "spread": spread,
        "shipped": shipped,
    }


PANEL = {
    "id": "gold-notebook",
    "title": "gold evidence, in batches of 16",
    "axis": {"min": 0.45, "max": 0.75},
    "models": [_model("transformer", [88, 90, 85], 90), _model("lstm", [93, 95, 97], 93)],
}


def _attributes(tag: str) -> dict[str, str]:
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def _x(value: float) -> float:
    return LEFT + (value - 0.45) / 0.3 * (WIDTH - LEFT - RIGHT)


def test_every_mark_is_at_its_value_on_the_stated_axis():
    svg = str(seed_chart(PANEL))
    head = _attributes(svg[: svg.index(">")])
    assert (float(head["data-x0"]), float(head["data-xlen"])) == (LEFT, WIDTH - LEFT - RIGHT)
    assert (float(head["data-xmin"]), float(head["data-xmax"])) == (0.45, 0.75)
    dots = [_attributes(tag) for tag in re.findall(r"<circle [^>]*>", svg)]
    assert len(dots) == 6
    for dot in dots:
        assert abs(float(dot["cx"]) - _x(float(dot["data-value"]))) <= 0.005
    expected = {(m["name"], str(s["seed"])): s["accuracy"] for m in PANEL["models"] for s in m["seeds"]}
    assert {(d["data-model"], d["data-seed"]): float(d["data-value"]) for d in dots} == expected
    for tag in re.findall(r"<polygon [^>]*>", svg):
        mark = _attributes(tag)
        xs = [float(point.split(",")[0]) for point in mark["points"].split()]
        assert abs((min(xs) + max(xs)) / 2 - _x(float(mark["data-value"]))) <= 0.01
    for tag in re.findall(r'<rect class="band[^>]*>', svg):
        band = _attributes(tag)
        assert abs(float(band["x"]) - _x(float(band["data-min"]))) <= 0.005
        assert abs(float(band["x"]) + float(band["width"]) - _x(float(band["data-max"]))) <= 0.01
    # a whisker per seed and per checkpoint, each on the same axis
    whiskers = re.findall(r'<g class="whisker" ([^>]*)>', svg)
    assert len(whiskers) == 8
    assert all(_attributes(w)["data-min"] == "0.45" and _attributes(w)["data-max"] == "0.75" for w in whiskers)


def test_every_value_is_in_a_title_and_no_colour_is_written():
    svg = str(seed_chart(PANEL))
    for model in PANEL["models"]:
        for figure in [*model["seeds"], model["shipped"]]:
            assert (
                f"{figure['accuracy']:.3f} ({figure['correct']}/154; {figure['lower']:.3f} to {figure['upper']:.3f})"
                in svg
            )
        assert f"range {model['spread']['min']:.3f} to {model['spread']['max']:.3f}" in svg
    assert "TRANSFORMER: 3 of 5 seeds" in svg and "shipped, seed 0" in svg
    assert not re.search(r'(?:fill|stroke)="(?!none)[^"]*"', svg)


def test_a_model_without_seeds_or_checkpoint_says_so():
    panel = {**PANEL, "models": [_model("transformer", [88], None), _model("lstm", [], 93)]}
    svg = str(seed_chart(panel))
    assert "TRANSFORMER: 1 of 5 seeds" in svg and "LSTM: 0 of 5 seeds" in svg
    assert svg.count("no seed trained yet") == 3  # the row, and the svg's label and title
    assert "not built" in svg and len(re.findall(r"<polygon ", svg)) == 1
