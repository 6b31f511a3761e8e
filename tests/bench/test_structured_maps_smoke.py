"""Smoke test of benchmarks/structured_maps.py on a tiny synthetic dataset (seconds)."""
import numpy as np
from benchmarks import structured_maps as bench
from conftest import run_quick


def test_quick_run_writes_results(tmp_path):
    rng = np.random.default_rng(0)
    # "fashion_mnist"-like pixels in 0 .. 255 (d = 40, padded to 64) and 3 classes
    X = rng.integers(0, 256, size=(500, 40)).astype(np.float32)
    y = (X[:, 0] > 85).astype(np.int64) + (X[:, 1] > 170)
    np.savez_compressed(tmp_path / "fashion_mnist.npz", X_train=X[:400], y_train=y[:400],
                        X_test=X[400:], y_test=y[400:])
    report, saved = run_quick(bench, tmp_path, "--components", "128", "--sizes", "32, 64")
    assert saved["settings"]["train_rows"] == 400 and saved["settings"]["M"] == 128
    np.testing.assert_allclose(saved["settings"]["gamma_approximation"],
                               1.0 / (40 * (X[:400] / 255.0).var()), rtol=1e-5)
    for name in ("gaussian", "sorf", "fastfood"):
        step = saved["steps"][name]
        assert step["regenerate_transform_64"]["median_s"] > 0
        assert 0 <= saved["estimator"][name]["test_error_pct"] <= 100
        # gamma="scale" resolves to the same number for the three maps
        assert saved["estimator"][name]["gamma"] == saved["estimator"]["gaussian"]["gamma"]
        for cell in saved["approximation"].values():
            assert len(cell[name]["mse"]) == 2 and cell[name]["mse_mean"] > 0
    # a block's parameters: F (d + 1) numbers against O(F) for the structured maps
    assert saved["steps"]["gaussian"]["param_size"] == 128 * 41
    assert saved["steps"]["sorf"]["param_size"] == 4 * 128 + 128  # signs and chi row norms
    assert saved["steps"]["fastfood"]["param_size"] == 4 * 128 + 128
    names = [t["target"] for t in report["targets"]]
    assert len(names) == 6 and "speedup[predict: gaussian / sorf]" in names
    assert all(isinstance(t["passed"], bool) for t in report["targets"])
    assert (tmp_path / "out" / "structured_maps_quick.md").read_text().startswith("# Structured")
