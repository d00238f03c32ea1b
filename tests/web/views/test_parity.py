"""claimtrace.web.views.parity: every course figure beside this build's, with a status that a
change of the build or of the code cannot alter unnoticed."""

from __future__ import annotations

import re

import pytest

from claimtrace.web.views.parity import STATUSES, _shown_like, _status

#: Each figure's status on the demo build: a change of any is a change of what the site claims.
DEMO_STATUSES = {
    "fallback_share": "differs",
    "passed": "differs",
    "kept": "differs",
    "max_shared": "exact",
    "F": "differs",
    "last_feature": "differs",
    "passages_with_last_feature": "differs",
    "share_with_last_feature": "differs",
    "passages": "differs",
    "real_tokens": "differs",
    "pad_tokens": "close",
    "table_vs_torch": "differs",
    "accuracy_gold": "close",
    "accuracy_retrieved": "differs",
    "table2_dev_F": "differs",
    "table2_dev_A": "differs",
    "table2_dev_HM": "differs",
    "table2_test_F": "cannot compare",
    "table2_test_A": "cannot compare",
    "table2_test_HM": "cannot compare",
    "final_cell_raw_claim_F": "differs",
    **{f"training_dev_{e}": "close" for e in (1, 3, 5, 6, 7, 8, 9, 10)},
    "training_dev_2": "exact",
    "training_dev_4": "exact",
    "wilson_59_154": "exact",
    "wilson_89_154": "exact",
    "wilson_68_154": "exact",
    **{f"table1_{bucket}": "differs" for bucket in ("le5", "6-10", "11-20", "21-50", "51-100", "101-200", "gt200")},
}


@pytest.fixture(scope="module")
def checklist(web_client) -> dict:
    return web_client.get("/parity.json").json()


def test_every_course_figure_has_a_status_and_a_reason(checklist):
    rows = checklist["rows"]
    assert len(rows) >= 25
    assert {row["key"]: row["status"] for row in rows} == DEMO_STATUSES
    assert sum(checklist["counts"].values()) == len(rows) and set(checklist["counts"]) == set(STATUSES)
    for row in rows:
        assert row["reason"], row["key"]
        if row["status"] in ("close", "differs"):
            assert row["reason"].startswith("another "), row


def test_the_seed_sites_wilson_intervals_are_reproduced_exactly(checklist):
    wilson = [row for row in checklist["rows"] if row["group"] == "wilson"]
    assert [row["build_shown"] for row in wilson] == ["31.0% to 46.2%", "49.9% to 65.3%", "36.6% to 52.0%"]


def test_each_row_links_to_a_section_that_exists(web_client, checklist):
    pages: dict[str, str] = {}
    for row in checklist["rows"]:
        path, anchor = row["where"].split("#")
        page = pages.setdefault(path, web_client.get("/" + path).text)
        assert f'id="{anchor}"' in page, row["where"]


def test_the_page_shows_every_row_served_and_exported_alike(web_client, demo_site_data, checklist, tmp_path):
    from claimtrace.web.site import write_site

    served = web_client.get("/parity.html").text
    assert all(f'data-key="{row["key"]}" data-status="{row["status"]}"' in served for row in checklist["rows"])
    write_site(None, tmp_path, site_data=demo_site_data, splits=("dev",), only=("claim-752",))
    exported = (tmp_path / "parity.html").read_text(encoding="utf-8")

    def text(page: str) -> str:
        table = page[page.index('<table class="num parity-table">') : page.index("</table>")]
        return re.sub(r'href="[^"]*"', "", table)

    assert text(served) == text(exported)


@pytest.mark.parametrize(
    ("course", "shown", "build", "status"),
    [
        (0.67, "0.67", 2 / 3, "exact"),
        (0.47, "47%", 0.4705, "exact"),
        (0.47, "47%", 0.81, "differs"),
        (89, "89/154", 90, "close"),
        (7.7e-7, "7.7e-07", 7.7e-7, "exact"),
        ("محمد", "محمد", "μm", "differs"),
        (0.033, "0.03310", None, "cannot compare"),
    ],
)
def test_a_status_compares_to_the_digits_the_course_printed(course, shown, build, status):
    assert _status(course, shown, build) == status


def test_the_build_value_is_printed_as_the_course_printed_its_own():
    assert _shown_like(0.8116, "47%") == "81%"
    assert _shown_like(90, "89/154") == "90/154"
    assert _shown_like(5240, "1,208,827") == "5,240"
    assert _shown_like(1.4435e-6, "7.7e-07") == "1.4e-06"
