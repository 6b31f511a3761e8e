"""Smoke tests of ``benchmarks/peers.py`` and ``benchmarks/run.py`` at tiny sizes.

They run the scripts' real code paths (every contender, the latency rounds,
the targets, the summary of ``run.py``) so that the benchmarks cannot rot;
the figures themselves are meaningless at these sizes.
"""
import doctest
import json

import pytest

from benchmarks import peers, run

TINY = ["--datasets", "shells32", "--synthetic-train", "600", "--synthetic-test", "200",
        "--test-rows", "200", "--curve-test-rows", "100", "--block-size", "32",
        "--max-blocks", "4", "--chunk-rows", "256", "--sk-batch-sizes", "64,256",
        "--river-samples", "40", "--river-features", "32", "--river-test-rows", "20",
        "--latency-d", "10", "--latency-updates", "10", "--river-latency-updates", "4",
        "--repeats", "1", "--no-plots"]


@pytest.mark.parametrize("module", [peers, run], ids=["peers", "run"])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_peers_runs_every_contender(tmp_path, capsys):
    out = tmp_path / "peers.json"
    report = peers.main(TINY + ["--output", str(out)])
    assert json.loads(out.read_text())["targets"] == report["targets"]
    caps = peers.estimator_capabilities()
    r = report["results"]["shells32"]
    expected = {"sklearn/float64/batch64", "sklearn/float64/batch256", "river",
                "onlinekernel/float64"}
    if caps["dtype"]:
        expected |= {"onlinekernel/float32", "sklearn/float32/batch64",
                     "sklearn/float32/batch256"}
    assert set(r["contenders"]) == expected
    for key, c in r["contenders"].items():
        assert c["train_samples_per_s"] > 0 and 0.0 <= c["accuracy"] <= 1.0, key
        assert c["n_train_samples"] == (40 if key == "river" else 600)
    # time-to-accuracy: onlinekernel, the best sklearn batch size per dtype, River
    best = r["sklearn_best"]["float64"]["key"]
    assert best in ("sklearn/float64/batch64", "sklearn/float64/batch256")
    for key in ("onlinekernel/float64", best, "river"):
        times = [p[0] for p in r["contenders"][key]["curve"]]
        assert times and times == sorted(times) and times[0] > 0
    # the sklearn pipeline's batch size does not change its model (shuffle=False)
    assert (r["contenders"]["sklearn/float64/batch64"]["accuracy"]
            == r["contenders"]["sklearn/float64/batch256"]["accuracy"])
    lat = report["latency"]
    assert {"onlinekernel/float64", "sklearn/float64", "river"} <= set(lat["contenders"])
    assert all(c["median_us"] > 0 for c in lat["contenders"].values())
    ids = {t["id"]: t for t in report["targets"]}
    assert set(ids) == {"peers.shells32.float64.train_throughput_vs_sklearn",
                        "peers.shells32.float32.train_throughput_vs_sklearn",
                        "peers.latency.float64.vs_sklearn", "peers.latency.float32.vs_sklearn",
                        "peers.latency.float64.vs_river", "peers.latency.float32.vs_river"}
    assert ids["peers.latency.float64.vs_river"]["value"] == pytest.approx(
        lat["contenders"]["river"]["median_us"]
        / lat["contenders"]["onlinekernel/float64"]["median_us"])
    f32 = ids["peers.latency.float32.vs_sklearn"]["status"]
    assert f32 in (("pass", "fail") if caps["dtype"] else ("not available",))
    assert "| target |" in capsys.readouterr().out


def _results(ok_rate, ok_acc, sk_rate, sk_acc):
    return {"d": {"contenders": {"onlinekernel/float64": {"train_samples_per_s": ok_rate,
                                                          "accuracy": ok_acc}},
                  "sklearn_best": {"float64": {"key": "sklearn/float64/batch256",
                                               "train_samples_per_s": sk_rate,
                                               "accuracy": sk_acc}},
                  "ratios_onlinekernel_over_peer": {"float64": {
                      "versus": "sklearn/float64/batch256",
                      "train_samples_per_s": ok_rate / sk_rate,
                      "accuracy_difference": ok_acc - sk_acc}}}}


@pytest.mark.parametrize("ok_rate, ok_acc, tol, status", [
    (600.0, 0.91, 0.0, "pass"),    # 6x, more accurate
    (600.0, 0.90, 0.0, "pass"),    # equal accuracy is enough
    (400.0, 0.95, 0.0, "fail"),    # 4x is too slow
    (600.0, 0.89, 0.0, "fail"),    # fast but less accurate
    (600.0, 0.89, 0.02, "pass"),   # ... within the tolerance given
])
def test_throughput_target_needs_speed_and_accuracy(ok_rate, ok_acc, tol, status):
    cfg = {"target_throughput_ratio": 5.0, "accuracy_tolerance": tol,
           "target_latency_sklearn": 5.0, "target_latency_river": 20.0}
    targets = peers.evaluate_targets(_results(ok_rate, ok_acc, 100.0, 0.90), None,
                                     {"dtype": False, "n_jobs": False}, cfg)
    by_id = {t["id"]: t for t in targets}
    assert by_id["peers.d.float64.train_throughput_vs_sklearn"]["status"] == status
    missing = by_id["peers.d.float32.train_throughput_vs_sklearn"]
    assert missing["status"] == "not available" and "dtype" in missing["reason"]


def test_latency_targets():
    cfg = {"target_throughput_ratio": 5.0, "accuracy_tolerance": 0.0,
           "target_latency_sklearn": 5.0, "target_latency_river": 20.0}
    lat = {"d": 100, "n_random_features": 4096,
           "contenders": {"onlinekernel/float64": {"median_us": 10.0},
                          "sklearn/float64": {"median_us": 60.0},
                          "river": {"median_us": 150.0}},
           "ratios_peer_over_onlinekernel": {"float64": {"sklearn": 6.0, "river": 15.0}}}
    by_id = {t["id"]: t for t in peers.evaluate_targets({}, lat, {"dtype": False}, cfg)}
    assert by_id["peers.latency.float64.vs_sklearn"]["status"] == "pass"
    assert by_id["peers.latency.float64.vs_river"]["status"] == "fail"
    assert by_id["peers.latency.float32.vs_river"]["status"] == "not available"


def test_run_summarises_scripts_and_goes_on_after_missing_or_failing_ones(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "alpha.py").write_text(
        "def main(argv):\n"
        "    assert argv == ['--quick']\n"
        "    return {'targets': [{'id': 'alpha.fast', 'status': 'pass', 'value': 6.0,\n"
        "                         'threshold': 5.0, 'unit': 'x'},\n"
        "                        {'target': 'flat', 'd': 100, 'measured': 1.5,\n"
        "                         'comparison': '<=', 'threshold': 1.25, 'pass': False}]}\n")
    (tmp_path / "gamma.py").write_text("def main(argv):\n    raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(run, "HERE", tmp_path)
    monkeypatch.setattr(run, "PACKAGE", None)  # alpha.py and gamma.py are top-level modules
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(run, "CORE", (("alpha", ""), ("beta", ""), ("gamma", "")))
    summary = run.main(["--quick"])
    status = {s["script"]: s["status"] for s in summary["scripts"]}
    assert status == {"alpha.py": "ran", "beta.py": "missing", "gamma.py": "error"}
    assert "boom" in summary["scripts"][2]["error"]
    assert [(t["id"], t["status"]) for t in summary["targets"]] == [
        ("alpha.fast", "pass"), ("flat[d=100]", "fail")]
    md = (tmp_path / "results" / "summary_quick.md").read_text()
    assert "| alpha | alpha.fast | 6x | >= 5x | pass |" in md
    assert "| alpha | flat[d=100] | 1.5 | <= 1.25 | **FAIL** |" in md
    saved = json.loads((tmp_path / "results" / "summary_quick.json").read_text())
    assert saved["counts"] == {"pass": 1, "fail": 1}
    assert "beta.py: not found" in capsys.readouterr().out


def test_update_readme_replaces_only_the_marked_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{run.START}\nold table\n{run.END}\nrest\n")
    assert run.update_readme("| new |\n", readme)
    assert readme.read_text() == f"intro\n{run.START}\n| new |\n{run.END}\nrest\n"
    readme.write_text("no markers\n")
    assert not run.update_readme("| new |\n", readme)
    assert readme.read_text() == "no markers\n"
