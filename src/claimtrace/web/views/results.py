"""The results page: the build's dev threshold sweep (``sweep/dev.json``, written by the build's
sweep step, :mod:`claimtrace.evaluation.sweep`), read and arranged for the page, never
recomputed: a chart per rule and swept parameter, each point's readout, and the sentences that
name the notebook's setting and the best one, with their intervals and the paired test.
"""

from __future__ import annotations

from claimtrace.web.views.training import training_logs

#: The curves of every chart, in the readout's order: (key in a point, what it is called).
SERIES = (
    ("F", "F"),
    ("P", "precision"),
    ("R", "recall"),
    ("A", "A"),
    ("HM", "HM"),
    ("fallback", "fallback share"),
)
#: How each swept parameter is named.
PARAMETER_NAMES = {
    "cosine": "cosine threshold",
    "overlap": "overlap threshold",
    "top_n": "top-n",
    "score": "score threshold",
}


def _value_text(parameter: str, value: float) -> str:
    return str(int(value)) if parameter == "top_n" else f"{value:.2f}"


def _with_interval(p: dict, key: str) -> str:
    return f"{p[key]:.4f} (95% {p[key + '_lower']:.4f} to {p[key + '_upper']:.4f})"


def readout(chart: dict, i: int) -> str:
    """What the page says of point ``i`` of a chart (app-sweep.js says the same words)."""
    p = chart["points"][i]
    lo, hi = p["A_lower"], p["A_upper"]
    return (
        f"{chart['rule']} rule, {PARAMETER_NAMES[chart['parameter']]} {_value_text(chart['parameter'], p['value'])}: "
        f"F {_with_interval(p, 'F')}, precision {_with_interval(p, 'P')}, recall {_with_interval(p, 'R')}, "
        f"A {p['A']:.4f} (95% {lo:.4f} to {hi:.4f}), HM {p['HM']:.4f}, "
        f"fallback share {100 * p['fallback']:.1f}% ({p['fallbacks']} of {chart['claims']})"
    )


def _bounds(point: dict) -> dict:
    """F's, precision's and recall's interval bounds, flat (``F_lower``, ``F_upper``, ...)."""
    return {f"{key}_{side}": point[f"{key}_interval"][side] for key in ("F", "P", "R") for side in ("lower", "upper")}


def _chart(sweep: dict, rule: str, parameter: str) -> dict:
    notebook = sweep["notebook"][parameter]
    if notebook is None:  # the score threshold: each rule's own
        notebook = next(r["score_threshold"] for r in sweep["rules"] if r["name"] == rule)
    best = sweep["best"][rule]
    points = [
        {
            "value": p["value"],
            "F": p["F"],
            "P": p["P"],
            "R": p["R"],
            **_bounds(p),
            "A": p["A"],
            "HM": p["HM"],
            "fallback": p["fallback"],
            "fallbacks": p["fallbacks"],
            "A_lower": p["A_interval"]["lower"],
            "A_upper": p["A_interval"]["upper"],
            "best": p["key"] == best["key"],
        }
        for p in sweep["curves"][rule][parameter]
    ]
    chart = {
        "id": f"{rule}-{parameter}",
        "rule": rule,
        "parameter": parameter,
        "name": PARAMETER_NAMES[parameter],
        "claims": sweep["claims"],
        "notebook": notebook,
        "start": [p["value"] for p in points].index(notebook),
        "points": points,
    }
    chart["readout"] = readout(chart, chart["start"])
    return chart


def _interval_text(interval: dict, digits: int = 4) -> str:
    return f"{interval['estimate']:.{digits}f} ({interval['lower']:.{digits}f} to {interval['upper']:.{digits}f})"


def _sentences(sweep: dict, rule: str) -> dict:
    """The rule's figures at the notebook's setting and at the best one, the baseline beside them,
    and the paired test between the two, in words."""
    tests, best = sweep["tests"][rule], sweep["best"][rule]
    figures = tests["figures"]
    baseline = next(name for name in figures if name.startswith("always "))

    def said(name: str) -> str:
        f = figures[name]
        return f"F {_interval_text(f['F'])}, A {_interval_text(f['A'])}, HM {_interval_text(f['HM'])}"

    out = {
        "notebook": f"At the notebook's setting (cosine > 0.55, overlap > 0.5, top 6): {said('notebook setting')}.",
        "baseline": f"{baseline[0].upper() + baseline[1:]}, with the same passages: {said(baseline)}.",
    }
    if "best setting" not in figures:
        out["best"] = "The best HM on dev is the notebook's own setting."
        return out
    paired = tests["paired"]["best setting"]
    hm, a = paired["HM"], paired
    out["best"] = (
        f"The best HM on dev is at {best['key']}: {said('best setting')}. Against the notebook's setting, HM "
        f"differs by {hm['estimate']:+.4f} (95% {hm['lower']:+.4f} to {hm['upper']:+.4f}; paired bootstrap "
        f"p = {hm['p']:.3g}, Holm {hm['p_holm']:.3g}): {hm['verdict']}; A by {a['A']['estimate']:+.4f} "
        f"(McNemar's exact p = {a['p']:.3g}, Holm {a['p_holm']:.3g}): {a['verdict']}. Each p is Holm-corrected "
        "over the two comparisons with the notebook's setting (the best setting, the baseline)."
    )
    return out


def results(site_data) -> dict:
    """The results page's data (and its JSON twin): the build's sweep as it wrote it, its charts
    and its sentences.

    Returns
    -------
    dict
        ``{"sweep": the build's sweep file, "charts": [chart], "sentences": {rule: {"notebook",
        "baseline", "best"}}, "series": [[key, name]], "points": n}``; a chart is ``{"id", "rule",
        "parameter", "name", "claims", "notebook", "start", "points": [{"value", "F", "A", "HM",
        "fallback", "fallbacks", "A_lower", "A_upper", "best"}], "readout"}``; a point also holds "P", "R" and the bounds
        of F, P and R ("F_lower", "F_upper", ...).
    """
    sweep = site_data.build.sweep()
    training = training_logs(site_data.build)
    rules = [rule["name"] for rule in sweep["rules"]]
    charts = [_chart(sweep, rule, parameter) for rule in rules for parameter in sweep["parameters"]]
    return {
        "sweep": sweep,
        "charts": charts,
        "sentences": {rule: _sentences(sweep, rule) for rule in rules},
        "series": [list(s) for s in SERIES],
        "points": sum(len(c["points"]) for c in charts),
        # distinct settings per rule: every sweep's points, the notebook's setting counted once
        "training": training,
        "settings_per_rule": sum(len(v) for v in sweep["parameters"].values()) - len(sweep["parameters"]) + 1,
    }
