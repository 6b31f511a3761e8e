"""Cholesky factors of large symmetric matrices, in place, with a growing jitter.

The Nystrom map factors its landmarks' kernel matrix and the batch
solvers' preconditioner a sampled Hessian; both are ``m x m`` with ``m`` in
the thousands (8,192: 512 MiB in float64), and both may be numerically
indefinite, so a small multiple of the identity is added until they factor.
:func:`jittered_cholesky` does this without a copy of the matrix: LAPACK
reads one triangle and writes the factor over it, and a failed attempt is
undone from the other triangle.
"""
import numpy as np
from scipy import linalg

__all__ = ["jittered_cholesky"]


def jittered_cholesky(A, jitters, clean=True):
    """The lower Cholesky factor of ``A + j I`` for the first ``j`` of ``jitters`` that factors.

    ``A`` is overwritten: only its upper triangle is read (the matrix is
    taken as symmetric), and the factor is written over its lower triangle
    in Fortran order, so that the factor is ``A.T`` (the same memory).  A
    failed attempt spoils part of the lower triangle, which is restored
    from the upper one before the next jitter: no ``m x m`` copy is ever
    made (a symmetrised copy, a jittered copy and LAPACK's Fortran copy took
    2.3 s of the Nystrom map's 7.6 s fit and 1.5 GiB on kin40k, 8,192
    landmarks).

    Parameters
    ----------
    A : ndarray of shape (m, m)
        C-contiguous, float32 or float64; its upper triangle holds the
        matrix.  Overwritten.
    jitters : iterable of float
        Amounts added to the diagonal, tried in turn (``0.0`` first to try
        ``A`` itself).
    clean : bool, default=True
        Zero the factor's strict upper triangle (a true triangular array);
        ``False`` leaves ``A``'s values there, as
        :func:`scipy.linalg.cho_solve` ignores them.

    Returns
    -------
    L : ndarray of shape (m, m)
        The factor, Fortran-ordered, sharing ``A``'s memory.
    jitter : float
        The amount that was added.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``A + j I`` is not positive definite for any ``j`` of ``jitters``
        (``A`` then holds the matrix again, in both triangles).

    Examples
    --------
    >>> A = np.array([[4.0, 2.0], [2.0, 1.0]])  # singular
    >>> L, j = jittered_cholesky(A, [0.0, 1e-6])
    >>> j, bool(np.allclose(L @ L.T, [[4.0, 2.0], [2.0, 1.0 + 1e-6]]))
    (1e-06, True)
    """
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or not A.flags.c_contiguous:
        raise ValueError(f"jittered_cholesky needs a square C-contiguous array, got shape "
                         f"{A.shape}")
    m = A.shape[0]
    V = A.T  # the same matrix (A is symmetric) in Fortran order: LAPACK works in place
    diag = V.diagonal().copy()
    potrf, = linalg.get_lapack_funcs(("potrf",), (V,))
    info = 0
    for j in jitters:
        V[np.diag_indices(m)] = diag + V.dtype.type(j)
        L, info = potrf(V, lower=1, overwrite_a=1, clean=0)
        if info == 0:
            if clean:
                for k in range(1, m):  # column by column: np.triu would copy L
                    L[:k, k] = 0.0
            return L, float(j)
        if info < 0:
            raise ValueError(f"potrf: illegal value in argument {-info}")
        for k in range(m - 1):  # the factor's columns from A's untouched rows
            V[k + 1:, k] = V[k, k + 1:]
    V[np.diag_indices(m)] = diag
    raise np.linalg.LinAlgError(f"the {m} x {m} matrix is not positive definite with any "
                                f"of the jitters tried (last info {info})")
