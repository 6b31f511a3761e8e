# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The loops of operator objectives (:mod:`onlinekernel.losses.operator`).

:func:`operator_pass` evaluates the first ``n_blocks`` blocks of random
features of a model on each mini-batch, scaled by :math:`1/\\sqrt M`, and
hands them to the objective's ``sgd_step`` or ``exact_update``;
:func:`operator_readout` evaluates its ``readout`` on new rows.  They know
only the operator-objective protocol (``losses/operator.pxd``) and the
feature-map protocol.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport sqrt
from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from onlinekernel.losses.operator cimport CyOperatorObjective
from onlinekernel.featuremaps.base cimport CyFeatureMap, RowBatch, Rows, new_batch, rows_of, \
    rows_transform
from onlinekernel.core.linalg cimport gemm_rm
from onlinekernel.core.threads import one_blas_thread

cnp.import_array()

# Rows whose features are evaluated at once (as in the solver: a tile of
# features stays in cache between the projection and the copy into Z).
cdef enum:
    TILE = 128
# Rows of a readout chunk.
cdef Py_ssize_t READ_ROWS = 256


# ---------------------------------------------------------------------- #
# features of the first n_blocks blocks
# ---------------------------------------------------------------------- #
cdef class _Features:
    """The parameters of blocks ``0 .. n_blocks-1`` and the scratch to evaluate them.

    The parameters are generated once per call (``n_blocks * param_size``
    doubles): an operator's budget is a few blocks, fixed for its life.
    """
    cdef CyFeatureMap fmap
    cdef Py_ssize_t n_blocks, F, M, d
    cdef double scale
    cdef double* params
    cdef double* phi
    cdef double* work

    def __cinit__(self, CyFeatureMap fmap, uint64_t seed, Py_ssize_t n_blocks):
        cdef Py_ssize_t j, ps
        if fmap.n_features_in < 1:
            raise ValueError("the feature map must be bound to an input dimension")
        if n_blocks < 1:
            raise ValueError(f"n_blocks must be >= 1, got {n_blocks}")
        self.fmap = fmap
        self.n_blocks = n_blocks
        self.F = fmap.n_components
        self.M = n_blocks * self.F
        self.d = fmap.n_features_in
        self.scale = 1.0 / sqrt(<double>self.M)
        ps = max(1, fmap.param_size)
        self.params = <double*>malloc(n_blocks * ps * sizeof(double))
        self.phi = <double*>malloc(TILE * self.F * sizeof(double))
        self.work = <double*>malloc(max(1, TILE * fmap.work_per_row) * sizeof(double))
        if self.params == NULL or self.phi == NULL or self.work == NULL:
            raise MemoryError()
        for j in range(n_blocks):
            fmap.generate(seed, j, self.params + j * ps)
        fmap.raise_pending()

    def __dealloc__(self):
        free(self.params)
        free(self.phi)
        free(self.work)

    cdef void fill(self, const Rows* X, Py_ssize_t x0, Py_ssize_t n, double* Z) noexcept nogil:
        """Z (n x M) = features of rows x0 .. x0+n of X, scaled by 1/sqrt(M)."""
        cdef Py_ssize_t j, r0, rows, i, k
        cdef Py_ssize_t F = self.F, M = self.M, ps = max(1, self.fmap.param_size)
        cdef double s = self.scale
        cdef double* zrow
        cdef double* prow
        for j in range(self.n_blocks):
            r0 = 0
            while r0 < n:
                rows = min(<Py_ssize_t>TILE, n - r0)
                rows_transform(self.fmap, <const double*>(self.params + j * ps),
                               <const double*>NULL, X, x0 + r0, rows, self.phi, self.work)
                for i in range(rows):
                    zrow = Z + (r0 + i) * M + j * F
                    prow = self.phi + i * F
                    for k in range(F):
                        zrow[k] = s * prow[k]
                r0 += rows


def _check_X(fmap, X):
    if X.shape[1] != fmap.n_features_in:
        raise ValueError(f"X has {X.shape[1]} features, the feature map expects "
                         f"{fmap.n_features_in}")


def operator_features(CyFeatureMap fmap, uint64_t seed, Py_ssize_t n_blocks, X):
    """The scaled features ``Z`` (``n x M``) the operator loops see for the rows of ``X``.

    ``X`` is a float64 array or CSR matrix.
    """
    _check_X(fmap, X)
    cdef Rows R
    keep_alive = rows_of(X, np.float64, &R)
    cdef _Features feats = _Features(fmap, seed, n_blocks)
    cdef Py_ssize_t n = X.shape[0]
    out = np.zeros((n, feats.M))
    cdef double[:, ::1] o = out
    if n:
        with nogil:
            feats.fill(&R, 0, n, &o[0, 0])
    fmap.raise_pending()
    return out


def operator_pass(CyFeatureMap fmap, uint64_t seed, Py_ssize_t n_blocks,
                  CyOperatorObjective objective, X,
                  const double[::1] sample_weight, const int64_t[::1] order,
                  Py_ssize_t batch_size, double[:, ::1] A, double alpha,
                  const double[::1] step_sizes=None, const double[:, ::1] Y=None,
                  double[:, ::1] ZtY=None, double[::1] Zsum=None):
    """One pass of an operator objective over the rows ``order`` of ``X``.

    The rows are taken ``batch_size`` at a time; for each batch the scaled
    features ``Z`` of blocks ``0 .. n_blocks-1`` are evaluated and

    * with ``step_sizes`` (one per batch): ``objective.sgd_step`` with that
      step and the mean-form penalty ``alpha``;
    * without: ``objective.exact_update`` with the sum-form penalty
      ``alpha`` (the exact minimiser given every row seen so far).

    With ``Y`` (``n x K``), ``ZtY`` (``M x K``) and ``Zsum`` (``M``), the
    pass also adds ``sum_i w_i z_i y_i^T`` to ``ZtY`` and ``sum_i w_i z_i``
    to ``Zsum``.  ``X`` is a float64 array or CSR matrix.
    ``A`` (and ``ZtY``, ``Zsum``) are updated in place; on an
    exception they hold the batches completed before it.
    """
    _check_X(fmap, X)
    cdef Py_ssize_t n = order.shape[0], d = X.shape[1], B = batch_size
    cdef Py_ssize_t F = fmap.n_components, M = n_blocks * F
    cdef Py_ssize_t K = 0, n_steps
    cdef bint sgd = step_sizes is not None
    if B < 1:
        raise ValueError(f"batch_size must be >= 1, got {B}")
    if A.shape[0] != M or A.shape[1] != M:
        raise ValueError(f"A must have shape {(M, M)} for {n_blocks} blocks of {F} features")
    if sample_weight.shape[0] != X.shape[0]:
        raise ValueError("sample_weight must have one entry per row of X")
    n_steps = (n + B - 1) // B  # (C division under cdivision: no -(-n // B))
    if sgd and step_sizes.shape[0] != n_steps:
        raise ValueError(f"step_sizes must hold one step per batch ({n_steps})")
    if Y is not None:
        K = Y.shape[1]
        if Y.shape[0] != X.shape[0] or ZtY is None or Zsum is None or ZtY.shape[0] != M \
                or ZtY.shape[1] != K or Zsum.shape[0] != M:
            raise ValueError("moments need Y (n x K), ZtY (M x K) and Zsum (M,)")
    if n == 0:
        return 0
    cdef _Features feats = _Features(fmap, seed, n_blocks)
    cdef Rows R
    keep_alive = rows_of(X, np.float64, &R)
    cdef RowBatch batch = new_batch(&R, B, np.float64,
                                    int(np.diff(X.indptr).max()) if R.sparse else 0)
    Z_arr = np.empty((B, M))
    sw_arr = np.empty(B)
    WY_arr = np.empty((B, max(K, 1)))
    work_arr = np.empty(max(1, objective.work_size(B, M)))
    cdef double[:, ::1] Z = Z_arr
    cdef double[::1] swb = sw_arr
    cdef double[:, ::1] WY = WY_arr
    cdef double[::1] work = work_arr
    with one_blas_thread:
        _pass_loop(feats, objective, &R, sample_weight, order, B, A, alpha, step_sizes, Y,
                   ZtY, Zsum, batch, Z, swb, WY, work)
    fmap.raise_pending()
    return n_steps


cdef _pass_loop(_Features feats, CyOperatorObjective objective, const Rows* X,
                const double[::1] sample_weight, const int64_t[::1] order, Py_ssize_t B,
                double[:, ::1] A, double alpha, const double[::1] step_sizes,
                const double[:, ::1] Y, double[:, ::1] ZtY, double[::1] Zsum,
                RowBatch batch, double[:, ::1] Z, double[::1] swb, double[:, ::1] WY,
                double[::1] work):
    cdef Py_ssize_t n = order.shape[0], M = feats.M
    cdef Py_ssize_t K = Y.shape[1] if Y is not None else 0
    cdef Py_ssize_t n_steps = (n + B - 1) // B, s, b0, nb, i, r, c
    cdef bint sgd = step_sizes is not None
    cdef int rc = 0
    for s in range(n_steps):
        b0 = s * B
        nb = min(B, n - b0)
        with nogil:
            batch.gather(X, &order[b0], nb)
            for i in range(nb):
                swb[i] = sample_weight[order[b0 + i]]
            feats.fill(&batch.rows, 0, nb, &Z[0, 0])
        if feats.fmap.failed:
            break  # a Python feature map failed: the caller raises its error
        with nogil:
            if sgd:
                rc = objective.sgd_step(&Z[0, 0], &swb[0], nb, M, &A[0, 0], step_sizes[s],
                                        alpha, &work[0])
            else:
                rc = objective.exact_update(&Z[0, 0], &swb[0], nb, M, &A[0, 0], alpha,
                                            &work[0])
            if K:
                for i in range(nb):
                    r = order[b0 + i]
                    for c in range(K):
                        WY[i, c] = swb[i] * Y[r, c]
                gemm_rm(True, False, <int>M, <int>K, <int>nb, 1.0, &Z[0, 0], <int>M,
                        &WY[0, 0], <int>K, 1.0, &ZtY[0, 0], <int>K)
                for i in range(nb):
                    for c in range(M):
                        Zsum[c] += swb[i] * Z[i, c]


def operator_readout(CyFeatureMap fmap, uint64_t seed, Py_ssize_t n_blocks,
                     CyOperatorObjective objective, X, const double[:, ::1] A):
    """The objective's readout of ``A`` on each row of ``X`` (array or CSR), shape ``(n,)``."""
    _check_X(fmap, X)
    cdef Rows R
    keep_alive = rows_of(X, np.float64, &R)
    cdef Py_ssize_t n = X.shape[0], F = fmap.n_components, M = n_blocks * F
    cdef Py_ssize_t r0, rows, C = min(READ_ROWS, max(n, 1))
    if A.shape[0] != M or A.shape[1] != M:
        raise ValueError(f"A must have shape {(M, M)} for {n_blocks} blocks of {F} features")
    out = np.zeros(n)
    if n == 0:
        return out
    cdef _Features feats = _Features(fmap, seed, n_blocks)
    Z_arr = np.empty((C, M))
    work_arr = np.empty(max(1, objective.work_size(C, M)))
    cdef double[:, ::1] Z = Z_arr
    cdef double[::1] work = work_arr
    cdef double[::1] o = out
    r0 = 0
    with one_blas_thread:
        while r0 < n:
            rows = min(C, n - r0)
            with nogil:
                feats.fill(&R, r0, rows, &Z[0, 0])
            if fmap.failed:
                break
            with nogil:
                objective.readout(&Z[0, 0], rows, M, &A[0, 0], &o[r0], &work[0])
            r0 += rows
    fmap.raise_pending()
    return out
