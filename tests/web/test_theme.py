"""The light and the dark theme (static/theme.js, style.css's variables, pictures.py's classes):
every colour through a variable, the system's scheme followed, the reader's choice kept, no flash
of the other theme, served and exported."""

from __future__ import annotations

import re

import pytest

from claimtrace.web.render import STATIC

#: A colour written as a literal: #rgb, #rrggbb, rgb(), rgba(), hsl().
LITERAL = re.compile(r"#[0-9a-fA-F]{3,8}\b|\b(?:rgba?|hsla?)\(")


def _css_outside_palette() -> str:
    """style.css without its palette (the :root block and the data-theme rules), the one place a
    colour is written."""
    css = STATIC.joinpath("style.css").read_text(encoding="utf-8")
    start = css.index(":root {")
    end = css.index("}\n", start) + 2
    return css[:start] + css[end:]


def test_every_colour_of_the_style_is_a_variable_of_its_palette():
    css = STATIC.joinpath("style.css").read_text(encoding="utf-8")
    rest = re.sub(r"/\*.*?\*/", "", _css_outside_palette(), flags=re.S)
    assert LITERAL.findall(rest) == []
    defined = set(re.findall(r"(--[\w-]+):", css))
    used = set(re.findall(r"var\((--[\w-]+)", css))
    assert used <= defined, used - defined


def test_the_pictures_write_no_colour(web_client):
    """Every mark of Explore's pictures is coloured by style.css through a class."""
    page = web_client.get("/explore/dev.html").text
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert svgs
    for svg in svgs:
        assert not re.search(r'(?:fill|stroke)="(?!none)[^"]*"', svg), svg[:200]


def test_the_theme_script_runs_in_the_head_before_the_style(web_client):
    """No flash: theme.js is a blocking script of <head> (allowed by the Content-Security-Policy:
    a file of the site, not an inline script), before the stylesheet's link."""
    page = web_client.get("/").text
    head = page[: page.index("</head>")]
    script = re.search(r'<script src="static/(theme\.[0-9a-f]+\.js)"></script>', head)
    assert script and head.index(script.group(0)) < head.index('rel="stylesheet"')
    assert web_client.get("/static/" + script.group(1)).status_code == 200


def _colours(page) -> dict:
    return page.evaluate(
        """() => ({theme: document.documentElement.getAttribute('data-theme'),
                   bg: getComputedStyle(document.body).backgroundColor,
                   choice: document.getElementById('theme-choice').value,
                   shown: !document.querySelector('.theme-choice').hidden})"""
    )


DARK_BG, LIGHT_BG = "rgb(20, 24, 29)", "rgb(255, 255, 255)"


@pytest.mark.browser
def test_the_system_scheme_is_followed_and_a_choice_is_kept(browser, web_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(web_server + "/parity.html")
    assert _colours(page) == {"theme": None, "bg": DARK_BG, "choice": "system", "shown": True}
    page.select_option("#theme-choice", "light")
    assert _colours(page)["bg"] == LIGHT_BG and _colours(page)["theme"] == "light"
    page.goto(web_server + "/explore/dev.html")  # kept in localStorage
    assert _colours(page) == {"theme": "light", "bg": LIGHT_BG, "choice": "light", "shown": True}
    page.goto(web_server + "/?theme=dark")  # the address wins, and is kept
    assert _colours(page) == {"theme": "dark", "bg": DARK_BG, "choice": "dark", "shown": True}
    page.select_option("#theme-choice", "system")  # the address follows the control
    assert page.url.endswith("?theme=system") and _colours(page)["theme"] is None
    page.goto(web_server + "/live.html")
    assert _colours(page)["choice"] == "system"
    assert errors == []
    context.close()


@pytest.mark.browser
def test_no_frame_shows_the_other_theme(browser, web_server):
    """A kept dark choice on a light system: the document is dark from its first paint (the
    attribute is set before <body> is parsed)."""
    context = browser.new_context(viewport={"width": 390, "height": 900}, color_scheme="light")
    context.add_init_script("window.localStorage.setItem('claimtrace-theme', 'dark');")
    # what <html> says when <body> first appears, before anything of the page can be painted
    context.add_init_script(
        "new MutationObserver((_, seen) => { if (document.body && !window.__first) {"
        " window.__first = document.documentElement.getAttribute('data-theme') || 'none'; seen.disconnect(); } })"
        ".observe(document, {childList: true, subtree: true});"
    )
    page = context.new_page()
    page.goto(web_server + "/")
    assert page.evaluate("window.__first") == "dark"
    assert _colours(page)["bg"] == DARK_BG
    context.close()


@pytest.mark.browser
def test_the_static_export_follows_the_theme(browser, demo_site_data, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    page = context.new_page()
    page.goto((tmp_path / "claim" / "claim-752.html").as_uri() + "?theme=dark")
    assert _colours(page) == {"theme": "dark", "bg": DARK_BG, "choice": "dark", "shown": True}
    page.goto((tmp_path / "index.html").as_uri())
    assert _colours(page)["theme"] == "dark"
    context.close()
