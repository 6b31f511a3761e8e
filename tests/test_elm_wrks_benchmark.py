"""Smoke test of benchmarks/elm_wrks.py on tiny synthetic datasets (a few seconds)."""
import json

import numpy as np
import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def elm_wrks():
    return load_benchmark("elm_wrks")


def test_quick_run_writes_results(elm_wrks, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    y_reg = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2]).astype(np.float64)
    y_cls = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    np.savez_compressed(tmp_path / "reg.npz", X_train=X[:400], y_train=y_reg[:400],
                        X_test=X[400:], y_test=y_reg[400:])
    np.savez_compressed(tmp_path / "cls.npz", X_train=X[:400], y_train=y_cls[:400],
                        X_test=X[400:], y_test=y_cls[400:])
    elm_wrks.main(["--quick", "--datasets", "reg", "cls", "--n-features", "64",
                   "--data-dir", str(tmp_path), "--output-dir", str(tmp_path / "out")])
    saved = json.loads((tmp_path / "out" / "elm_wrks_quick.json").read_text())
    assert saved["benchmark"] == "elm_wrks" and saved["mode"] == "quick"
    tasks = [res["task"] for res in saved["datasets"]]
    assert tasks == ["regression", "classification"]
    for res in saved["datasets"]:
        rows = {r["method"]: r for r in res["results"]}
        assert set(rows) == {"ELM", "WRKS", "ridge", "SGD"}
        assert {r["n_features"] for r in rows.values()} == {64}
        assert rows["ELM"]["solver"] == rows["ridge"]["solver"] == "cholesky"
        assert rows["WRKS"]["solver"] == "wrks" and rows["SGD"]["solver"] == "sgd"
        assert rows["WRKS"]["max_abs_coef_over_bound"] <= 1 + 1e-9
        for r in rows.values():
            assert np.isfinite(r["test_error"]) and r["fit_time_s"] > 0
        if res["task"] == "classification":
            assert all(0 <= r["test_error"] <= 1 for r in rows.values())
    md = (tmp_path / "out" / "elm_wrks_quick.md").read_text()
    assert md.startswith("# ELM and weighted random kitchen sinks") and "| cls" in md
