"""claimtrace.web.views.tour: the tour page's data, read from the pictures scripts/tour.py writes,
and the page served and exported."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from claimtrace.errors import DataError
from claimtrace.web.views.tour import CAPTIONS, TOUR_DIR, png_size, tour_view

#: The most a committed picture may weigh.
MAX_PICTURE_BYTES = 150_000


def test_the_sites_tour_is_three_journeys_at_two_widths_in_small_pictures():
    tour = tour_view()
    assert tour["status"] == "ok"
    assert [j["id"] for j in tour["journeys"]] == ["one-claim", "typed-claim", "compare"]
    for journey in tour["journeys"]:
        assert journey["start"] and journey["steps"]
        for step in journey["steps"]:
            assert step["caption"] and step["alt"]
            assert [shot["width"] for shot in step["shots"]] == [1280, 390]
            for shot in step["shots"]:
                path = TOUR_DIR / shot["file"]
                assert path.stat().st_size < MAX_PICTURE_BYTES, shot["file"]
                assert png_size(path)[0] == shot["width"] and shot["pixels"] == list(png_size(path))
    # every picture in the folder is one the captions name (no stale picture is shipped)
    named = {shot["file"] for j in tour["journeys"] for s in j["steps"] for shot in s["shots"]}
    assert {p.name for p in TOUR_DIR.glob("*.png")} == named


def test_a_folder_without_its_pictures_says_how_to_make_them(tmp_path):
    assert tour_view(tmp_path)["status"] == "absent"
    shutil.copy(TOUR_DIR / CAPTIONS, tmp_path / CAPTIONS)
    absent = tour_view(tmp_path)
    assert absent["status"] == "absent" and absent["reason"].endswith("is missing")
    assert "scripts/tour.py" in absent["how"] and absent["journeys"] == []


def test_a_picture_name_outside_the_folder_is_refused(tmp_path):
    captions = json.loads((TOUR_DIR / CAPTIONS).read_text(encoding="utf-8"))
    captions["journeys"][0]["steps"][0]["shots"]["1280"] = "../style.css"
    (tmp_path / CAPTIONS).write_text(json.dumps(captions), encoding="utf-8")
    with pytest.raises(DataError, match="not a picture's name"):
        tour_view(tmp_path)


def test_the_tour_is_served_with_its_pictures_and_linked_from_the_front_page(web_client):
    page = web_client.get("/tour").text
    assert web_client.get("/tour.html").text == page
    data = web_client.get("/tour.json").json()
    assert data == tour_view()
    for journey in data["journeys"]:
        assert f'id="{journey["id"]}"' in page
        for step in journey["steps"]:
            for shot in step["shots"]:
                assert f'src="{shot["url"]}"' in page or f'srcset="{shot["url"]}"' in page
                answer = web_client.get("/" + shot["url"])
                assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    assert web_client.get("/static/tour/nothing-1-1280.png").status_code == 404
    assert web_client.get("/static/tour/captions.json").status_code == 404
    assert 'href="tour.html"' in web_client.get("/").text


def test_each_picture_is_a_link_to_its_file_and_the_script_is_the_tours_alone(web_client):
    """Without a script, a picture's link opens its file; app-tour.js (the dialog) is linked by
    this page only, deferred so that it runs after app.js."""
    from claimtrace.web.render import ASSETS

    page = web_client.get("/tour.html").text
    links = re.findall(r'<a class="tour-zoom" href="([^"]+)">', page)
    steps = [s for j in tour_view()["journeys"] for s in j["steps"]]
    assert links == [s["shots"][0]["url"] for s in steps] and len(links) == len(steps)
    assert page.count("(opens larger)") == len(steps)
    assert f'<script defer src="static/{ASSETS["app-tour.js"]}"></script>' in page
    assert "app-tour" not in web_client.get("/methods.html").text


def test_the_export_holds_the_tour_and_its_pictures(demo_site_data, web_client, tmp_path):
    from claimtrace.web.site import write_site

    write_site(None, tmp_path, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    page = (tmp_path / "tour.html").read_text(encoding="utf-8")
    main = lambda html: html[html.index("<main") : html.index("</main>")]  # noqa: E731
    assert main(page) == main(web_client.get("/tour.html").text)
    assert json.loads((tmp_path / "tour.json").read_text(encoding="utf-8")) == tour_view()
    for journey in tour_view()["journeys"]:
        for step in journey["steps"]:
            for shot in step["shots"]:
                assert (tmp_path / shot["url"]).read_bytes() == (TOUR_DIR / shot["file"]).read_bytes()
                assert shot["url"] in page
