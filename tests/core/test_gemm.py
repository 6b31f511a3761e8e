"""The compiled loops' matrix products sum in one order: the same bits on every machine.

``src/oklinalg.h`` defines every product ``C = alpha op(A) op(B) + beta C`` of
the features and the predictions as sums over ``p`` in increasing order, one
multiply and one add per term.  These tests check the header against that
definition written in numpy, for the baseline ISA and every wider one this
CPU has, and that a model's prediction of a row does not depend on the rows
predicted with it (BLAS, which the loops used before, broke both).
"""
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from onlinekernel import DSGClassifier, DSGRegressor

GEMM_PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "oklinalg.h"

/* in: m n k ta tb alpha beta, then A, B, C in double; out, for every instruction
 * set this CPU has (0 portable, 1 AVX2, 2 AVX-512): C in double, then in float */
int main(int argc, char **argv)
{
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    int64_t h[5], sa, sb, sc, i;
    int isa;
    double ab[2], *A, *B, *C, *Cd;
    float *A32, *B32, *C32, *Cf;
    if (!in || !out || fread(h, 8, 5, in) != 5 || fread(ab, 8, 2, in) != 2) return 1;
    sa = h[0] * h[2]; sb = h[2] * h[1]; sc = h[0] * h[1];
    A = malloc(8 * sa); B = malloc(8 * sb); C = malloc(8 * sc); Cd = malloc(8 * sc);
    A32 = malloc(4 * sa); B32 = malloc(4 * sb); C32 = malloc(4 * sc); Cf = malloc(4 * sc);
    if (fread(A, 8, sa, in) != (size_t)sa || fread(B, 8, sb, in) != (size_t)sb
        || fread(C, 8, sc, in) != (size_t)sc) return 1;
    for (i = 0; i < sa; i++) A32[i] = (float)A[i];
    for (i = 0; i < sb; i++) B32[i] = (float)B[i];
    for (i = 0; i < sc; i++) C32[i] = (float)C[i];
    for (isa = 0; isa <= ok_linalg_isa(); isa++) {
        for (i = 0; i < sc; i++) { Cd[i] = C[i]; Cf[i] = C32[i]; }
        /* leading dimensions: op(A) is m x k, stored k x m when transposed */
        ok_gemm_at(isa, (int)h[3], (int)h[4], h[0], h[1], h[2], ab[0], A,
                   h[3] ? h[0] : h[2], B, h[4] ? h[2] : h[1], ab[1], Cd, h[1]);
        ok_gemm_f32_at(isa, (int)h[3], (int)h[4], h[0], h[1], h[2], (float)ab[0], A32,
                       h[3] ? h[0] : h[2], B32, h[4] ? h[2] : h[1], (float)ab[1], Cf, h[1]);
        fwrite(Cd, 8, sc, out);
        fwrite(Cf, 4, sc, out);
    }
    return fclose(out) != 0;
}
"""


def _round(exact, dtype):
    """``exact`` (a Fraction) rounded to the nearest ``dtype``, ties to even."""
    x = dtype(float(exact))  # float() rounds correctly; a float32 may round twice
    if dtype is np.float64:
        return x
    best = None
    for cand in (np.nextafter(x, dtype(-np.inf)), x, np.nextafter(x, dtype(np.inf))):
        if not np.isfinite(cand):
            continue
        err = abs(Fraction(float(cand)) - exact)
        even = int(np.asarray(cand).view(np.uint32)) % 2 == 0
        key = (err, not even)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1]


def _fma(a, b, c, dtype):
    """IEEE 754's fused multiply-add: a * b + c rounded once."""
    return _round(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), dtype)


def _reference(A, B, C, ta, tb, alpha, beta):
    """The definition: an fma chain over p in increasing order, then alpha s + beta C."""
    dtype = A.dtype.type
    opA = A.T if ta else A
    opB = B.T if tb else B
    m, k = opA.shape
    n = opB.shape[1]
    out = np.empty((m, n), dtype=A.dtype)
    for i in range(m):
        for j in range(n):
            s = dtype(0.0)
            for p in range(k):
                s = _fma(opA[i, p], opB[p, j], s, dtype)
            out[i, j] = dtype(alpha) * s if beta == 0 else (
                dtype(alpha) * s + dtype(beta) * C[i, j])
    return out


# shapes of the loops (a tile's projection, its accumulation, a gradient),
# with ragged edges of every kernel's tile (8 rows x 8, 16 or 32 columns)
CASES = [(5, 13, 7, 0, 1, 1.0, 0.0), (9, 3, 17, 0, 0, 1.0, 1.0),
         (6, 37, 33, 1, 0, -0.37, 1.0), (3, 11, 4, 1, 1, 2.5, -0.5), (1, 1, 1, 0, 1, 1.0, 0.0),
         (4, 33, 0, 0, 1, 1.0, 0.5),
         # fewer rows than a tile (the one-row path: no panel), past 32 columns
         (1, 77, 19, 0, 1, 1.0, 0.0), (2, 41, 9, 1, 0, 0.5, 1.0), (3, 9, 40, 0, 0, -1.5, 0.25),
         (1, 3, 0, 1, 1, 1.0, 1.0),
         # one term per sum (a one-row step's rank-one gradient), every layout
         (256, 1, 1, 1, 1, -0.03, 1.0), (7, 5, 1, 0, 0, 1.0, 0.0), (9, 3, 1, 1, 0, 2.0, -1.0),
         (5, 6, 1, 0, 1, -1.5, 0.5), (37, 1, 1, 1, 0, 0.75, 0.0), (6, 1, 1, 0, 1, 1.0, 1.0),
         # one output column after a few rows (one row's prediction of one output)
         (1, 1, 256, 0, 0, 1.0, 0.0), (2, 1, 33, 1, 1, -2.0, 1.0),
         # a transposed B: whole panels transposed in registers (16 doubles, 32
         # floats), squares of p with a tail, and a ragged last panel; tiles of
         # 8 rows, ragged ones, and a tile of 4-7 rows
         (13, 70, 21, 0, 1, 1.0, 0.0), (32, 64, 37, 0, 1, 1.0, 1.0), (6, 32, 5, 1, 1, -0.5, 0.5),
         (8, 16, 3, 0, 1, 2.0, 0.0), (20, 33, 50, 0, 0, 1.0, 0.0), (4, 48, 16, 1, 1, 1.0, 0.0)]


def test_products_give_the_defined_bits_with_every_kernel(tmp_path):
    header = Path(__file__).resolve().parents[2] / "src" / "onlinekernel" / "core" / "src" / "oklinalg.h"
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    assert cc, "this test needs the C compiler that builds the package ($CC, cc or gcc)"
    (tmp_path / "g.c").write_text(GEMM_PROGRAM)
    exe = tmp_path / "g"
    build = subprocess.run([cc, "-O3", "-ffp-contract=off", "-fno-math-errno", "-I",
                            str(header.parent), str(tmp_path / "g.c"), "-o", str(exe), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    rng = np.random.default_rng(3)
    for c, (m, n, k, ta, tb, alpha, beta) in enumerate(CASES):
        A = rng.normal(size=(k, m) if ta else (m, k)) * 10.0 ** rng.integers(-3, 4)
        B = rng.normal(size=(n, k) if tb else (k, n))
        C = rng.normal(size=(m, n))
        (tmp_path / "in.bin").write_bytes(
            np.array([m, n, k, ta, tb], np.int64).tobytes()
            + np.array([alpha, beta]).tobytes() + A.tobytes() + B.tobytes() + C.tobytes())
        want64 = _reference(A, B, C, ta, tb, alpha, beta)
        want32 = _reference(*[x.astype(np.float32) for x in (A, B, C)], ta, tb, alpha, beta)
        subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                       check=True)
        data = (tmp_path / "out.bin").read_bytes()
        step = want64.nbytes + want32.nbytes
        assert len(data) % step == 0 and len(data) >= step
        for isa in range(len(data) // step):
            got64 = np.frombuffer(data, np.float64, want64.size, isa * step)
            got32 = np.frombuffer(data, np.float32, want32.size, isa * step + want64.nbytes)
            assert got64.tobytes() == want64.tobytes(), (isa, CASES[c])
            assert got32.tobytes() == want32.tobytes(), (isa, CASES[c])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "matern", "isotropic_cauchy", "arccos",
                                    "iln"])
def test_a_row_predicts_the_same_bits_whatever_rows_come_with_it(kernel, dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 11))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    clf = DSGClassifier(kernel=kernel, block_size=64, max_blocks=4, dtype=dtype,
                        random_state=0).fit(X[:200], y[:200])
    Xq = X[200:]
    whole = clf.decision_function(Xq)
    rows = np.concatenate([clf.decision_function(Xq[i:i + 1]) for i in range(len(Xq))])
    odd = clf.decision_function(Xq[::3])
    assert whole.tobytes() == rows.tobytes()
    assert whole[::3].tobytes() == odd.tobytes()


def test_seeded_predictions_match_their_golden_values():
    # the values this seeded model predicts on every machine (summed in
    # oklinalg.h's order; recorded on an AVX-512 machine, checked everywhere)
    rng = np.random.default_rng(42)
    X = rng.normal(size=(40, 5))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    reg = DSGRegressor(block_size=16, max_blocks=3, solver="sgd", max_iter=2, tol=None,
                       random_state=7).fit(X, y)
    got = reg.predict(X[:4])
    assert got.tolist() == GOLDEN, got.tolist()


GOLDEN = [-0.014556733913647814, -0.19905644005882814,
          0.06991541028986029, -0.060130321855192743]


CORE_PROGRAM = """
import sys
import numpy as np
from onlinekernel import DSGClassifier, DSGRegressor, load
rng = np.random.default_rng(5)
X = rng.normal(size=(300, 9))
y = (X[:, 0] * X[:, 1] > 0).astype(int)
out = []
for dtype in ("float64", "float32"):
    clf = DSGClassifier(loss="hinge", solver="sgd", block_size=64, max_blocks=4, dtype=dtype,
                        random_state=1).fit(X, y)
    out.append(clf.decision_function(X))
    reg = DSGRegressor(solver="sgd", block_size=64, max_blocks=4, dtype=dtype,
                       random_state=1).fit(X, 1e3 * X[:, 0] + 5e4)
    out.append(reg.predict(X))
out.append(load(sys.argv[1]).decision_function(X))
sys.stdout.write(np.concatenate(out).astype(np.float64).tobytes().hex())
"""


def test_training_and_prediction_do_not_depend_on_the_cpu_s_blas_kernels(tmp_path):
    # OpenBLAS (numpy's and scipy's wheels) picks its kernels by CPU; the
    # environment variable makes this machine run other CPUs' kernels.  SGD
    # training and every prediction must give the same bits under each.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 9))
    DSGClassifier(block_size=64, max_blocks=4, random_state=2).fit(
        X, (X[:, 0] > 0).astype(int)).save(tmp_path / "m.okm")
    (tmp_path / "p.py").write_text(CORE_PROGRAM)
    results = {}
    for core in ("Haswell", "SkylakeX", "Sandybridge", "Zen"):
        env = dict(os.environ, OPENBLAS_CORETYPE=core)
        run = subprocess.run([sys.executable, str(tmp_path / "p.py"), str(tmp_path / "m.okm")],
                             capture_output=True, text=True, env=env, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        results[core] = run.stdout
    assert len(set(results.values())) == 1, {k: v[:32] for k, v in results.items()}
