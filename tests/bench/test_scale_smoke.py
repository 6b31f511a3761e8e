"""Smoke test of benchmarks/scale.py on a tiny synthetic covtype_binary (under a minute)."""
import itertools
import json

import numpy as np
import pytest
from benchmarks import scale
from conftest import run_quick


def test_quick_run_writes_curves_targets_and_plot(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2400, 6)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) > 0).astype(np.int64)
    np.savez_compressed(tmp_path / "covtype_binary.npz", X_train=X[:2000], y_train=y[:2000],
                        X_test=X[2000:], y_test=y[2000:])
    report, saved = run_quick(scale, tmp_path, "--datasets", "covtype_binary", "--chunk-rows",
                              "250", "--tune-rows", "500", "--val-rows", "250",
                              "--growth-blocks", "20", "--no-dask")
    res = saved["results"][0]
    assert set(res["streams"]) == {"ours", "ours growth", "pipeline", "linear"}
    for key, entry in res["streams"].items():
        assert entry["status"] == "ok", entry["error"]
        curve = entry["curve"]
        assert [c["rows_seen"] for c in curve] == list(range(250, 2001, 250))
        assert all(a["time_s"] <= b["time_s"] for a, b in zip(curve, curve[1:]))
        assert "test_error" in curve[-1] and 0.0 <= curve[-1]["progressive_error"] <= 1.0
        assert entry["peak_rss_bytes"] > 0
    # the growing model stops at its cap: 20 blocks of the chosen kernel's size
    # (Gaussian: 2 x 256 x 4 bytes each, 40 KiB), the other at its budget
    growth = res["streams"]["ours growth"]["curve"]
    chosen = res["streams"]["ours"]["params"]
    assert growth[-1]["n_blocks"] == 20
    assert res["streams"]["ours"]["curve"][-1]["n_blocks"] == chosen.get("max_blocks", 16)
    n_binning = len(list(itertools.product(*scale.BINNING_GRID.values())))
    assert len(res["tuning"]) == len(scale.GAMMA_FACTORS) * (1 + 12) + n_binning + 6
    batch = res["batch"]["ours"]
    assert batch["status"] == "ok" and 0.0 <= batch["result"]["test_error"] <= 1.0
    names = {t["target"].split("[")[0] for t in res["targets"]}
    assert {"peak_rss_bytes", "one_pass_error", "one_pass_time_ratio_to_pipeline",
            "growth_error_falls", "flat_time_per_row_after_the_cap",
            "error_within_600_s"} <= names
    assert "covtype_binary: one_pass_error[ours growth]" in [t["target"]
                                                              for t in report["targets"]]
    assert (tmp_path / "out" / "scale_quick.md").read_text().startswith("# Scale benchmark")
    assert (tmp_path / "out" / "scale_quick.png").stat().st_size > 0
    # the report is written again from its JSON, running nothing: the same figures
    (tmp_path / "out" / "scale_quick.md").unlink()
    again = scale.main(["--quick", "--report-only", "--output-dir", str(tmp_path / "out")])
    assert again["results"] == saved["results"]
    assert again["load_average_at_end"] == saved["load_average_at_end"]
    assert (tmp_path / "out" / "scale_quick.md").read_text().startswith("# Scale benchmark")
    # --merge replaces the data sets it runs and keeps the others, saying which run made them
    kept = dict(saved["results"][0], dataset="covtype")
    (tmp_path / "out" / "scale_quick.json").write_text(
        json.dumps(dict(saved, results=[saved["results"][0], kept])))
    rerun = dict(saved["results"][0], n_test=123)
    monkeypatch.setattr(scale, "run_dataset", lambda name, args, log: dict(rerun))
    same = ["--chunk-rows", "250", "--growth-blocks", "20", "--output-dir", str(tmp_path / "out")]
    merged = scale.main(["--quick", "--merge", "--datasets", "covtype_binary", *same])
    assert [r["dataset"] for r in merged["results"]] == ["covtype_binary", "covtype"]
    assert merged["results"][0]["n_test"] == 123 and "run" in merged["results"][0]
    # (its targets are computed again, for its name)
    assert ({k: v for k, v in merged["results"][1].items() if k != "targets"}
            == {k: v for k, v in kept.items() if k != "targets"})
    assert merged["created"] == saved["created"]
    assert "Re-run on its own (`--merge`)" in (tmp_path / "out" / "scale_quick.md").read_text()
    with pytest.raises(SystemExit, match="settings differ"):
        scale.main(["--quick", "--merge", "--datasets", "covtype_binary", "--passes", "3",
                    *same])


def test_a_contender_that_fails_is_reported_and_the_run_goes_on(tmp_path):
    status, result, peak = scale.in_process("stream", "absent", {}, tmp_path, True)
    assert status == "error" and "absent.npz not found" in result and peak is None


def test_batch_fit_of_an_eigenpro_setting():
    """MNIST's batch settings: the exact kernel machine behind scikit-learn's PCA."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 12)) * np.r_[3.0, 3.0, np.ones(10)]  # the classes in the top PCs
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    setting = {**scale.EIGENPRO, "pca": 4, "max_iter": 2}
    assert scale.BATCH["mnist"]["estimator"] == "eigenpro" and scale.BATCH["mnist"]["pca"] == 100
    r = scale.batch_fit(setting, X[:500], y[:500], X[500:], y[500:], threads=1)
    assert r["solver"] == "eigenpro" and r["n_iter"] == 2 and r["setting"] is setting
    assert 0.0 <= r["test_error"] < 0.3 and r["fit_s"] > 0 and r["predict_s"] > 0
    model = scale.batch_model(setting, X, 1)
    assert [type(step).__name__ for _, step in model.steps] == ["PCA", "EigenProClassifier"]


def test_choose_batch_fits_the_candidates_on_held_out_training_rows(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    np.savez_compressed(tmp_path / "covtype_binary.npz", X_train=X[:1000], y_train=y[:1000],
                        X_test=X[1000:], y_test=y[1000:])
    chosen = scale.main(["--quick", "--choose-batch", "--datasets", "covtype_binary",
                         "--data-dir", str(tmp_path), "--threads", "1"])
    assert chosen["covtype_binary"] in scale.BATCH_CANDIDATES["covtype_binary"]
