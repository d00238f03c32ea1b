"""The page "Attribution methods, graded" and the claim page's box of each method's top words:
both read what ``claimtrace attribute`` wrote into the build (nothing is attributed on a page
request). Without it, the page says how to produce it."""

from __future__ import annotations

from claimtrace.errors import DataError, Missing
from claimtrace.web.views.status import missing
from claimtrace.workdir.reader import Build

#: The chart's panels: grade key -> its name on the page.
CHART = {"spearman": "Spearman", "kendall": "Kendall", "top3": "top-3", "top_sign": "top sign"}
#: Top words shown per method on a claim page.
TOP = 3


def attribution_page(build: Build) -> dict:
    """The grades of every method and baseline with their intervals, the chart's rows and the
    settings; or a missing section naming the command to run."""
    try:
        grades = build.attribution_grades()
    except Missing as err:
        return missing("attribution", err.reason)
    except DataError as err:
        return {"status": "damaged", "stage": "attribution", "reason": str(err)}
    names = grades["names"]
    rows = []
    for name in (*grades["methods"], *grades["baselines"]):
        row = grades["grades"][name]
        rows.append(
            {
                "key": name,
                "name": names[name],
                "kind": "row" if name in grades["methods"] else "baseline",
                **{label: row[key] for key, label in CHART.items()},
                "completeness": row["completeness"],
                "passed": row["passed"],
                "passes": row["passes"],
                "seconds": row.get("seconds"),
                "cpu_seconds": row.get("cpu_seconds"),
            }
        )
    return {
        "status": "ok",
        "claims": rows[0]["passed"]["n"],
        "split": grades["split"],
        "source": grades["source"],
        "target": grades["target"],
        "settings": grades["settings"],
        "pass": grades["pass"],
        "positive_exact": grades.get("positive_exact"),
        "wall_seconds": grades.get("wall_seconds"),
        "workers": grades.get("workers"),
        "rows": rows,
        "panels": list(CHART.values()),
    }


def claim_attribution(build: Build, claim_id: str | None) -> dict:
    """A dev claim's top words by each method beside the exact shares' (the Transformer alone,
    retrieved evidence), and whether each method passed on it; ``"none"`` when the claim was not
    attributed, missing when the command has not run."""
    if claim_id is None:
        return {"status": "none"}
    try:
        records = build.attribution_claims()
        grades = build.attribution_grades()
    except Missing as err:
        return missing("attribution", err.reason)
    except DataError as err:
        return {"status": "damaged", "stage": "attribution", "reason": str(err)}
    record = records.get(claim_id)
    if record is None:
        return {"status": "none"}
    methods = [("exact", record["exact"]), *((m, record["methods"][m]) for m in grades["methods"])]
    graded = grades["claims"].get(claim_id, {})
    return {
        "status": "ok",
        "verdict": record["verdict"],
        "runner_up": record["runner_up"],
        "rows": [
            {
                "key": key,
                "name": grades["names"][key],
                "top": _top_words(record["tokens"], values),
                "passed": graded.get(key, {}).get("passed"),
                "spearman": graded.get(key, {}).get("spearman"),
            }
            for key, values in methods
        ],
    }


def _top_words(tokens: list[str], values: list[float]) -> list[dict]:
    """The positions of largest ``|value|``, the token and its signed value."""
    order = sorted(range(len(values)), key=lambda i: -abs(values[i]))[:TOP]
    return [{"token": tokens[i], "value": values[i]} for i in order]
