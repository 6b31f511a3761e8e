"""Smoke test of benchmarks/elm_wrks.py on tiny synthetic datasets (a few seconds)."""
import numpy as np
from benchmarks import elm_wrks
from conftest import run_quick, write_tiny_datasets


def test_quick_run_writes_results(tmp_path):
    write_tiny_datasets(tmp_path)
    _, saved = run_quick(elm_wrks, tmp_path, "--datasets", "reg", "cls", "--n-features", "64")
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
