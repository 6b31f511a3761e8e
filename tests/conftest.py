"""Shared test fixtures: where the benchmark datasets are."""
import os
from pathlib import Path

import numpy as np
import pytest

# ../shared/data beside the repository (CI has it); ONLINEKERNEL_DATA overrides.
DATA_DIR = Path(os.environ.get("ONLINEKERNEL_DATA",
                               Path(__file__).resolve().parents[2] / "shared" / "data"))


def load_dataset(name):
    """``X_train, y_train, X_test, y_test`` of ``DATA_DIR/name.npz`` as float64 X."""
    with np.load(DATA_DIR / f"{name}.npz") as d:
        return (d["X_train"].astype(np.float64), d["y_train"],
                d["X_test"].astype(np.float64), d["y_test"])


def needs_data(*names):
    """Skip (cleanly, with the reason) when a dataset is absent."""
    missing = [n for n in names if not (DATA_DIR / f"{n}.npz").exists()]
    return pytest.mark.skipif(bool(missing),
                              reason=f"benchmark data {missing} not found in {DATA_DIR}")
