"""Smoke test of benchmarks/one_pass.py on a tiny synthetic dataset (a few seconds)."""
import numpy as np
import pytest
from benchmarks import one_pass
from conftest import run_quick


def test_quick_run_writes_results(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 255, size=(700, 12)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 255).astype(np.int64) + 2 * (X[:, 2] > 128)
    np.savez_compressed(tmp_path / "disc4.npz", X_train=X[:600], y_train=y[:600],
                        X_test=X[600:], y_test=y[600:])
    report, saved = run_quick(one_pass, tmp_path, "--datasets", "disc4")
    res = saved["results"][0]
    assert set(res["curves"]) == {"ours float64", "ours float32", "ours eigenpro float64",
                                  "ours eigenpro float32", "ours inverse float64",
                                  "ours inverse float32", "pipeline float64",
                                  "pipeline float32"}
    for curve in res["curves"].values():
        assert curve[-1]["rows_seen"] == 600 and 0.0 <= curve[-1]["error"] <= 1.0
        assert all(a["time_s"] <= b["time_s"] for a, b in zip(curve, curve[1:]))
    assert len(res["pipeline_tuning"]) == 48
    assert 0.0 <= res["batch_optimum"]["error"] <= 1.0
    names = [t["target"] for t in report["targets"]]
    assert "disc4: one_pass_error_below_tuned_pipeline[default, float64]" in names
    assert (tmp_path / "out" / "one_pass_quick.md").read_text().startswith("# One-pass")
    assert (tmp_path / "out" / "one_pass_quick.png").stat().st_size > 0
