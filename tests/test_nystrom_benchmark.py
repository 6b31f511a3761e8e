"""Smoke test of benchmarks/nystrom.py on tiny synthetic datasets (a few seconds)."""
import json

import numpy as np
import pytest
from conftest import load_benchmark, write_tiny_datasets


@pytest.fixture(scope="module")
def nystrom():
    return load_benchmark("nystrom")


def test_quick_run_writes_results(nystrom, tmp_path):
    write_tiny_datasets(tmp_path)
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
