"""The page "Attribution methods, graded" (with its section on the notebook's LSTM), the claim
page's box of each method's top words and the LSTM's top words beside its verdict: all read what
``claimtrace attribute`` wrote into the build (nothing is attributed on a page request). Without
it, the page says how to produce it."""

from __future__ import annotations

from claimtrace.errors import DataError, Missing
from claimtrace.evaluation.attribution import top_words
from claimtrace.web.views.status import missing, public_paths
from claimtrace.workdir.reader import BuildReader

#: The chart's panels: grade key -> its name on the page.
CHART = {"spearman": "Spearman", "kendall": "Kendall", "top3": "top-3", "top_sign": "top sign"}
#: What a claim page says when the LSTM's attributions are not in the build (the same words on
#: every page: no path of this machine's).
LSTM_NOT_RUN = (
    "Which tokens pushed the LSTM's verdict most is not computed for this build: "
    "`claimtrace attribute` computes it (with the grades of the methods it uses), about 4 minutes on two cores."
)


def attribution_page(build: BuildReader) -> dict:
    """The grades of every method and baseline with their intervals, the chart's rows and the
    settings; or a missing section naming the command to run. Paths relative to the build (the
    workdir is ``.``), as on every page: no machine path."""
    return public_paths(_grades_page(build), build.root)


def _grades_page(build: BuildReader) -> dict:
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
        "lstm": lstm_part(build, grades),
    }


def lstm_part(build: BuildReader, grades: dict) -> dict:
    """The page's section on the LSTM: the methods applied, each beside its grade on the
    Transformer and its own figures on the LSTM, those left out with their measured cost, the
    two's agreement; missing (naming the command) for a build attributed before the LSTM was."""
    lstm = grades.get("lstm")
    if lstm is None:
        return missing("attribution", f"not computed yet: run `claimtrace attribute --workdir {build.root}`")
    names, graded = grades["names"], grades["grades"]
    workers = grades.get("workers") or 1

    def row(key: str) -> dict:
        cost = lstm["cost"][key]
        extra = None if cost is None else cost["cpu_seconds"]["per_claim"]["estimate"] * lstm["agreement"]["claims"]
        return {
            "key": key,
            "name": names[key],
            "applied": key in lstm["methods"],
            "spearman": graded[key]["spearman"],
            "passed": graded[key]["passed"],
            "passes": graded[key]["passes"],
            "completeness": graded[key]["completeness"],
            "lstm_completeness": lstm["completeness"].get(key),
            "cost": cost,
            # a method left out: what it would add on every claim, over the run's processes
            "extra_cpu": None if key in lstm["methods"] else extra,
            "extra_wall": None if key in lstm["methods"] or extra is None else extra / workers,
            # its interval: the per-claim CPU seconds' bounds over the claims timed, scaled alike
            "extra_cpu_interval": None
            if key in lstm["methods"] or cost is None
            else [cost["cpu_seconds"]["per_claim"][b] * lstm["agreement"]["claims"] for b in ("lower", "upper")],
        }

    agreement = lstm["agreement"]
    return {
        "status": "ok",
        "claims": agreement["claims"],
        "checkpoint": lstm["checkpoint"],
        "why": lstm["why"],
        "budget_seconds": lstm["budget_seconds"],
        "rows": [row(key) for key in (*lstm["methods"], *lstm["left_out"])],
        "pair": [names[key] for key in agreement["methods"]],
        "agreement": agreement,
        "difference": lstm["difference"],
        "verdict_as_built": lstm["verdict_as_built"],
    }


def claim_attribution(build: BuildReader, claim_id: str | None) -> dict:
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
                "top": top_words(record["tokens"], values),
                "passed": graded.get(key, {}).get("passed"),
                "spearman": graded.get(key, {}).get("spearman"),
            }
            for key, values in methods
        ],
    }


def lstm_top_words(build: BuildReader, claim_id: str) -> dict:
    """A dev claim's LSTM verdict (retrieved evidence, alone) with its top words by each method
    applied, each method's grade on the Transformer and the two methods' agreement on this claim;
    missing (one line naming the command) when the command has not run, or not on this claim."""
    try:
        records = build.attribution_claims("lstm")
        grades = build.attribution_grades()
    except Missing:
        return {"status": "missing", "reason": LSTM_NOT_RUN}
    except DataError as err:
        return {"status": "damaged", "stage": "attribution", "reason": str(err)}
    record = records.get(claim_id)
    if record is None or "lstm" not in grades:
        return {"status": "missing", "reason": LSTM_NOT_RUN}
    lstm = grades["lstm"]
    return {
        "status": "ok",
        "verdict": record["verdict"],
        "runner_up": record["runner_up"],
        "rows": [
            {
                "key": key,
                "name": grades["names"][key],
                "top": record["top"][key],
                "passed": grades["grades"][key]["passed"],
                "passes": grades["grades"][key]["passes"],
            }
            for key in lstm["methods"]
        ],
        "pair": [grades["names"][key] for key in lstm["agreement"]["methods"]],
        "spearman": lstm["claims"][claim_id]["spearman"],
        "bar": grades["pass"]["spearman"],
    }
