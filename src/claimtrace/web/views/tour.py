"""The tour (``/tour``): three journeys through the site as captioned screenshots, read from the
folder ``scripts/tour.py`` writes (its ``captions.json`` and one PNG per step and width).

The site's own tour is committed in ``web/static/tour`` (the pictures of ``make demo``'s build);
the page shows it when every picture ``captions.json`` names is there, and says how to make it
when not. Nothing here is computed from the build: the pictures are of a build, the tour's.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from claimtrace.errors import DataError

#: The site's tour: what scripts/tour.py writes by default.
TOUR_DIR = Path(__file__).resolve().parents[1] / "static" / "tour"
CAPTIONS = "captions.json"
#: Where the pages find the pictures, from the site's top folder (served and exported alike).
URL_FOLDER = "static/tour/"
#: A picture's name: ``<journey>-<step>-<width>.png``.
PICTURE = re.compile(r"[a-z][a-z-]*-\d+-\d+\.png")
#: How to make the tour, said on the page when it is missing.
HOW = (
    "make demo (or claimtrace build --demo --workdir work/demo), then "
    ".venv/bin/python scripts/tour.py --workdir work/demo"
)


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header (IHDR, the first chunk)."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise DataError(f"{path.name}: not a PNG image")
    return struct.unpack(">II", head[16:24])


def pictures(folder: Path = TOUR_DIR) -> list[str]:
    """The PNG files the tour's captions name, when every one is there (else empty)."""
    tour = tour_view(folder)
    return [shot["file"] for j in tour["journeys"] for s in j["steps"] for shot in s["shots"]]


def tour_view(folder: Path = TOUR_DIR) -> dict:
    """The tour page's data.

    Returns
    -------
    dict
        ``{"status": "ok", "made_with", "widths", "journeys": [{"id", "title", "start", "steps": [{"id",
        "caption", "alt", "shots": [{"width", "file", "url", "pixels": [w, h]}]}]}], "how"}``;
        ``{"status": "absent", "reason", "journeys": [], "how"}`` when the folder lacks its
        captions or a picture they name.
    """
    captions_path = folder / CAPTIONS
    if not captions_path.is_file():
        return _absent(f"there is no {CAPTIONS} in the tour's folder")
    try:
        captions = json.loads(captions_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"{CAPTIONS} of the tour: not JSON ({err})") from err
    journeys = []
    for journey in captions.get("journeys", []):
        steps = []
        for step in journey["steps"]:
            shots = []
            for width, name in sorted(step["shots"].items(), key=lambda item: -int(item[0])):
                if not PICTURE.fullmatch(name):
                    raise DataError(f"{CAPTIONS} of the tour: {name!r} is not a picture's name")
                if not (folder / name).is_file():
                    return _absent(f"{name} is missing")
                shots.append(
                    {
                        "width": int(width),
                        "file": name,
                        "url": URL_FOLDER + name,
                        "pixels": list(png_size(folder / name)),
                    }
                )
            steps.append({"id": step["id"], "caption": step["caption"], "alt": step.get("alt", ""), "shots": shots})
        journeys.append({"id": journey["id"], "title": journey["title"], "start": journey.get("start"), "steps": steps})
    if not journeys:
        return _absent(f"{CAPTIONS} names no journey")
    return {
        "status": "ok",
        "made_with": captions.get("made_with", "scripts/tour.py"),
        "widths": captions.get("widths", []),
        "journeys": journeys,
        "how": HOW,
    }


def _absent(reason: str) -> dict:
    return {"status": "absent", "reason": reason, "journeys": [], "how": HOW}
