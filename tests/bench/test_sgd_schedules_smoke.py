"""Smoke test of benchmarks/sgd_schedules.py: both schedules on a small data set (seconds)."""
import json

import numpy as np
from benchmarks import sgd_schedules as bench


def test_quick_run_fits_every_schedule_and_writes_the_results(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 3))
    y = (np.hypot(X[:, 0], X[:, 1]) < 1.0).astype(np.int64)
    np.savez_compressed(tmp_path / "ring.npz", X_train=X[:500], y_train=y[:500],
                        X_test=X[500:], y_test=y[500:])
    report = bench.main(["--quick", "--data-dir", str(tmp_path), "--datasets", "ring",
                         "--output-dir", str(tmp_path / "out")])
    saved = json.loads((tmp_path / "out" / "sgd_schedules_quick.json").read_text())
    assert saved["benchmark"] == "sgd_schedules" and saved["mode"] == "quick"
    entry = report["results"]["ring"]
    assert entry["n_train"] == 500 and set(entry["schedules"]) == set(bench.SCHEDULES)
    for r in entry["schedules"].values():
        assert 0.0 <= r["test_error"] < 0.3 and r["n_iter"] >= 1  # the ring is learnt
    md = (tmp_path / "out" / "sgd_schedules_quick.md").read_text()
    assert md.startswith("# SGD schedules") and md.count("\n| ring |") == 2
