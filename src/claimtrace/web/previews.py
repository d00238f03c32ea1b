"""The preview pictures a page names in its ``og:image`` and ``twitter:image`` tags: small PNGs
drawn from the build with Pillow (its own bundled font, unsmoothed), the same bytes every time for
the same build and Pillow version (no time stamp, no metadata, a fixed palette of 13 colours, no
dithering, 4 bits a pixel): a claim's card is 3 to 4 KB, one 4 KiB disk block (the static
export's size, docs/benchmarks.md, counts a card per claim).

* a claim's verdict card (``preview/<claim id>.png``): its id and split, its text (two lines at most), the notebook's
  verdict alone beside the label, and the softmax of each label as a bar;
* the site's card (``preview/index.png``): the landing page's findings, each figure a bar with its
  95% interval beside the notebook pipeline's.

The server answers ``/preview/<name>.png``; the static export writes the same files.
"""

from __future__ import annotations

import io
import textwrap

from PIL import Image, ImageDraw, ImageFont

from claimtrace.constants import LABELS

#: Width and height in pixels (1.91:1, the proportion the cards' readers expect).
PREVIEW_SIZE = (600, 314)
#: Where the pictures live, from the site's top folder (served and exported alike).
FOLDER = "preview/"
SITE_CARD = "index"

#: The palette every card is drawn in (the light theme's colours: style.css's --bg, --ink, --muted,
#: --line, --soft, --accent and the four labels' badges, and three lighter steps), at most 16 for 4 bits.
_COLOURS = {
    "bg": (255, 255, 255),
    "ink": (29, 35, 43),
    "muted": (91, 102, 115),
    "line": (217, 222, 228),
    "soft": (244, 246, 248),
    "accent": (31, 95, 168),
    "SUPPORTS": (47, 125, 79),
    "REFUTES": (178, 74, 58),
    "NOT_ENOUGH_INFO": (107, 116, 128),
    "DISPUTED": (154, 107, 0),
    "grey1": (160, 167, 175),
    "grey2": (200, 205, 211),
    "accent2": (150, 180, 215),
}


def _palette() -> Image.Image:
    image = Image.new("P", (1, 1))
    flat = [channel for colour in _COLOURS.values() for channel in colour]
    image.putpalette(flat + [0] * (768 - len(flat)))
    return image


def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def _png(image: Image.Image) -> bytes:
    """The picture in the fixed palette (nearest colour, no dithering), as PNG bytes."""
    quantized = image.quantize(palette=_palette(), dither=Image.Dither.NONE)
    out = io.BytesIO()
    quantized.save(out, format="PNG", optimize=True, bits=4)
    return out.getvalue()


def _canvas(title: str) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", PREVIEW_SIZE, _COLOURS["bg"])
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"  # no smoothing: a smoothed edge is many colours, and twice the bytes
    draw.rectangle((0, 0, PREVIEW_SIZE[0], 34), fill=_COLOURS["soft"])
    draw.line((0, 34, PREVIEW_SIZE[0], 34), fill=_COLOURS["line"])
    draw.text((18, 8), "claimtrace", font=_font(17), fill=_COLOURS["ink"])
    draw.text((125, 11), title, font=_font(13), fill=_COLOURS["muted"])
    return image, draw


def _bar(draw, x: int, y: int, width: int, share: float, colour, height: int = 12) -> None:
    draw.rectangle((x, y, x + width, y + height), fill=_COLOURS["soft"])
    if share > 0:
        draw.rectangle((x, y, x + round(width * min(share, 1.0)), y + height), fill=colour)


def verdict_card(trace: dict) -> bytes:
    """A claim's card: its id, split and text, the notebook model's verdict on it alone (the
    retrieved passages) against its label, and each label's softmax as a bar."""
    head = trace["claim"]
    image, draw = _canvas(f"{head['id']} · {head.get('split') or 'typed'}")
    lines = textwrap.wrap(head["text"], 68)
    shown = lines[:2]
    if len(lines) > 2:
        shown[-1] = shown[-1][:65] + "…"
    for i, line in enumerate(shown):
        draw.text((18, 50 + 24 * i), line, font=_font(15), fill=_COLOURS["ink"])
    classifier = trace.get("classifier", {})
    if classifier.get("status") != "ok":
        draw.text((18, 140), "No verdict: the classifier stage is not built.", font=_font(16), fill=_COLOURS["muted"])
        return _png(image)
    verdict = classifier["alone"]["verdict"]
    label = head.get("label")
    draw.text((18, 130), "The notebook’s model:", font=_font(14), fill=_COLOURS["muted"])
    draw.rounded_rectangle((190, 126, 190 + 12 + 10 * len(verdict), 150), 4, fill=_COLOURS[verdict])
    draw.text((196, 130), verdict, font=_font(15), fill=_COLOURS["bg"])
    if label:
        right = "right" if label == verdict else "wrong"
        draw.text((380, 130), f"label {label}: {right}", font=_font(14), fill=_COLOURS["muted"])
    draw.text(
        (18, 164), "softmax, the model’s score (not a probability of truth)", font=_font(12), fill=_COLOURS["muted"]
    )
    for i, (name, share) in enumerate(zip(LABELS, classifier["alone"]["softmax"], strict=True)):
        y = 186 + 28 * i
        draw.text((18, y), name, font=_font(13), fill=_COLOURS["ink"])
        _bar(draw, 180, y + 2, 330, share, _COLOURS[name])
        draw.text((520, y), f"{100 * share:.0f}%", font=_font(13), fill=_COLOURS["ink"])
    return _png(image)


#: A finding's short name on the site's card, by its key (web.views.landing.findings).
_SHORT = {
    "majority": "always the majority label",
    "alone": "each claim alone",
    "gold": "the gold passages",
    "bm25": "BM25’s passages (HM)",
}


def site_card(landing: dict) -> bytes:
    """The site's card: each of the landing page's findings as two bars (the change, the
    notebook's pipeline) on one 0–1 scale, each with its 95% interval as a whisker."""
    image, draw = _canvas(f"the 2024 COMP90042 notebook, re-run over {landing['claims']} {landing['split']} claims")
    found = landing["findings"]
    if found.get("status") != "ok":
        draw.text((18, 60), "The findings appear once the build is complete.", font=_font(18), fill=_COLOURS["ink"])
        return _png(image)
    x, width = 250, 300
    draw.text((x, 42), "0", font=_font(11), fill=_COLOURS["muted"])
    draw.text((x + width - 6, 42), "1", font=_font(11), fill=_COLOURS["muted"])
    for i, finding in enumerate(found["items"]):
        y = 60 + 62 * i
        draw.text((18, y), _SHORT.get(finding["key"], finding["key"]), font=_font(15), fill=_COLOURS["ink"])
        draw.text((18, y + 24), "the notebook’s pipeline", font=_font(13), fill=_COLOURS["muted"])
        for j, (figure, colour) in enumerate(((finding["other"], "accent"), (finding["notebook"], "grey1"))):
            top = y + 2 + 24 * j
            _bar(draw, x, top, width, figure["estimate"], _COLOURS[colour])
            low, high = x + round(width * figure["lower"]), x + round(width * figure["upper"])
            draw.line((low, top + 6, high, top + 6), fill=_COLOURS["ink"], width=2)
            draw.line((low, top + 2, low, top + 10), fill=_COLOURS["ink"])
            draw.line((high, top + 2, high, top + 10), fill=_COLOURS["ink"])
        draw.text((x + width + 8, y), f"{finding['other']['estimate']:.2f}", font=_font(13), fill=_COLOURS["ink"])
        draw.text(
            (x + width + 8, y + 24), f"{finding['notebook']['estimate']:.2f}", font=_font(13), fill=_COLOURS["muted"]
        )
    return _png(image)


def preview_name(key: str | None) -> str:
    """The picture of a page: a course claim's card, or the site's (``key`` None)."""
    return f"{FOLDER}{key or SITE_CARD}.png"
