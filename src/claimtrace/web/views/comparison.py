"""Your system beside the notebook's, in words: each run's intervals and paired tests as a
compare page says them (a table's rows, a chart's rows, one sentence per comparison), and the
class's (every run against the next in the ranking, against the leader and against always
answering SUPPORTS). Computed from :func:`claimtrace.compare.uncertainty.class_statistics`; no
statistic is computed here.

May import: everything below ``web``.
"""

from __future__ import annotations

# -- intervals and paired tests, as the pages say them -------------------------------------------

#: How a page names each reference: (its row's label, the words for "its HM" in a sentence).
REFERENCE_WORDS = {
    "notebook+notebook+notebook": ("the notebook’s pipeline", "the notebook’s"),
    "baseline:random-label": ("a random label", "that of a random label"),
    "baseline:course-file": ("the course’s baseline file", "the course baseline file’s"),
}
#: The always-the-majority-label baseline's name, before the label.
ALWAYS = "baseline:always-"


def reference_words(name: str) -> tuple[str, str, str]:
    """A reference system's row label, its words in a sentence, and its kind ("notebook" or
    "baseline")."""
    kind = "baseline" if name.startswith("baseline:") else "notebook"
    if name.startswith(ALWAYS):
        label = name[len(ALWAYS) :]
        return f"always {label}", f"that of always answering {label}", kind
    label, words = REFERENCE_WORDS.get(name, (name, f"{name}’s"))
    return label, words, kind


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _p_cell(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def method_text(method: dict, claims: int, holm: str) -> str:
    """How every figure and comparison of a compare page was made, in one paragraph."""
    return (
        f"Each figure with its 95% interval: A by the Wilson score interval; F, HM and macro-F1 by a "
        f"percentile bootstrap over the {claims} claims ({method['resamples']:,} resamples, seed "
        f"{method['seed']}). A difference is paired (both systems read at the same resampled claims): "
        "its interval by the paired bootstrap, HM tested by the paired bootstrap's p, A by McNemar's "
        f"exact test; p-values are Holm-corrected {holm}, and a difference is “more than chance” when "
        f"the corrected p is below {method['alpha']}."
    )


def hm_sentence(subject: str, difference: dict, words: str) -> str:
    """One HM comparison in words, with its interval, its test and its verdict."""
    gap = difference["estimate"]
    side = "higher than" if gap > 0 else "lower than" if gap < 0 else "the same as"
    size = f"{abs(gap):.3f} " if gap else ""
    return (
        f"{subject} HM is {size}{side} {words} (95% interval {difference['lower']:+.3f} to "
        f"{difference['upper']:+.3f}; paired bootstrap {_p_text(difference['p_holm'])}, Holm-corrected): "
        f"{'more than chance' if difference['verdict'] == 'more than chance' else 'the two cannot be told apart'}."
    )


def _figure_row(statistics: dict, key: str, label: str, kind: str) -> dict:
    figures = statistics["figures"][key]
    return {"key": key, "name": label, "kind": kind, **{m: figures[m] for m in ("F", "A", "HM", "macro_f1")}}


def _difference_row(reference: str, comparison: dict, subject: str) -> dict:
    label, words, kind = reference_words(reference)
    on_a = {**comparison["A"], **{k: comparison[k] for k in ("p", "p_holm", "verdict")}}
    return {
        "key": reference,
        "name": label,
        "kind": kind,
        "HM": comparison["HM"],
        "A": on_a,
        "HM_p": _p_cell(comparison["HM"]["p_holm"]),
        "A_p": _p_cell(comparison["p_holm"]),
        "mcnemar": comparison["mcnemar"],
        "sentence": hm_sentence(subject, comparison["HM"], words),
    }


def run_intervals(statistics: dict, name: str) -> dict:
    """A run's page: its figures beside the notebook's row and the baselines (a table's and a
    chart's rows), its differences from each (rows, and a sentence each), and whether its
    accuracy is exactly always-the-majority-label's."""
    figures = [_figure_row(statistics, name, name, "run")]
    figures += [_figure_row(statistics, key, *reference_words(key)[::2]) for key in statistics["paired"][name]]
    against = [_difference_row(ref, c, "Your run’s") for ref, c in statistics["paired"][name].items()]
    mine = statistics["figures"][name]["A"]
    same_a = None
    for ref, comparison in statistics["paired"][name].items():
        other = statistics["figures"][ref]["A"]
        if ref.startswith(ALWAYS) and other["successes"] == mine["successes"]:
            label = ref[len(ALWAYS) :]
            same_a = (
                f"A equals always answering {label}: both get {mine['successes']} of {mine['n']} claims right "
                f"(McNemar's exact {_p_text(comparison['p_holm'])}, Holm-corrected: "
                f"{'more than chance' if comparison['verdict'] == 'more than chance' else 'cannot be told apart'})."
            )
    return {
        "method": method_text(
            statistics["method"],
            mine["n"],
            "over the runs compared with the same reference (one run here, so the correction changes nothing)",
        ),
        "figures": figures,
        "against": against,
        "same_a": same_a,
    }


def _oriented(pair: dict, first: str) -> dict:
    """A pair's HM comparison read as ``first`` minus the other."""
    hm = pair["HM"]
    if pair["a"] == first:
        return hm
    return {**hm, "estimate": -hm["estimate"], "lower": -hm["upper"], "upper": -hm["lower"]}


#: The baseline every run of a class is told apart from (or not), on HM.
ALWAYS_SUPPORTS = "baseline:always-SUPPORTS"


def _told_apart(statistics: dict, pairs: dict, digest: str, leader: str) -> dict:
    """Whether a dev run's HM can be told apart from the leader's (every pair Holm-corrected
    together) and from always answering SUPPORTS (Holm over the runs): each verdict."""
    out = {"leader": None, "always_supports": None}
    if digest != leader:
        out["leader"] = pairs[frozenset((digest, leader))]["HM"]["verdict"]
    against = statistics["paired"].get(digest, {}).get(ALWAYS_SUPPORTS)
    if against is not None:
        out["always_supports"] = against["HM"]["verdict"]
    return out


def class_intervals(statistics: dict, summaries: list[dict]) -> dict:
    """The compare index: each dev run's intervals and its HM against the next run in the
    ranking (from every pair of dev runs, Holm-corrected together), the references' rows, the
    chart's rows, and how many pairs differ by more than chance, in words."""
    pairs = {frozenset((p["a"], p["b"])): p for p in statistics["pairs"]}
    dev = [s for s in summaries if s["split"] == "dev"]
    for upper, lower in zip(dev, dev[1:], strict=False):
        pair = pairs[frozenset((upper["digest"], lower["digest"]))]
        upper["next"] = {
            "name": lower["name"],
            "HM": _oriented(pair, upper["digest"]),
            "p": _p_cell(pair["HM"]["p_holm"]),
        }
    for summary in dev:
        summary["intervals"] = {m: statistics["figures"][summary["digest"]][m] for m in ("F", "A", "HM")}
        summary["told_apart"] = _told_apart(statistics, pairs, summary["digest"], dev[0]["digest"])
    keys = [key for key in statistics["figures"] if key not in statistics["paired"]]  # the references
    references = [_figure_row(statistics, key, *reference_words(key)[::2]) for key in keys]
    chart = [{"name": s["name"], "kind": "run", "HM": s["intervals"]["HM"]} for s in dev]
    chart += [{"name": r["name"], "kind": r["kind"], "HM": r["HM"]} for r in references]
    differ = sum(p["HM"]["verdict"] == "more than chance" for p in statistics["pairs"])
    return {
        "references": references,
        "chart": chart,
        "method": method_text(
            statistics["method"],
            statistics["figures"][dev[0]["digest"]]["A"]["n"],
            f"over every pair of dev runs ({len(statistics['pairs'])}) and, against each baseline, over the dev runs",
        ),
        "told_apart": told_apart_words(len(dev), len(statistics["pairs"]), differ, statistics["method"]),
    }


def told_apart_words(runs: int, pairs: int, differ: int, method: dict) -> str:
    """How many pairs of dev runs differ in HM by more than chance, of how many."""
    test = f"paired bootstrap, {method['resamples']:,} resamples, seed {method['seed']}"
    if pairs == 0:
        return f"{runs} dev run: no pair of runs to compare."
    if pairs == 1:
        verdict = "differ in HM by more than chance" if differ else "cannot be told apart in HM"
        return f"The two dev runs {verdict} ({test}; one pair, so Holm’s correction changes nothing)."
    return (
        f"Of the {pairs} pairs of dev runs, {differ} differ{'s' if differ == 1 else ''} in HM by more than "
        f"chance ({test}; Holm-corrected over all {pairs} pairs)."
    )
