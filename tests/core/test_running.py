"""The compiled running standardisation (onlinekernel.core.running)."""
import numpy as np
import pytest

from onlinekernel.core.running import welford_step


def test_welford_step_is_numpys_update_bit_for_bit():
    rng = np.random.default_rng(0)
    rows = rng.normal(3.0, [1e-3, 1.0, 1e3], size=(500, 3))
    rows[:, 1] = 7.25  # a constant feature: only centred
    mean, m2, scale = np.zeros(3), np.zeros(3), np.ones(3)
    ref_mean, ref_m2 = np.zeros(3), np.zeros(3)
    for n, row in enumerate(rows, start=1):
        welford_step(row, mean, m2, n, scale)
        delta = row - ref_mean
        ref_mean = ref_mean + delta / n
        ref_m2 = ref_m2 + delta * (row - ref_mean)
        std = np.sqrt(ref_m2 / n)
        ok = std > 1e-12 * (1.0 + np.abs(ref_mean))
        ref_scale = np.where(ok, 1.0 / np.where(ok, std, 1.0), 1.0)
        assert mean.tobytes() == ref_mean.tobytes() and m2.tobytes() == ref_m2.tobytes()
        assert scale.tobytes() == ref_scale.tobytes()
    assert scale[1] == 1.0
    assert np.allclose(mean, rows.mean(axis=0)) and np.allclose(1 / scale[[0, 2]],
                                                                 rows[:, [0, 2]].std(axis=0))


def test_welford_step_names_bad_shapes_and_counts():
    z = np.zeros(2)
    with pytest.raises(ValueError, match="a row of 3 values against statistics of 2"):
        welford_step(np.zeros(3), z.copy(), z.copy(), 1, z.copy())
    with pytest.raises(ValueError, match="n counts the samples"):
        welford_step(z.copy(), z.copy(), z.copy(), 0, z.copy())
