# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled loops: seeded prediction and doubly stochastic training steps.

The solver knows only the two protocols: a :class:`CyFeatureMap` evaluates a
block of random features on a tile of rows, a :class:`CyLoss` turns raw
predictions into gradients.  Blocks are regenerated from ``(seed, j)`` or
taken from a cache held under a byte budget.

Coefficients of ``M = n_blocks * F`` features with ``K`` outputs are stored as
``coef`` (rows ``j*F .. j*F+F-1`` belong to block ``j``) times a global
``scale``: shrinking every coefficient by ``(1 - step * alpha)`` is one
multiplication of ``scale`` (the scikit-learn WeightVector trick).
"""
import threading

import numpy as np
cimport numpy as cnp
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport uint64_t, int64_t
from onlinekernel._featuremap cimport CyFeatureMap
from onlinekernel._loss cimport CyLoss
from onlinekernel._linalg cimport gemm_rm

cnp.import_array()

class _OneBlasThread:
    """Context in which BLAS runs on the calling thread only.

    The solver calls BLAS on tiles of a few hundred rows; a multithreaded
    BLAS wakes and synchronises its pool for each tile, which measured 20x
    slower here than one thread whenever the cores are busy.  The BLAS
    thread count is process-wide, so concurrent solver calls share one
    limit: the first to enter sets it, the last to leave restores the
    user's setting (nested per-call limits would restore out of order).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._limiter = None
        self._controller = None

    def __enter__(self):
        with self._lock:
            if self._users == 0:
                if self._controller is None:
                    from threadpoolctl import ThreadpoolController
                    self._controller = ThreadpoolController()
                self._limiter = self._controller.limit(limits=1, user_api="blas")
            self._users += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._limiter.restore_original_limits()
                self._limiter = None
        return False


_one_blas_thread_guard = _OneBlasThread()


def _one_blas_thread():
    """The shared one-BLAS-thread context of the compiled loops."""
    return _one_blas_thread_guard

cdef extern from "src/okcore.h" nogil:
    void* ok_publish_ptr(void** slot, void* desired)
    void* ok_load_ptr(void** slot)

# Rows evaluated per tile: the tile of features (TILE x F doubles) stays in
# the core's L2 cache between the projection, the nonlinearity and the product.
cdef enum:
    TILE = 128
# The stored scale is folded back into the coefficients before it underflows.
cdef double MIN_SCALE = 1e-9
# Memory for one batch's features of every block (see train_steps).
cdef Py_ssize_t KEEP_BYTES = 32 * 2 ** 20


cdef class BlockSource:
    """Parameters of the blocks of one model: cached while the budget lasts,
    regenerated from ``(seed, j)`` otherwise.

    Blocks ``j < cache_slots`` are generated on first use and kept; later
    blocks are regenerated on every use.  Concurrent readers are safe: a
    block is published atomically once generated.
    """
    cdef readonly CyFeatureMap fmap
    cdef readonly uint64_t seed
    cdef readonly Py_ssize_t cache_slots
    cdef readonly Py_ssize_t param_size
    cdef void** slots

    def __cinit__(self, CyFeatureMap fmap, uint64_t seed, Py_ssize_t cache_bytes):
        if fmap.n_features_in < 1:
            raise ValueError("the feature map must be bound to an input dimension")
        self.fmap = fmap
        self.seed = seed
        self.param_size = fmap.param_size
        bytes_per_block = max(1, self.param_size) * 8
        self.cache_slots = min(max(0, cache_bytes) // bytes_per_block, 1 << 20)
        self.slots = NULL
        if self.cache_slots:
            self.slots = <void**>calloc(self.cache_slots, sizeof(void*))
            if self.slots == NULL:
                raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t j
        if self.slots != NULL:
            for j in range(self.cache_slots):
                free(self.slots[j])
            free(self.slots)

    @property
    def n_cached(self):
        """Number of blocks currently held in the cache."""
        cdef Py_ssize_t j, c = 0
        for j in range(self.cache_slots):
            if self.slots[j] != NULL:
                c += 1
        return c

    cdef const double* get(self, Py_ssize_t j, double* scratch) noexcept nogil:
        cdef void* p
        cdef void* won
        if j < self.cache_slots:
            p = ok_load_ptr(&self.slots[j])
            if p != NULL:
                return <const double*>p
            p = malloc(max(1, self.param_size) * sizeof(double))
            if p != NULL:
                self.fmap.generate(self.seed, j, <double*>p)
                if self.fmap.failed:  # never cache a block whose generation failed
                    memcpy(scratch, p, max(1, self.param_size) * sizeof(double))
                    free(p)
                    return scratch
                won = ok_publish_ptr(&self.slots[j], p)
                if won != p:
                    free(p)
                return <const double*>won
        self.fmap.generate(self.seed, j, scratch)
        return scratch


cdef class _Work:
    """Scratch buffers of one solver call (freed when the call ends)."""
    cdef double* params
    cdef double* phi
    cdef double* work

    def __cinit__(self, CyFeatureMap fmap):
        self.params = <double*>malloc(max(1, fmap.param_size) * sizeof(double))
        self.phi = <double*>malloc(TILE * fmap.n_components * sizeof(double))
        self.work = <double*>malloc(max(1, TILE * fmap.work_per_row) * sizeof(double))
        if self.params == NULL or self.phi == NULL or self.work == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.params)
        free(self.phi)
        free(self.work)


cdef void _accumulate(BlockSource src, _Work w, const double* X, Py_ssize_t n, Py_ssize_t d,
                      const double* coef, Py_ssize_t K, Py_ssize_t n_blocks,
                      double* acc, double* keep) noexcept nogil:
    """acc (n x K) += sum over blocks j of Phi_j(X) coef_j, tile by tile.

    With ``keep`` (room for n_blocks x n x F doubles) each block's features
    are written there instead of to the tile buffer, for the gradient that
    follows in the same training step.
    """
    cdef Py_ssize_t F = src.fmap.n_components
    cdef Py_ssize_t j, r0, rows
    cdef const double* p
    cdef double* phi
    for j in range(n_blocks):
        p = src.get(j, w.params)
        r0 = 0
        while r0 < n:
            rows = min(<Py_ssize_t>TILE, n - r0)
            phi = keep + (j * n + r0) * F if keep != NULL else w.phi
            src.fmap.transform(p, X + r0 * d, rows, d, phi, w.work)
            gemm_rm(False, False, <int>rows, <int>K, <int>F, 1.0, phi, <int>F,
                    coef + j * F * K, <int>K, 1.0, acc + r0 * K, <int>K)
            r0 += rows


cdef void _block_gradient(BlockSource src, _Work w, Py_ssize_t j, const double* X,
                          Py_ssize_t n, Py_ssize_t d, const double* G, Py_ssize_t K,
                          double c, double* coef_j) noexcept nogil:
    """coef_j (F x K) += c * Phi_j(X)^T G."""
    cdef Py_ssize_t F = src.fmap.n_components
    cdef Py_ssize_t r0 = 0, rows
    cdef const double* p = src.get(j, w.params)
    while r0 < n:
        rows = min(<Py_ssize_t>TILE, n - r0)
        src.fmap.transform(p, X + r0 * d, rows, d, w.phi, w.work)
        gemm_rm(True, False, <int>F, <int>K, <int>rows, c, w.phi, <int>F,
                G + r0 * K, <int>K, 1.0, coef_j, <int>K)
        r0 += rows


def predict_raw(BlockSource src, const double[:, ::1] X, const double[:, ::1] coef,
                Py_ssize_t n_blocks, double scale, const double[::1] intercept):
    """Raw outputs ``intercept + scale * sum_j Phi_j(X) coef_j``, shape ``(n, K)``.

    Algorithm 2 of Dai et al.: every block is taken from the cache or
    regenerated from its key, evaluated tile by tile and accumulated; the
    block's features are never stored beyond one tile.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = coef.shape[1]
    cdef Py_ssize_t i, c
    if d != src.fmap.n_features_in:
        raise ValueError(f"X has {d} features, the feature map expects {src.fmap.n_features_in}")
    if n_blocks < 0 or n_blocks * src.fmap.n_components > coef.shape[0]:
        raise ValueError("coef holds fewer rows than n_blocks * n_components")
    if intercept.shape[0] != K:
        raise ValueError(f"intercept has {intercept.shape[0]} values for {K} outputs")
    out = np.zeros((n, K), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef _Work w = _Work(src.fmap)
    if n and n_blocks:
        with _one_blas_thread():
            with nogil:
                _accumulate(src, w, &X[0, 0], n, d, &coef[0, 0], K, n_blocks, &o[0, 0], NULL)
    src.fmap.raise_pending()
    with nogil:
        for i in range(n):
            for c in range(K):
                o[i, c] = intercept[c] + scale * o[i, c]
    return out


def train_steps(BlockSource src, CyLoss loss, const double[:, ::1] X, const double[:, ::1] Y,
                const double[::1] sample_weight, const int64_t[::1] order,
                Py_ssize_t batch_size, const double[::1] step_sizes, double alpha,
                Py_ssize_t max_blocks, bint fit_intercept,
                double[:, ::1] coef, double[::1] intercept, double[::1] scale,
                int64_t[::1] counters, double[:, ::1] coef_avg=None,
                double[::1] intercept_avg=None, int64_t avg_start=-1):
    """Run ``len(step_sizes)`` doubly stochastic steps (Algorithm 1 of Dai et al.).

    Step ``s`` takes rows ``order[s*B : (s+1)*B]`` and
      1. predicts them with all blocks: ``U``;
      2. asks the loss for ``G = dloss/draw (Y, U)``, weighted per row;
      3. shrinks all coefficients by ``(1 - step * alpha)`` through ``scale``
         (a factor <= 0, a step beyond ``1 / alpha``, sets them to zero: the
         shrink never flips their signs);
      4. while fewer than ``max_blocks`` blocks exist, adds block ``n_blocks``
         with ``coef = -step / (B F) * Phi^T G``; once the budget is full,
         moves every block by ``-step / (B M) * Phi^T G`` instead (a stochastic
         functional step projected on the ``M`` existing features);
      5. when fitted, lets the loss step the intercept (``intercept_step``; by
         default it is the weight of a constant feature: shrunk by the same
         factor and moved by ``-step * mean(G)``);
      6. when ``avg_start >= 0`` and the step count ``t`` exceeds it, folds the
         new iterate into the running means ``coef_avg`` and ``intercept_avg``
         (Polyak-Ruppert averaging; ``coef_avg`` holds plain coefficients).

    ``coef`` (and ``coef_avg``) must have room for every block the call may
    add.  ``scale`` (1 value) and ``counters`` (``[n_blocks, t, n_averaged]``)
    are updated in place.
    """
    cdef CyFeatureMap fmap = src.fmap
    cdef Py_ssize_t n_rows = order.shape[0], d = X.shape[1], m = Y.shape[1]
    cdef Py_ssize_t K = coef.shape[1], F = fmap.n_components
    cdef Py_ssize_t n_steps = step_sizes.shape[0]
    cdef Py_ssize_t B = batch_size
    if d != fmap.n_features_in:
        raise ValueError(f"X has {d} features, the feature map expects {fmap.n_features_in}")
    if B < 1 or n_steps * B < n_rows or (n_steps - 1) * B >= n_rows > 0:
        raise ValueError("step_sizes must hold one step per batch of order")
    cdef Py_ssize_t final_blocks = min(max_blocks, counters[0] + n_steps)
    if final_blocks * F > coef.shape[0]:
        raise ValueError("coef has no room for the blocks these steps add")
    if intercept.shape[0] != K or scale.shape[0] != 1:
        raise ValueError(f"intercept needs {K} values and scale one")
    if Y.shape[0] != X.shape[0] or m != loss.n_targets(K):
        raise ValueError(f"Y has shape {(Y.shape[0], m)}; the loss needs {X.shape[0]} rows of "
                         f"{loss.n_targets(K)} target columns for {K} outputs")
    if order.shape[0] and (np.min(order) < 0 or np.max(order) >= X.shape[0]):
        raise ValueError("order holds row indices outside X")
    if sample_weight.shape[0] != X.shape[0]:
        raise ValueError("sample_weight needs one weight per row of X")
    if counters.shape[0] != 3:
        raise ValueError("counters must hold [n_blocks, t, n_averaged]")
    if avg_start >= 0 and (coef_avg is None or intercept_avg is None
                           or coef_avg.shape[0] < final_blocks * F or coef_avg.shape[1] != K
                           or intercept_avg.shape[0] != K):
        raise ValueError("averaging needs coef_avg and intercept_avg shaped like coef and "
                         "intercept")

    Xb_arr = np.empty((B, d), dtype=np.float64)
    Yb_arr = np.empty((B, m), dtype=np.float64)
    U_arr = np.empty((B, K), dtype=np.float64)
    G_arr = np.empty((B, K), dtype=np.float64)
    cdef double[:, ::1] Xb = Xb_arr
    cdef double[:, ::1] Yb = Yb_arr
    cdef double[:, ::1] U = U_arr
    cdef double[:, ::1] G = G_arr
    cdef _Work w = _Work(fmap)
    # Once the budget is full a step evaluates every block twice (predict,
    # then gradient); keeping the batch's features between the two halves
    # saves the second evaluation when they fit in KEEP_BYTES.
    # The buffer holds every block a kept step evaluates: max_blocks, or more
    # when the model already has more blocks than its (lowered) budget.
    keep_arr = None
    cdef Py_ssize_t keep_blocks = max(counters[0], final_blocks)
    if keep_blocks <= KEEP_BYTES // (8 * B * F):
        keep_arr = np.empty(max(1, keep_blocks * B * F), dtype=np.float64)
    with _one_blas_thread():
        try:
            _train_loop(src, loss, X, Y, sample_weight, order, B, step_sizes, alpha,
                        max_blocks, fit_intercept, coef, intercept, scale, counters, Xb, Yb,
                        U, G, w, coef_avg, intercept_avg, avg_start, keep_arr)
        finally:
            src.fmap.raise_pending()


cdef _train_loop(BlockSource src, CyLoss loss, const double[:, ::1] X, const double[:, ::1] Y,
                 const double[::1] sample_weight, const int64_t[::1] order, Py_ssize_t B,
                 const double[::1] step_sizes, double alpha, Py_ssize_t max_blocks,
                 bint fit_intercept, double[:, ::1] coef, double[::1] intercept,
                 double[::1] scale, int64_t[::1] counters, double[:, ::1] Xb,
                 double[:, ::1] Yb, double[:, ::1] U, double[:, ::1] G, _Work w,
                 double[:, ::1] coef_avg, double[::1] intercept_avg, int64_t avg_start,
                 double[::1] keep_arr):
    cdef Py_ssize_t n_rows = order.shape[0], d = X.shape[1], m = Y.shape[1]
    cdef Py_ssize_t K = coef.shape[1], F = src.fmap.n_components
    cdef Py_ssize_t n_steps = step_sizes.shape[0]
    cdef Py_ssize_t s, i, c, j, b0, nb, r, nblk
    cdef double gamma, factor, cst, sc, inv
    cdef double* keep = &keep_arr[0] if keep_arr is not None else NULL
    cdef double* kept = NULL
    for s in range(n_steps):
        b0 = s * B
        nb = min(B, n_rows - b0)
        nblk = counters[0]
        sc = scale[0]
        with nogil:
            for i in range(nb):
                r = order[b0 + i]
                memcpy(&Xb[i, 0], &X[r, 0], d * sizeof(double))
                memcpy(&Yb[i, 0], &Y[r, 0], m * sizeof(double))
            memset(&U[0, 0], 0, nb * K * sizeof(double))
            # features are kept only when the step will need them again
            kept = keep if nblk >= max_blocks else NULL
            if nblk:
                _accumulate(src, w, &Xb[0, 0], nb, d, &coef[0, 0], K, nblk, &U[0, 0], kept)
            for i in range(nb):
                for c in range(K):
                    U[i, c] = intercept[c] + sc * U[i, c]
            loss.batch_gradient(&Yb[0, 0], m, &U[0, 0], nb, K, &G[0, 0])
            for i in range(nb):
                r = order[b0 + i]
                for c in range(K):
                    G[i, c] *= sample_weight[r]

            gamma = step_sizes[s]
            factor = 1.0 - gamma * alpha
            if factor <= 0.0:
                memset(&coef[0, 0], 0, nblk * F * K * sizeof(double))
                sc = 1.0
            else:
                sc = sc * factor
                if sc < MIN_SCALE:
                    for i in range(nblk * F):
                        for c in range(K):
                            coef[i, c] *= sc
                    sc = 1.0

            if nblk < max_blocks:
                memset(&coef[nblk * F, 0], 0, F * K * sizeof(double))
                cst = -gamma / (nb * F) / sc
                _block_gradient(src, w, nblk, &Xb[0, 0], nb, d, &G[0, 0], K, cst,
                                &coef[nblk * F, 0])
                nblk += 1
            else:
                cst = -gamma / (nb * F * nblk) / sc
                for j in range(nblk):
                    if kept != NULL:
                        gemm_rm(True, False, <int>F, <int>K, <int>nb, cst, kept + j * nb * F,
                                <int>F, &G[0, 0], <int>K, 1.0, &coef[j * F, 0], <int>K)
                    else:
                        _block_gradient(src, w, j, &Xb[0, 0], nb, d, &G[0, 0], K, cst,
                                        &coef[j * F, 0])

            if fit_intercept:
                loss.intercept_step(&intercept[0], &G[0, 0], nb, K, gamma,
                                    factor if factor > 0.0 else 0.0)
        counters[1] += 1
        if src.fmap.failed:
            break  # a Python feature map failed: stop, the caller raises its error
        if avg_start >= 0 and counters[1] > avg_start:
            counters[2] += 1
            inv = 1.0 / counters[2]
            with nogil:
                for i in range(nblk * F):
                    for c in range(K):
                        coef_avg[i, c] += (sc * coef[i, c] - coef_avg[i, c]) * inv
                for c in range(K):
                    intercept_avg[c] += (intercept[c] - intercept_avg[c]) * inv
        scale[0] = sc
        counters[0] = nblk
