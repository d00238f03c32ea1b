"""What an axe-core check of a page costs in the page tests: a new browser context for each check
(the way before) against one tab kept open from check to check (``AxeChecker``, the ``axe``
fixture of the suite).

    .venv/bin/python bench/bench_axe.py --workdir BUILD [--rounds 2] [--rules /claim/claim-871.html]

Serves the site over BUILD (a demo build, for example the suite's kept one under
``.pytest_cache/claimtrace-demo/``) on 127.0.0.1 and checks the same twelve pages, in both
colour schemes, each way in turn (fresh, one tab, fresh, one tab, ... ``--rounds`` times). For
each way it prints the wall time and the machine's CPU time per check: the whole machine's, read
from /proc/stat, since Chromium's processes are not children this process waits for; so run it
with nothing else running, and ``calibrate.py`` beside it. ``--rules PATH`` adds the wall time
of the whole check on that page at 1280 px and of each of axe's rules run alone there, the five
slowest. Prints one JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: Pages of several sizes: the 404 page (small), a claim page, the methods and tour pages.
PAGES = ["/nowhere.html", "/claim/claim-871.html", "/methods.html", "/tour.html"] * 3


def machine_cpu_seconds() -> float:
    """Busy CPU time of the whole machine so far (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle, iowait = fields[3], fields[4]
    return (sum(fields[:8]) - idle - iowait) / os.sysconf("SC_CLK_TCK")


def check_fresh(browser, source: str, url: str, scheme: str) -> None:
    """A context of its own for the check, closed after it."""
    from tests.web.conftest import RUN

    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.add_script_tag(content=source)
        page.evaluate(RUN)
    finally:
        context.close()


#: Each of axe's rules run alone on the page (enabled ones only, as a whole check runs them): ms.
EACH_RULE = """async () => {
  const times = {};
  for (const rule of axe.getRules()) {
    if (axe._audit.rules.find(r => r.id === rule.ruleId).enabled === false) continue;
    const start = performance.now();
    await axe.run(document, { runOnly: { type: 'rule', values: [rule.ruleId] }, resultTypes: ['violations'] });
    times[rule.ruleId] = performance.now() - start;
  }
  return times;
}"""


def rule_times(browser, source: str, url: str) -> dict:
    """The whole check's wall time on ``url`` and the five slowest rules run alone (seconds)."""
    from tests.web.conftest import RUN

    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.add_script_tag(content=source)
        page.evaluate(RUN)  # compiled and warm before either is timed
        start = time.perf_counter()
        page.evaluate(RUN)
        whole = time.perf_counter() - start
        each = page.evaluate(EACH_RULE)
    finally:
        context.close()
    slowest = sorted(each.items(), key=lambda item: -item[1])[:5]
    return {"whole_check_s": round(whole, 3), "slowest_rules_s": {rule: round(ms / 1e3, 3) for rule, ms in slowest}}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True, help="a build's workdir (the demo build)")
    parser.add_argument("--data", type=Path, default=None, help="the data folder (found as the CLI finds it)")
    parser.add_argument("--rounds", type=int, default=2, help="each way this many times, in turn")
    parser.add_argument("--rules", metavar="PATH", help="also time each rule alone on this page (a site path)")
    args = parser.parse_args(argv)

    import httpx
    from playwright.sync_api import sync_playwright

    from claimtrace.data.files import find_data_dir
    from claimtrace.web.app import create_app
    from claimtrace.web.site_data import SiteData
    from claimtrace.workdir.reader import BuildReader
    from tests.conftest import CHROMIUM, CHROMIUM_ARGS
    from tests.web.conftest import AXE, AxeChecker, serving

    site_data = SiteData(BuildReader(args.workdir, args.data or find_data_dir()))
    source = AXE.read_text(encoding="utf-8")
    per_check: dict[str, dict[str, list[float]]] = {"fresh context": {}, "one tab": {}}
    with serving(create_app(site_data=site_data)) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for path in PAGES:  # the server's caches warm before either way is timed
            httpx.get(base + path, timeout=120)
        for _ in range(args.rounds):
            for way in per_check:
                checker = AxeChecker(browser, source) if way == "one tab" else None
                cpu, wall = machine_cpu_seconds(), time.perf_counter()
                for n, path in enumerate(PAGES):
                    scheme = ("light", "dark")[n % 2]
                    if checker is None:
                        check_fresh(browser, source, base + path, scheme)
                    else:
                        checker.violations(base + path, 1280, scheme)
                if checker is not None:
                    checker.close()
                per_check[way].setdefault("cpu_s", []).append((machine_cpu_seconds() - cpu) / len(PAGES))
                per_check[way].setdefault("wall_s", []).append((time.perf_counter() - wall) / len(PAGES))
        rules = rule_times(browser, source, base + args.rules) if args.rules else None
        browser.close()
    summary = {
        "checks_per_round": len(PAGES),
        **{
            way: {k: [round(v, 3) for v in values] for k, values in figures.items()}
            for way, figures in per_check.items()
        },
    }
    if rules is not None:
        summary["rules"] = {"page": args.rules, **rules}
    print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
