"""Smoke test of benchmarks/dask_fit.py on a tiny synthetic covtype_binary (two LocalClusters)."""
import numpy as np
import pytest
from benchmarks import dask_fit as bench
from conftest import run_quick

pytest.importorskip("distributed")


def test_quick_run_writes_results(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2500, 6)).astype(np.float32)
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    np.savez_compressed(tmp_path / "covtype_binary.npz", X_train=X[:2000], y_train=y[:2000],
                        X_test=X[2000:], y_test=y[2000:])
    _, saved = run_quick(bench, tmp_path)
    res = saved["result"]
    assert res["rows"] == 2000 and res["partitions"] == 4
    for name in ("local_1_thread", "dask_1_worker", "dask_2_workers"):
        assert res[name]["seconds"] > 0 and res[name]["solver"] == "cholesky"
        assert res[name]["test_error"] < 0.3
    assert all(d < 1e-8 for d in res["max_abs_decision_difference"].values())
    assert res["speedup_2_vs_1_worker"] > 0
