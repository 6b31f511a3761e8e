"""The counter-based generator and the package's own transforms.

Known-answer vectors pin Philox4x32-10 to Random123; golden values pin the
transforms bit for bit (a saved model must regenerate the same features on
any machine and numpy version); distribution tests check the transforms are
right; the deterministic elementary functions are checked against numpy.
"""
import os
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from onlinekernel.core import streams as R

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


# --------------------------------------------------------------------------
# The vectorised cosine tiles (ok_cos_tile, ok_cos_tile_f32)
# --------------------------------------------------------------------------

F32_ULP = 2.0 ** -23          # float32 ulp of 1
HUGE = [1e7, -1e7, 3.0e9, -1e12, 1e300, -1e300, np.inf, -np.inf, np.nan]


def _trig_args(rng, n, bound, dtype=np.float64):
    """n arguments in [-bound, bound]: 60 % uniform, 20 % within 1e-6 of a
    multiple of pi/2 (where cos or sin is tiny), 20 % in [-4, 4]."""
    k = rng.integers(-int(bound / (np.pi / 2)), int(bound / (np.pi / 2)), n // 5)
    x = np.concatenate([rng.uniform(-bound, bound, n - 2 * (n // 5)),
                        k * (np.pi / 2) + rng.uniform(-1e-6, 1e-6, n // 5),
                        rng.uniform(-4.0, 4.0, n // 5)])
    return x.astype(dtype)


def test_cos_tile_agrees_with_numpy():
    rng = np.random.default_rng(2)
    z = rng.uniform(-50.0, 50.0, size=(7, 33))
    z_before = z.copy()
    bias = rng.uniform(0.0, 2 * np.pi, 33)
    out = R.cos_tile(z, bias, scale=np.sqrt(2.0))
    assert out.dtype == np.float64 and out.flags.c_contiguous
    assert _ulps(out, np.sqrt(2.0) * np.cos(z + bias)).max() <= 2
    assert _ulps(R.cos_tile(z, sine=True), np.sin(z)).max() <= 2
    assert _ulps(R.cos_tile(z, bias, scale=-0.5, sine=True), -0.5 * np.sin(z + bias)).max() <= 2
    assert np.array_equal(z, z_before)   # works on a copy


def test_cos_tile_float64_absolute_error():
    # about 1e6 arguments up to 1e5: max abs error 2e-16 * |scale|
    rng = np.random.default_rng(5)
    x = _trig_args(rng, 1_000_000, 1e5).reshape(1000, 1000)
    assert np.abs(R.cos_tile(x) - np.cos(x)).max() <= 2e-16
    assert np.abs(R.cos_tile(x, sine=True) - np.sin(x)).max() <= 2e-16
    assert np.abs(R.cos_tile(x, scale=4.0) - 4.0 * np.cos(x)).max() <= 8e-16
    # sqrt(2), the features' scale: against an extended-precision reference
    # where numpy has one (x86-64 Linux), else numpy's own rounding is allowed
    sub = x[:200]
    s = np.sqrt(2.0)
    ld = np.finfo(np.longdouble).eps < 1e-18
    ref = (np.longdouble(s) * np.cos(sub.astype(np.longdouble)) if ld else s * np.cos(sub))
    err = np.abs(R.cos_tile(sub, scale=s).astype(np.longdouble) - ref).max()
    assert err <= (2e-16 if ld else 4e-16) * s


def test_cos_tile_huge_and_non_finite_arguments_take_libm():
    rng = np.random.default_rng(3)
    z = rng.uniform(-1e5, 1e5, size=(6, 40))
    z[1, 3:3 + len(HUGE)] = HUGE
    z[4, 7] = 1e6 * (1 + 2 ** -52)           # just past the vector range
    z[5, 0] = 1e6                            # the largest in-range argument
    out, out_sin = R.cos_tile(z), R.cos_tile(z, sine=True)
    special = ~np.isfinite(z)
    assert np.isnan(out[special]).all() and np.isnan(out_sin[special]).all()
    inrange = np.abs(z) <= 1e6
    huge = ~special & ~inrange
    assert _ulps(out[huge], np.cos(z[huge])).max() <= 1
    assert _ulps(out_sin[huge], np.sin(z[huge])).max() <= 1
    assert np.abs(out[inrange] - np.cos(z[inrange])).max() <= 2e-16
    assert np.abs(out_sin[inrange] - np.sin(z[inrange])).max() <= 2e-16
    # an element's value does not depend on the rest of its row: the rows
    # with a huge argument go through the scalar loop, and it agrees bit for
    # bit with the vector loop on every in-range element
    clean = np.where(inrange, z, 0.0)
    assert np.array_equal(out[inrange], R.cos_tile(clean)[inrange])
    assert np.array_equal(out_sin[inrange], R.cos_tile(clean, sine=True)[inrange])
    # the bias is added before the range check
    biased = R.cos_tile(z, np.full(40, 0.5))
    assert np.isnan(biased[special]).all()
    assert _ulps(biased[huge], np.cos(z[huge] + 0.5)).max() <= 1
    assert np.abs(biased[inrange] - np.cos(z[inrange] + 0.5)).max() <= 2e-16


def test_cos_tile_float32_absolute_error():
    # about 1e6 float32 arguments up to 1e4: max abs error 3 float32 ulps of 1
    # against the float64 cosine of the float32 argument
    rng = np.random.default_rng(6)
    x = _trig_args(rng, 1_000_000, 1e4, np.float32).reshape(1000, 1000)
    x64 = x.astype(np.float64)
    out = R.cos_tile(x)
    assert out.dtype == np.float32 and out.flags.c_contiguous
    assert np.abs(out - np.cos(x64)).max() <= 3 * F32_ULP
    assert np.abs(R.cos_tile(x, sine=True) - np.sin(x64)).max() <= 3 * F32_ULP
    s = np.sqrt(2.0)
    assert np.abs(R.cos_tile(x, scale=s) - s * np.cos(x64)).max() <= 3 * F32_ULP * s
    # the argument is the float32 sum z + bias
    bias = rng.uniform(0.0, 2 * np.pi, 1000).astype(np.float32)
    arg = (x + bias).astype(np.float64)
    assert np.abs(R.cos_tile(x, bias) - np.cos(arg)).max() <= 3 * F32_ULP
    # up to the float kernel's range (2^15), the same bound
    wide = rng.uniform(-32768.0, 32768.0, (100, 1000)).astype(np.float32)
    assert np.abs(R.cos_tile(wide) - np.cos(wide.astype(np.float64))).max() <= 3 * F32_ULP


def test_cos_tile_float32_takes_the_double_path_outside_its_range():
    rng = np.random.default_rng(7)
    z = rng.uniform(-1e4, 1e4, size=(5, 40)).astype(np.float32)
    outside = [32768.0 * (1 + 2 ** -23), -4e4, 1e6, -1e7, 3e9, 3e38, np.inf, -np.inf, np.nan]
    z[2, :len(outside)] = outside
    z[3, 0] = 32768.0                       # the largest in-range argument
    out = R.cos_tile(z)
    finite = np.isfinite(z)
    assert np.isnan(out[~finite]).all()
    assert np.abs(out[finite] - np.cos(z[finite].astype(np.float64))).max() <= 3 * F32_ULP
    # beyond 2^15: the double kernel (or libm), rounded once to float32
    big = finite & (np.abs(z) > 32768.0)
    assert (np.abs(out[big] - np.cos(z[big].astype(np.float64)))
            <= np.spacing(np.abs(out[big]))).all()
    inrange = np.abs(z) <= 32768.0
    assert np.array_equal(out[inrange], R.cos_tile(np.where(inrange, z, 0.0))[inrange])


def test_cos_tile_dispatches_on_dtype():
    z = np.linspace(-20.0, 20.0, 60).reshape(3, 20)
    out64 = R.cos_tile(z, np.arange(20.0), sine=True)
    out32 = R.cos_tile(z.astype(np.float32), np.arange(20.0), sine=True)
    assert out64.dtype == np.float64 and out32.dtype == np.float32
    assert np.abs(out32 - out64).max() < 1e-5
    assert R.cos_tile(z.astype(np.int64)).dtype == np.float64
    assert R.cos_tile(z.astype(np.float16)).dtype == np.float64
    assert R.cos_tile([[0.0]]).tolist() == [[1.0]]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cos_tile_rejects_bad_shapes(dtype):
    with pytest.raises(ValueError, match="2-d"):
        R.cos_tile(np.zeros(3, dtype))
    with pytest.raises(ValueError, match="one value per column"):
        R.cos_tile(np.zeros((2, 3), dtype), bias=np.zeros(2))
    assert R.cos_tile(np.zeros((0, 3), dtype)).shape == (0, 3)
    assert R.cos_tile(np.zeros((3, 0), dtype)).shape == (3, 0)


# The C side of the clone test: runs both tiles on z (n x m float64) with a
# bias, cos and sin, in double and float, and writes the six results.
CLONE_PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#undef __linux__              /* OK_TARGET_CLONES off: this build's ISA only */
#include "okcore.h"

int main(int argc, char **argv)
{
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    int64_t n, m, i, s;
    double *z, *b, *w;
    float *z32, *b32, *w32;
    if (!in || !out || fread(&n, 8, 1, in) != 1 || fread(&m, 8, 1, in) != 1) return 1;
    z = malloc(8 * n * m); w = malloc(8 * n * m); b = malloc(8 * m);
    z32 = malloc(4 * n * m); w32 = malloc(4 * n * m); b32 = malloc(4 * m);
    if (fread(z, 8, n * m, in) != (size_t)(n * m) || fread(b, 8, m, in) != (size_t)m) return 1;
    for (i = 0; i < n * m; i++) z32[i] = (float)z[i];
    for (i = 0; i < m; i++) b32[i] = (float)b[i];
    for (s = 0; s < 3; s++) {           /* cos, cos + bias, sin */
        memcpy(w, z, 8 * n * m);
        ok_cos_tile(w, n, m, m, s == 1 ? b : NULL, 1.4142135623730951, s == 2 ? 3 : 0);
        fwrite(w, 8, n * m, out);
        memcpy(w32, z32, 4 * n * m);
        ok_cos_tile_f32(w32, n, m, m, s == 1 ? b32 : NULL, 1.4142135623730951f,
                        s == 2 ? 3 : 0);
        fwrite(w32, 4, n * m, out);
    }
    return fclose(out) != 0;
}
"""


def _isa_flags():
    """Compiler flags for the ISAs of this CPU that okcore.h has clones for."""
    flags = {"baseline": []}
    if platform.machine() in ("x86_64", "AMD64") and Path("/proc/cpuinfo").exists():
        cpu = Path("/proc/cpuinfo").read_text().split()
        if "avx2" in cpu:
            flags["avx2"] = ["-mavx2"]
        if "avx512f" in cpu:
            flags["avx512f"] = ["-mavx512f"]
    return flags


def test_cos_tiles_give_the_same_bits_in_every_clone(tmp_path):
    # no FMA, no ISA-dependent arithmetic: okcore.h built for the baseline
    # ISA and for every wider one this CPU has gives the installed module's
    # values bit for bit, so a model predicts the same on every machine
    header = Path(__file__).resolve().parents[2] / "src" / "onlinekernel" / "core" / "src" / "okcore.h"
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    assert cc, "this test needs the C compiler that builds the package ($CC, cc or gcc)"
    rng = np.random.default_rng(8)
    n, m = 64, 67
    z = np.concatenate([rng.uniform(-3e4, 3e4, (n - 1) * m), rng.uniform(-50.0, 50.0, m)])
    z[5] = 2e6                               # one row through the scalar loops
    z = z.reshape(n, m)
    bias = rng.uniform(0.0, 2 * np.pi, m)
    (tmp_path / "okb.c").write_text(CLONE_PROGRAM)
    (tmp_path / "in.bin").write_bytes(np.array([n, m], np.int64).tobytes()
                                      + z.tobytes() + bias.tobytes())
    z32, b32, s = z.astype(np.float32), bias.astype(np.float32), np.sqrt(2.0)
    expected = [R.cos_tile(z, scale=s), R.cos_tile(z32, scale=s),
                R.cos_tile(z, bias, scale=s), R.cos_tile(z32, b32, scale=s),
                R.cos_tile(z, scale=s, sine=True), R.cos_tile(z32, scale=s, sine=True)]
    for isa, flags in _isa_flags().items():
        exe = tmp_path / f"okb_{isa}"
        build = subprocess.run([cc, "-O3", "-ffp-contract=off", "-fno-math-errno", *flags,
                                "-I", str(header.parent), str(tmp_path / "okb.c"),
                                "-o", str(exe), "-lm"], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / f"{isa}.bin")],
                       check=True)
        data = (tmp_path / f"{isa}.bin").read_bytes()
        offset = 0
        for want in expected:
            got = np.frombuffer(data, want.dtype, want.size, offset).reshape(want.shape)
            offset += want.nbytes
            assert got.tobytes() == want.tobytes(), (isa, want.dtype)
