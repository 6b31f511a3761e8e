"""Matrix products of the batch solvers through scipy's BLAS, the library of their factorisations.

numpy and scipy wheels each bring their own OpenBLAS, each with its own
thread pool.  A solver that multiplies with numpy's (``@``) and factors with
scipy's (``cho_factor``, ``solve_triangular``) leaves one pool's threads
spinning on the cores the other pool then wants: on 2 cores and 2 threads,
a 7,494 x 1,024 Gram matrix followed by a 1,024 x 1,024 Cholesky factor took
204 ms through the two libraries and 111 ms through scipy's alone, and a
logistic fit with 1,024 features on 8,000 rows of 10 classes 15.8 s
against 6.5 s.  These helpers then call scipy's ``gemm``, ``gemv`` and
``syrk`` on views of the operands (a C-ordered matrix is its transpose in
Fortran order), so nothing is copied; operands BLAS cannot take as they are
(mixed or integer dtypes, strided views) go to numpy's ``matmul``.  On one
BLAS thread there is no pool to stall, and numpy's (newer) OpenBLAS
multiplies the solvers' small float32 tiles faster (128 x 1,024 rows
transposed times 128 x 10: 83 us against 120 us), so the products stay with
numpy there (:func:`use_scipy`).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> A, B = rng.normal(size=(5, 3)), rng.normal(size=(3, 2))
>>> bool(np.allclose(matmul(A, B, scipy=True), A @ B))
True
>>> bool(np.allclose(gram(A, scipy=True), A.T @ A))
True
"""
import numpy as np
from scipy.linalg import blas

from onlinekernel.core.threads import one_blas_thread

__all__ = ["gram", "matmul", "mirror_upper", "tile_products", "use_scipy"]

_GEMM = {np.dtype(np.float32): blas.sgemm, np.dtype(np.float64): blas.dgemm}
_GEMV = {np.dtype(np.float32): blas.sgemv, np.dtype(np.float64): blas.dgemv}
_SYRK = {np.dtype(np.float32): blas.ssyrk, np.dtype(np.float64): blas.dsyrk}
# columns mirrored at a time by gram
_STRIP = 256


def use_scipy():
    """Whether the products go through scipy's BLAS: when a BLAS library runs on several threads.

    A caller making many products (one per row tile) asks once and passes
    the answer on (the question costs a few microseconds).
    """
    return one_blas_thread.blas_threads() > 1


def _fortran(A):
    """``(F, trans)``: a Fortran-ordered array ``F`` with ``A = F`` (trans 0) or ``A = F.T`` (1).

    None when ``A`` is neither C- nor F-contiguous (BLAS would need a copy).
    """
    if A.flags.f_contiguous:
        return A, 0
    if A.flags.c_contiguous:
        return A.T, 1
    return None


def matmul(A, B, out=None, accumulate=False, scipy=None):
    """``A @ B`` (or ``out += A @ B`` with ``accumulate``) of two 2-D float arrays.

    Parameters
    ----------
    A : ndarray of shape (n, k)
    B : ndarray of shape (k, m)
        Of ``A``'s dtype (float32 or float64) for scipy's BLAS; any other
        pair is multiplied by numpy.
    out : ndarray of shape (n, m), optional
        Where the product goes (C-contiguous and of the operands' dtype for
        BLAS to write it in place); a new array when None.
    accumulate : bool, default=False
        Add the product to ``out`` instead of overwriting it.
    scipy : bool, optional
        Through scipy's BLAS (else numpy's); None: :func:`use_scipy`.

    Returns
    -------
    ndarray of shape (n, m)
        ``out`` when given, else a new C-ordered array.
    """
    dtype = A.dtype
    if scipy is None:
        scipy = use_scipy()
    gemm = (_GEMM.get(dtype) if scipy and B.dtype == dtype and A.ndim == B.ndim == 2
            else None)
    fa, fb = (_fortran(A), _fortran(B)) if gemm is not None else (None, None)
    if fa is None or fb is None or min(A.shape + B.shape) == 0:
        return _deliver(A @ B, out, accumulate)
    (Fa, ta), (Fb, tb) = fa, fb
    if B.shape[1] == 1:
        # a matrix times one column is gemv's: OpenBLAS's gemm took 2.3x as long
        # (32,000 x 2,048 float64 rows)
        return _deliver(_GEMV[dtype](1.0, Fa, B.ravel(), trans=ta)[:, None], out, accumulate)
    # row-major out = A B is column-major out^T = B^T A^T: the operands are swapped
    # and each transposed, which turns each C-ordered one into its Fortran view
    if out is not None and out.dtype == dtype and out.flags.c_contiguous:
        gemm(1.0, Fb, Fa, beta=1.0 if accumulate else 0.0, c=out.T, trans_a=1 - tb,
             trans_b=1 - ta, overwrite_c=1)
        return out
    return _deliver(gemm(1.0, Fb, Fa, trans_a=1 - tb, trans_b=1 - ta).T, out, accumulate)


def _deliver(product, out, accumulate):
    """``product`` itself without ``out``; else written or added into ``out``, returned."""
    if out is None:
        return product
    if accumulate:
        out += product
    else:
        out[...] = product
    return out


def gram(P, scipy=None, out=None):
    """``P.T @ P`` of a 2-D float array by one ``syrk`` (half the flops of a product).

    Parameters
    ----------
    P : ndarray of shape (n, M)
    scipy : bool, optional
        Through scipy's BLAS (else numpy's, which also calls ``syrk`` for
        ``P.T @ P``); None: :func:`use_scipy`.
    out : ndarray of shape (M, M), float64, Fortran-ordered, optional
        Accumulate ``P.T @ P`` into its upper triangle (``syrk`` in place for
        float64 ``P``; the lower triangle is left as it is, or gets the
        product's too), and return it; :func:`mirror_upper` then makes it
        symmetric.  A Gram matrix summed over row batches so needs no
        ``M x M`` temporary per batch (4,096 features: 128 MiB of fresh pages
        each).

    Returns
    -------
    ndarray of shape (P.shape[1], P.shape[1])
        Symmetric, C-ordered, of ``P``'s dtype (numpy's product when BLAS
        cannot take ``P`` as it is); ``out`` when given.

    Examples
    --------
    >>> P = np.arange(6.0).reshape(3, 2)
    >>> A = np.zeros((2, 2), order="F")
    >>> A = mirror_upper(gram(P[2:], out=gram(P[:2], out=A)))
    >>> bool(np.allclose(A, P.T @ P))
    True
    """
    if out is not None:
        if not (out.dtype == np.float64 and out.flags.f_contiguous
                and out.shape == (P.shape[1], P.shape[1])):
            raise ValueError("gram accumulates into a Fortran-ordered float64 (M, M) array")
        fp = _fortran(P) if P.dtype == np.float64 and P.ndim == 2 else None
        if fp is None or 0 in P.shape:
            out += P.T @ P  # float32 batches: their sums go to float64
        else:
            F, t = fp
            blas.dsyrk(1.0, F, beta=1.0, c=out, trans=1 - t, lower=0, overwrite_c=1)
        return out
    if scipy is None:
        scipy = use_scipy()
    syrk = _SYRK.get(P.dtype) if scipy and P.ndim == 2 else None
    fp = _fortran(P) if syrk is not None else None
    if fp is None or 0 in P.shape:
        return P.T @ P
    F, t = fp
    # P^T P is F^T F (t = 0) or F F^T (t = 1); syrk fills the upper triangle
    # (in Fortran order: the lower one of the C-ordered transpose read back)
    return mirror_upper(syrk(1.0, F, trans=1 - t, lower=0)).T


def mirror_upper(G):
    """Copy the upper triangle of a square Fortran-ordered ``G`` into its lower one, in place.

    By column strips: whole-matrix index arrays or ``np.triu`` would take a
    temporary of ``G``'s size (8,192 features: 512 MiB).  Returns ``G``.

    Examples
    --------
    >>> mirror_upper(np.asfortranarray([[1.0, 2.0], [0.0, 3.0]]))
    array([[1., 2.],
           [2., 3.]])
    """
    for j in range(0, G.shape[0], _STRIP):
        G[j + _STRIP:, j:j + _STRIP] = G[j:j + _STRIP, j + _STRIP:].T
        strip = G[j:j + _STRIP, j:j + _STRIP]
        strip[np.tril_indices_from(strip, -1)] = strip.T[np.tril_indices_from(strip, -1)]
    return G


def tile_products(P, C, step, weigh, V, out):
    """``V = P C`` and ``out += P^T weigh(V)``, tile of ``step`` rows by tile, in place.

    The float64 products of a Hessian (:meth:`FeatureOperator.sandwich
    <onlinekernel.solvers.features.FeatureOperator.sandwich>`): each tile
    of ``P`` is read for ``V_t = P_t C`` and again, still in cache, for
    ``P_t^T H_t``.  Both go straight to scipy's ``dgemm`` on Fortran views,
    writing into ``V`` and accumulating into ``out`` (no temporaries, no
    per-call checks): with tiles of 32 rows a product makes thousands of
    calls, and :func:`matmul`'s checks and copies weighed on each (60,000 x
    2,048 float64 rows, 10 outputs, one thread: 0.36 s a product through
    :func:`matmul`, 0.28 s here; inside fashion_mnist's Nystrom fit, with
    its weighting between the products, 0.31-0.36 s against 0.28-0.33 s).
    numpy's and scipy's ``dgemm`` take the same time on these tiles, unlike
    float32 ones (see :func:`use_scipy`).

    Parameters
    ----------
    P : ndarray of shape (n, M), float64, C-contiguous
    C : ndarray of shape (M, K), float64, C-contiguous
    step : int
        Rows per tile.
    weigh : callable
        ``weigh(r0, r1, V_t)`` returns the tile's ``H_t`` (``(r1 - r0, K)``);
        it may change ``V_t`` in place.
    V : ndarray of shape (n, K), float64, C-contiguous
        Receives ``P C`` (as ``weigh`` leaves it).
    out : ndarray of shape (M, K), float64, C-contiguous
        ``P^T H`` is added to it.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> P, C = rng.normal(size=(7, 3)), rng.normal(size=(3, 2))
    >>> V, out = np.empty((7, 2)), np.zeros((3, 2))
    >>> tile_products(P, C, 3, lambda r0, r1, Vt: 2.0 * Vt, V, out)
    >>> bool(np.allclose(V, P @ C) and np.allclose(out, P.T @ (2.0 * P @ C)))
    True
    """
    f64 = np.float64
    n, K = P.shape[0], C.shape[1]
    if not (P.dtype == C.dtype == V.dtype == out.dtype == f64 and P.flags.c_contiguous
            and C.flags.c_contiguous and V.flags.c_contiguous and out.flags.c_contiguous
            and V.shape == (n, K) and out.shape == (P.shape[1], K) and C.shape[0] == P.shape[1]):
        raise ValueError("tile_products takes C-contiguous float64 P (n, M), C (M, K), "
                         "V (n, K) and out (M, K)")
    gemm = blas.dgemm
    Ct, outT = C.T, out.T  # Fortran views: row-major products as column-major ones
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        Pt, Vt = P[r0:r1].T, V[r0:r1]
        gemm(1.0, Ct, Pt, beta=0.0, c=Vt.T, overwrite_c=1)             # V_t^T = C^T P_t^T
        H = np.ascontiguousarray(weigh(r0, r1, Vt), dtype=f64)
        gemm(1.0, H.T, Pt, beta=1.0, c=outT, trans_b=1, overwrite_c=1)  # out^T += H^T P_t
