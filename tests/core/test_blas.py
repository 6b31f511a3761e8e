"""The batch solvers' products through scipy's BLAS: numpy's values, every layout, no copies."""
import numpy as np
import pytest
from scipy.linalg import blas as scipy_blas

from onlinekernel.core import blas


def _layouts(A):
    """``A`` C-ordered, Fortran-ordered and as a strided view (which BLAS cannot take)."""
    wide = np.zeros((A.shape[0], 2 * A.shape[1]), dtype=A.dtype)
    wide[:, ::2] = A
    return {"C": np.ascontiguousarray(A), "F": np.asfortranarray(A), "strided": wide[:, ::2]}


def _close(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5, 3), (300, 129, 1), (1, 40, 6), (64, 3, 10)])
@pytest.mark.parametrize("la", ["C", "F", "strided"])
@pytest.mark.parametrize("lb", ["C", "F", "strided"])
def test_matmul_is_the_product_for_every_layout(dtype, shape, la, lb):
    n, k, m = shape
    rng = np.random.default_rng(0)
    A = _layouts(rng.normal(size=(n, k)).astype(dtype))[la]
    B = _layouts(rng.normal(size=(k, m)).astype(dtype))[lb]
    want = A.astype(np.float64) @ B.astype(np.float64)
    got = blas.matmul(A, B, scipy=True)
    assert got.shape == (n, m) and got.dtype == dtype
    np.testing.assert_allclose(got, want, **_close(dtype))
    # the transposed operands of the solvers' Phi^T G
    np.testing.assert_allclose(blas.matmul(B.T, A.T, scipy=True), want.T, **_close(dtype))


@pytest.mark.parametrize("scipy", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("out_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [1, 4])
def test_matmul_writes_and_accumulates_into_out(dtype, out_dtype, m, scipy):
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(50, 20)).astype(dtype), rng.normal(size=(20, m)).astype(dtype)
    want = A.astype(np.float64) @ B.astype(np.float64)
    out = np.full((50, m), 3.0, dtype=out_dtype)
    assert blas.matmul(A, B, out=out, scipy=scipy) is out
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert blas.matmul(A, B, out=out, accumulate=True, scipy=scipy) is out
    np.testing.assert_allclose(out, 2 * want, rtol=1e-4, atol=1e-4)
    rows = np.full((60, m), 1.0, dtype=out_dtype)
    blas.matmul(A, B, out=rows[5:55], accumulate=True, scipy=scipy)  # a row slice
    np.testing.assert_allclose(rows[5:55], want + 1.0, rtol=1e-4, atol=1e-4)
    assert np.all(rows[:5] == 1.0) and np.all(rows[55:] == 1.0)


def test_matmul_of_other_dtypes_is_numpys():
    A = np.arange(6).reshape(2, 3)
    assert np.array_equal(blas.matmul(A, A.T, scipy=True), A @ A.T)
    mixed = blas.matmul(np.ones((2, 3), np.float32), np.ones((3, 2)), scipy=True)
    assert mixed.dtype == np.float64 and np.all(mixed == 3.0)


@pytest.mark.parametrize("scipy", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(40, 7), (1000, 600), (3, 300)])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_gram_is_the_symmetric_product(dtype, shape, layout, scipy):
    P = _layouts(np.random.default_rng(2).normal(size=shape).astype(dtype))[layout]
    G = blas.gram(P, scipy=scipy)
    assert G.shape == (shape[1], shape[1]) and G.dtype == dtype
    np.testing.assert_allclose(G, P.astype(np.float64).T @ P.astype(np.float64),
                               rtol=1e-4 if dtype == np.float32 else 1e-11,
                               atol=1e-2 if dtype == np.float32 else 1e-9)
    if scipy and layout != "strided":  # syrk's triangle mirrored: symmetric bit for bit
        assert G.flags.c_contiguous and np.array_equal(G, G.T)


def test_gram_is_syrks_values():
    P = np.random.default_rng(3).normal(size=(200, 70))
    want = scipy_blas.dsyrk(1.0, P.T)  # P^T P in its upper triangle
    iu = np.triu_indices(70)
    assert np.array_equal(blas.gram(P, scipy=True)[iu], want[iu])


def test_no_copy_of_the_operands(monkeypatch):
    # scipy's f2py wrappers copy an operand they cannot take in place: the
    # helpers must hand them Fortran views (a C-ordered matrix's transpose)
    seen = []
    real = blas._GEMM[np.dtype(np.float64)]

    def spy(alpha, a, b, **kw):
        seen.append((a.flags.f_contiguous, b.flags.f_contiguous))
        return real(alpha, a, b, **kw)

    monkeypatch.setitem(blas._GEMM, np.dtype(np.float64), spy)
    rng = np.random.default_rng(4)
    P, C = rng.normal(size=(30, 8)), rng.normal(size=(8, 3))
    blas.matmul(P, C, scipy=True)
    blas.matmul(P.T, rng.normal(size=(30, 3)), scipy=True)
    assert seen == [(True, True), (True, True)]


def test_scipy_is_used_when_blas_runs_on_several_threads(monkeypatch):
    from threadpoolctl import threadpool_limits
    with threadpool_limits(1):
        assert blas.use_scipy() is False
    monkeypatch.setattr(blas.one_blas_thread, "blas_threads", lambda: 2)
    assert blas.use_scipy() is True


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fit_is_the_same_model_through_either_library(threads):
    # the solvers' products go to numpy on one thread and to scipy on more:
    # the models agree to rounding
    from threadpoolctl import threadpool_limits
    from onlinekernel import DSGClassifier
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    want = DSGClassifier(loss="logistic", max_blocks=2, block_size=64, tol=1e-8,
                         random_state=0).fit(X, y).decision_function(X)
    with threadpool_limits(threads):
        got = DSGClassifier(loss="logistic", max_blocks=2, block_size=64, tol=1e-8,
                            random_state=0).fit(X, y).decision_function(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n, M, K, step", [(7, 3, 2, 3), (100, 40, 10, 32), (31, 5, 1, 64)])
def test_tile_products_are_the_two_products_in_place(n, M, K, step):
    rng = np.random.default_rng(1)
    P, C, Hw = rng.normal(size=(n, M)), rng.normal(size=(M, K)), rng.normal(size=(n, K))
    seen = []

    def weigh(r0, r1, Vt):
        seen.append((r0, r1))
        Vt += 1.0  # a change in place is what V keeps
        return Vt * Hw[r0:r1]

    V, out = np.empty((n, K)), np.ones((M, K))
    blas.tile_products(P, C, step, weigh, V, out)
    np.testing.assert_allclose(V, P @ C + 1.0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, 1.0 + P.T @ ((P @ C + 1.0) * Hw), rtol=1e-12, atol=1e-12)
    assert seen == [(r, min(n, r + step)) for r in range(0, n, step)]


def test_tile_products_refuse_what_they_cannot_multiply_in_place():
    P, C = np.ones((4, 3)), np.ones((3, 2))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        blas.tile_products(P.astype(np.float32), C, 2, lambda *a: a[2], np.empty((4, 2)),
                           np.zeros((3, 2)))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        blas.tile_products(P, np.asfortranarray(np.ones((3, 2))), 2, lambda *a: a[2],
                           np.empty((4, 2)), np.zeros((3, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_gram_accumulates_batches_in_place(dtype, layout):
    # the normal equations summed over row batches: syrk into the same upper
    # triangle, mirrored once at the end
    P = np.random.default_rng(5).normal(size=(301, 37)).astype(dtype)
    A = np.zeros((37, 37), order="F")
    for r0 in range(0, 301, 64):
        assert blas.gram(_layouts(P[r0:r0 + 64])[layout], out=A) is A
    assert blas.mirror_upper(A) is A and np.array_equal(A, A.T)
    np.testing.assert_allclose(A, P.astype(np.float64).T @ P.astype(np.float64),
                               rtol=1e-4 if dtype == np.float32 else 1e-11,
                               atol=1e-2 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("out", [np.zeros((5, 5)), np.zeros((5, 5), np.float32, order="F"),
                                 np.zeros((4, 4), order="F")])
def test_gram_refuses_an_out_it_cannot_accumulate_into(out):
    with pytest.raises(ValueError, match="Fortran-ordered float64"):
        blas.gram(np.ones((3, 5)), out=out)
