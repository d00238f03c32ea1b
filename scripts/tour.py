"""The tour: three journeys through the site as captioned screenshots, for a first visit.

    .venv/bin/python scripts/tour.py --workdir work/demo [--out DIR] [--journey ID]... [--width PX]...

It builds nothing: it serves the given build (``make demo``'s, for the committed tour) on a free
loopback port, walks each journey in Debian's Chromium (/usr/bin/chromium, through Playwright, as
the page tests do) and writes one PNG per step and width, plus ``captions.json`` (what the /tour
page shows; ``claimtrace.web.views.tour`` reads it). The default ``--out`` is the site's own
``src/claimtrace/web/static/tour``, whose images are committed: run it again after a change the
pictures would show. The journeys:

* ``one-claim``: claim-752 through every stage (the summary, the retrieval filter, the verdict);
* ``typed-claim``: a claim typed on Live, traced by the server, then its model input edited;
* ``compare``: a predictions file (the course's baseline unless ``--predictions FILE``) uploaded
  on Compare, then set beside the notebook's pipeline.

The light theme, a viewport of 1280 x 800 or 390 x 844 CSS pixels at one device pixel per CSS
pixel, saved in 256 colours (Pillow, a test requirement): each image stays under 150 KB.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: Where the site reads its tour (claimtrace.web.views.tour.TOUR_DIR).
DEFAULT_OUT = REPO / "src" / "claimtrace" / "web" / "static" / "tour"
WIDTHS = (1280, 390)
HEIGHTS = {1280: 800, 390: 844}
#: The claim the second journey types (a claim of the course's kind, in no split).
TYPED_CLAIM = "Greenland is losing ice faster than ever"
#: Words added to the typed claim's model input in the editor.
ADDED_WORDS = "ice sheet melt record"
CAPTIONS = "captions.json"


@dataclass(frozen=True)
class Step:
    """One screenshot: what the page is brought to (``go(page, base, options)``), its caption, and
    what the picture shows in a few words (its alt text)."""

    id: str
    caption: str
    go: Callable
    alt: str


@dataclass(frozen=True)
class Journey:
    """Steps through the site from one page (``start``, its address from the site's top)."""

    id: str
    title: str
    start: str
    steps: tuple[Step, ...]


def _to(page, selector: str) -> None:
    """Scroll so that ``selector``'s element is at the top of the viewport."""
    page.locator(selector).first.evaluate("node => node.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(100)


def _claim(page, base: str, options) -> None:
    page.goto(base + "/walkthrough.html", wait_until="load")
    page.wait_for_selector("#summary")


def _claim_filter(page, base: str, options) -> None:
    _to(page, "#filter")


def _claim_verdict(page, base: str, options) -> None:
    _to(page, "#verdict")


def _typed(page, base: str, options) -> None:
    page.goto(base + "/live.html", wait_until="load")
    page.fill("#claim-text", TYPED_CLAIM)
    with page.expect_navigation():
        page.click(".claim-form button")
    page.wait_for_selector("body[data-editor=ready]", timeout=60_000)
    _to(page, "#live-trace")


def _typed_edit(page, base: str, options) -> None:
    box = page.locator("#model-input")
    box.fill(box.input_value() + " " + ADDED_WORDS)
    page.wait_for_timeout(200)
    _to(page, "#editor")


def _upload(page, base: str, options) -> None:
    page.goto(base + "/compare/index.html", wait_until="load")
    page.set_input_files("#run-file", str(options.predictions))
    page.fill("#run-name", options.name)
    _to(page, "#upload")


def _run(page, base: str, options) -> None:
    page.click("form.run-upload button")
    page.wait_for_url("**/compare/*.html", timeout=60_000)
    _to(page, "#scores")


JOURNEYS = (
    Journey(
        "one-claim",
        "One claim through every stage",
        "walkthrough.html",
        (
            Step(
                "summary",
                "The walkthrough opens on claim-752: its verdict under both protocols against the gold "
                "label, and how often that pipeline is right over dev, with its 95% interval, beside "
                "always answering SUPPORTS.",
                _claim,
                "the walkthrough of claim-752, its summary card",
            ),
            Step(
                "filter",
                "Stage 4, the retrieval filter: every passage sharing a tag with the claim, its cosine, "
                "overlap and score, and the rule that kept it or stopped it.",
                _claim_filter,
                "the walkthrough’s retrieval filter table",
            ),
            Step(
                "verdict",
                "Stage 9, the verdict: each token's exact share of the logits, the margin over the "
                "runner-up, and the tokens pushing for and against.",
                _claim_verdict,
                "the walkthrough’s verdict section, its charts of each token’s share",
            ),
        ),
    ),
    Journey(
        "typed-claim",
        "A claim you type",
        "live.html",
        (
            Step(
                "traced",
                f"On Live, a claim typed in the box (“{TYPED_CLAIM}”) is traced by the server through "
                "the same stages, against the build's corpus.",
                _typed,
                "the Live page with a typed claim traced",
            ),
            Step(
                "edited",
                "Its model input is editable: change the words and the verdict and every token's share "
                "are recomputed in the browser, with no server call.",
                _typed_edit,
                "the model input editor with words added",
            ),
        ),
    ),
    Journey(
        "compare",
        "Your system beside the notebook's",
        "compare/index.html",
        (
            Step(
                "upload",
                "On Compare, choose your dev predictions file (here the course's baseline) and give it a name.",
                _upload,
                "the Compare page’s upload form, a file chosen",
            ),
            Step(
                "scores",
                "Its course scores, read as the course's scorer reads the file, beside this build's "
                "pipeline, the baselines and Table 2, each with its 95% interval.",
                _run,
                "the uploaded run’s course scores beside this build’s",
            ),
        ),
    ),
)


def small_png(png: bytes, path: Path) -> None:
    """A screenshot in 256 colours, undithered (Pillow's median cut): text and flat colours stay
    exact to the eye, and the file is about a third of Chromium's (under 150 KB at 1280 x 800)."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, "PNG", optimize=True
    )


def shot_name(journey: str, step: int, width: int) -> str:
    return f"{journey}-{step + 1}-{width}.png"


def _serving(workdir: Path, data: Path | None):
    """The build's site on a free loopback port, in a thread: (base URL, server)."""
    import uvicorn

    from claimtrace.web.app import create_app
    from claimtrace.workdir.reader import BuildReader

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(BuildReader(workdir, data))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit(f"tour: the site did not start on 127.0.0.1:{port}")
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def capture(workdir: Path, out: Path, journeys: list[str], widths: list[int], options) -> dict:
    """Walk the chosen journeys at each width; write their PNGs and captions.json into ``out``
    (journeys not walked this time keep their entries and images). Returns the captions."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    captions_path = out / CAPTIONS
    old = json.loads(captions_path.read_text(encoding="utf-8")) if captions_path.is_file() else {"journeys": []}
    kept = {j["id"]: j for j in old["journeys"]}
    base, server = _serving(workdir, options.data)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            for journey in JOURNEYS:
                if journey.id not in journeys:
                    continue
                entry = {"id": journey.id, "title": journey.title, "start": journey.start, "steps": []}
                for width in widths:
                    context = browser.new_context(
                        viewport={"width": width, "height": HEIGHTS.get(width, 800)}, color_scheme="light"
                    )
                    page = context.new_page()
                    for k, step in enumerate(journey.steps):
                        step.go(page, base, options)
                        small_png(page.screenshot(), out / shot_name(journey.id, k, width))
                        if len(entry["steps"]) <= k:
                            entry["steps"].append(
                                {"id": step.id, "caption": step.caption, "alt": step.alt, "shots": {}}
                            )
                        entry["steps"][k]["shots"][str(width)] = shot_name(journey.id, k, width)
                        print(f"tour: {shot_name(journey.id, k, width)}", file=sys.stderr)
                    context.close()
                kept[journey.id] = entry
            browser.close()
    finally:
        server.should_exit = True
    order = [j.id for j in JOURNEYS]
    captions = {
        "made_with": "scripts/tour.py",
        "widths": sorted({int(w) for j in kept.values() for s in j["steps"] for w in s["shots"]}, reverse=True),
        "journeys": sorted(kept.values(), key=lambda j: order.index(j["id"]) if j["id"] in order else len(order)),
    }
    tmp = captions_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(captions, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(captions_path)
    return captions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True, help="a finished build (make demo's: work/demo)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the PNGs and captions.json go")
    parser.add_argument("--journey", action="append", choices=[j.id for j in JOURNEYS], help="one journey (repeatable)")
    parser.add_argument("--width", action="append", type=int, help="one width in CSS pixels (repeatable)")
    parser.add_argument(
        "--data", type=Path, default=None, help="the course data folder (default: as claimtrace finds it)"
    )
    parser.add_argument("--predictions", type=Path, default=None, help="the file uploaded on Compare")
    parser.add_argument("--name", default="course baseline", help="the uploaded run's name")
    options = parser.parse_args(argv)
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: install Debian's chromium (scripts/ensure-chromium)")
    if not (options.workdir / "build.json").is_file():
        parser.error(f"{options.workdir}: not a build (no build.json): run `claimtrace build --demo` first")
    if options.predictions is None:
        from claimtrace.data.files import course_file, find_data_dir

        options.predictions = course_file(options.data or find_data_dir(), "baseline")
    journeys = options.journey or [j.id for j in JOURNEYS]
    captions = capture(options.workdir, options.out, journeys, options.width or list(WIDTHS), options)
    shots = sum(len(s["shots"]) for j in captions["journeys"] for s in j["steps"])
    print(f"tour: {shots} screenshots and {CAPTIONS} in {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
