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

Every loop exists in float64 and float32 (the fused type ``real``): inputs,
features, coefficients and the cache share the model's precision, while the
loss, the intercept, the scale and the step sizes stay in double.

``n_jobs`` threads (OpenMP) split the work so that every output is computed
by one thread in a fixed order: prediction splits the rows into fixed tiles,
a training step splits the blocks and sums their contributions in block
order.  Results are therefore the same for any number of threads.
"""
import numpy as np
cimport numpy as cnp
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint64_t
from onlinekernel.featuremaps.base cimport CyFeatureMap, RowBatch, Rows, new_batch, rows_of, \
    SMALL_DENSE, rows_bins, rows_transform
from onlinekernel.losses.base cimport CyLoss
from onlinekernel.losses.base import PyLossAdapter
from onlinekernel.core.linalg cimport real, gemm_rm, gemm_rm_f32, transpose_real
from onlinekernel.core.threads import one_blas_thread
from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, sqrt
from onlinekernel.solvers.reuse cimport Reuse, ACT_NEW, ACT_ALL, ACT_ONE, ACT_REPLACE, safe_step

cnp.import_array()

class _NoGuard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_no_guard = _NoGuard()


def _one_blas_thread(CyFeatureMap fmap=None, CyLoss loss=None):
    """The shared one-BLAS-thread context (:data:`onlinekernel.core.threads.one_blas_thread`).

    Given the loop's feature map (and loss), the guard only where Python code
    runs inside the loop (a Python map or loss, whose numpy calls may reach
    BLAS): compiled maps and losses never call BLAS (their products are
    ``src/oklinalg.h``'s), and the guard's two calls into each BLAS library
    cost more than a one-row step.
    """
    if fmap is not None and fmap.parallel_safe and (loss is None
                                                    or not isinstance(loss, PyLossAdapter)):
        return _no_guard
    return one_blas_thread

cdef extern from "src/okcore.h" nogil:
    void* ok_publish_ptr(void** slot, void* desired)
    void* ok_load_ptr(void** slot)

# Rows evaluated per tile: the tile of features (TILE x F values) stays in
# the core's cache between the projection, the nonlinearity and the product.
cdef enum:
    TILE = 128
# The stored scale is folded back into the coefficients before it underflows.
cdef double MIN_SCALE = 1e-9
# Memory for one batch's features of every block (see train_steps).
cdef Py_ssize_t KEEP_BYTES = 32 * 2 ** 20


cdef class BlockSource:
    """Parameters of the blocks of one model: cached while the budget lasts,
    regenerated from ``(seed, j)`` otherwise.

    Blocks ``j < cache_slots`` are generated on first use and kept, in the
    model's precision (``dtype``: generated in double, rounded once for a
    float32 model); later blocks are regenerated on every use.  Concurrent
    readers are safe: a block is published atomically once generated.

    For CSR rows, and for calls on fewer than ``SMALL_DENSE`` dense rows of
    a float64 model (a stream's one-row predict or step), a cached block of
    a map with stored frequencies (``frequency_rows``) also keeps them
    transposed (``transposed``), made on first such use: the sparse product
    then runs its vectorised loop on a training step's few rows without
    transposing every call.  That copy is the size of the frequencies, so
    the cache can hold up to twice ``cache_bytes``.
    """
    cdef readonly CyFeatureMap fmap
    cdef readonly uint64_t seed
    cdef readonly Py_ssize_t cache_slots
    cdef readonly Py_ssize_t param_size
    cdef readonly bint single
    cdef void** slots
    cdef void** tslots          # the cached blocks' transposed frequencies (or NULL)
    cdef Py_ssize_t t_size      # their values a block: frequency_rows x d
    # One workspace kept between calls: a one-row partial_fit or predict
    # would otherwise allocate (and page-fault) its scratch every time.
    cdef object spare

    def __cinit__(self, CyFeatureMap fmap, uint64_t seed, Py_ssize_t cache_bytes,
                  dtype=np.float64):
        if fmap.n_features_in < 1:
            raise ValueError("the feature map must be bound to an input dimension")
        dt = np.dtype(dtype)
        if dt != np.float64 and dt != np.float32:
            raise ValueError(f"dtype must be float32 or float64, got {dt}")
        self.single = dt == np.float32
        self.spare = None
        self.fmap = fmap
        self.seed = seed
        self.param_size = fmap.param_size
        bytes_per_block = max(1, self.param_size) * (4 if self.single else 8)
        self.cache_slots = min(max(0, cache_bytes) // bytes_per_block, 1 << 20)
        self.slots = NULL
        self.tslots = NULL
        self.t_size = fmap.frequency_rows * fmap.n_features_in
        if self.cache_slots:
            self.slots = <void**>calloc(self.cache_slots, sizeof(void*))
            if self.slots == NULL:
                raise MemoryError()
            if self.t_size:
                self.tslots = <void**>calloc(self.cache_slots, sizeof(void*))
                if self.tslots == NULL:
                    raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t j
        if self.slots != NULL:
            for j in range(self.cache_slots):
                free(self.slots[j])
            free(self.slots)
        if self.tslots != NULL:
            for j in range(self.cache_slots):
                free(self.tslots[j])
            free(self.tslots)

    @property
    def dtype(self):
        """Precision of the model's features and coefficients."""
        return np.dtype(np.float32 if self.single else np.float64)

    @property
    def n_cached(self):
        """Number of blocks currently held in the cache."""
        cdef Py_ssize_t j, c = 0
        for j in range(self.cache_slots):
            if self.slots[j] != NULL:
                c += 1
        return c

    cdef void _fill(self, Py_ssize_t j, void* out, double* scratch64) noexcept nogil:
        """Generate block j into out, in the model's precision."""
        cdef Py_ssize_t i
        cdef float* o
        if not self.single:
            self.fmap.generate(self.seed, j, <double*>out)
            return
        self.fmap.generate(self.seed, j, scratch64)
        o = <float*>out
        for i in range(self.param_size):
            o[i] = <float>scratch64[i]

    cdef const void* get(self, Py_ssize_t j, void* scratch, double* scratch64) noexcept nogil:
        """Block j's parameters: the cached copy, or generated into scratch.

        ``scratch`` holds param_size values of the model's precision;
        ``scratch64`` param_size doubles (used by float32 models only).
        """
        cdef void* p
        cdef void* won
        cdef size_t nbytes = max(1, self.param_size) * (4 if self.single else 8)
        if j < self.cache_slots:
            p = ok_load_ptr(&self.slots[j])
            if p != NULL:
                return p
            p = malloc(nbytes)
            if p != NULL:
                self._fill(j, p, scratch64)
                if self.fmap.failed:  # never cache a block whose generation failed
                    memcpy(scratch, p, nbytes)
                    free(p)
                    return scratch
                won = ok_publish_ptr(&self.slots[j], p)
                if won != p:
                    free(p)
                return won
        self._fill(j, scratch, scratch64)
        return scratch

    cdef const void* transposed(self, Py_ssize_t j, const void* p, const Rows* X,
                                Py_ssize_t n) noexcept nogil:
        """Block j's frequencies transposed (d x frequency_rows), for ``n`` rows of X.

        For CSR rows, and for fewer than ``SMALL_DENSE`` dense rows of a
        float64 model (a stream's one-row call: ``rows_transform`` then
        projects them by the same vectorised product as sparse rows, with
        contiguous frequencies, where the dense product reads them strided).  ``p`` is what
        :meth:`get` returned for block j.  NULL otherwise, for a map without
        stored frequencies, for a block that is not cached (``p`` is then a
        scratch copy) and when memory runs out: the product then runs
        without them (the same bits either way).
        """
        cdef void* t
        cdef void* won
        cdef Py_ssize_t F = self.fmap.frequency_rows, d = self.fmap.n_features_in
        if ((not X.sparse and (n >= SMALL_DENSE or self.single)) or self.tslots == NULL
                or j >= self.cache_slots or p != ok_load_ptr(&self.slots[j])):
            return NULL
        t = ok_load_ptr(&self.tslots[j])
        if t != NULL:
            return t
        t = malloc(self.t_size * (4 if self.single else 8))
        if t == NULL:
            return NULL
        if self.single:
            transpose_real(<const float*>p, F, d, <float*>t)
        else:
            transpose_real(<const double*>p, F, d, <double*>t)
        won = ok_publish_ptr(&self.tslots[j], t)
        if won != t:
            free(t)
        return won


cdef struct Work:
    # Scratch of one thread: a block's parameters, one tile of features and
    # the map's per-row work space, in the model's precision.
    void* params
    double* params64
    void* phi
    void* work


cdef class _Workspace:
    """One Work per thread for solver calls on one model (see _workspace)."""
    cdef Work* w
    cdef int n

    def __cinit__(self, BlockSource src, int n_threads):
        cdef CyFeatureMap fmap = src.fmap
        cdef size_t item = 4 if src.single else 8
        cdef int t
        self.n = n_threads
        self.w = <Work*>calloc(n_threads, sizeof(Work))
        if self.w == NULL:
            raise MemoryError()
        for t in range(n_threads):
            self.w[t].params = malloc(max(1, fmap.param_size) * item)
            # a float32 model generates in double before rounding (BlockSource._fill)
            if src.single:
                self.w[t].params64 = <double*>malloc(max(1, fmap.param_size) * sizeof(double))
            self.w[t].phi = malloc(max(1, TILE * fmap.n_components) * item)
            self.w[t].work = malloc(max(1, TILE * fmap.work_per_row) * item)
            if (self.w[t].params == NULL or (src.single and self.w[t].params64 == NULL)
                    or self.w[t].phi == NULL or self.w[t].work == NULL):
                raise MemoryError()

    def __dealloc__(self):
        cdef int t
        if self.w != NULL:
            for t in range(self.n):
                free(self.w[t].params)
                free(self.w[t].params64)
                free(self.w[t].phi)
                free(self.w[t].work)
            free(self.w)


cdef _Workspace _workspace(BlockSource src, int n_threads):
    """Scratch for ``n_threads`` threads of TILE rows: the model's spare one if it fits.

    Called with the GIL held, so taking and returning the spare is atomic
    with respect to other Python threads; concurrent calls on one model
    simply allocate their own.
    """
    cdef _Workspace ws = src.spare
    if ws is not None and ws.n >= n_threads:
        src.spare = None
        return ws
    return _Workspace(src, n_threads)


cdef void _give_back(BlockSource src, _Workspace ws):
    if src.spare is None or (<_Workspace>src.spare).n < ws.n:
        src.spare = ws


cdef inline void _gemm(bint ta, bint tb, int m, int n, int k, double alpha, const real* A,
                       int lda, const real* B, int ldb, double beta, real* C,
                       int ldc) noexcept nogil:
    if real is float:
        gemm_rm_f32(ta, tb, m, n, k, <float>alpha, A, lda, B, ldb, <float>beta, C, ldc)
    else:
        gemm_rm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)


cdef void _one_hot_accumulate(CyFeatureMap fmap, const real* p, const Rows* X, Py_ssize_t x0,
                              Py_ssize_t n, const real* coef_j, Py_ssize_t K, real* acc,
                              int64_t* keep) noexcept nogil:
    """``_tile_accumulate`` of a one-hot map: acc[i] += sqrt(F) coef_j[bin of row i].

    With ``keep`` (room for n bins) the rows' bins are written there, for
    the gradient that follows in the same training step (``_one_hot_scatter``).
    """
    cdef int64_t tile[TILE]
    cdef int64_t* bins
    cdef real v = <real>sqrt(<double>fmap.n_components)
    cdef Py_ssize_t r0 = 0, rows, i, c
    cdef const real* row
    while r0 < n:
        rows = min(<Py_ssize_t>TILE, n - r0)
        bins = keep + r0 if keep != NULL else tile
        rows_bins(fmap, <const void*>p, real is float, X, x0 + r0, rows, bins)
        for i in range(rows):
            row = coef_j + bins[i] * K
            for c in range(K):
                acc[(r0 + i) * K + c] += v * row[c]
        r0 += rows


cdef void _one_hot_scatter(const int64_t* bins, Py_ssize_t n, const real* G, Py_ssize_t K,
                           double c, Py_ssize_t F, real* coef_j) noexcept nogil:
    """coef_j[bins[i]] += c sqrt(F) G[i] for the n rows of known bins (a one-hot block)."""
    cdef real v = <real>(c * sqrt(<double>F))
    cdef Py_ssize_t i, k
    cdef real* row
    for i in range(n):
        row = coef_j + bins[i] * K
        for k in range(K):
            row[k] += v * G[i * K + k]


cdef void _one_hot_gradient(CyFeatureMap fmap, const real* p, const Rows* X, Py_ssize_t n,
                            const real* G, Py_ssize_t K, double c,
                            real* coef_j) noexcept nogil:
    """``_block_gradient`` of a one-hot map: coef_j[bin of row i] += c sqrt(F) G[i]."""
    cdef int64_t bins[TILE]
    cdef Py_ssize_t r0 = 0, rows
    while r0 < n:
        rows = min(<Py_ssize_t>TILE, n - r0)
        rows_bins(fmap, <const void*>p, real is float, X, r0, rows, bins)
        _one_hot_scatter(bins, rows, G + r0 * K, K, c, fmap.n_components, coef_j)
        r0 += rows


cdef void _tile_accumulate(CyFeatureMap fmap, const real* p, const real* pt, Work* w,
                           const Rows* X, Py_ssize_t x0, Py_ssize_t n, const real* coef_j,
                           Py_ssize_t K, real* acc, real* keep) noexcept nogil:
    """acc (n x K) += Phi(X) coef_j for rows x0 .. x0+n of X and one block, TILE rows at a time.

    With ``keep`` (room for n x F values) the features are written there, for
    the gradient that follows in the same training step.
    """
    cdef Py_ssize_t F = fmap.n_components
    cdef Py_ssize_t r0 = 0, rows
    cdef real* phi
    if fmap.one_hot and keep == NULL:
        _one_hot_accumulate(fmap, p, X, x0, n, coef_j, K, acc, NULL)
        return
    while r0 < n:
        rows = min(<Py_ssize_t>TILE, n - r0)
        phi = keep + r0 * F if keep != NULL else <real*>w.phi
        rows_transform(fmap, p, pt, X, x0 + r0, rows, phi, <real*>w.work)
        _gemm(False, False, <int>rows, <int>K, <int>F, 1.0, phi, <int>F, coef_j, <int>K,
              1.0, acc + r0 * K, <int>K)
        r0 += rows


cdef void _block_gradient(CyFeatureMap fmap, const real* p, const real* pt, Work* w,
                          const Rows* X,
                          Py_ssize_t n, const real* G, Py_ssize_t K,
                          double c, real* coef_j) noexcept nogil:
    """coef_j (F x K) += c * Phi(X)^T G for one block."""
    cdef Py_ssize_t F = fmap.n_components
    cdef Py_ssize_t r0 = 0, rows
    if fmap.one_hot:
        _one_hot_gradient(fmap, p, X, n, G, K, c, coef_j)
        return
    while r0 < n:
        rows = min(<Py_ssize_t>TILE, n - r0)
        rows_transform(fmap, p, pt, X, r0, rows, <real*>w.phi, <real*>w.work)
        _gemm(True, False, <int>F, <int>K, <int>rows, c, <real*>w.phi, <int>F,
              G + r0 * K, <int>K, 1.0, coef_j, <int>K)
        r0 += rows


cdef int _n_threads(BlockSource src, int n_threads, Py_ssize_t work_items):
    # A Python feature map holds the GIL in every call: one thread.
    if not src.fmap.parallel_safe:
        return 1
    return <int>max(1, min(<Py_ssize_t>n_threads, work_items))


def predict_raw(BlockSource src, X, const real[:, ::1] coef,
                Py_ssize_t n_blocks, double scale, const double[::1] intercept,
                int n_jobs=1, keep=None):
    """Raw outputs ``intercept + scale * sum_j Phi_j(X) coef_j``, float64 ``(n, K)``.

    Algorithm 2 of Dai et al.: every block is taken from the cache or
    regenerated from its key once, then evaluated on fixed tiles of rows
    (split among ``n_jobs`` threads) and accumulated; the block's features
    are never stored beyond one tile -- unless ``keep``, an array of the
    model's dtype shaped ``(n_blocks, n, F)``, is given: the features are
    then written there, as :func:`train_steps` takes them back (its
    ``features``) for a step on the same rows.  Each row is computed by one
    thread in block order, so the result does not depend on ``n_jobs``.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = coef.shape[1]
    cdef Py_ssize_t i, c, j, t, n_tiles, r0
    cdef CyFeatureMap fmap = src.fmap
    cdef size_t item = sizeof(real)
    if d != fmap.n_features_in:
        raise ValueError(f"X has {d} features, the feature map expects {fmap.n_features_in}")
    if n_blocks < 0 or n_blocks * fmap.n_components > coef.shape[0]:
        raise ValueError("coef holds fewer rows than n_blocks * n_components")
    if intercept.shape[0] != K:
        raise ValueError(f"intercept has {intercept.shape[0]} values for {K} outputs")
    if (sizeof(real) == 4) != src.single:
        raise ValueError(f"X and coef must have the model's dtype {src.dtype}")
    if n_jobs < 1:
        raise ValueError("n_jobs must be >= 1 here (resolve None/-1 with check_n_jobs)")
    cdef real* K0 = NULL
    cdef real[:, :, ::1] kv
    cdef Py_ssize_t F = fmap.n_components
    if keep is not None:
        if not (isinstance(keep, np.ndarray) and keep.dtype == src.dtype
                and keep.shape == (n_blocks, n, F)):
            raise ValueError(f"keep must be an array of dtype {src.dtype} shaped "
                             f"{(n_blocks, n, F)}")
        kv = keep
        if kv.size:
            K0 = &kv[0, 0, 0]
    cdef Rows R
    keep_alive = rows_of(X, src.dtype, &R)
    n_tiles = (n + TILE - 1) // TILE
    cdef int nt = _n_threads(src, n_jobs, n_tiles)
    acc_arr = np.zeros((n, K), dtype=src.dtype)
    cdef real[:, ::1] acc = acc_arr
    out = np.empty((n, K), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef _Workspace ws = _workspace(src, nt)
    cdef const real* p
    cdef const real* pt
    cdef real* acc0 = &acc[0, 0] if n else NULL
    cdef const real* C0 = &coef[0, 0] if coef.shape[0] else NULL
    if n and n_blocks:
        with _one_blas_thread(fmap):
            with nogil:
                for j in range(n_blocks):
                    # fetched once, shared by the threads (a regenerated block
                    # lives in thread 0's scratch for the whole block)
                    p = <const real*>src.get(j, ws.w[0].params, ws.w[0].params64)
                    pt = <const real*>src.transposed(j, p, &R, n)
                    if nt == 1:  # no parallel region: its start costs more than a row's block
                        _tile_accumulate(fmap, p, pt, &ws.w[0], &R, 0, n, C0 + j * F * K, K,
                                         acc0, K0 + j * n * F if K0 != NULL else <real*>NULL)
                        continue
                    for t in prange(n_tiles, num_threads=nt, schedule="dynamic"):
                        r0 = t * TILE
                        _tile_accumulate(fmap, p, pt, &ws.w[threadid()], &R, r0,
                                         min(<Py_ssize_t>TILE, n - r0),
                                         C0 + j * F * K, K, acc0 + r0 * K,
                                         K0 + (j * n + r0) * F if K0 != NULL else <real*>NULL)
    _give_back(src, ws)
    fmap.raise_pending()
    with nogil:
        for i in range(n):
            for c in range(K):
                o[i, c] = intercept[c] + scale * acc[i, c]
    return out


def block_features(BlockSource src, X, Py_ssize_t n_blocks, int n_jobs=1):
    """The features of the first ``n_blocks`` blocks on ``X``, shape ``(n, n_blocks * F)``.

    In the model's precision, each block taken from the cache or regenerated
    once; the values are those every training step and prediction computes
    (the same transform on the same tiles of rows).  Blocks are split among
    ``n_jobs`` threads; each value is computed by one thread, so the result
    does not depend on ``n_jobs``.  ``X`` is an array of the model's dtype
    or a CSR matrix.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
    cdef CyFeatureMap fmap = src.fmap
    cdef Py_ssize_t M = n_blocks * fmap.n_components
    if d != fmap.n_features_in:
        raise ValueError(f"X has {d} features, the feature map expects {fmap.n_features_in}")
    if n_blocks < 0:
        raise ValueError(f"n_blocks must be >= 0, got {n_blocks}")
    if n_jobs < 1:
        raise ValueError("n_jobs must be >= 1 here (resolve None/-1 with check_n_jobs)")
    cdef Rows R
    keep_alive = rows_of(X, src.dtype, &R)
    out = np.empty((n, M), dtype=src.dtype)
    if n == 0 or M == 0:
        return out
    cdef int nt = _n_threads(src, n_jobs, n_blocks)
    cdef _Workspace ws = _workspace(src, nt)
    try:
        if src.single:
            _fill_features[float](src, &R, n, n_blocks, out, ws, nt)
        else:
            _fill_features[double](src, &R, n, n_blocks, out, ws, nt)
    finally:
        _give_back(src, ws)
    fmap.raise_pending()
    return out


cdef void _fill_features(BlockSource src, const Rows* X, Py_ssize_t n, Py_ssize_t n_blocks,
                         real[:, ::1] out, _Workspace ws, int nt):
    cdef CyFeatureMap fmap = src.fmap
    cdef Py_ssize_t F = fmap.n_components, M = n_blocks * F
    cdef Py_ssize_t j, r0, rows, i
    cdef real* O0 = &out[0, 0]
    cdef const real* p
    cdef const real* pt
    cdef Work* w
    with nogil:
        for j in prange(n_blocks, num_threads=nt, schedule="dynamic"):
            w = &ws.w[threadid()]
            p = <const real*>src.get(j, w.params, w.params64)
            pt = <const real*>src.transposed(j, p, X, n)
            r0 = 0
            while r0 < n:
                rows = min(<Py_ssize_t>TILE, n - r0)
                rows_transform(fmap, p, pt, X, r0, rows, <real*>w.phi, <real*>w.work)
                for i in range(rows):
                    memcpy(O0 + (r0 + i) * M + j * F, <real*>w.phi + i * F, F * sizeof(real))
                r0 = r0 + rows


def gemm(const real[:, ::1] A, const real[:, ::1] B, bint transpose_a=False):
    """``A @ B`` (``A.T @ B`` with ``transpose_a``), each element summed in one fixed order.

    The products of the compiled loops (``src/oklinalg.h``): the same bits on
    every CPU and for any BLAS, unlike ``numpy.matmul``.

    Examples
    --------
    >>> A = np.arange(6.0).reshape(2, 3); B = np.ones((3, 2))
    >>> gemm(A, B)
    array([[ 3.,  3.],
           [12., 12.]])
    >>> gemm(A, np.ones((2, 1)), transpose_a=True).ravel()
    array([3., 5., 7.])
    """
    cdef Py_ssize_t m = A.shape[1] if transpose_a else A.shape[0]
    cdef Py_ssize_t k = A.shape[0] if transpose_a else A.shape[1]
    cdef Py_ssize_t n = B.shape[1]
    if B.shape[0] != k:
        raise ValueError(f"shapes {(A.shape[0], A.shape[1])}{'.T' if transpose_a else ''} and "
                         f"{(B.shape[0], B.shape[1])} do not multiply")
    out_arr = np.zeros((m, n), dtype=np.float32 if real is float else np.float64)
    if m == 0 or n == 0 or k == 0:
        return out_arr
    cdef real[:, ::1] C = out_arr
    with nogil:
        _gemm(transpose_a, False, <int>m, <int>n, <int>k, 1.0, &A[0, 0], <int>A.shape[1],
              &B[0, 0], <int>n, 0.0, &C[0, 0], <int>n)
    return out_arr


cdef class ModelState:
    """The learned arrays of one model, as the training steps update them.

    One object for what the steps read and write (scikit-learn's
    ``WeightVector`` carries weights, scale and average the same way): the
    coefficients ``coef`` (``M x K``, the model's dtype, with room for the
    blocks a call may add) times the global ``scale``, the intercept, the
    running averages ``coef_avg`` and ``intercept_avg``, the block source
    and the counters ``n_blocks``, ``t`` (steps taken) and ``n_averaged``.
    :func:`train_steps` updates it in place; :meth:`copy` is its snapshot.
    """
    cdef readonly BlockSource blocks
    cdef public object coef
    cdef public object intercept
    cdef public object coef_avg
    cdef public object intercept_avg
    cdef public double scale
    cdef public int64_t n_blocks
    cdef public int64_t t
    cdef public int64_t n_averaged

    def __init__(self, BlockSource blocks, coef, intercept, double scale=1.0, coef_avg=None,
                 intercept_avg=None, int64_t n_blocks=0, int64_t t=0, int64_t n_averaged=0):
        self.blocks = blocks
        self.coef, self.intercept, self.scale = coef, intercept, scale
        self.coef_avg, self.intercept_avg = coef_avg, intercept_avg
        self.n_blocks, self.t, self.n_averaged = n_blocks, t, n_averaged

    def copy(self):
        """A snapshot: copies of the arrays (the block source is shared, it is a cache)."""
        return ModelState(self.blocks, self.coef.copy(), self.intercept.copy(), self.scale,
                          None if self.coef_avg is None else self.coef_avg.copy(),
                          None if self.intercept_avg is None else self.intercept_avg.copy(),
                          self.n_blocks, self.t, self.n_averaged)


cdef class StepPlan:
    """What one run of :func:`train_steps` does, resolved before it starts.

    ``step_sizes`` (one per batch of ``batch_size`` rows), ``decay`` (the
    forgetting factor per step, or None), the penalty ``alpha``, the budget
    ``max_blocks``, ``fit_intercept``, the first averaged step ``avg_start``
    (-1: none), the average's polynomial decay ``avg_decay`` (``eta >= 0``:
    the ``n``-th averaged iterate enters with weight ``(1 + eta) / (n +
    eta)``; 0 is the plain running mean), the threads ``n_jobs`` (>= 1) and
    the ``reuse`` rules (an :class:`onlinekernel.solvers.reuse.Reuse`, or
    None for the plain budget update).  Read-only once built.
    """
    cdef readonly Py_ssize_t batch_size
    cdef readonly object step_sizes
    cdef readonly object decay
    cdef readonly double alpha
    cdef readonly Py_ssize_t max_blocks
    cdef readonly bint fit_intercept
    cdef readonly int64_t avg_start
    cdef readonly double avg_decay
    cdef readonly int n_jobs
    cdef readonly Reuse reuse

    def __init__(self, Py_ssize_t batch_size, step_sizes, double alpha, Py_ssize_t max_blocks,
                 bint fit_intercept, *, int64_t avg_start=-1, double avg_decay=0.0,
                 int n_jobs=1, Reuse reuse=None, decay=None):
        if not avg_decay >= 0.0:
            raise ValueError(f"avg_decay must be >= 0, got {avg_decay!r}")
        self.batch_size, self.alpha, self.max_blocks = batch_size, alpha, max_blocks
        self.step_sizes = np.ascontiguousarray(step_sizes, dtype=np.float64)
        self.decay = None if decay is None else np.ascontiguousarray(decay, dtype=np.float64)
        self.fit_intercept, self.avg_start, self.n_jobs = fit_intercept, avg_start, n_jobs
        self.avg_decay = avg_decay
        self.reuse = reuse


cdef class _Pass:
    """The inputs and scratch of one train_steps call, handed to its loop."""
    cdef Rows R
    cdef const double[:, ::1] Y
    cdef const double[::1] sample_weight
    cdef const int64_t[::1] order
    cdef const double[::1] step_sizes
    cdef const double[::1] decay
    cdef RowBatch batch
    cdef double[:, ::1] Yb
    cdef double[:, ::1] U
    cdef double[:, ::1] G
    cdef object Gr, parts, keep  # arrays of the model's dtype (typed in the loop)
    cdef object keep_bins        # int64: a one-hot map's bins of the batch, per block
    cdef object first_U, first_F  # the first step's outputs and features, or None
    cdef _Workspace ws
    cdef int nt


def train_steps(ModelState model, CyLoss loss, X, const double[:, ::1] Y,
                const double[::1] sample_weight, const int64_t[::1] order, StepPlan plan,
                outputs=None, features=None):
    """Run ``len(plan.step_sizes)`` doubly stochastic steps (Algorithm 1 of Dai et al.).

    Step ``s`` takes rows ``order[s*B : (s+1)*B]`` (``B = plan.batch_size``) and
      1. predicts them with all blocks: ``U``;
      2. asks the loss for ``G = dloss/draw (Y, U)``, weighted per row;
      3. shrinks all coefficients by ``(1 - step * alpha)`` through ``scale``
         (a factor <= 0, a step beyond ``1 / alpha``, sets them to zero: the
         shrink never flips their signs), and by ``decay[s]`` when given
         (forgetting: a shrink that does not follow the step size, so that
         old steps fade geometrically however small the steps are; the
         intercept is not decayed);
      4. while fewer than ``max_blocks`` blocks exist, adds block ``n_blocks``
         with ``coef = -step / (B F) * Phi^T G``; once the budget is full,
         moves every block by ``-step / (B M) * Phi^T G`` instead (a stochastic
         functional step projected on the ``M`` existing features);
      5. when fitted, lets the loss step the intercept (``intercept_step``; by
         default it is the weight of a constant feature: shrunk by the same
         factor and moved by ``-step * mean(G)``);
      6. when ``avg_start >= 0`` and the step count ``t`` exceeds it, folds the
         new iterate into the running means ``coef_avg`` and ``intercept_avg``
         (Polyak-Ruppert averaging; ``coef_avg`` holds plain coefficients),
         the ``n``-th with weight ``(1 + eta) / (n + eta)`` for
         ``eta = plan.avg_decay`` (polynomial-decay averaging: 0 is the
         plain mean).

    ``model`` (a :class:`ModelState`) is updated in place; its ``coef`` (and
    ``coef_avg``) must have room for every block the call may add.  ``X``
    (an array or a CSR matrix), ``coef`` and ``coef_avg`` have the model's
    dtype.  ``plan.n_jobs`` threads share the blocks of each step; the result
    does not depend on their number.

    With ``plan.reuse`` (an :class:`onlinekernel.solvers.reuse.Reuse`) step 4 follows
    its reuse mode and schedule, block updates may be preconditioned, and the
    step ends with its projection; ``None`` is step 4 as written above.
    Float32 models run only the preconditioned "all" rule (checked here).

    ``outputs`` and ``features`` (float64 models only) are the first step's
    half 1 already done: its rows' raw outputs ``U`` (float64, ``(nb, K)``)
    and features ``(n_blocks, nb, F)``, as :func:`predict_raw` returns and
    keeps them (``keep``) for those rows on this model as it is -- the same
    blocks, coefficients, scale and intercept.  The step then starts from
    them instead of evaluating every block again (a stream that predicts each
    row before learning it evaluates them once), with the same result.
    """
    cdef BlockSource src = model.blocks
    cdef CyFeatureMap fmap = src.fmap
    cdef Reuse reuse = plan.reuse
    dt = src.dtype
    coef, coef_avg = model.coef, model.coef_avg
    if (not isinstance(coef, np.ndarray) or coef.dtype != dt or coef.ndim != 2
            or not coef.flags.c_contiguous or not coef.flags.writeable):
        raise ValueError(f"coef must be a writeable C-contiguous 2-d array of the model's "
                         f"dtype {dt}")
    cdef double[::1] intercept = model.intercept
    cdef const double[::1] step_sizes = plan.step_sizes
    cdef const double[::1] decay = plan.decay
    cdef Py_ssize_t n_rows = order.shape[0], d = X.shape[1], m = Y.shape[1]
    cdef Py_ssize_t K = coef.shape[1], F = fmap.n_components
    cdef Py_ssize_t n_steps = step_sizes.shape[0]
    cdef Py_ssize_t B = plan.batch_size, max_blocks = plan.max_blocks
    if d != fmap.n_features_in:
        raise ValueError(f"X has {d} features, the feature map expects {fmap.n_features_in}")
    if B < 1 or n_steps * B < n_rows or (n_steps - 1) * B >= n_rows > 0:
        raise ValueError("step_sizes must hold one step per batch of order")
    if model.n_blocks < 0 or model.t < 0 or model.n_averaged < 0:
        raise ValueError("the model's counters must be >= 0")
    cdef Py_ssize_t final_blocks = min(max_blocks, model.n_blocks + n_steps)
    if final_blocks * F > coef.shape[0]:
        raise ValueError("coef has no room for the blocks these steps add")
    if intercept.shape[0] != K:
        raise ValueError(f"intercept needs {K} values")
    if Y.shape[0] != X.shape[0] or m != loss.n_targets(K):
        raise ValueError(f"Y has shape {(Y.shape[0], m)}; the loss needs {X.shape[0]} rows of "
                         f"{loss.n_targets(K)} target columns for {K} outputs")
    cdef Py_ssize_t r
    for r in range(n_rows):
        if order[r] < 0 or order[r] >= X.shape[0]:
            raise ValueError("order holds row indices outside X")
    if sample_weight.shape[0] != X.shape[0]:
        raise ValueError("sample_weight needs one weight per row of X")
    if plan.avg_start >= 0 and (
            coef_avg is None or model.intercept_avg is None
            or not isinstance(coef_avg, np.ndarray) or coef_avg.dtype != dt
            or coef_avg.shape[0] < final_blocks * F or coef_avg.shape[1] != K
            or len(model.intercept_avg) != K):
        raise ValueError("averaging needs coef_avg and intercept_avg shaped like coef and "
                         "intercept")
    if plan.n_jobs < 1:
        raise ValueError("n_jobs must be >= 1 here (resolve None/-1 with check_n_jobs)")
    if decay is not None:
        if decay.shape[0] != n_steps:
            raise ValueError("decay must hold one factor per step")
        for r in range(n_steps):
            if not 0.0 < decay[r] <= 1.0:
                raise ValueError("decay factors must be in (0, 1]")
    if reuse is not None and src.single and not reuse.float32_ready(B, F):
        raise ValueError("in float32 models only reuse='all' with preconditioning runs, on "
                         "batches no larger than a block; the other reuse rules and the "
                         "projection need a float64 model")

    cdef Py_ssize_t nb0 = min(B, n_rows)
    if (outputs is None) != (features is None):
        raise ValueError("outputs and features go together (the first step's half 1)")
    if outputs is not None:
        if src.single:
            raise ValueError("outputs and features are taken by float64 models only: a "
                             "float32 prediction sums its blocks in float, the step in double")
        if (not isinstance(outputs, np.ndarray) or outputs.dtype != np.float64
                or outputs.shape != (nb0, K) or not isinstance(features, np.ndarray)
                or features.dtype != dt or features.shape != (model.n_blocks, nb0, F)):
            raise ValueError(f"outputs must be float64 shaped {(nb0, K)} and features "
                             f"{dt} shaped {(model.n_blocks, nb0, F)}: the first step's rows "
                             f"on the model's blocks")

    cdef _Pass p = _Pass()
    p.first_U = None if outputs is None else np.ascontiguousarray(outputs)
    p.first_F = None if features is None else np.ascontiguousarray(features)
    keep_alive = rows_of(X, dt, &p.R)
    p.Y, p.sample_weight, p.order = Y, sample_weight, order
    p.step_sizes, p.decay = step_sizes, decay
    cdef Py_ssize_t nb_max = min(B, max(1, n_rows))
    # Every block a step evaluates: max_blocks, or more when the model already
    # has more blocks than its (lowered) budget.
    cdef Py_ssize_t keep_blocks = max(model.n_blocks, final_blocks)
    p.batch = new_batch(&p.R, nb_max, dt,
                        int(np.diff(X.indptr).max()) if p.R.sparse and X.shape[0] else 0)
    p.Yb = np.empty((nb_max, m), dtype=np.float64)
    p.U = np.empty((nb_max, K), dtype=np.float64)
    p.G = np.empty((nb_max, K), dtype=np.float64)
    p.Gr = np.empty((nb_max, K), dtype=dt)
    # each block's contribution to the batch's outputs, summed in block order
    p.parts = np.empty(max(1, keep_blocks * nb_max * K), dtype=dt)
    # Once the budget is full a step evaluates every block twice (predict,
    # then gradient); keeping the batch's features between the two halves
    # saves the second evaluation when they fit in KEEP_BYTES.
    p.keep = None
    # (a one-hot map keeps its rows' bins instead: one integer per row and block)
    p.keep_bins = np.empty(keep_blocks * nb_max if fmap.one_hot else 0, dtype=np.int64)
    if not fmap.one_hot and keep_blocks <= KEEP_BYTES // (dt.itemsize * nb_max * F):
        p.keep = np.empty(max(1, keep_blocks * nb_max * F), dtype=dt)
    p.nt = _n_threads(src, plan.n_jobs, keep_blocks)
    p.ws = _workspace(src, p.nt)
    if reuse is not None:
        reuse.prepare(B, F, K)
    with _one_blas_thread(fmap, loss):
        try:
            if src.single:
                _train_loop[float](model, plan, loss, p, coef)
            else:
                _train_loop[double](model, plan, loss, p, coef)
        finally:
            _give_back(src, p.ws)
            fmap.raise_pending()
    if reuse is not None:
        reuse.raise_pending()


cdef inline void _block_outputs(BlockSource src, CyFeatureMap fmap, Work* w, Py_ssize_t j,
                                const Rows* XB, Py_ssize_t nb, const real* C0, Py_ssize_t K,
                                real* P, real* kept, int64_t* kept_bins) noexcept nogil:
    """Block j's outputs on the batch's ``nb`` rows into ``P[j]`` (its features into
    ``kept[j]``, or its bins into ``kept_bins[j]``, where given): a step's prediction half."""
    cdef Py_ssize_t F = fmap.n_components
    cdef const real* p_j = <const real*>src.get(j, w.params, w.params64)
    memset(P + j * nb * K, 0, nb * K * sizeof(real))
    if kept_bins != NULL:
        _one_hot_accumulate(fmap, p_j, XB, 0, nb, C0 + j * F * K, K, P + j * nb * K,
                            kept_bins + j * nb)
    else:
        _tile_accumulate(fmap, p_j, <const real*>src.transposed(j, p_j, XB, nb), w, XB, 0, nb,
                         C0 + j * F * K, K, P + j * nb * K,
                         kept + j * nb * F if kept != NULL else <real*>NULL)


cdef _train_loop(ModelState model, StepPlan plan, CyLoss loss, _Pass p, real[:, ::1] coef):
    cdef BlockSource src = model.blocks
    cdef CyFeatureMap fmap = src.fmap
    cdef const Rows* X = &p.R
    cdef const double[:, ::1] Y = p.Y
    cdef const double[::1] sample_weight = p.sample_weight
    cdef const int64_t[::1] order = p.order
    cdef const double[::1] step_sizes = p.step_sizes
    cdef const double[::1] decay = p.decay
    cdef RowBatch batch = p.batch
    cdef double[:, ::1] Yb = p.Yb
    cdef double[:, ::1] U = p.U
    cdef double[:, ::1] G = p.G
    cdef real[:, ::1] Gr = p.Gr
    cdef real[::1] parts = p.parts
    cdef real[::1] keep_arr = p.keep
    cdef real[:, ::1] coef_avg = model.coef_avg if plan.avg_start >= 0 else None
    cdef double[::1] intercept = model.intercept
    cdef double[::1] intercept_avg = model.intercept_avg if plan.avg_start >= 0 else None
    cdef _Workspace ws = p.ws
    cdef int nt = p.nt
    cdef Reuse reuse = plan.reuse
    cdef Py_ssize_t B = plan.batch_size, max_blocks = plan.max_blocks
    cdef double alpha = plan.alpha
    cdef bint fit_intercept = plan.fit_intercept
    cdef int64_t avg_start = plan.avg_start
    cdef double avg_decay = plan.avg_decay
    cdef Py_ssize_t n_rows = order.shape[0], m = Y.shape[1]
    cdef Py_ssize_t K = coef.shape[1], F = fmap.n_components
    cdef Py_ssize_t n_steps = step_sizes.shape[0]
    cdef Py_ssize_t s, i, c, j, b0, nb, r, nblk
    cdef double gamma, factor, cst, sc, inv, acc, fc
    cdef bint decaying = decay is not None
    cdef real* keep = &keep_arr[0] if keep_arr is not None else NULL
    cdef real* kept = NULL
    cdef int64_t[::1] bins_arr = p.keep_bins
    cdef int64_t* keep_bins = &bins_arr[0] if bins_arr.shape[0] else NULL
    cdef int64_t* kept_bins = NULL
    cdef real* P = &parts[0]
    cdef real* C0 = &coef[0, 0]
    cdef const Rows* XB = &batch.rows
    cdef real* GR = &Gr[0, 0]
    cdef const real* p_j
    cdef Work* w
    cdef int act = -1  # what the step does with the blocks under `reuse` (-1: no reuse object)
    cdef const double[:, ::1] U1 = p.first_U
    cdef const real[:, :, ::1] F1 = p.first_F
    for s in range(n_steps):
        b0 = s * B
        nb = min(B, n_rows - b0)
        nblk = model.n_blocks
        sc = model.scale
        if reuse is not None:
            act = reuse.action(nblk, max_blocks, model.t)
        with nogil:
            batch.gather(X, &order[b0], nb)
            for i in range(nb):
                r = order[b0 + i]
                memcpy(&Yb[i, 0], &Y[r, 0], m * sizeof(double))
            # features are kept only when the step will need them again
            kept = keep if (nblk >= max_blocks if act < 0 else act != ACT_NEW) else NULL
            kept_bins = keep_bins if (act < 0 and nblk >= max_blocks
                                      and not (s == 0 and U1 is not None)) else NULL
            if s == 0 and U1 is not None:
                # half 1 done by the caller (train_steps' outputs and features)
                memcpy(&U[0, 0], &U1[0, 0], nb * K * sizeof(double))
                if kept != NULL and nblk:
                    memcpy(kept, &F1[0, 0, 0], nblk * nb * F * sizeof(real))
            else:
                # prediction half: block j's outputs into parts[j], in parallel (one
                # thread: no parallel region, whose start costs more than a row's block)
                if nt == 1:
                    for j in range(nblk):
                        _block_outputs(src, fmap, &ws.w[0], j, XB, nb, C0, K, P, kept,
                                       kept_bins)
                else:
                    for j in prange(nblk, num_threads=nt, schedule="static"):
                        _block_outputs(src, fmap, &ws.w[threadid()], j, XB, nb, C0, K, P,
                                       kept, kept_bins)
                for i in range(nb):
                    for c in range(K):
                        acc = 0.0
                        for j in range(nblk):
                            acc = acc + P[(j * nb + i) * K + c]
                        U[i, c] = intercept[c] + sc * acc
            loss.batch_gradient(&Yb[0, 0], m, &U[0, 0], nb, K, &G[0, 0])
            for i in range(nb):
                r = order[b0 + i]
                for c in range(K):
                    G[i, c] *= sample_weight[r]
                    Gr[i, c] = <real>G[i, c]

            gamma = step_sizes[s]
            factor = 1.0 - gamma * alpha
            # the coefficients' shrink: the penalty's, times the forgetting
            fc = factor * decay[s] if decaying else factor
            if factor <= 0.0:
                memset(C0, 0, nblk * F * K * sizeof(real))
                sc = 1.0
            else:
                sc = sc * fc
                if sc < MIN_SCALE:
                    for i in range(nblk * F):
                        for c in range(K):
                            coef[i, c] = <real>(coef[i, c] * sc)
                    sc = 1.0

            if act >= 0:  # reuse modes, preconditioning (onlinekernel.solvers.reuse)
                if real is double:
                    nblk = _reuse_step(src, &ws.w[0], reuse, act, XB, nb, &G[0, 0], K, C0,
                                       nblk, max_blocks, model.t, gamma, sc, fc, kept)
                else:  # float32 models: the preconditioned 'all' steps only (checked)
                    nblk = _precondition_step_f32(src, &ws.w[0], reuse, act, XB, nb,
                                                  &G[0, 0], K, C0, nblk, gamma, sc, kept)
            elif nblk < max_blocks:
                memset(C0 + nblk * F * K, 0, F * K * sizeof(real))
                cst = -gamma / (nb * F) / sc
                w = &ws.w[0]
                p_j = <const real*>src.get(nblk, w.params, w.params64)
                _block_gradient(fmap, p_j, <const real*>src.transposed(nblk, p_j, XB, nb), w, XB,
                                nb, GR, K, cst, C0 + nblk * F * K)
                nblk += 1
            else:
                cst = -gamma / (nb * F * nblk) / sc
                for j in prange(nblk, num_threads=nt, schedule="static"):
                    if kept_bins != NULL:
                        _one_hot_scatter(kept_bins + j * nb, nb, GR, K, cst, F, C0 + j * F * K)
                    elif kept != NULL:
                        _gemm(True, False, <int>F, <int>K, <int>nb, cst, kept + j * nb * F,
                              <int>F, GR, <int>K, 1.0, C0 + j * F * K, <int>K)
                    else:
                        w = &ws.w[threadid()]
                        p_j = <const real*>src.get(j, w.params, w.params64)
                        _block_gradient(fmap, p_j, <const real*>src.transposed(j, p_j, XB, nb), w,
                                        XB, nb, GR, K, cst, C0 + j * F * K)

            if fit_intercept:
                loss.intercept_step(&intercept[0], &G[0, 0], nb, K, gamma,
                                    factor if factor > 0.0 else 0.0)
            if act >= 0 and reuse.radius > 0.0:  # Pegasos projection (onlinekernel.solvers.reuse)
                sc = reuse.project(sc, nblk * F)
        model.t += 1
        if fmap.failed or (act >= 0 and reuse.failed):
            break  # a Python feature map (or a preconditioning solve) failed: the caller raises
        if avg_start >= 0 and model.t > avg_start:
            model.n_averaged += 1
            # eta = 0: 1 / n exactly, the plain mean's bits
            inv = (1.0 + avg_decay) / (model.n_averaged + avg_decay)
            with nogil:
                for i in range(nblk * F):
                    for c in range(K):
                        coef_avg[i, c] = <real>(coef_avg[i, c]
                                                + (sc * coef[i, c] - coef_avg[i, c]) * inv)
                for c in range(K):
                    intercept_avg[c] += (intercept[c] - intercept_avg[c]) * inv
        model.scale = sc
        model.n_blocks = nblk


# --------------------------------------------------------------------------- #
# Reuse modes, preconditioning and projection: the block update of a step
# under an onlinekernel.solvers.reuse.Reuse (see that module for the rules).
# --------------------------------------------------------------------------- #
cdef double _sqnorm(const double* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef double s = 0.0
    for i in range(n):
        s += a[i] * a[i]
    return s


cdef inline const double* _block_tile(BlockSource src, Work* w, const double* p,
                                      const double* pt, const double* kept_j, const Rows* Xb,
                                      Py_ssize_t r0, Py_ssize_t rows) noexcept nogil:
    """Rows ``r0 .. r0+rows`` of a block's features: the kept ones, or evaluated."""
    if kept_j != NULL:
        return kept_j + r0 * src.fmap.n_components
    rows_transform(src.fmap, p, pt, Xb, r0, rows, <double*>w.phi, <double*>w.work)
    return <const double*>w.phi


cdef void _move_block(BlockSource src, Work* w, Reuse ru, Py_ssize_t j, const double* kept_j,
                      const Rows* Xb, Py_ssize_t nb, const double* G,
                      Py_ssize_t K, double step, double sc, double* coef_j) noexcept nogil:
    """Block j's DSG step of size ``step``: coef_j += -step / (nb F sc) Phi_j^T G.

    Preconditioned when ``ru.ridge > 0``:
    coef_j += -step / (nb sc) (Phi_j^T Phi_j + ridge nb I)^{-1} Phi_j^T G.
    ``kept_j`` holds the block's features on the batch, or NULL.
    """
    cdef Py_ssize_t F = src.fmap.n_components
    cdef Py_ssize_t r0 = 0, rows
    cdef const double* p = NULL
    cdef const double* pt = NULL
    cdef const double* tile
    cdef double before = _sqnorm(coef_j, F * K) if ru.radius > 0.0 else 0.0
    if kept_j == NULL:
        p = <const double*>src.get(j, w.params, w.params64)
        pt = <const double*>src.transposed(j, p, Xb, nb)
    if ru.ridge <= 0.0:
        while r0 < nb:
            rows = min(<Py_ssize_t>TILE, nb - r0)
            tile = _block_tile(src, w, p, pt, kept_j, Xb, r0, rows)
            gemm_rm(True, False, <int>F, <int>K, <int>rows, -step / (nb * F) / sc, tile,
                    <int>F, G + r0 * K, <int>K, 1.0, coef_j, <int>K)
            r0 += rows
    elif nb <= F:  # the nb x nb system needs all the batch's features at once
        if kept_j == NULL:
            while r0 < nb:
                rows = min(<Py_ssize_t>TILE, nb - r0)
                rows_transform(src.fmap, p, pt, Xb, r0, rows, ru.phi + r0 * F,
                               <double*>w.work)
                r0 += rows
        ru.solve_rows(kept_j if kept_j != NULL else ru.phi, nb, F, G, K, -step / nb / sc,
                      coef_j)
    else:  # the F x F system, accumulated tile by tile
        memset(ru.gram, 0, F * F * sizeof(double))
        memset(ru.rhs, 0, K * F * sizeof(double))
        while r0 < nb:
            rows = min(<Py_ssize_t>TILE, nb - r0)
            tile = _block_tile(src, w, p, pt, kept_j, Xb, r0, rows)
            gemm_rm(True, False, <int>F, <int>F, <int>rows, 1.0, tile, <int>F, tile, <int>F,
                    1.0, ru.gram, <int>F)
            gemm_rm(True, False, <int>K, <int>F, <int>rows, 1.0, G + r0 * K, <int>K, tile,
                    <int>F, 1.0, ru.rhs, <int>F)
            r0 += rows
        ru.solve_cols(ru.gram, ru.rhs, nb, F, K, -step / nb / sc, coef_j)
    if ru.radius > 0.0:
        ru.norm2 += sc * sc * (_sqnorm(coef_j, F * K) - before)


cdef double _check_block(BlockSource src, Work* w, Reuse ru, Py_ssize_t j,
                         const double* kept_j, const Rows* Xb, Py_ssize_t nb,
                         const double* G, Py_ssize_t K, double gamma, double sc,
                         const double* coef_j) noexcept nogil:
    """CDSG's safe step of block j (eq. 9); leaves D_j = -Phi_j^T G / (nb F) in ru.direction."""
    cdef Py_ssize_t F = src.fmap.n_components
    cdef Py_ssize_t r0 = 0, rows, i, k
    cdef const double* p = NULL
    cdef const double* pt = NULL
    cdef const double* tile
    cdef double s1 = 0.0, pn, gn, dd, bd = 0.0, bb, second, var
    if kept_j == NULL:
        p = <const double*>src.get(j, w.params, w.params64)
        pt = <const double*>src.transposed(j, p, Xb, nb)
    memset(ru.direction, 0, F * K * sizeof(double))
    while r0 < nb:
        rows = min(<Py_ssize_t>TILE, nb - r0)
        tile = _block_tile(src, w, p, pt, kept_j, Xb, r0, rows)
        gemm_rm(True, False, <int>F, <int>K, <int>rows, -1.0 / (nb * F), tile, <int>F,
                G + r0 * K, <int>K, 1.0, ru.direction, <int>K)
        for i in range(rows):  # sum over rows of |d_b|^2 F^2 = |phi_b|^2 |g_b|^2
            pn = _sqnorm(tile + i * F, F)
            gn = _sqnorm(G + (r0 + i) * K, K)
            s1 += pn * gn
        r0 += rows
    dd = _sqnorm(ru.direction, F * K)
    for i in range(F * K):
        bd += coef_j[i] * ru.direction[i]
    bd *= sc
    bb = sc * sc * _sqnorm(coef_j, F * K)
    second = s1 / (<double>F * F)
    # the rows' sample variance around their mean D_j (one row: its second moment)
    var = max(0.0, (second - nb * dd) / (nb - 1)) if nb > 1 else second
    return safe_step(bb, bd, dd, var, nb, gamma)


cdef Py_ssize_t _reuse_step(BlockSource src, Work* w, Reuse ru, int act, const Rows* Xb,
                            Py_ssize_t nb, const double* G, Py_ssize_t K,
                            double* coef, Py_ssize_t nblk, Py_ssize_t max_blocks, int64_t t,
                            double gamma, double sc, double factor,
                            const double* kept) noexcept nogil:
    """Step 4 of a training step under ``ru`` (action ``act``); returns the new n_blocks.

    ``sc`` is the scale after this step's shrink by ``factor``; ``kept`` the
    batch's features of every block (or NULL).
    """
    cdef Py_ssize_t F = src.fmap.n_components, FK = F * K
    cdef Py_ssize_t j, jbest = -1, i
    cdef double eta, best = -INFINITY, before
    cdef double* tmp
    ru.norm2 = ru.norm2 * factor * factor if factor > 0.0 else 0.0  # this step's shrink
    if act == ACT_NEW or act == ACT_REPLACE:
        j = nblk if act == ACT_NEW else t % nblk
        if ru.radius > 0.0:
            ru.norm2 -= sc * sc * _sqnorm(coef + j * FK, FK)
        memset(coef + j * FK, 0, FK * sizeof(double))
        _move_block(src, w, ru, j,
                    kept + j * nb * F if (kept != NULL and act == ACT_REPLACE) else NULL,
                    Xb, nb, G, K, gamma, sc, coef + j * FK)
        return nblk + 1 if act == ACT_NEW else nblk
    if act == ACT_ONE:
        j = ru.pick(t, nblk)
        _move_block(src, w, ru, j, kept + j * nb * F if kept != NULL else NULL, Xb, nb, G,
                    K, gamma, sc, coef + j * FK)
        return nblk
    if act == ACT_ALL:
        for j in range(nblk):
            _move_block(src, w, ru, j, kept + j * nb * F if kept != NULL else NULL, Xb, nb,
                        G, K, gamma / nblk, sc, coef + j * FK)
        return nblk
    # ACT_CHECK: the block with the largest safe step, if it beats a new block
    for j in range(nblk):
        eta = _check_block(src, w, ru, j, kept + j * nb * F if kept != NULL else NULL, Xb, nb,
                           G, K, gamma, sc, coef + j * FK)
        if eta > best:
            best, jbest = eta, j
            tmp = ru.best  # keep D_j of the best block
            ru.best = ru.direction
            ru.direction = tmp
    if best < gamma and nblk < max_blocks:
        memset(coef + nblk * FK, 0, FK * sizeof(double))
        _move_block(src, w, ru, nblk, NULL, Xb, nb, G, K, gamma, sc, coef + nblk * FK)
        return nblk + 1
    if jbest >= 0 and best > 0.0:
        before = _sqnorm(coef + jbest * FK, FK) if ru.radius > 0.0 else 0.0
        for i in range(FK):
            coef[jbest * FK + i] += best / sc * ru.best[i]
        if ru.radius > 0.0:
            ru.norm2 += sc * sc * (_sqnorm(coef + jbest * FK, FK) - before)
    return nblk


cdef Py_ssize_t _precondition_step_f32(BlockSource src, Work* w, Reuse ru, int act,
                                       const Rows* Xb, Py_ssize_t nb,
                                       const double* G, Py_ssize_t K, float* coef,
                                       Py_ssize_t nblk, double gamma, double sc,
                                       const float* kept) noexcept nogil:
    """The preconditioned block updates of a float32 model (reuse 'all', nb <= F).

    The same update as ``_move_block``'s ``nb <= F`` branch: the batch's
    features are widened to double for the solve, whose result is added to
    the float coefficients.  A new block (ACT_NEW) or every block (ACT_ALL,
    each by its share of the step).
    """
    cdef Py_ssize_t F = src.fmap.n_components, FK = F * K
    cdef Py_ssize_t j, i, r0, rows, first, last
    cdef double step
    cdef const float* p
    cdef const float* pt
    cdef float* phi = <float*>w.phi
    if act == ACT_NEW:
        first, last, step = nblk, nblk + 1, gamma
    else:
        first, last, step = 0, nblk, gamma / nblk
    for j in range(first, last):
        if act == ACT_NEW:
            memset(coef + j * FK, 0, FK * sizeof(float))
        if kept != NULL and act != ACT_NEW:
            for i in range(nb * F):
                ru.phi[i] = kept[j * nb * F + i]
        else:
            p = <const float*>src.get(j, w.params, w.params64)
            pt = <const float*>src.transposed(j, p, Xb, nb)
            r0 = 0
            while r0 < nb:
                rows = min(<Py_ssize_t>TILE, nb - r0)
                rows_transform(src.fmap, p, pt, Xb, r0, rows, phi, <float*>w.work)
                for i in range(rows * F):
                    ru.phi[r0 * F + i] = phi[i]
                r0 += rows
        memset(ru.direction, 0, FK * sizeof(double))
        ru.solve_rows(ru.phi, nb, F, G, K, -step / nb / sc, ru.direction)
        for i in range(FK):
            coef[j * FK + i] = <float>(coef[j * FK + i] + ru.direction[i])
    return last if act == ACT_NEW else nblk
