"""Smoke test of benchmarks/quality.py on two tiny synthetic datasets (a few seconds)."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "quality.py"


@pytest.fixture(scope="module")
def quality():
    spec = importlib.util.spec_from_file_location("quality_benchmark", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def data_dir(tmp_path):
    """A disc-in-a-square classification set and a smooth regression set, npz as in shared/data."""
    rng = np.random.default_rng(0)
    d = tmp_path / "data"
    d.mkdir()
    X = rng.uniform(-1, 1, size=(500, 2)).astype(np.float32)
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 0.7, 1, -1).astype(np.int64)
    np.savez_compressed(d / "disc.npz", X_train=X[:400], y_train=y[:400],
                        X_test=X[400:], y_test=y[400:])
    X = rng.uniform(-2, 2, size=(400, 3)).astype(np.float32)
    y = 50.0 + 10.0 * np.sin(X[:, 0]) * np.cos(X[:, 1]) + rng.normal(0, 0.1, 400)
    np.savez_compressed(d / "wave.npz", X_train=X[:320], y_train=y[:320],
                        X_test=X[320:], y_test=y[320:])
    return d


def test_quick_run_writes_results_and_reuses_exact_cache(quality, data_dir, tmp_path, capsys,
                                                        monkeypatch):
    # a smaller sampler keeps the smoke run short; the code path is the same
    monkeypatch.setitem(quality.PIPELINE, "n_components", 512)
    out = tmp_path / "out"
    cache = tmp_path / "exact.json"
    configs = tmp_path / "configs.json"
    # plain dicts of estimator parameters, "exact" resolved from the exact machine
    configs.write_text(json.dumps({"disc": {"gamma": "exact", "alpha": "exact",
                                            "max_blocks": 4, "n_epochs": 2}}))
    args = ["--data-dir", str(data_dir), "--output-dir", str(out), "--exact-cache", str(cache),
            "--quick", "--no-plot", "--configs", str(configs)]
    report = quality.main(args)
    res = report["results"]
    assert set(res) == {"disc", "wave"}
    disc, wave = res["disc"], res["wave"]
    assert disc["task"] == "classification" and wave["task"] == "regression"
    assert disc["exact"]["model"] == "SVC" and wave["exact"]["model"] == "KernelRidge"
    assert not disc["exact"]["from_cache"]
    # the exact machine learns the disc; the regression RMSE is in y's units (sd ~ 3.9)
    assert disc["exact"]["test_error"] < 10.0
    assert wave["exact"]["test_error"] < 1.5
    best = disc["best"]
    assert best["params"]["gamma"] == disc["exact"]["params"]["gamma"]
    assert best["params"]["alpha"] == pytest.approx(1.0 / (disc["exact"]["params"]["C"] * 400))
    assert best["n_random_features"] == 4 * 256
    for r in (disc, wave):
        for key in ("pipeline", "default", "best"):
            curve = r[key]["curve"]
            assert [c["epoch"] for c in curve] == [1, 2]
            assert curve[1]["time_s"] >= curve[0]["time_s"] > 0
        assert set(r["checks_best"]) >= {"accuracy_ok", "vs_pipeline_ok", "vs_exact_ok"}
    saved = json.loads((out / "quality_quick.json").read_text())
    assert saved["results"]["disc"]["exact"]["params"] == disc["exact"]["params"]
    md = (out / "quality_quick.md").read_text()
    assert "| disc | classification |" in md and "| wave | regression |" in md
    entries = json.loads(cache.read_text())["entries"]
    assert set(entries) == {"disc@quick", "wave@quick"}
    assert entries["disc@quick"]["sklearn"] and entries["disc@quick"]["date"]

    # second run: the exact baselines come from the cache, unless --recompute-exact
    again = quality.main(args[:-2] + ["--datasets", "disc", "--contenders"])
    assert again["results"]["disc"]["exact"]["from_cache"]
    assert again["results"]["disc"]["exact"]["test_error"] == disc["exact"]["test_error"]
    fresh = quality.main(args[:-2] + ["--datasets", "disc", "--contenders",
                                      "--recompute-exact"])
    assert not fresh["results"]["disc"]["exact"]["from_cache"]
    capsys.readouterr()


def test_checks_read_times_off_the_curves(quality):
    exact = {"test_error": 2.0, "fit_time_s": 30.0}
    ours = [{"time_s": 1.0, "error": 3.0}, {"time_s": 2.0, "error": 2.4}]
    pipe = [{"time_s": 5.0, "error": 2.9}, {"time_s": 8.0, "error": 2.5}]
    c = quality.checks("classification", exact, pipe, ours)
    assert c["accuracy_ok"] and c["target_error"] == 2.5
    assert c["ours_time_to_level_s"] == 2.0 and c["pipeline_time_to_level_s"] == 8.0
    assert c["vs_pipeline_ok"] is False          # 2.0 > 8 / 5
    assert c["vs_exact_ok"] is True              # 2.0 <= 30 / 3
    # ours misses the target: the level becomes ours' best error
    c = quality.checks("regression", {"test_error": 1.0, "fit_time_s": 5.0}, None,
                       [{"time_s": 1.0, "error": 1.2}, {"time_s": 2.0, "error": 1.1}])
    assert not c["accuracy_ok"] and c["level"] == 1.1
    assert c["vs_pipeline_ok"] is None and c["vs_exact_ok"] is None
    # the pipeline never reaches the level: a sure pass only within 1/5 of its total time
    never = [{"time_s": 20.0, "error": 9.0}]
    assert quality.checks("classification", exact, never, ours)["vs_pipeline_ok"] is True
    slow = [{"time_s": 50.0, "error": 2.4}]
    assert quality.checks("classification", exact, never, slow)["vs_pipeline_ok"] is None


def test_bad_configuration_is_a_clear_error(quality, data_dir, tmp_path):
    configs = tmp_path / "configs.json"
    configs.write_text(json.dumps({"disc": {"no_such_parameter": 1}}))
    with pytest.raises(SystemExit, match="does not accept configuration"):
        quality.main(["--data-dir", str(data_dir), "--output-dir", str(tmp_path / "o"),
                      "--exact-cache", str(tmp_path / "e.json"), "--quick", "--no-plot",
                      "--datasets", "disc", "--contenders", "best",
                      "--configs", str(configs)])
    with pytest.raises(SystemExit, match="not found"):
        quality.main(["--data-dir", str(data_dir), "--datasets", "nothing_here", "--no-plot",
                      "--output-dir", str(tmp_path / "o")])
