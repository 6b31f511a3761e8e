"""The in-place Cholesky factor with a growing jitter (Nystrom's K_CC, the preconditioner)."""
import numpy as np
import pytest
from scipy import linalg

from onlinekernel.core.cholesky import jittered_cholesky


def _spd(m, low, seed=0):
    """A symmetric matrix (bit for bit) with eigenvalues from 1 down to ``low``."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(m, m)))
    A = (Q * np.geomspace(1.0, low, m)) @ Q.T
    return (A + A.T) / 2.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_factor_is_lapacks_and_overwrites_the_matrix(dtype):
    A = _spd(60, 1e-2).astype(dtype)
    want = linalg.cholesky(A, lower=True)
    work = A.copy()
    L, j = jittered_cholesky(work, [0.0])
    assert j == 0.0 and np.shares_memory(L, work) and L.dtype == dtype
    np.testing.assert_array_equal(L, want)  # bit for bit, upper triangle zero


def test_a_failed_attempt_is_retried_on_the_restored_matrix():
    """The first jitter makes the matrix indefinite late in the factorisation, after
    LAPACK has overwritten most of the lower triangle: the next attempt must see the
    matrix again, rebuilt from the upper triangle."""
    A = _spd(80, 1e-3)
    info = linalg.lapack.dpotrf(A - 2e-3 * np.eye(80), lower=1)[1]
    assert info > 40  # the failed attempt did overwrite columns
    work = A.copy()
    L, j = jittered_cholesky(work, [-2e-3, 1e-6])
    assert j == 1e-6
    np.testing.assert_allclose(L @ L.T, A + 1e-6 * np.eye(80), atol=1e-12)


def test_only_the_upper_triangle_is_read_and_clean_false_keeps_the_rest():
    A = _spd(30, 1e-1)
    work = A.copy()
    work[np.tril_indices(30, -1)] = np.nan  # never read
    L, _ = jittered_cholesky(work, [0.0], clean=False)
    np.testing.assert_allclose(np.tril(L) @ np.tril(L).T, A, atol=1e-12)
    assert np.isnan(L[np.triu_indices(30, 1)]).all()  # A's strict lower part, untouched


def test_no_jitter_that_factors_raises_and_leaves_the_matrix_whole():
    A = _spd(20, 1e-2)
    work = A.copy()
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        jittered_cholesky(work, [-0.5, -0.1])
    np.testing.assert_array_equal(work, A)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="square C-contiguous"):
        jittered_cholesky(np.ones((3, 2)), [0.0])
    with pytest.raises(ValueError, match="square C-contiguous"):
        jittered_cholesky(np.asfortranarray(np.eye(3))[:, ::-1], [0.0])
