"""The compiled running standardisation (onlinekernel.core.running)."""
import numpy as np
import pytest

from onlinekernel.core.running import read_row, standardised_row, welford_step


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


_PLAIN = frozenset((float, int, np.float64, np.float32))


@pytest.mark.parametrize("x, plain, expected", [
    ({"a": 1, "b": 2.5, "c": np.float32(0.25)}, True, [1.0, 2.5, 0.25]),
    ({"b": np.float64(-1e300), "zz": "not read"}, True, [0.0, -1e300, 0.0]),  # missing: 0.0
    ({"a": None}, False, None),
    ({"b": float("nan")}, False, None),
    ({"c": float("-inf")}, False, None),
    ({"a": True}, False, None),  # a bool is not a number here: the checked path decides
    ({"a": "1.0"}, False, None),
    ({"a": 10 ** 400}, False, None),  # an int beyond a float's range
])
def test_read_row_reads_plain_numbers_and_declines_anything_else(x, plain, expected):
    row = np.full(3, 7.0)
    assert read_row(x, ("a", "b", "c"), _PLAIN, row) is plain
    if plain:
        assert row.tolist() == expected


def test_read_row_takes_any_mapping_and_names_a_bad_shape():
    from types import MappingProxyType
    row = np.empty(2)
    assert read_row(MappingProxyType({"b": 3}), ("a", "b"), _PLAIN, row)
    assert row.tolist() == [0.0, 3.0]
    with pytest.raises(ValueError, match="a row of 2 values for 3 features"):
        read_row({}, ("a", "b", "c"), _PLAIN, row)


def test_standardised_row_is_numpys_bits():
    rng = np.random.default_rng(1)
    row, center, scale = rng.normal(size=(3, 17)) * [[1.0], [1e3], [1e-3]]
    z = standardised_row(row, center, scale)
    assert z.shape == (1, 17) and z.tobytes() == ((row - center) * scale)[None, :].tobytes()
    with pytest.raises(ValueError, match="a row of 17 values against 16 centres"):
        standardised_row(row, center[:16], scale)
