"""The counter-based generator and the package's own transforms.

Known-answer vectors pin Philox4x32-10 to Random123; golden values pin the
transforms bit for bit (a saved model must regenerate the same features on
any machine and numpy version); distribution tests check the transforms are
right; the deterministic elementary functions are checked against numpy.
"""
import numpy as np
import pytest
from scipy import stats

from onlinekernel import _random as R

SEED, BLOCK, STREAM = 12345, 7, 2


# --------------------------------------------------------------------------
# Philox4x32-10 and the stream layout
# --------------------------------------------------------------------------

@pytest.mark.parametrize("counter,key,expected", [
    # Random123's kat_vectors for philox4x32_10
    ([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
    ([0xffffffff] * 4, [0xffffffff] * 2, [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
    ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
     [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]),
])
def test_philox_known_answers(counter, key, expected):
    assert R.philox4x32(counter, key) == expected


def test_philox_rejects_bad_shapes():
    with pytest.raises(ValueError):
        R.philox4x32([0, 0, 0], [0, 0])
    with pytest.raises(ValueError):
        R.philox4x32([0, 0, 0, 0], [0])


def test_stream_layout():
    # word w of (seed, block, stream) is lane w % 4 of counter
    # (w // 4, stream, block_lo, block_hi) under key (seed_lo, seed_hi)
    seed, block, stream = 0x0123456789ABCDEF, 0xFEDCBA9876543210, 3
    w = R.words(seed, block, stream, 12)
    key = [seed & 0xFFFFFFFF, seed >> 32]
    expected = []
    for c in range(3):
        expected += R.philox4x32([c, stream, block & 0xFFFFFFFF, block >> 32], key)
    assert w.tolist() == expected


def test_golden_words():
    assert R.words(SEED, BLOCK, STREAM, 8).tolist() == [
        994530867, 1073238572, 4008627813, 3429471759, 2643025251, 3970301796, 841103146,
        2715509617]


@pytest.mark.parametrize("first", [0, 1, 3, 4, 5, 17, 1000])
def test_random_access_to_words(first):
    everything = R.words(SEED, BLOCK, STREAM, first + 23)
    assert np.array_equal(R.words(SEED, BLOCK, STREAM, 23, first=first), everything[first:])


def test_prefixes_do_not_depend_on_length():
    # a block of odd size reads the same values as the start of a longer one
    for fill in (R.normal, R.uniform, R.cauchy, R.signs):
        assert np.array_equal(fill(SEED, BLOCK, STREAM, 5), fill(SEED, BLOCK, STREAM, 64)[:5])
    assert np.array_equal(R.hashes(SEED, BLOCK, STREAM, 5, 10),
                          R.hashes(SEED, BLOCK, STREAM, 200, 10)[:5])


def test_keys_streams_and_blocks_are_distinct():
    base = R.words(0, 0, 0, 8)
    for seed, block, stream in [(1, 0, 0), (0, 1, 0), (0, 0, 1), (2 ** 32, 0, 0),
                                (0, 2 ** 32, 0)]:
        assert not np.array_equal(R.words(seed, block, stream, 8), base)


# --------------------------------------------------------------------------
# Transforms: golden values (bit exact) and agreement with their definitions
# --------------------------------------------------------------------------

def test_golden_transforms():
    assert R.uniform(SEED, BLOCK, STREAM, 6).tolist() == [
        0.23155725933524085, 0.9333313986546257, 0.6153772765726441, 0.19583458924482644,
        0.16958493739768965, 0.5470626250627727]
    assert R.normal(SEED, BLOCK, STREAM, 6).tolist() == [
        1.5626233160024676, -0.6957474852864443, 0.3289304075164163, 0.9288941112180723,
        -1.8020637607301087, -0.5489708065346459]
    assert R.cauchy(SEED, BLOCK, STREAM, 6).tolist() == [
        -1.1231523930903864, 4.704489508453752, 0.37922360398526733, -1.4149554270814197,
        -1.6959509709496492, 0.14893845161852984]
    assert R.hashes(SEED, BLOCK, STREAM, 8, 1000).tolist() == [
        231, 249, 933, 798, 615, 924, 195, 632]
    assert R.signs(SEED, BLOCK, STREAM, 8).tolist() == [1, 1, -1, -1, -1, -1, 1, -1]


def _u01(a, b):
    """53-bit uniform from two words, as documented (exact in float64)."""
    return ((a >> 5).astype(float) * 67108864.0 + (b >> 6).astype(float)) / 2.0 ** 53


def test_transforms_follow_their_definitions():
    n = 4000
    w = R.words(SEED, BLOCK, STREAM, 2 * n).astype(np.uint64)
    a, b = w[0::2], w[1::2]
    assert np.array_equal(R.uniform(SEED, BLOCK, STREAM, n), _u01(a, b))
    assert np.array_equal(R.uniform(SEED, BLOCK, STREAM, n, -2.0, 3.0), -2.0 + 5.0 * _u01(a, b))
    # Box-Muller on pairs of words pairs; the package's log/cos vs numpy's
    u1 = _u01(a[0::2], b[0::2]) + 2.0 ** -54      # the open interval (0, 1)
    u2 = _u01(a[1::2], b[1::2])
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty(n)
    z[0::2], z[1::2] = r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)
    np.testing.assert_allclose(R.normal(SEED, BLOCK, STREAM, n), z, rtol=1e-13, atol=1e-14)
    c = np.tan(np.pi * (_u01(a, b) + 2.0 ** -54 - 0.5))
    np.testing.assert_allclose(R.cauchy(SEED, BLOCK, STREAM, n), c, rtol=1e-12)
    w32 = R.words(SEED, BLOCK, STREAM, n).astype(np.uint64)
    for m in (1, 7, 1000, 2 ** 16, 2 ** 32 - 1):
        assert np.array_equal(R.hashes(SEED, BLOCK, STREAM, n, m), (w32 * m) >> 32)
    assert np.array_equal(R.signs(SEED, BLOCK, STREAM, n), np.where(w32 >> 31, -1.0, 1.0))
    with pytest.raises(ValueError):
        R.hashes(SEED, BLOCK, STREAM, 3, 0)


# --------------------------------------------------------------------------
# Distributions (fixed seeds: deterministic; a wrong transform fails by far)
# --------------------------------------------------------------------------

N_DRAWS = 100_000


def test_uniform_distribution():
    u = R.uniform(1, 2, 3, N_DRAWS)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    v = R.uniform(1, 2, 4, N_DRAWS, -3.0, 5.0)
    assert stats.kstest(v, stats.uniform(loc=-3.0, scale=8.0).cdf).pvalue > 1e-3


def test_normal_distribution():
    z = R.normal(1, 2, 3, N_DRAWS)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # the two outputs of one Box-Muller pair are independent normals
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 4 / np.sqrt(N_DRAWS / 2)
    assert stats.kstest(z[0::2] ** 2 + z[1::2] ** 2, stats.expon(scale=2.0).cdf).pvalue > 1e-3


def test_cauchy_distribution():
    c = R.cauchy(1, 2, 3, N_DRAWS)
    assert np.isfinite(c).all()
    assert stats.kstest(c, "cauchy").pvalue > 1e-3


def test_hashes_and_signs_are_uniform():
    h = R.hashes(1, 2, 3, N_DRAWS, 64)
    assert h.min() >= 0 and h.max() < 64
    assert stats.chisquare(np.bincount(h, minlength=64)).pvalue > 1e-3
    h7 = R.hashes(1, 2, 4, N_DRAWS, 7)
    assert stats.chisquare(np.bincount(h7, minlength=7)).pvalue > 1e-3
    s = R.signs(1, 2, 3, N_DRAWS)
    assert set(np.unique(s)) == {-1.0, 1.0}
    assert stats.binomtest(int((s > 0).sum()), N_DRAWS).pvalue > 1e-3


def test_blocks_and_streams_are_uncorrelated():
    a = R.normal(1, 0, 0, N_DRAWS)
    for seed, block, stream in [(1, 1, 0), (1, 0, 1), (2, 0, 0)]:
        b = R.normal(seed, block, stream, N_DRAWS)
        assert abs(np.corrcoef(a, b)[0, 1]) < 4 / np.sqrt(N_DRAWS)
    # draws pooled over many blocks (how blocks are used) are still normal
    pooled = np.concatenate([R.normal(1, j, 0, 100) for j in range(1000)])
    assert stats.kstest(pooled, "norm").pvalue > 1e-3


# --------------------------------------------------------------------------
# Deterministic elementary functions
# --------------------------------------------------------------------------

def _ulps(ours, ref):
    return np.abs(ours - ref) / np.spacing(np.abs(ref))


def test_stable_log_agrees_with_numpy():
    rng = np.random.default_rng(0)
    for x in (10.0 ** rng.uniform(-300, 300, 200_000), rng.uniform(0.5, 2.0, 200_000),
              1.0 + rng.uniform(-1e-6, 1e-6, 100_000), 2.0 ** np.arange(-1020, 1020.0)):
        assert _ulps(R.stable_log(x), np.log(x)).max() <= 2
    assert R.stable_log(np.array([1.0])).tolist() == [0.0]
    assert R.stable_log(np.array([[1.0, 2.0]])).shape == (1, 2)


@pytest.mark.parametrize("lo,hi", [(-1e-3, 1e-3), (-10.0, 10.0), (-1e6, 1e6), (1e6, 1e15)])
def test_stable_cos_sin_agree_with_numpy(lo, hi):
    x = np.random.default_rng(1).uniform(lo, hi, 200_000)
    assert _ulps(R.stable_cos(x), np.cos(x)).max() <= 2
    assert _ulps(R.stable_sin(x), np.sin(x)).max() <= 2


def test_stable_cos_sin_absolute_accuracy_near_zeros():
    # near multiples of pi/2 the result is tiny; the three-part reduction
    # is accurate in absolute terms (what features need), not to its ulp
    x = np.arange(1, 600_000) * (np.pi / 2)
    assert np.abs(R.stable_cos(x) - np.cos(x)).max() < 1e-20
    assert np.abs(R.stable_sin(x) - np.sin(x)).max() < 1e-20


def test_stable_trig_special_values():
    assert R.stable_cos(np.array([0.0])).tolist() == [1.0]
    assert R.stable_sin(np.array([0.0, -0.0])).tolist() == [0.0, 0.0]
    assert np.isnan(R.stable_cos(np.array([np.inf, -np.inf, np.nan]))).all()
    assert np.isnan(R.stable_sin(np.array([np.inf, np.nan]))).all()


def test_cos_tile_agrees_with_numpy_and_the_scalar_path():
    rng = np.random.default_rng(2)
    z = rng.uniform(-50.0, 50.0, size=(7, 33))
    z_before = z.copy()
    bias = rng.uniform(0.0, 2 * np.pi, 33)
    out = R.cos_tile(z, bias, scale=np.sqrt(2.0))
    ref = np.sqrt(2.0) * np.cos(z + bias)
    assert _ulps(out, ref).max() <= 2
    # the vectorised path computes exactly what the scalar reference does
    assert np.array_equal(R.cos_tile(z, bias), R.stable_cos(z + bias))
    assert np.array_equal(R.cos_tile(z, sine=True), R.stable_sin(z))
    assert _ulps(R.cos_tile(z, sine=True), np.sin(z)).max() <= 2
    assert np.array_equal(z, z_before)   # works on a copy


def test_cos_tile_falls_back_on_huge_arguments():
    rng = np.random.default_rng(3)
    z = rng.uniform(-1e6, 1e6, size=(16, 40))
    z[5, 7] = 3.0e9
    z[9, 1] = -1.0e12
    out = R.cos_tile(z)
    assert _ulps(out, np.cos(z)).max() <= 2
    assert _ulps(R.cos_tile(z, sine=True), np.sin(z)).max() <= 2
    assert _ulps(R.cos_tile(z, np.full(40, 0.5)), np.cos(z + 0.5)).max() <= 2


def test_cos_tile_rejects_bad_shapes():
    with pytest.raises(ValueError):
        R.cos_tile(np.zeros(3))
    with pytest.raises(ValueError):
        R.cos_tile(np.zeros((2, 3)), bias=np.zeros(2))
    assert R.cos_tile(np.zeros((0, 3))).shape == (0, 3)
