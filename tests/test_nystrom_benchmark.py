"""Smoke test of benchmarks/nystrom.py on tiny synthetic datasets (a few seconds)."""
import json

import numpy as np
import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def nystrom():
    return load_benchmark("nystrom")


def test_quick_run_writes_results(nystrom, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    y_reg = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2]).astype(np.float64)
    y_cls = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    np.savez_compressed(tmp_path / "reg.npz", X_train=X[:400], y_train=y_reg[:400],
                        X_test=X[400:], y_test=y_reg[400:])
    np.savez_compressed(tmp_path / "cls.npz", X_train=X[:400], y_train=y_cls[:400],
                        X_test=X[400:], y_test=y_cls[400:])
    nystrom.main(["--quick", "--datasets", "reg", "cls", "--n-features", "64",
                  "--data-dir", str(tmp_path), "--output-dir", str(tmp_path / "out")])
    saved = json.loads((tmp_path / "out" / "nystrom_quick.json").read_text())
    assert saved["benchmark"] == "nystrom" and saved["mode"] == "quick"
    assert [res["task"] for res in saved["datasets"]] == ["regression", "classification"]
    for res in saved["datasets"]:
        rows = {r["method"]: r for r in res["results"]}
        assert set(rows) == set(nystrom.METHODS)
        # the same estimator, budget, gamma and solver for every map
        assert {r["n_features"] for r in rows.values()} == {64}
        assert len({r["gamma"] for r in rows.values()}) == 1
        assert {r["solver"] for r in rows.values()} == {"cholesky"}
        for r in rows.values():
            assert np.isfinite(r["test_error"]) and r["fit_time_s"] > 0
        assert res["nystrom_over_rff"] == pytest.approx(
            rows["nystrom"]["test_error"] / rows["rff"]["test_error"])
    assert set(saved["summary"]) == set(nystrom.METHODS) - {"rff"}
    md = (tmp_path / "out" / "nystrom_quick.md").read_text()
    assert md.startswith("# Nystrom against random Fourier features") and "| cls" in md
