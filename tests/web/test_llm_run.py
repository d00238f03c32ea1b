"""The evaluation page's run in Chromium, against the local stand-in provider
(tests/support/fake_provider.py): the estimate shown before a run is the calls it makes; two calls
at a time, results kept in the sample's order; both conditions in one run, paired as the
evaluation layer pairs them; HM and each claim's rationale; the CSV download, the JSON's rows and
Python's CSV byte for byte; stop aborting the calls in flight; the static export's page alike;
axe after a run at both widths.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time

import pytest
from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.compare.llm_report import run_csv
from claimtrace.evaluation import llm as protocol
from claimtrace.evaluation import llm_score
from claimtrace.evaluation.scorer import evidence_f
from claimtrace.web.app import create_app
from tests.support.fake_provider import MALFORMED, FakeProvider, Reply, default_answer, passage_ids
from tests.web.conftest import ARTIFACTS, serving

pytestmark = pytest.mark.browser

N, SEED = 6, 2024
#: A rationale CSV must quote: a comma, double quotes, a line break.
AWKWARD = 'The passages say "no", then\nsay yes, mostly.'


@pytest.fixture(scope="module")
def provider():
    with FakeProvider("openai") as fake:
        yield fake


@pytest.fixture(scope="module")
def site(demo_site_data, provider):
    with serving(create_app(site_data=demo_site_data, llm_origins=(f"http://127.0.0.1:{provider.port}",))) as base:
        yield base


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.problems = []
    page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
    yield page
    context.close()


def _reset(fake: FakeProvider, delay: float = 0.0, script=None) -> None:
    fake.delay, fake.script = delay, script
    fake.requests.clear()
    fake.in_flight = fake.max_in_flight = fake.closed = 0


def _posts(fake: FakeProvider) -> list[dict]:
    return [r for r in fake.requests if r["path"].endswith("/chat/completions")]


def _sample(demo_site_data, n: int = N, stratified: bool = True) -> list[str]:
    labels = {cid: c.label for cid, c in demo_site_data.build.claims("dev").items() if c.label}
    return protocol.sample_ids(labels, n, SEED, stratified=stratified)


def _open(page, url: str, base_url: str) -> None:
    page.goto(url, wait_until="load")
    page.click("#llm-open-settings")
    page.select_option("#llm-provider", "openai-compatible")
    page.fill("#llm-base-url", base_url)
    page.fill("#llm-model", "stand-in-model")
    page.click("#llm-save")


def _choose(page, n: int, condition: str, at_once: int = 2, prices: tuple[str, str] = ("", "")) -> None:
    page.fill("#llm-n", str(n))
    page.fill("#llm-seed", str(SEED))
    page.check(f"#llm-run-form input[name=condition][value={condition}]")
    page.fill("#llm-concurrency", str(at_once))
    page.fill("#llm-price-in", prices[0])
    page.fill("#llm-price-out", prices[1])


def _estimate(page, calls: int) -> dict:
    page.wait_for_selector(f"#llm-estimate[data-calls='{calls}']")
    box = page.locator("#llm-estimate")
    return {name: int(box.get_attribute(f"data-{name}")) for name in ("calls", "chars", "tokens-in")} | {
        "text": box.inner_text()
    }


def _download(page, button: str) -> bytes:
    with page.expect_download() as info:
        page.click(button)
    return open(info.value.path(), "rb").read()


def _script(demo_site_data, ids: list[str]):
    """The stand-in's answers: the first claim slow with its retrieved passages (so that later
    calls end before it), the second with an awkward rationale, the third unusable; the rest its
    default answer."""
    claims = demo_site_data.build.claims("dev")
    texts = {claims[cid].text: i for i, cid in enumerate(ids)}

    def script(request: dict) -> Reply | None:
        which = texts.get(request["claim"])
        if which == 0 and passage_ids(request["prompt"]) != list(claims[ids[0]].evidences):
            time.sleep(0.8)
        if which == 1:
            answer = json.loads(default_answer(request["prompt"]))
            return Reply(json.dumps({**answer, "rationale": AWKWARD}))
        if which == 2:
            return Reply(MALFORMED)
        return None

    return script


def _check_pairing(page, runs: dict, demo_site_data) -> None:
    """The page's pairing and HM are the evaluation layer's on the same runs (the bootstrap
    intervals come from the page's own stream, so their estimates only)."""
    claims = demo_site_data.build.claims("dev")
    python = llm_score.conditions_paired(runs["retrieved"], runs["gold"], claims)
    mine = page.evaluate(
        "() => { const s = claimtrace.state.llm, by = {};"
        " s.runs.forEach(r => by[r[s.data.protocol.run_key].condition] = r);"
        " return claimtrace.llm.pairConditions(by, s.data); }"
    )
    close = {"abs": 1e-12}
    assert mine["n"] == python["claims"] == N
    assert (mine["b"], mine["c"]) == (python["mcnemar"]["b"], python["mcnemar"]["c"])
    assert mine["p"] == pytest.approx(python["mcnemar"]["exact_p"], rel=1e-9) == python["p"]
    assert mine["h"] == pytest.approx(python["cohens_h"], **close)
    for key in ("A", "F", "HM"):
        assert mine["difference"][key]["estimate"] == pytest.approx(python[key]["estimate"], **close)
    for condition in ("retrieved", "gold"):
        assert mine[condition]["hm"]["estimate"] == pytest.approx(python["hm"][condition], **close)
    shown = {cid: r["evidences"] for cid, r in demo_site_data.build.retrieval("dev").items()}
    notebook = {cid: v["notebook"] for cid, v in demo_site_data.build.verdict_table("dev", "retrieved").items()}
    scored = llm_score.score_run(runs["retrieved"], claims, notebook, shown)
    figures = page.evaluate("() => claimtrace.llm.score(claimtrace.state.llm.runs[0], claimtrace.state.llm.data)")
    assert figures["hm"]["estimate"] == pytest.approx(scored["hm"]["estimate"], **close)
    ids = sorted(protocol.claim_entries(runs["retrieved"]))
    a = sum(runs["retrieved"][cid]["claim_label"] == claims[cid].label for cid in ids) / len(ids)
    f = sum(evidence_f(runs["retrieved"][cid]["evidences"], claims[cid].evidences) for cid in ids) / len(ids)
    assert scored["hm"]["estimate"] == pytest.approx(2 * a * f / (a + f) if a + f else 0.0, **close)


def _check_csv(page, runs: dict, demo_site_data, data_dir, demo_root, tmp_path) -> None:
    """The CSV download: its rows are the JSON runs' (retrieved, then gold, each in the sample's
    order), and its bytes are Python's for the same run files, by the function and the command."""
    got = _download(page, "#llm-export-csv")
    rows = list(csv.reader(io.StringIO(got.decode("utf-8"), newline="")))
    assert rows[0] == list(protocol.CSV_COLUMNS)
    claims = demo_site_data.build.claims("dev")
    expected = []
    for condition in ("retrieved", "gold"):
        run = runs[condition]
        notebook = demo_site_data.build.verdict_table("dev", condition)
        for cid, entry in protocol.claim_entries(run).items():
            said = entry["claim_label"]
            expected.append(
                [
                    cid,
                    condition,
                    entry["llm"]["status"],
                    claims[cid].label,
                    notebook[cid]["notebook"],
                    said or "",
                    str(said == claims[cid].label).lower(),
                    " ".join(entry["evidences"]),
                    entry["llm"]["rationale"],
                ]
            )
    assert rows[1:] == expected and any(row[-1] == AWKWARD for row in rows)
    assert got.decode("utf-8") == run_csv(demo_site_data.build, [runs["retrieved"], runs["gold"]])
    paths = []
    for condition in ("retrieved", "gold"):
        paths += ["--verify", str(tmp_path / f"{condition}.json")]
        (tmp_path / f"{condition}.json").write_text(json.dumps(runs[condition]))
    out = tmp_path / "runs.csv"
    args = ["--data", str(data_dir), "llm", "--workdir", str(demo_root), *paths, "--csv", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == got


def test_estimate_two_at_a_time_both_conditions_paired_and_the_csv(
    page, site, provider, demo_site_data, data_dir, demo_root, tmp_path
):
    ids = _sample(demo_site_data)
    _reset(provider, delay=0.2, script=_script(demo_site_data, ids))
    _open(page, site + "/evaluation.html", provider.openai_base_url)
    _choose(page, N + 2, "both", prices=("1", "2"))
    assert _estimate(page, 2 * (N + 2))["calls"] == 16  # the estimate follows the sample size
    page.fill("#llm-n", str(N))
    before = _estimate(page, 2 * N)
    cost = (before["tokens-in"] * 1 + 2 * N * protocol.MAX_TOKENS * 2) / 1e6
    assert f"{2 * N} calls ({N} claims × 2 conditions), 2 at a time" in before["text"]
    assert f"${cost:.4f} at your prices" in before["text"]
    page.fill("#llm-price-out", "")
    assert "no price set" in page.locator("#llm-estimate").inner_text()

    page.click("#llm-start")
    page.wait_for_selector("#llm-progress:has-text('Done')", timeout=60_000)
    asked = _posts(provider)
    assert len(asked) == before["calls"] and provider.max_in_flight == 2
    chars = sum(len(m["content"]) for r in asked for m in r["body"]["messages"])
    assert (chars, math.ceil(chars / 4)) == (before["chars"], before["tokens-in"])
    # ended out of order (the first claim was slow), kept in the sample's order
    log = page.evaluate("() => JSON.parse(localStorage.getItem('claimtrace.llm.audit'))")
    ended = [(e["claim_id"], e["condition"]) for e in log if e["where"] == "evaluation"]
    assert ended.index((ids[0], "retrieved")) > ended.index((ids[1], "retrieved"))
    table = page.locator("table.llm-claims").first
    assert [a.inner_text() for a in table.locator("tbody th a").all()] == ids
    assert AWKWARD.split("\n")[0] in table.inner_text() and "Stand-in answer." in table.inner_text()

    results = page.locator("#llm-results").inner_text()
    assert "Both conditions, paired claim by claim" in results and "with the gold passages minus" in results
    assert "HM (bootstrap)" in results and "McNemar’s exact p" in results
    runs = {}
    for button in ("#llm-export", "#llm-export-paired"):
        run = json.loads(_download(page, button))
        meta = run[protocol.RUN_KEY]
        assert (
            list(run)[-1] == protocol.RUN_KEY
            and list(protocol.claim_entries(run)) == ids == meta["sample"]["claim_ids"]
        )
        runs[meta["condition"]] = run
    assert set(runs) == {"retrieved", "gold"}
    _check_pairing(page, runs, demo_site_data)
    _check_csv(page, runs, demo_site_data, data_dir, demo_root, tmp_path)

    # the two files imported together: the same results
    for condition, run in runs.items():
        (tmp_path / f"{condition}.json").write_text(json.dumps(run, indent=1))
    page.reload(wait_until="load")
    page.set_input_files("#llm-import", [str(tmp_path / "gold.json"), str(tmp_path / "retrieved.json")])
    page.wait_for_selector("#llm-import-status[data-verified]")
    assert page.locator("#llm-import-status").get_attribute("data-verified") == "true"
    assert page.locator("#llm-results").inner_text() == results
    assert not page.problems, page.problems


def test_stop_aborts_the_calls_in_flight_and_starts_no_other(page, site, provider, demo_site_data):
    _reset(provider, delay=20.0)
    _open(page, site + "/evaluation.html", provider.openai_base_url)
    _choose(page, N, "retrieved")
    page.click("#llm-start")
    deadline = time.monotonic() + 15
    while provider.in_flight < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert provider.in_flight == 2
    page.click("#llm-stop")
    page.wait_for_selector("#llm-progress:has-text('Stopped')", timeout=10_000)
    progress = page.locator("#llm-progress")
    assert progress.inner_text() == f"Stopped: 0 scored, 0 failed, 2 aborted in flight, {N - 2} not asked."
    assert (progress.get_attribute("data-aborted"), progress.get_attribute("data-unasked")) == ("2", str(N - 2))
    deadline = time.monotonic() + 5
    while provider.closed < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # a call started after the stop would have been sent by now
    assert (provider.closed, provider.in_flight, len(_posts(provider))) == (2, 0, 2)
    assert page.locator("#llm-start").is_enabled() and page.locator("#llm-stop").is_disabled()
    log = page.evaluate("() => JSON.parse(localStorage.getItem('claimtrace.llm.audit'))")
    assert [e["status"] for e in log[-2:]] == ["aborted", "aborted"]
    assert not page.problems, page.problems


def test_the_static_exports_page_runs_both_conditions(page, provider, demo_site_data, tmp_path):
    from claimtrace.web.site import write_site

    _reset(provider, delay=0.1)
    origin = f"http://127.0.0.1:{provider.port}"
    write_site(None, tmp_path, site_data=demo_site_data, splits=["dev"], only=["claim-752"], llm_origins=(origin,))
    _open(page, (tmp_path / "evaluation.html").as_uri(), provider.openai_base_url)
    _choose(page, 3, "both", at_once=3)
    assert _estimate(page, 6)["calls"] == 6
    page.click("#llm-start")
    page.wait_for_selector("#llm-progress:has-text('Done')", timeout=60_000)
    assert len(_posts(provider)) == 6 and provider.max_in_flight == 3
    assert "Both conditions, paired claim by claim" in page.locator("#llm-results").inner_text()
    got = _download(page, "#llm-export-csv").decode("utf-8")
    assert got.count("\r\n") == 1 + 6
    assert not page.problems, page.problems


@pytest.mark.parametrize("width", [1280, 390])
def test_axe_after_a_paired_run(browser, axe, site, provider, width):
    _reset(provider)
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        _open(page, site + "/evaluation.html", provider.openai_base_url)
        _choose(page, 4, "both", prices=("0.15", "0.6"))
        page.click("#llm-start")
        page.wait_for_selector("#llm-progress:has-text('Done')", timeout=60_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"evaluation-run-{width}.png"), full_page=True)
        assert axe.on(page) == []
    finally:
        context.close()
