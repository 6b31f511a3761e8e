"""Smoke test of benchmarks/variance_reduced.py on tiny synthetic datasets (seconds)."""
import numpy as np
import pytest
from benchmarks import variance_reduced as bench
from conftest import run_quick


def test_quick_run_writes_results(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    sets = {"ijcnn1": np.where(X[:, 0] * X[:, 1] > 0, 1, -1),
            "cadata": 1e5 * (np.sin(X[:, 0]) + 0.1 * rng.normal(size=500)),
            "letter": np.digitize(X[:, 0], [-0.5, 0.5])}
    for name, y in sets.items():
        np.savez_compressed(tmp_path / f"{name}.npz", X_train=X[:400], y_train=y[:400],
                            X_test=X[400:], y_test=y[400:])
    _, saved = run_quick(bench, tmp_path)
    assert set(saved["datasets"]) == set(sets)
    losses = {name: res["loss"] for name, res in saved["datasets"].items()}
    assert losses == {"ijcnn1": "logistic", "cadata": "squared", "letter": "multinomial"}
    for res in saved["datasets"].values():
        assert res["model_check_max_abs"] < 1e-6  # the problem is the estimator's
        methods = {"sgd", "svrg", "sarah", "svrg-plain", "sarah-plain"}
        assert set(res["curves"]) == methods
        assert len(res["curves"]["sgd"]) == 6  # the start and 5 epochs
        for curve in res["curves"].values():
            assert all(pt["gap"] >= -1e-9 for pt in curve)
            assert all(a["passes"] < b["passes"] for a, b in zip(curve, curve[1:]))
        assert set(res["passes_to_tol"]) == methods
        assert res["newton_cg"]["passes_to_tol"] > 0
    assert len(saved["targets"]) == 6
    assert (tmp_path / "out" / "variance_reduced_quick.png").stat().st_size > 0


def test_fewer_passes_needs_tol_within_sgds_budget():
    assert bench._fewer_passes(20.0, 30.0, 60.0) and not bench._fewer_passes(40.0, 30.0, 60.0)
    assert bench._fewer_passes(20.0, None, 60.0)  # SGD not within its 60 passes
    assert not bench._fewer_passes(90.0, None, 60.0)  # later than SGD was ever run
    assert not bench._fewer_passes(None, None, 60.0)
