"""The tour's pictures open larger in place (app-tour.js): a click, or Enter on a picture's link,
opens a modal dialog with that step's picture, its alt text and caption; Escape or Close closes it
and gives the focus back to the link of the step shown; the left and right arrow keys move from
step to step, in the dialog and on the page, but not while a form field has the focus. axe-core
finds nothing with the dialog open, at both widths, served and exported. In Chromium, as
tests/web/."""

from __future__ import annotations

import pytest

from claimtrace.web.views.tour import tour_view

pytestmark = pytest.mark.browser

#: Every step of the tour, in page order: (journey title, caption, alt text).
STEPS = [(j["title"], s["caption"], s["alt"]) for j in tour_view()["journeys"] for s in j["steps"]]


@pytest.fixture()
def tour_page(page_at, web_server):
    """The served tour at 1280 px, its script started."""
    page = page_at(1280)
    page.goto(web_server + "/tour.html", wait_until="load")
    page.wait_for_selector("body[data-tour=ready]")
    return page


def _focused_step(page) -> int:
    """The index of the step whose picture's link has the focus (-1: none)."""
    return page.evaluate("Array.from(document.querySelectorAll('a.tour-zoom')).indexOf(document.activeElement)")


def _wait_for_the_focus_on_step(page, step: int) -> None:
    """Until the dialog has closed and the focus is on the link of ``step``: the dialog's close
    event, whose handler moves the focus from the link that opened it to the step last shown,
    comes in a task after the key or click, and the protocol's own calls may run first."""
    page.wait_for_function("() => !document.querySelector('#tour-lightbox').open", timeout=5_000)
    page.wait_for_function(
        "n => Array.from(document.querySelectorAll('a.tour-zoom')).indexOf(document.activeElement) === n",
        arg=step,
        timeout=5_000,
    )


def test_a_picture_opens_larger_and_escape_gives_the_focus_back(tour_page):
    page = tour_page
    dialog = page.locator("dialog#tour-lightbox")
    assert dialog.count() == 1 and not dialog.evaluate("d => d.open")
    link = page.locator("a.tour-zoom").nth(1)
    assert link.get_attribute("aria-haspopup") == "dialog"
    link.click()
    assert dialog.evaluate("d => d.open") and dialog.evaluate("d => d.matches(':modal')")
    picture = dialog.locator("img.lightbox-picture")
    page.wait_for_function("document.querySelector('#tour-lightbox img').complete")
    thumbnail = link.locator("img")
    assert picture.get_attribute("src") == thumbnail.evaluate("img => img.currentSrc")
    assert picture.get_attribute("alt") == thumbnail.get_attribute("alt") == f"Screenshot: {STEPS[1][2]}"
    # larger than on the page, and as wide as its file at most
    shown, inline = picture.bounding_box(), thumbnail.bounding_box()
    assert shown["width"] > 1.4 * inline["width"]
    assert shown["width"] <= picture.evaluate("img => img.naturalWidth")
    # announced: a dialog named by its step, described by the caption
    assert dialog.get_attribute("aria-labelledby") == "tour-lightbox-title"
    first = tour_view()["journeys"][0]
    assert page.locator("#tour-lightbox-title").inner_text() == f"1. {first['title']}: step 2 of {len(first['steps'])}"
    assert page.locator("#" + dialog.get_attribute("aria-describedby")).inner_text() == STEPS[1][1]
    assert page.evaluate("document.activeElement.textContent") == "Close"
    page.keyboard.press("Escape")
    assert not dialog.evaluate("d => d.open")
    assert _focused_step(page) == 1
    assert not page.problems, page.problems


def test_the_dialog_works_without_a_mouse(tour_page):
    page = tour_page
    page.locator("a.tour-zoom").first.focus()
    page.keyboard.press("Enter")
    dialog = page.locator("dialog#tour-lightbox")
    assert dialog.evaluate("d => d.open") and dialog.get_attribute("data-step") == "0"
    # Tab stays in the dialog (modal): Close, the previous step (disabled at the first), the next
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Enter")  # the next step
    assert dialog.get_attribute("data-step") == "1"
    page.locator("#tour-lightbox .lightbox-close").click()
    _wait_for_the_focus_on_step(page, 1)
    assert not dialog.evaluate("d => d.open") and _focused_step(page) == 1


def test_on_a_phone_the_picture_is_larger_in_the_dialog_too(page_at, web_server):
    page = page_at(390)
    page.goto(web_server + "/tour.html", wait_until="load")
    page.wait_for_selector("body[data-tour=ready]")
    link = page.locator("a.tour-zoom").first
    link.click()
    page.wait_for_function("document.querySelector('#tour-lightbox img').complete")
    picture = page.locator("#tour-lightbox img.lightbox-picture")
    assert picture.get_attribute("src").endswith("-390.png")  # the narrow picture the page shows
    assert picture.bounding_box()["width"] > 1.3 * link.locator("img").bounding_box()["width"]
    # the step and Close stay in sight while the picture scrolls; so do the step buttons
    page.locator("#tour-lightbox").evaluate("d => d.scrollTo(0, 400)")
    assert page.locator("#tour-lightbox .lightbox-close").is_visible()
    nav = page.locator("#tour-lightbox .lightbox-next").bounding_box()
    assert 0 < nav["y"] < 844 - nav["height"]
    page.keyboard.press("Escape")
    assert _focused_step(page) == 0


def test_the_arrow_keys_move_between_steps(tour_page):
    page = tour_page
    dialog = page.locator("dialog#tour-lightbox")
    # on the page: from the top, the right arrow goes to the first step, then the next
    page.keyboard.press("ArrowRight")
    assert _focused_step(page) == 0
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert _focused_step(page) == 2
    top = page.locator("a.tour-zoom").nth(2).evaluate("a => a.closest('li').getBoundingClientRect().top")
    assert 0 <= top < 200  # scrolled to it
    page.keyboard.press("ArrowLeft")
    assert _focused_step(page) == 1
    # in the dialog: the pictures move, across journeys, and stop at either end
    page.keyboard.press("Enter")
    assert dialog.get_attribute("data-step") == "1"
    for _ in range(len(STEPS) + 2):
        page.keyboard.press("ArrowRight")
    last = len(STEPS) - 1
    assert dialog.get_attribute("data-step") == str(last)
    assert page.locator("#tour-lightbox-caption").inner_text() == STEPS[last][1]
    assert page.locator("#tour-lightbox .lightbox-next").is_disabled()
    page.keyboard.press("ArrowLeft")
    assert dialog.get_attribute("data-step") == str(last - 1)
    page.keyboard.press("Escape")
    _wait_for_the_focus_on_step(page, last - 1)
    assert _focused_step(page) == last - 1  # the step last shown, not the one opened
    # not while a form field has the focus: the theme's select keeps its arrows
    page.locator("#theme-choice").focus()
    page.keyboard.press("ArrowRight")
    assert _focused_step(page) == -1 and page.evaluate("document.activeElement.id") == "theme-choice"
    assert not page.problems, page.problems


def _axe_with_the_dialog_open(browser, axe, url: str, width: int, scheme: str) -> list[dict]:
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_selector("body[data-tour=ready]")
        page.locator("a.tour-zoom").nth(2).click()
        page.wait_for_function("document.querySelector('#tour-lightbox img').complete")
        return axe.on(page)
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_axe_finds_nothing_with_the_dialog_open(browser, axe, web_server, width, scheme):
    assert _axe_with_the_dialog_open(browser, axe, web_server + "/tour.html", width, scheme) == []


def test_the_exported_tour_opens_its_pictures_too(browser, axe, demo_site_data, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    assert _axe_with_the_dialog_open(browser, axe, (tmp_path / "tour.html").as_uri(), 390, "light") == []
