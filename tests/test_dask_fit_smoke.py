"""Smoke test of benchmarks/dask_fit.py on a tiny synthetic covtype_binary (two LocalClusters)."""
import json

import numpy as np
import pytest
from conftest import load_benchmark

pytest.importorskip("distributed")


def test_quick_run_writes_results(tmp_path):
    bench = load_benchmark("dask_fit")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2500, 6)).astype(np.float32)
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    np.savez_compressed(tmp_path / "covtype_binary.npz", X_train=X[:2000], y_train=y[:2000],
                        X_test=X[2000:], y_test=y[2000:])
    bench.main(["--quick", "--data-dir", str(tmp_path), "--output-dir", str(tmp_path / "out")])
    saved = json.loads((tmp_path / "out" / "dask_fit_quick.json").read_text())
    assert saved["benchmark"] == "dask_fit" and saved["mode"] == "quick"
    res = saved["result"]
    assert res["rows"] == 2000 and res["partitions"] == 4
    for name in ("local_1_thread", "dask_1_worker", "dask_2_workers"):
        assert res[name]["seconds"] > 0 and res[name]["solver"] == "cholesky"
        assert res[name]["test_error"] < 0.3
    assert all(d < 1e-8 for d in res["max_abs_decision_difference"].values())
    assert res["speedup_2_vs_1_worker"] > 0
