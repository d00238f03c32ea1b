"""claimtrace.evaluation.seed_spread: the seed-spread file read as scripts/seed_spread.py writes it
(missing, partial, whole; damaged files named by file and field), and the two models compared
over their seeds, Welch's test held to statsmodels' and Holm's correction to statsmodels'."""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttest_ind as sm_ttest_ind

from claimtrace.errors import DataError
from claimtrace.evaluation.seed_spread import (
    PANELS,
    SEED_SPREAD_PATH,
    SEEDS,
    compare_models,
    describe,
    read_seed_spread,
    welch,
)
from tests.support import seed_spread as made
from tests.support.seed_spread import PARTIAL, WHOLE, write_seed_spread


def test_the_script_and_the_reader_share_the_file_and_the_seeds():
    script = made.script()
    assert script.OUTPUT == SEED_SPREAD_PATH and tuple(script.SEEDS) == SEEDS == made.SEEDS
    assert SEED_SPREAD_PATH.name == "seed_spread.json" and SEED_SPREAD_PATH.parent.name == "assets"


def test_no_file_is_none(tmp_path):
    assert read_seed_spread(tmp_path / "seed_spread.json") is None


def test_a_partial_file_holds_what_was_trained(tmp_path):
    spread = read_seed_spread(write_seed_spread(tmp_path / "s.json", PARTIAL))
    assert spread.seeds("transformer") == [42] and spread.seeds("lstm") == []
    assert spread.retrieved_from == "work/demo"
    assert spread.command() == "python scripts/seed_spread.py --workdir work/demo"
    run = spread.runs["transformer"][0]
    assert run.epochs == 10 and run.best_epoch == 10
    figure = run.dev["gold", "notebook"]
    assert (figure.correct, figure.claims) == (90, 154) and figure.lower < figure.accuracy < figure.upper
    assert spread.accuracies("transformer", "retrieved", "alone") == [39 / 154]


def test_the_sample_of_a_real_run_reads(tmp_path):
    """The shape of the first file the real run wrote (one Transformer seed, its curve), kept
    here as the script wrote it but for its curve's length."""
    document = json.loads(write_seed_spread(tmp_path / "s.json", PARTIAL).read_text())
    document["models"]["transformer"]["runs"]["42"]["curve"] = [
        {"epoch": 1, "train_loss": 1.1, "train_accuracy": 0.5, "dev_accuracy": 0.55, "seconds": 132.0}
    ]
    (tmp_path / "s.json").write_text(json.dumps(document))
    assert read_seed_spread(tmp_path / "s.json").seeds("transformer") == [42]


def test_a_whole_file_holds_five_seeds_of_each_in_ascending_order(tmp_path):
    spread = read_seed_spread(write_seed_spread(tmp_path / "s.json", WHOLE))
    for model, panels in WHOLE.items():
        assert spread.seeds(model) == sorted(SEEDS)
        order = [made.SEEDS.index(seed) for seed in sorted(SEEDS)]
        for evidence, protocol in PANELS:
            expected = [panels[f"{evidence}-{protocol}"][i] / 154 for i in order]
            assert spread.accuracies(model, evidence, protocol) == expected


def _damaged(tmp_path, change, through_the_script: bool = False) -> str:
    """The reader's message on the whole file changed by ``change`` (written again by the
    script's own ``write``, which recomputes the spread, when ``through_the_script``)."""
    path = write_seed_spread(tmp_path / "seed_spread.json", WHOLE)
    document = json.loads(path.read_text())
    change(document)
    if through_the_script:
        made.script().write(path, document)
    else:
        path.write_text(json.dumps(document))
    with pytest.raises(DataError) as caught:
        read_seed_spread(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: damaged") and "scripts/seed_spread.py" in message
    return message


def _runs(document, model="lstm"):
    return document["models"][model]["runs"]


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: _runs(d)["42"].pop("epochs"), "field models.lstm.runs.42.epochs: missing"),
        (lambda d: _runs(d)["2"]["dev"]["gold"].pop("alone"), "field models.lstm.runs.2.dev.gold.alone: missing"),
        (lambda d: _runs(d)["1"]["dev"]["gold"]["notebook"].update(correct="95"), "runs.1.dev.gold.notebook.correct"),
        (lambda d: _runs(d)["1"]["dev"]["gold"]["notebook"].update(correct=True), "expected an integer, found true"),
        (lambda d: _runs(d)["1"]["dev"]["gold"]["notebook"].update(correct=200), "200 of 154 claims"),
        (lambda d: _runs(d)["1"]["dev"]["retrieved"]["alone"].update(accuracy=0.5), "retrieved.alone.accuracy"),
        (lambda d: _runs(d)["1"]["dev"]["gold"]["alone"].update(interval=[0.7, 0.8]), "gold.alone.interval"),
        (lambda d: _runs(d)["3"].update(seed=4), "field models.lstm.runs.3.seed: 4, under the key '3'"),
        (lambda d: _runs(d)["3"].update(best_epoch=11), "field models.lstm.runs.3.best_epoch"),
        (lambda d: _runs(d).update(x=_runs(d)["3"]), "field models.lstm.runs: the key 'x' is not a seed"),
        (lambda d: _runs(d).update({"²": _runs(d)["3"]}), "field models.lstm.runs: the key '²' is not a seed"),
        (lambda d: _runs(d)["3"].update(seconds=float("nan")), "field models.lstm.runs.3.seconds: expected a finite"),
        (lambda d: _runs(d)["3"].update(seconds=float("inf")), "field models.lstm.runs.3.seconds: expected a finite"),
        (lambda d: _runs(d)["1"]["dev"]["gold"]["alone"].update(accuracy=float("nan")), "gold.alone.accuracy: nan"),
        (lambda d: d["models"]["lstm"]["spread"]["gold"]["alone"].update(sd=float("nan")), "spread.gold.alone.sd: nan"),
        (
            lambda d: d["models"]["transformer"]["spread"]["gold"]["notebook"].update(mean=0.9),
            "spread.gold.notebook.mean",
        ),
        (lambda d: d["models"]["lstm"]["spread"]["retrieved"]["alone"].update(seeds=[42]), "alone.seeds: [42]"),
        (lambda d: d["models"]["lstm"].pop("spread"), "field models.lstm.spread: missing"),
        (lambda d: d.pop("retrieved_from"), "field retrieved_from: missing"),
        (lambda d: d.update(models=[]), "field models: expected an object"),
    ],
)
def test_a_damaged_file_is_named_with_its_field(tmp_path, change, field):
    assert field in _damaged(tmp_path, change)


def test_figures_over_different_claims_are_refused(tmp_path):
    def change(document):
        figure = _runs(document, "transformer")["4"]["dev"]["retrieved"]["notebook"]
        figure.update(correct=10, claims=16, accuracy=10 / 16, interval=[0.38, 0.83])

    message = _damaged(tmp_path, change, through_the_script=True)
    assert (
        "models.transformer.runs.4.dev.retrieved.notebook.claims: 16, where the file's first figure has 154" in message
    )


@pytest.mark.parametrize(
    "text", ["", "{", "[1, 2]", '"x"', "\ud800".encode("utf-8", "surrogatepass").decode("latin-1")]
)
def test_a_file_that_is_not_a_json_object_is_refused(tmp_path, text):
    path = tmp_path / "seed_spread.json"
    path.write_text(text, encoding="latin-1")
    with pytest.raises(DataError, match=r"seed_spread\.json: damaged"):
        read_seed_spread(path)


def test_describe_is_numpys():
    values = [0.55, 0.57, 0.6, 0.58]
    d = describe(values)
    assert (d["n"], d["min"], d["max"]) == (4, 0.55, 0.6)
    assert d["mean"] == pytest.approx(np.mean(values), abs=1e-15) and d["sd"] == pytest.approx(np.std(values, ddof=1))
    assert describe([0.5])["sd"] == 0.0 and describe([]) is None


def test_welch_is_statsmodels_unequal_variance_t_test():
    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = rng.normal(0.6, 0.02, rng.integers(2, 8)), rng.normal(0.58, 0.03, rng.integers(2, 8))
        t, p, df = sm_ttest_ind(a, b, usevar="unequal")
        assert welch(a, b) == pytest.approx({"t": t, "df": df, "p": p}, rel=1e-10, abs=1e-14)


def test_welchs_interval_is_statsmodels_unequal_variance_interval():
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

    from claimtrace.evaluation.seed_spread import welch_interval

    rng = np.random.default_rng(8)
    for _ in range(20):
        a, b = rng.normal(0.6, 0.02, rng.integers(2, 8)), rng.normal(0.58, 0.03, rng.integers(2, 8))
        expected = CompareMeans(DescrStatsW(a), DescrStatsW(b)).tconfint_diff(alpha=0.05, usevar="unequal")
        assert welch_interval(a, b) == pytest.approx(list(expected), rel=1e-10, abs=1e-14)


def test_the_whole_file_compared_over_seeds(tmp_path):
    compared = compare_models(read_seed_spread(write_seed_spread(tmp_path / "s.json", WHOLE)))
    assert [(c["evidence"], c["protocol"]) for c in compared] == list(PANELS)
    p_values = []
    for entry in compared:
        key = f"{entry['evidence']}-{entry['protocol']}"
        lstm, transformer = np.array(WHOLE["lstm"][key]) / 154, np.array(WHOLE["transformer"][key]) / 154
        t, p, df = sm_ttest_ind(lstm, transformer, usevar="unequal")
        welch_ = entry["welch"]
        assert welch_["t"] == pytest.approx(t, rel=1e-10) and welch_["df"] == pytest.approx(df, rel=1e-10)
        assert welch_["p"] == pytest.approx(p, rel=1e-10) and welch_["tested_together"] == 4
        assert entry["difference"] == pytest.approx(lstm.mean() - transformer.mean(), abs=1e-15)
        assert entry["overlap"] == (max(lstm.min(), transformer.min()) <= min(lstm.max(), transformer.max()))
        p_values.append(p)
    holm = multipletests(p_values, method="holm")[1]
    assert [c["welch"]["p_holm"] for c in compared] == pytest.approx(list(holm), rel=1e-10)
    # gold evidence: every LSTM seed above every Transformer seed, more than the seeds' spread;
    # retrieved evidence: the ranges overlap and the seeds cannot tell the two apart
    assert [c["overlap"] for c in compared] == [False, False, True, True]
    assert [c["welch"]["verdict"] for c in compared] == ["more than chance"] * 2 + ["cannot be told apart"] * 2


def test_with_fewer_than_two_seeds_nothing_is_tested(tmp_path):
    two = {model: {k: v[:2] for k, v in panels.items()} for model, panels in WHOLE.items()}
    two["lstm"] = {k: v[:1] for k, v in WHOLE["lstm"].items()}
    for spread in (None, read_seed_spread(write_seed_spread(tmp_path / "s.json", PARTIAL))):
        assert all(c["welch"] is None and c["untested"] == "fewer than 2 seeds" for c in compare_models(spread))
    compared = compare_models(read_seed_spread(write_seed_spread(tmp_path / "t.json", two)))
    assert all(c["untested"] == "fewer than 2 seeds" and c["transformer"]["n"] == 2 for c in compared)


def test_seeds_without_any_spread_are_not_tested(tmp_path):
    flat = {model: {k: (v[0],) * 3 for k, v in panels.items()} for model, panels in WHOLE.items()}
    flat["lstm"]["retrieved-alone"] = (40, 41, 42)  # one spread is enough for Welch's test
    compared = compare_models(read_seed_spread(write_seed_spread(tmp_path / "s.json", flat)))
    assert [c["untested"] for c in compared] == ["no spread"] * 3 + [None]
    assert compared[3]["welch"]["tested_together"] == 1 and compared[3]["welch"]["p_holm"] == compared[3]["welch"]["p"]
