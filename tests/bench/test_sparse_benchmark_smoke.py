"""Smoke test of benchmarks/sparse_input.py on a tiny synthetic sparse dataset (seconds)."""
import numpy as np
from benchmarks import sparse_input as sparse_bench
from conftest import run_quick


def test_quick_run_writes_results(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 60)).astype(np.float32)
    X[rng.random(X.shape) > 0.05] = 0.0
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1).astype(np.int64)
    np.savez_compressed(tmp_path / "tiny.npz", X_train=X[:300], y_train=y[:300],
                        X_test=X[300:], y_test=y[300:])
    report, saved = run_quick(sparse_bench, tmp_path, "--dataset", "tiny", "--chunk-rows", "100",
                              out_flag="--out-dir", name="sparse")
    for key in ("fit", "one_pass_partial_fit", "predict", "features"):
        entry = report["results"][key]
        assert entry["sparse_s"] > 0 and entry["dense_s"] > 0
    # the same model from the sparse and the dense rows (gamma="scale" is the
    # variance of the entries, summed in another order for CSR: 1e-16 apart)
    assert report["results"]["fit"]["max_coef_difference"] < 1e-10
    assert report["results"]["one_pass_partial_fit"]["max_coef_difference"] < 1e-10
    assert report["results"]["predict"]["max_output_difference"] == 0.0
    assert report["results"]["features"]["identical"]
    assert saved["targets"][0]["name"].startswith("sparse fit")
