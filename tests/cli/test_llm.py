"""``claimtrace llm`` (claimtrace.cli.llm, claimtrace.compare.llm_run) against the local stand-in
provider: a full run scored by compare with the paired statistics, a killed run resumed to the
same file, malformed answers and refusals, 429s, a wrong key, the key never written, the probe,
an imported run verified."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time

from click.testing import CliRunner

from claimtrace.cli.main import main
from claimtrace.compare.llm_run import journal_path
from claimtrace.evaluation import llm as P
from tests.support.fake_provider import FakeProvider, Reply

KEY = "sk-secret-test-key-9f8e7d6c5b4a"


def _llm(data_dir, workdir, fake, out, *more, key: str | None = KEY):
    args = ["--data", str(data_dir), "llm", "--base-url", fake.base_url, "--model", "fake-model"]
    args += ["--workdir", str(workdir), "--out", str(out), *more]
    env = {}
    if key is not None:
        args += ["--api-key-env", "CT_TEST_KEY"]
        env["CT_TEST_KEY"] = key
    return CliRunner().invoke(main, args, env=env)


def _without_times(value: dict) -> dict:
    value = json.loads(json.dumps(value))
    for entry in P.claim_entries(value).values():
        entry["llm"].pop("latency_ms")
    for name in ("started", "finished"):
        value[P.RUN_KEY].pop(name)
    return value


def test_a_full_run_is_a_predictions_file_compare_scores_with_paired_statistics(
    demo_build, demo_root, data_dir, tmp_path
):
    out = tmp_path / "run.json"
    with FakeProvider(expected_key=KEY, malformed=[0], refuse=[1], fail_first={2: 1}, retry_after=1) as fake:
        started = time.perf_counter()
        result = _llm(data_dir, demo_root, fake, out, "--sample", "20", "--seed", "5", "--stratified")
        took = time.perf_counter() - started
        requests = fake.requests
    assert result.exit_code == 0, result.output
    assert took >= 1.0 and len(requests) == 21  # one 429, its Retry-After honoured, asked again
    value = json.loads(out.read_text())
    meta = value[P.RUN_KEY]
    assert list(value)[-1] == P.RUN_KEY and meta["sample"]["claim_ids"] == list(P.claim_entries(value))
    assert meta["prompt_version"] == "v1" and meta["provider"] == "openai-compatible" and meta["failed"] == {}
    statuses = [e["llm"]["status"] for e in P.claim_entries(value).values()]
    assert statuses.count("unusable") == 2 and statuses.count("ok") == 18
    assert all(e["claim_label"] is None for e in P.claim_entries(value).values() if e["llm"]["status"] == "unusable")
    labels = {demo_build.claims("dev")[cid].label for cid in meta["sample"]["claim_ids"]}
    assert labels == {"SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED"}
    assert not journal_path(out).exists()

    shown = CliRunner().invoke(
        main, ["--data", str(data_dir), "compare", "--workdir", str(demo_root), "--predictions", str(out)]
    )
    assert shown.exit_code == 0, shown.output
    assert "an LLM run of fake-model (prompt v1, retrieved passages, 20 dev claims sampled with seed 5" in shown.output
    assert "about ±0.22 wide" in shown.output and "McNemar exact p" in shown.output and "Cohen's h" in shown.output
    assert "2 unusable answers" in shown.output and "strict score" in shown.output
    assert "is not a course claim" not in shown.output and "of no course claim" not in shown.output
    report = json.loads(
        CliRunner()
        .invoke(
            main, ["--data", str(data_dir), "compare", "--workdir", str(demo_root), "--predictions", str(out), "--json"]
        )
        .output
    )
    llm = report["runs"][0]["llm"]
    assert llm["counts"] == {"sampled": 20, "scored": 20, "ok": 18, "unusable": 2, "failed": 0}
    assert llm["citations"]["valid"] == llm["citations"]["cited"] == 18  # the stand-in cites a passage shown
    assert set(llm["paired"]) >= {"A", "mcnemar", "cohens_h", "p", "verdict"}
    assert llm["cost"]["usd"] == "unknown"


def test_the_key_is_never_written(demo_root, data_dir, tmp_path):
    out = tmp_path / "run.json"
    with FakeProvider(expected_key=KEY) as fake:
        result = _llm(data_dir, demo_root, fake, out, "--sample", "6")
        assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in fake.requests)
    assert result.exit_code == 0
    written = [out.read_text(), result.output]
    assert not any(KEY in text or KEY[-8:] in text for text in written)


def test_a_wrong_key_fails_every_call_excluded_and_counted(demo_root, data_dir, tmp_path):
    out = tmp_path / "run.json"
    with FakeProvider(expected_key=KEY) as fake:
        result = _llm(data_dir, demo_root, fake, out, "--sample", "4", key="sk-wrong-key-000000000000")
        assert len(fake.requests) == 4  # a 401 is not retried
    assert result.exit_code == 1
    value = json.loads(out.read_text())
    assert P.claim_entries(value) == {}
    assert len(value[P.RUN_KEY]["failed"]) == 4
    assert all(error.startswith("HTTP 401") for error in value[P.RUN_KEY]["failed"].values())
    assert "4 calls failed (excluded from scoring)" in result.output
    assert "sk-wrong-key" not in out.read_text() + result.output


def _args(data_dir, workdir, fake, out) -> list[str]:
    args = [sys.executable, "-m", "claimtrace.cli", "--data", str(data_dir), "llm", "--base-url", fake.base_url]
    args += ["--model", "slow", "--workdir", str(workdir), "--out", str(out), "--sample", "12", "--seed", "3"]
    return [*args, "--concurrency", "1", "--api-key-env", "CT_TEST_KEY"]


def _spawn(data_dir, workdir, fake, out) -> subprocess.Popen:
    env = dict(os.environ, CT_TEST_KEY=KEY)
    return subprocess.Popen(
        _args(data_dir, workdir, fake, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_a_killed_run_resumes_to_the_same_file(demo_root, data_dir, tmp_path):
    whole, killed = tmp_path / "whole.json", tmp_path / "killed.json"
    with FakeProvider(delay=0.25) as fake:
        process = _spawn(data_dir, demo_root, fake, killed)
        journal = journal_path(killed)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if journal.is_file() and len(journal.read_text().splitlines()) >= 7:  # the header and 6 calls
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert not killed.exists() and KEY not in journal.read_text()
        asked = len(fake.requests)
        assert asked < 12
        fake.delay = 0
        resumed = subprocess.run(
            _args(data_dir, demo_root, fake, killed),
            env=dict(os.environ, CT_TEST_KEY=KEY),
            capture_output=True,
            text=True,
        )
        assert resumed.returncode == 0, resumed.stderr
        done_before = asked - 1  # at most the call in flight is asked again
        assert len(fake.requests) - asked <= 12 - done_before
        assert KEY not in resumed.stdout + resumed.stderr
        assert _llm(data_dir, demo_root, fake, whole, "--model", "slow", "--sample", "12", "--seed", "3").exit_code == 0
    assert not journal.exists()
    assert _without_times(json.loads(killed.read_text())) == _without_times(json.loads(whole.read_text()))


def test_a_journal_of_another_run_is_refused(demo_root, data_dir, tmp_path):
    out = tmp_path / "run.json"
    journal_path(out).write_text(json.dumps({"journal": {"model": "other"}}) + "\n")
    with FakeProvider() as fake:
        result = _llm(data_dir, demo_root, fake, out, "--sample", "3", key=None)
    assert result.exit_code == 2 and "the journal of another run" in result.output


def test_the_probe_reports_the_share_completed_near_verbatim(demo_build, demo_root, data_dir, tmp_path):
    halves = dict(P.probe_halves(claim.text) for claim in demo_build.claims("dev").values())

    def knows_every_claim(request):
        if request["system"] == P.PROBE_SYSTEM_V1:
            return Reply(halves[request["prompt"]])
        return None

    out = tmp_path / "run.json"
    with FakeProvider(script=knows_every_claim) as fake:
        result = _llm(data_dir, demo_root, fake, out, "--sample", "5", "--probe", key=None)
    assert result.exit_code == 0, result.output
    probe = json.loads(out.read_text())[P.RUN_KEY]["probe"]
    assert probe["asked"] == probe["near_verbatim"] == 5 and probe["share"]["estimate"] == 1.0
    assert "5 of 5 claims completed near-verbatim" in result.output


def test_an_imported_run_is_verified(demo_root, data_dir, tmp_path):
    out = tmp_path / "run.json"
    with FakeProvider() as fake:
        assert _llm(data_dir, demo_root, fake, out, "--sample", "6", "--condition", "gold", key=None).exit_code == 0
    verify = ["--data", str(data_dir), "llm", "--workdir", str(demo_root), "--verify"]
    good = CliRunner().invoke(main, [*verify, str(out)])
    assert good.exit_code == 0 and "verified" in good.output, good.output

    value = json.loads(out.read_text())
    value[P.RUN_KEY]["sample"]["seed"] = 1
    first = next(iter(P.claim_entries(value)))
    value[first]["claim_label"] = "SUPPORTS" if value[first]["claim_label"] != "SUPPORTS" else "REFUTES"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(value))
    bad = CliRunner().invoke(main, [*verify, str(tampered)])
    assert bad.exit_code == 2
    assert "sample: the claim ids differ" in bad.output and f"{first}: the raw answer judges as" in bad.output


def test_several_runs_of_one_model_show_their_spread(demo_root, data_dir, tmp_path):
    runs = []
    with FakeProvider() as fake:
        for seed in (1, 2):
            runs.append(tmp_path / f"run{seed}.json")
            assert (
                _llm(data_dir, demo_root, fake, runs[-1], "--sample", "8", "--seed", str(seed), key=None).exit_code == 0
            )
    args = ["--data", str(data_dir), "compare", "--workdir", str(demo_root)]
    for path in runs:
        args += ["--predictions", str(path)]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert "2 runs of fake-model (retrieved, on different samples): accuracy from" in shown.output


def test_anthropic_s_wire_format_end_to_end_with_a_progress_bar(demo_root, data_dir, tmp_path):
    out = tmp_path / "run.json"
    with FakeProvider(provider="anthropic", expected_key=KEY) as fake:
        result = _llm(data_dir, demo_root, fake, out, "--provider", "anthropic", "--sample", "4")
        assert {r["path"] for r in fake.requests} == {"/v1/messages"}
    assert result.exit_code == 0, result.output
    assert "llm: 100%" in result.stderr and "4/4" in result.stderr
    meta = json.loads(out.read_text())[P.RUN_KEY]
    assert meta["provider"] == "anthropic" and meta["base_url"] == fake.base_url
    assert KEY not in out.read_text() + result.output


def test_a_key_variable_not_set_is_one_message_and_exit_2(demo_root, data_dir, tmp_path):
    with FakeProvider() as fake:
        result = _llm(data_dir, demo_root, fake, tmp_path / "run.json", "--sample", "2", key="")
    assert result.exit_code == 2 and "--api-key-env CT_TEST_KEY: the environment variable is not set" in result.output


def test_a_finished_run_is_not_asked_again(demo_root, data_dir, tmp_path):
    out = tmp_path / "run.json"
    out.write_text("{}")
    with FakeProvider() as fake:
        result = _llm(data_dir, demo_root, fake, out, "--sample", "2", key=None)
        assert fake.requests == []
    assert result.exit_code == 2 and "a finished run is there already" in result.output


def test_a_run_writes_its_csv_and_two_conditions_compare_paired(demo_build, demo_root, data_dir, tmp_path):
    runs = {}
    with FakeProvider() as fake:
        for condition in ("retrieved", "gold"):
            runs[condition] = tmp_path / f"{condition}.json"
            more = [
                "--sample",
                "6",
                "--seed",
                "3",
                "--condition",
                condition,
                "--csv",
                str(tmp_path / f"{condition}.csv"),
            ]
            result = _llm(data_dir, demo_root, fake, runs[condition], *more, key=None)
            assert result.exit_code == 0, result.output
            assert f"wrote {tmp_path / f'{condition}.csv'}: a row per claim asked per condition" in result.output
            assert "HM (of accuracy and evidence F)" in result.output
    rows = list(csv.reader(io.StringIO((tmp_path / "gold.csv").read_text(encoding="utf-8"), newline="")))
    value = json.loads(runs["gold"].read_text())
    claims = demo_build.claims("dev")
    assert rows[0] == list(P.CSV_COLUMNS) and [r[0] for r in rows[1:]] == value[P.RUN_KEY]["sample"]["claim_ids"]
    for row in rows[1:]:
        entry = value[row[0]]
        assert row[1:4] == ["gold", entry["llm"]["status"], claims[row[0]].label]
        assert row[4] == demo_build.verdict_table("dev", "gold")[row[0]]["notebook"]
        assert row[5:8] == [
            entry["claim_label"] or "",
            str(entry["claim_label"] == claims[row[0]].label).lower(),
            " ".join(entry["evidences"]),
        ]
    # both verified at once, their CSV the two runs' rows in the order given
    both = tmp_path / "both.csv"
    args = ["--data", str(data_dir), "llm", "--workdir", str(demo_root), "--csv", str(both)]
    result = CliRunner().invoke(main, [*args, "--verify", str(runs["retrieved"]), "--verify", str(runs["gold"])])
    assert result.exit_code == 0, result.output
    parts = [(tmp_path / f"{c}.csv").read_bytes().split(b"\r\n", 1) for c in ("retrieved", "gold")]
    assert both.read_bytes() == parts[0][0] + b"\r\n" + parts[0][1] + parts[1][1]

    shown = CliRunner().invoke(
        main,
        ["--data", str(data_dir), "compare", "--workdir", str(demo_root)]
        + ["--predictions", str(runs["retrieved"]), "--predictions", str(runs["gold"])],
    )
    assert shown.exit_code == 0, shown.output
    assert "fake-model on the same 6 claims, gold passages (gold) minus retrieved (retrieved): accuracy" in shown.output
    assert "McNemar exact p = " in shown.output.split("gold passages (gold) minus")[1]
