"""Smoke test of benchmarks/nystrom.py on tiny synthetic datasets (a few seconds)."""
import numpy as np
import pytest
from benchmarks import nystrom
from conftest import run_quick, write_tiny_datasets


def test_quick_run_writes_results(tmp_path):
    write_tiny_datasets(tmp_path)
    _, saved = run_quick(nystrom, tmp_path, "--datasets", "reg", "cls", "--n-features", "64")
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
