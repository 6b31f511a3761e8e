"""Smoke test of benchmarks/kernel_approximation.py on tiny synthetic datasets (seconds)."""
import numpy as np
import pytest
from benchmarks import kernel_approximation as bench
from conftest import run_quick


def test_quick_run_writes_results(tmp_path):
    rng = np.random.default_rng(0)
    # "mnist"-like pixels in 0 .. 255 (d = 40) and a "letter"-like table (d = 6)
    pix = rng.integers(0, 256, size=(400, 40)).astype(np.float32)
    tab = rng.normal(size=(400, 6)).astype(np.float32)
    for name, X in (("mnist", pix), ("letter", tab)):
        y = np.zeros(len(X), dtype=np.int64)
        np.savez_compressed(tmp_path / f"{name}.npz", X_train=X[:300], y_train=y[:300],
                            X_test=X[300:], y_test=y[300:])
    report, saved = run_quick(bench, tmp_path, "--sizes", "32, 64")
    assert set(saved["datasets"]) == {"mnist", "letter"}
    mnist = saved["datasets"]["mnist"]
    assert mnist["d"] == 40
    # gamma = 1 / (d Var X) on the rows scaled to [0, 1]
    np.testing.assert_allclose(mnist["gamma"], 1.0 / (40 * (pix[:300] / 255.0).var()),
                               rtol=1e-5)
    for res in saved["datasets"].values():
        assert set(res["sizes"]) == {"32", "64"}
        for cell in res["sizes"].values():
            for fmap in ("gaussian", "orf", "gaussian pairs", "orf pairs"):
                assert len(cell[fmap]["mse"]) == 2 and cell[fmap]["mse_mean"] > 0
            assert cell["ratios"]["orf / gaussian"] == pytest.approx(
                cell["orf"]["mse_mean"] / cell["gaussian"]["mse_mean"])
            assert set(cell["ratios"]) == {"orf / gaussian", "orf pairs / gaussian pairs",
                                           "orf pairs / gaussian",
                                           "scipy orf pairs / gaussian pairs"}
            # the scipy reference: stacked orthogonal blocks when M / 2 > d (letter, d = 6)
            assert len(cell["scipy orf pairs"]["mse"]) == 2
            assert cell["scipy orf pairs"]["mse_mean"] > 0
    names = [t["target"] for t in report["targets"]]
    assert "mnist: mse_ratio[orf / gaussian, M=64]" in names and len(names) == 8
    assert all(isinstance(t["passed"], bool) for t in report["targets"])
    assert (tmp_path / "out" / "kernel_approximation_quick.md").read_text().startswith("# Kernel")
