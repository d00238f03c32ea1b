"""``claimtrace site``: the server's pages written as static files, for any static host.

Layout of the output folder (the server's URLs, one file each; links are relative)::

    index.html, index.json              the walkthrough of claim-752
    claim/<id>.html, claim/<id>.json    every claim of the chosen splits
    explore/<split>.html, .json         every claim of a split, accuracies, confusions
    predictions/<split>/<row>.json      each scoreboard row's predictions (dev and test, whatever
                                        the splits chosen; the course's shape)
    live.html                           the model-input editor (claim-752; the table embedded,
                                        so it also works from file://); typing a new claim
                                        needs the server
    api/table.json, api/build.json      the classifier's table; what the build holds
    static/app.js, static/style.css
    404.html

Every file is written through a temporary name and renamed.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from .. import constants as C
from ..artifacts import Build
from ..data import write_atomic
from .render import STATIC, Renderer
from .tracer import DEFAULT_CLAIM, StageMissing, Tracer


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_site(
    build: Build | None,
    out,
    splits: Iterable[str] = C.SPLITS,
    tracer: Tracer | None = None,
    echo: Callable[[str], None] | None = None,
    progress: bool = False,
    limit: int | None = None,
) -> dict:
    """Write the site for a build (or a tracer already made for one) into ``out``; return
    counts and seconds.

    ``limit``: write only the first ``limit`` claim pages of each split (a preview: links to the
    other claims then lead nowhere). claim-752's page is always written (it is the front page's).
    """
    started = time.perf_counter()
    tracer = tracer or Tracer(build)
    renderer = Renderer(tracer, mode="static")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    splits = [s for s in C.SPLITS if s in set(splits)]
    written = {"claims": 0, "explore": 0, "files": 0}

    def put(relative: str, text: str) -> None:
        write_atomic(out / relative, text)
        written["files"] += 1

    (out / "static").mkdir(exist_ok=True)
    for name in ("app.js", "style.css"):
        shutil.copyfile(STATIC / name, out / "static" / name)
        written["files"] += 1

    front = tracer.trace(DEFAULT_CLAIM)
    put("index.html", renderer.claim_page(front, ""))
    put("index.json", _dump(front))
    try:
        table = tracer.table()
        put("api/table.json", _dump(table))
    except StageMissing:
        table = None
    put("api/build.json", _dump(tracer.build_info()))
    put("live.html", renderer.live_page("", front, text=front["claim"]["text"], table=table))
    put(
        "404.html",
        renderer.error_page(
            "", 404, "Not found", "There is no page here.", "Claim pages are named claim/claim-N.html."
        ),
    )

    _put_row_predictions(tracer.build, put)
    for split in splits:
        explore = tracer.explore(split)
        put(f"explore/{split}.html", renderer.explore_page(explore, "../"))
        put(f"explore/{split}.json", _dump(explore))
        written["explore"] += 1
        ids = list(tracer.claims(split))
        if limit is not None:
            ids = ids[:limit] + ([DEFAULT_CLAIM] if DEFAULT_CLAIM in ids[limit:] else [])
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(ids), desc=f"site {split}", unit="claim", disable=None)
        for claim_id in ids:
            result = tracer.trace(claim_id)
            put(f"claim/{claim_id}.html", renderer.claim_page(result, "../"))
            put(f"claim/{claim_id}.json", _dump(result))
            written["claims"] += 1
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        if echo:
            echo(f"{split}: {len(ids)} claim pages")
    written["seconds"] = round(time.perf_counter() - started, 1)
    written["out"] = str(out)
    return written


def _put_row_predictions(build: Build, put: Callable[[str, str], None]) -> None:
    """Every scoreboard row's dev and test predictions, where Explore links to them (both
    splits' pages link to both); nothing when the build lacks them."""
    from ..artifacts import Missing
    from ..evaluate import scoreboard_rows
    from .explore import PREDICTION_SPLITS, prediction_path, row_predictions

    try:
        for split in PREDICTION_SPLITS:
            for row in scoreboard_rows():
                put(prediction_path(split, row.name), _dump(row_predictions(build, split, row.name)))
    except Missing:
        return
