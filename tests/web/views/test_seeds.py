"""claimtrace.web.views.seeds: the seeds page's figures and sentences from seed-spread files written
here (partial: one seed; whole: five seeds of each with Welch's p known from statsmodels; missing;
damaged), the build's checkpoints beside them as the build's own figures give them, and the page
and its twin as the server answers them."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttest_ind as sm_ttest_ind

from claimtrace.evaluation import seed_spread
from claimtrace.evaluation.seed_spread import PANELS
from claimtrace.web.pages import SEEDS
from claimtrace.web.render import Renderer
from claimtrace.web.site_data import SiteData
from claimtrace.web.views.seeds import seeds_page
from tests.support.seed_spread import PARTIAL, WHOLE, write_seed_spread

KEYS = [f"{evidence}-{protocol}" for evidence, protocol in PANELS]


@pytest.fixture()
def seed_file(tmp_path, monkeypatch):
    """Write a seed-spread file and make it the one the site reads."""

    def use(models):
        path = write_seed_spread(tmp_path / "seed_spread.json", models)
        monkeypatch.setattr(seed_spread, "SEED_SPREAD_PATH", path)
        return path

    return use


def _html(build, page: dict) -> str:
    return SEEDS.render(Renderer(SiteData(build)), page)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_a_partial_file_says_how_many_seeds_and_what_the_comparison_waits_for(demo_build, seed_file):
    seed_file(PARTIAL)
    page = seeds_page(demo_build)
    assert page["status"] == "ok" and page["waiting"] and not page["complete"]
    transformer, lstm = page["models"]
    assert (transformer["count"], transformer["trained"], transformer["untrained"]) == (1, [42], [1, 2, 3, 4])
    assert (lstm["count"], lstm["untrained"]) == (0, [42, 1, 2, 3, 4])
    assert page["command"] == "python scripts/seed_spread.py --workdir work/demo"
    for panel, key in zip(page["panels"], KEYS, strict=True):
        right = PARTIAL["transformer"][key][0]
        seeds = panel["models"][0]["seeds"]
        assert [(s["seed"], s["correct"], s["claims"]) for s in seeds] == [(42, right, 154)]
        assert panel["models"][0]["spread"] == {
            "n": 1,
            "min": right / 154,
            "max": right / 154,
            "mean": right / 154,
            "sd": 0.0,
            "seeds": [42],
        }
        assert panel["models"][1]["seeds"] == [] and panel["models"][1]["spread"] is None
        assert (
            f"of the 5 seeds planned, the Transformer has 1 ({right / 154:.3f}) and the LSTM none yet, so "
            in panel["lead"]
        )
        assert (
            panel["conclusion"]
            == "whether the difference between the two survives the seed spread waits for at least 2 seeds of each."
        )
    said = _text(_html(demo_build, page))
    assert "Transformer: 1 of 5 seeds trained (42); not yet: 1, 2, 3, 4." in said
    assert "LSTM: 0 of 5 seeds trained; not yet: 42, 1, 2, 3, 4." in said
    assert "python scripts/seed_spread.py --workdir work/demo continues where the run stopped" in said
    assert "the build at work/demo retrieved (the file’s retrieved_from)" in said


def test_the_checkpoints_beside_the_seeds_are_the_builds_own(demo_build, seed_file):
    seed_file(PARTIAL)
    page = seeds_page(demo_build)
    transformer, lstm = (m["shipped"] for m in page["models"])
    assert transformer["status"] == lstm["status"] == "ok" and transformer["which"] == lstm["which"] == "shipped"
    assert transformer["seed"] == lstm["seed"] == 0 and transformer["label"] == "shipped, seed 0"
    board = {row["name"]: row for row in demo_build.scoreboard()["rows"]}
    summary = demo_build.classifier_summary()["dev"]
    lstm_gold = json.loads((seed_spread.ASSETS_DIR / "classifier_lstm_provenance.json").read_text())
    for protocol in ("alone", "notebook"):
        assert (
            transformer["dev"][f"retrieved-{protocol}"]["correct"]
            == board[f"notebook+notebook+{protocol}"]["intervals"]["A"]["successes"]
        )
        assert (
            lstm["dev"][f"retrieved-{protocol}"]["correct"]
            == board[f"notebook+lstm+{protocol}"]["intervals"]["A"]["successes"]
        )
        assert transformer["dev"][f"gold-{protocol}"]["correct"] == summary["gold"][protocol]["correct"]
        assert (
            lstm["dev"][f"gold-{protocol}"]["correct"]
            == lstm_gold["accuracy_with_gold_evidence"]["dev"][protocol]["correct"]
        )
    # the checkpoints paired on the same claims: the scoreboard's own McNemar test, gold evidence
    paired = page["panels"][0]["checkpoints_paired"]
    mcnemar = demo_build.scoreboard()["lstm_minus_notebook_on_gold"]["mcnemar"]
    assert (paired["b"], paired["c"], paired["p"]) == (mcnemar["b"], mcnemar["c"], mcnemar["exact_p"])
    assert f"McNemar’s exact p = {paired['p']:.2g} on the same claims" in page["panels"][0]["sentence"]
    # and the difference's paired bootstrap interval, the scoreboard's own
    interval = demo_build.scoreboard()["lstm_minus_notebook_on_gold"]["A"]
    assert (paired["A"]["lower"], paired["A"]["upper"]) == (interval["lower"], interval["upper"])
    assert (
        f"95% paired bootstrap interval [{interval['lower']:+.3f}, {interval['upper']:+.3f}]"
        in page["panels"][0]["sentence"]
    )


def test_a_whole_file_says_whether_the_difference_survives_with_welchs_p(demo_build, seed_file):
    seed_file(WHOLE)
    page = seeds_page(demo_build)
    assert page["complete"] and not page["waiting"] and page["tested"] == 4
    expected = {}
    for key in KEYS:
        lstm, transformer = np.array(WHOLE["lstm"][key]) / 154, np.array(WHOLE["transformer"][key]) / 154
        t, p, df = sm_ttest_ind(lstm, transformer, usevar="unequal")
        expected[key] = (t, df, p, lstm, transformer)
    holm = dict(zip(KEYS, multipletests([expected[k][2] for k in KEYS], method="holm")[1], strict=True))
    for panel in page["panels"]:
        t, df, p, lstm, transformer = expected[panel["id"]]
        said = panel["sentence"]
        assert panel["comparison"]["welch"]["p"] == pytest.approx(p, rel=1e-10)
        assert f"over 5 seeds the Transformer ranges from {transformer.min():.3f} to {transformer.max():.3f}" in said
        assert f"(mean {transformer.mean():.3f}, SD {transformer.std(ddof=1):.3f})" in said
        assert f"over 5 the LSTM from {lstm.min():.3f} to {lstm.max():.3f}" in said
        assert f"is {lstm.mean() - transformer.mean():+.3f}, " in said
        lower, upper = panel["comparison"]["difference_interval"]
        assert f", 95% interval [{lower:+.3f}, {upper:+.3f}], " in said and lower < upper
        assert (
            f"t = {t:.2f}, df = {df:.1f}, p = {p:.2g}; Holm-corrected over the 4 comparisons here, p = {holm[panel['id']]:.2g}"
            in said
        )
    by_key = {panel["id"]: panel for panel in page["panels"]}
    for key in ("gold-notebook", "gold-alone"):
        assert "so the two ranges do not overlap" in by_key[key]["lead"]
        assert by_key[key]["conclusion"] == "the difference survives the seed spread."
    for key in ("retrieved-notebook", "retrieved-alone"):
        assert "so the two ranges overlap" in by_key[key]["lead"]
        assert by_key[key]["conclusion"] == "the difference does not survive the seed spread."
    said = _text(_html(demo_build, page))
    assert "Every planned seed of each model is trained." in said and "continues where" not in said
    for panel in page["panels"]:  # the verdict first, the figures and tests under it in small print
        assert _text(panel["conclusion"]).strip() in said
        assert _text(panel["lead"]).strip().rstrip(":") + "." in said


def test_every_panel_spans_the_same_accuracy_and_holds_every_mark(demo_build, seed_file):
    seed_file(WHOLE)
    page = seeds_page(demo_build)
    spans = {round(p["axis"]["max"] - p["axis"]["min"], 10) for p in page["panels"]}
    assert spans == {page["span"]}
    for panel in page["panels"]:
        low, high = panel["axis"]["min"], panel["axis"]["max"]
        assert 0 <= low and high <= 1 and round(low * 20, 9) == int(round(low * 20))
        figures = [s for m in panel["models"] for s in m["seeds"]] + [m["shipped"] for m in panel["models"]]
        assert all(low <= f["lower"] and f["upper"] <= high for f in figures), panel["id"]


def test_without_a_file_the_page_says_what_makes_it(demo_build, seed_file, tmp_path, monkeypatch):
    monkeypatch.setattr(seed_spread, "SEED_SPREAD_PATH", tmp_path / "none.json")
    page = seeds_page(demo_build)
    assert page["status"] == "missing" and "python scripts/seed_spread.py --workdir BUILD" in page["reason"]
    assert all(not m["runs"] and m["shipped"]["status"] == "ok" for m in page["models"])
    said = _text(_html(demo_build, page))
    assert "No seed is trained yet. python scripts/seed_spread.py --workdir BUILD trains them" in said
    assert "waits for at least 2 seeds of each" in said


def test_a_damaged_file_is_named_on_the_page_without_the_machines_folders(demo_build, seed_file, tmp_path):
    path = seed_file(WHOLE)
    document = json.loads(path.read_text())
    del document["models"]["lstm"]["runs"]["3"]["dev"]["gold"]["alone"]["interval"]
    path.write_text(json.dumps(document))
    page = seeds_page(demo_build)
    assert page["status"] == "damaged"
    assert page["reason"].startswith(
        "seed_spread.json: damaged (field models.lstm.runs.3.dev.gold.alone.interval: missing)"
    )
    assert str(tmp_path) not in json.dumps(page)
    said = _text(_html(demo_build, page))
    assert "The seed-spread file cannot be read." in said and "models.lstm.runs.3.dev.gold.alone.interval" in said


def test_the_server_answers_the_page_and_its_twin_and_the_model_pages_link_to_it(web_client, demo_build, seed_file):
    seed_file(WHOLE)
    for address in ("/seeds", "/seeds.html"):
        response = web_client.get(address)
        assert response.status_code == 200 and "text/html" in response.headers["content-type"]
        assert "Does the LSTM against the Transformer survive the seeds?" in response.text
    twin = web_client.get("/seeds.json")
    assert twin.status_code == 200 and twin.json() == json.loads(json.dumps(seeds_page(demo_build)))
    assert 'href="seeds.html"' in web_client.get("/methods.html").text
    assert 'href="../seeds.html"' in web_client.get("/explore/dev.html").text
