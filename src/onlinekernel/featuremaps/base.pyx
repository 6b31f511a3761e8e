# cython: language_level=3, boundscheck=False, wraparound=False
"""Feature-map protocol: the compiled base class of random-feature maps.

A feature map draws blocks of ``F = n_components`` random features.  The
parameters of block ``j`` are a pure function of ``(seed, j)``: the map's
``generate`` reads them from the counter-based streams of
:mod:`onlinekernel.core.streams`, so any block is regenerated alone, in any order.
``transform`` evaluates a block on a tile of rows.  The kernel is estimated
by the block average ``k(x, x') ~ (1/F) sum_k phi_k(x) phi_k(x')``.

Subclasses implement ``generate``, ``transform``, ``_sizes(d)`` (returns
``(param_size, work_per_row)``) and, where the kernel has a closed form,
``kernel(X, Y)``; parameters are validated in ``__init__``.  Maps written in
Python subclass :class:`onlinekernel.FeatureMap` instead and run through
:class:`PyFeatureMapAdapter`.
"""
import numpy as np
import scipy.sparse as sp

from onlinekernel.core.params import clone_of, params_eq, params_hash
from onlinekernel.core.protocol import as_compiled
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memcpy, memset
from onlinekernel.core.linalg cimport csr_project, gemm_rm, gemm_rm_f32, real
from onlinekernel.core.streams cimport cos_tile_real
from libc.stdlib cimport malloc, free

cnp.import_array()


cdef void _densify(const int64_t* indptr, const int32_t* indices, const real* data,
                    Py_ssize_t n, Py_ssize_t d, real* x) noexcept nogil:
    """x (n x d) = the n CSR rows (duplicate entries summed, as scipy does)."""
    cdef Py_ssize_t i, t
    memset(x, 0, n * d * sizeof(real))
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            x[i * d + indices[t]] += data[t]


cdef void _densified(CyFeatureMap fmap, const real* params, const int64_t* indptr,
                     const int32_t* indices, const real* data, Py_ssize_t n, real* out,
                     real* work) noexcept nogil:
    """The map's dense transform of the n CSR rows, densified into a scratch."""
    cdef Py_ssize_t d = fmap.n_features_in
    cdef real* x = <real*>malloc(max(1, n * d) * sizeof(real))
    if x == NULL:
        fmap._out_of_memory("transform_csr", n * fmap.n_components, <void*>out, real is float)
        return
    _densify(indptr, indices, data, n, d, x)
    if real is float:
        fmap.transform_f32(params, x, n, d, out, work)
    else:
        fmap.transform(params, x, n, d, out, work)
    free(x)


cdef void _bins_of_rows(CyFeatureMap fmap, const real* params, const real* X, Py_ssize_t n,
                        Py_ssize_t ldx, int64_t* out) noexcept nogil:
    """out[i] = the index of the largest feature of row i (a one-hot row's nonzero)."""
    cdef Py_ssize_t F = fmap.n_components, i, k, best
    cdef real* z = <real*>malloc(max(1, n * F) * sizeof(real))
    cdef real* work = <real*>malloc(max(1, n * fmap.work_per_row) * sizeof(real))
    if z == NULL or work == NULL:
        free(z)
        free(work)
        fmap._out_of_memory("bins", 0, NULL, real is float)
        memset(out, 0, n * sizeof(int64_t))
        return
    if real is float:
        fmap.transform_f32(params, X, n, ldx, z, work)
    else:
        fmap.transform(params, X, n, ldx, z, work)
    for i in range(n):
        best = 0
        for k in range(1, F):
            if z[i * F + k] > z[i * F + best]:
                best = k
        out[i] = best
    free(z)
    free(work)


cdef void rows_bins(CyFeatureMap fmap, const void* p, bint single, const Rows* R,
                    Py_ssize_t r0, Py_ssize_t n, int64_t* out) noexcept nogil:
    """The bins of rows ``r0 .. r0+n`` of ``R`` in one block of a one-hot map.

    ``p``: the block's parameters in the model's precision (``single``:
    float).  CSR rows are densified first: a cell depends on every coordinate.
    """
    cdef Py_ssize_t d = fmap.n_features_in
    cdef void* x
    if not R.sparse:
        if single:
            fmap.bins_f32(<const float*>p, <const float*>R.dense + r0 * d, n, d, out)
        else:
            fmap.bins(<const double*>p, <const double*>R.dense + r0 * d, n, d, out)
        return
    x = malloc(max(1, n * d) * (sizeof(float) if single else sizeof(double)))
    if x == NULL:
        fmap._out_of_memory("bins", 0, NULL, single)
        memset(out, 0, n * sizeof(int64_t))
        return
    if single:
        _densify(R.indptr + r0, R.indices, <const float*>R.data, n, d, <float*>x)
        fmap.bins_f32(<const float*>p, <const float*>x, n, d, out)
    else:
        _densify(R.indptr + r0, R.indices, <const double*>R.data, n, d, <double*>x)
        fmap.bins(<const double*>p, <const double*>x, n, d, out)
    free(x)


# dense_columns' table: 0 .. _DENSE_COLUMNS - 1, made once at import
cdef Py_ssize_t _DENSE_COLUMNS = 1 << 16
cdef int32_t* _columns = <int32_t*>malloc(_DENSE_COLUMNS * sizeof(int32_t))
if _columns == NULL:
    raise MemoryError()
for _i in range(_DENSE_COLUMNS):
    _columns[_i] = <int32_t>_i


cdef const int32_t* dense_columns(Py_ssize_t d) noexcept nogil:
    return _columns if d <= _DENSE_COLUMNS else NULL


cdef class CyFeatureMap(CyParams):
    """Base class of compiled random-feature maps (see the module docstring)."""
    name = None
    # Maps fitted on data (Nystrom's landmarks) set this: the estimators then
    # call fit(X, seed, n_blocks) once, at the first fit or partial_fit, and
    # model files store fitted_arrays().  Random-feature maps need no fit.
    needs_fit = False

    def __init__(self, Py_ssize_t n_components=256):
        if n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}")
        self.n_components = n_components
        self.n_features_in = 0
        self.param_size = 0
        self.work_per_row = 0
        self.frequency_rows = 0
        self.one_hot = False
        self.parallel_safe = True
        self.failed = 0
        self.pending = None

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        pass

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        pass

    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil:
        # Reference path for maps without a float kernel: widen, evaluate, narrow.
        cdef Py_ssize_t d = self.n_features_in, F = self.n_components
        cdef Py_ssize_t P = self.param_size, W = self.work_per_row
        cdef Py_ssize_t i, k
        cdef double* buf = <double*>malloc((max(1, P) + n * d + n * F + max(1, n * W))
                                           * sizeof(double))
        cdef double* p = buf
        cdef double* x = p + max(1, P)
        cdef double* o = x + n * d
        cdef double* w = o + n * F
        if buf == NULL:
            self._out_of_memory("transform_f32", n * F, <void*>out, 1)
            return
        for k in range(P):
            p[k] = params[k]
        for i in range(n):
            for k in range(d):
                x[i * d + k] = X[i * ldx + k]
        self.transform(p, x, n, d, o, w)
        for i in range(n * F):
            out[i] = <float>o[i]
        free(buf)

    cdef void transform_csr(self, const double* params, const double* params_t,
                            const int64_t* indptr, const int32_t* indices,
                            const double* data, Py_ssize_t n, double* out,
                            double* work) noexcept nogil:
        # Reference path for maps without a sparse kernel: densify the rows.
        _densified(self, params, indptr, indices, data, n, out, work)

    cdef void transform_csr_f32(self, const float* params, const float* params_t,
                                const int64_t* indptr, const int32_t* indices,
                                const float* data, Py_ssize_t n, float* out,
                                float* work) noexcept nogil:
        _densified(self, params, indptr, indices, data, n, out, work)

    cdef void bins(self, const double* params, const double* X, Py_ssize_t n, Py_ssize_t ldx,
                   int64_t* out) noexcept nogil:
        # Reference path for one-hot maps without their own: the nonzero of
        # each dense row (maps with a cheap bin rule override it).
        _bins_of_rows[double](self, params, X, n, ldx, out)

    cdef void bins_f32(self, const float* params, const float* X, Py_ssize_t n,
                       Py_ssize_t ldx, int64_t* out) noexcept nogil:
        _bins_of_rows[float](self, params, X, n, ldx, out)

    cdef int kernel_row(self, const double* C, Py_ssize_t n, const double* x,
                        double* out) noexcept nogil:
        return -1

    cdef void _out_of_memory(self, const char* where, Py_ssize_t size, void* out,
                             bint single) noexcept nogil:
        # Out of memory inside a nogil kernel: report through the pending
        # error like a failed Python map, so the solver raises it.
        cdef Py_ssize_t i
        with gil:
            if self.pending is None:
                self.pending = MemoryError(f"{where.decode()}: out of memory")
            self.failed = 1
        for i in range(size):
            if single:
                (<float*>out)[i] = 0.0
            else:
                (<double*>out)[i] = 0.0

    def _sizes(self, Py_ssize_t n_features_in):
        """Return ``(param_size, work_per_row)`` for input dimension ``d``."""
        return 0, 0

    def bind(self, Py_ssize_t n_features_in):
        """Fix the input dimension; returns self."""
        if n_features_in < 1:
            raise ValueError(f"n_features_in must be >= 1, got {n_features_in}")
        self.param_size, self.work_per_row = self._sizes(n_features_in)
        self.n_features_in = n_features_in
        self.frequency_rows = self._frequency_rows()
        return self

    def _frequency_rows(self):
        """Rows of the stored frequency matrix that ``transform_csr`` reads (0: none)."""
        return 0

    def fit(self, X, seed, n_blocks):
        """Fit the map's data-dependent state on rows ``X`` (nothing for random features).

        Maps with ``needs_fit = True`` override it: blocks ``0 .. n_blocks-1``
        are then functions of ``(X, seed)``.  Returns self.
        """
        return self

    def fitted_arrays(self):
        """The state :meth:`fit` made, as ``{name: ndarray}`` (empty: nothing fitted)."""
        return {}

    def set_fitted_arrays(self, arrays):
        """Restore what :meth:`fitted_arrays` returned (model files); returns self."""
        if arrays:
            raise ValueError(f"{type(self).__name__} is not fitted on data; it holds no "
                             f"arrays {sorted(arrays)}")
        return self

    def raise_pending(self):
        """Raise (and clear) the error a failed generate/transform left behind."""
        exc = self.pending
        self.failed = 0
        self.pending = None
        if exc is not None:
            raise exc

    def _require_bound(self):
        if self.n_features_in < 1:
            raise ValueError(f"{type(self).__name__} is not bound to an input "
                             "dimension; call bind(n_features_in) first")

    def generate_block(self, uint64_t seed, uint64_t block):
        """Parameters of block ``block`` for seed ``seed`` (flat float64 array)."""
        self._require_bound()
        out = np.empty(self.param_size, dtype=np.float64)
        cdef double[::1] o = out
        if self.param_size:
            self.generate(seed, block, &o[0])
        self.raise_pending()
        return out

    def transform_block(self, uint64_t seed, uint64_t block, X, dtype=np.float64):
        """Features of block ``block`` on the rows of ``X``, shape ``(n, F)``.

        ``X`` is a 2-d array or a scipy CSR matrix (evaluated by the map's
        ``transform_csr``).  With ``dtype=np.float32`` the block is
        evaluated by the map's float kernel (``transform_f32``) on the
        parameters rounded to float.
        """
        self._require_bound()
        dt = np.dtype(dtype)
        if dt != np.float64 and dt != np.float32:
            raise ValueError(f"dtype must be float32 or float64, got {dt}")
        if sp.issparse(X):
            X = X.tocsr()
        elif np.asarray(X).dtype != dt:
            X = np.asarray(X, dtype=dt)
        if X.ndim != 2 or X.shape[1] != self.n_features_in:
            raise ValueError(f"X must have shape (n, {self.n_features_in}), got {X.shape}")
        if sp.issparse(X) and X.dtype != dt:
            X = X.astype(dt)
        cdef Rows R
        keep = rows_of(X, dt, &R)
        params = self.generate_block(seed, block).astype(dt)
        cdef Py_ssize_t n = X.shape[0]
        out = np.zeros((n, self.n_components), dtype=dt)
        work = np.zeros(max(1, n * self.work_per_row), dtype=dt)
        if self.param_size == 0:
            params = np.zeros(1, dtype=dt)
        if n:
            if dt == np.float32:
                _block_rows[float](self, params, &R, n, out, work)
            else:
                _block_rows[double](self, params, &R, n, out, work)
        self.raise_pending()
        return out

    def get_params(self, deep=True):
        """Constructor parameters, as a dict (``deep``: for scikit-learn; no nested objects)."""
        return {"n_components": self.n_components}

    # a bound map also carries its input dimension
    def __reduce__(self):
        return (type(self), (), (self.get_params(), self.n_features_in))

    def __setstate__(self, state):
        params, d = state
        self.__init__(**params)
        if d:
            self.bind(d)

    def __eq__(self, other):
        return params_eq(self, other) and self.n_features_in == other.n_features_in

    def __hash__(self):
        return params_hash(self)


cdef class FourierFeatureMap(CyFeatureMap):
    """Base class of the random Fourier feature maps of shift-invariant kernels.

    A block holds the frequencies ``W`` (``F x d``, row-major) and the phases
    ``b`` (``F``); a feature is :math:`\sqrt2 \cos(w^\top x + b)`.  With
    ``pairs`` a block holds ``F/2`` frequencies and no phase, and the
    features are :math:`\sqrt2\cos(w^\top x)` then :math:`\sqrt2\sin(w^\top x)`.
    The transforms (dense, float32, CSR) are shared; a subclass draws the
    frequencies (``generate``: its spectral density) and states its kernel.
    """

    def __init__(self, Py_ssize_t n_components=256, bint pairs=False):
        super().__init__(n_components)
        if pairs and n_components % 2:
            raise ValueError(f"{self.name}: pairs=True needs an even n_components, got "
                             f"{n_components}")
        self.pairs = pairs

    def _sizes(self, Py_ssize_t d):
        if self.pairs:
            return (self.n_components // 2) * d, 0
        return self.n_components * d + self.n_components, 0

    cdef void project(self, const double* params, const double* X, Py_ssize_t n,
                      Py_ssize_t ldx, Py_ssize_t m, double* out, Py_ssize_t ldo,
                      double* work) noexcept nogil:
        _project(params, <const double*>NULL, m, self.n_features_in, X, ldx, NULL, NULL, n,
                 out, ldo)

    cdef void project_f32(self, const float* params, const float* X, Py_ssize_t n,
                          Py_ssize_t ldx, Py_ssize_t m, float* out, Py_ssize_t ldo,
                          float* work) noexcept nogil:
        _project(params, <const float*>NULL, m, self.n_features_in, X, ldx, NULL, NULL, n,
                 out, ldo)

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        _fourier(self, params, <const double*>NULL, X, ldx, NULL, NULL, n, out, work)

    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil:
        _fourier(self, params, <const float*>NULL, X, ldx, NULL, NULL, n, out, work)

    cdef void transform_csr(self, const double* params, const double* params_t,
                            const int64_t* indptr, const int32_t* indices,
                            const double* data, Py_ssize_t n, double* out,
                            double* work) noexcept nogil:
        if self.frequency_rows == 0:  # no stored W (a fast transform): densify
            _densified(self, params, indptr, indices, data, n, out, work)
        else:
            _fourier(self, params, params_t, data, 0, indptr, indices, n, out, work)

    cdef void transform_csr_f32(self, const float* params, const float* params_t,
                                const int64_t* indptr, const int32_t* indices,
                                const float* data, Py_ssize_t n, float* out,
                                float* work) noexcept nogil:
        if self.frequency_rows == 0:
            _densified(self, params, indptr, indices, data, n, out, work)
        else:
            _fourier(self, params, params_t, data, 0, indptr, indices, n, out, work)

    def _frequency_rows(self):
        # the stored W (F x d, or F/2 x d with pairs) that _fourier's sparse product reads
        return self.n_components // 2 if self.pairs else self.n_components


cdef inline void _project(const real* W, const real* WT, Py_ssize_t m, Py_ssize_t d,
                          const real* X, Py_ssize_t ldx, const int64_t* indptr,
                          const int32_t* indices, Py_ssize_t n, real* out,
                          Py_ssize_t ldo) noexcept nogil:
    """out (n x m, leading dimension ldo) = X W^T: dense rows, or CSR rows (indptr given;
    WT, if not NULL, is W^T)."""
    if indptr != NULL:
        csr_project(W, WT, m, d, indptr, indices, X, n, out, ldo)
    elif real is float:
        gemm_rm_f32(False, True, <int>n, <int>m, <int>d, 1.0, X, <int>ldx, W, <int>d, 0.0,
                    out, <int>ldo)
    else:
        gemm_rm(False, True, <int>n, <int>m, <int>d, 1.0, X, <int>ldx, W, <int>d, 0.0, out,
                <int>ldo)


cdef inline void _cos(real* z, Py_ssize_t n, Py_ssize_t m, Py_ssize_t ld, const real* bias,
                      int shift) noexcept nogil:
    cos_tile_real(z, n, m, ld, bias, <real>1.4142135623730951, shift)


cdef void _fourier(FourierFeatureMap fmap, const real* params, const real* params_t,
                   const real* X, Py_ssize_t ldx, const int64_t* indptr,
                   const int32_t* indices, Py_ssize_t n, real* out, real* work) noexcept nogil:
    """The features of n rows (dense, or CSR when indptr is given; X then holds the values).

    The projections come from the map's ``project`` (dense rows) or from the
    stored frequencies' sparse product (CSR rows; maps without stored
    frequencies densify instead); the phases are the block's last F values.
    """
    cdef Py_ssize_t d = fmap.n_features_in, F = fmap.n_components, h = F // 2
    cdef Py_ssize_t m = h if fmap.pairs else F
    cdef Py_ssize_t i
    if indptr != NULL:
        _project(params, params_t, m, d, X, ldx, indptr, indices, n, out, F)
    elif real is float:
        fmap.project_f32(params, X, n, ldx, m, out, F, work)
    else:
        fmap.project(params, X, n, ldx, m, out, F, work)
    if fmap.pairs:
        # out[:, h:] = out[:, :h] = X W^T, then cos on the left, sin on the right
        for i in range(n):
            memcpy(out + i * F + h, out + i * F, h * sizeof(real))
        _cos(out, n, h, F, <const real*>NULL, 0)
        _cos(out + h, n, h, F, <const real*>NULL, 3)
    else:
        # heavy-tailed frequencies give the odd huge argument; ok_cos_tile then
        # takes its exact scalar path for that tile
        _cos(out, n, F, F, params + fmap.param_size - F, 0)


cdef void _block_rows(CyFeatureMap fmap, real[::1] params, const Rows* R, Py_ssize_t n,
                      real[:, ::1] out, real[::1] work):
    with nogil:
        rows_transform(fmap, &params[0], <const real*>NULL, R, 0, n, &out[0, 0], &work[0])


cdef object rows_of(object X, object dtype, Rows* out):
    """Point ``out`` at the rows of ``X`` (a C-contiguous array of ``dtype``, or CSR).

    Returns what must stay alive while ``out`` is used.  A dense ``X`` must
    already have the model's dtype (no silent copy); a CSR matrix's values
    must too, its index arrays are converted to the loops' types and its
    entries put in canonical order (duplicates summed, as scipy reads them).
    """
    dt = np.dtype(dtype)
    if type(X) is not np.ndarray and sp.issparse(X):  # (issparse: an ABC check, 1-2 us)
        if X.format != "csr" or X.ndim != 2:
            raise ValueError(f"sparse input must be a 2-d CSR matrix, got {X.format}")
        if X.dtype != dt:
            raise ValueError(f"X has dtype {X.dtype}; the model's dtype is {dt}")
        if not X.has_canonical_format:
            # sorted, distinct column indices: the sparse products are then
            # the dense ones bit for bit (see csr_project)
            X = X.copy()
            X.sum_duplicates()
        data = np.ascontiguousarray(X.data)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        if X.indices.size and (X.indices.min() < 0 or X.indices.max() >= X.shape[1]):
            raise ValueError(f"CSR column indices must lie in [0, {X.shape[1]})")
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        if indptr.shape[0] != X.shape[0] + 1 or (X.shape[0] and indptr[X.shape[0]] > data.shape[0]):
            raise ValueError("CSR matrix with an inconsistent indptr")
        out.sparse = True
        out.d = X.shape[1]
        out.dense = NULL
        out.indptr = <const int64_t*>cnp.PyArray_DATA(indptr)
        out.indices = <const int32_t*>cnp.PyArray_DATA(indices)
        out.data = <const void*>cnp.PyArray_DATA(data)
        return data, indptr, indices
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype != dt \
            or not X.flags.c_contiguous:
        raise ValueError(f"X must be a C-contiguous 2-d array of the model's dtype {dt}")
    out.sparse = False
    out.d = X.shape[1]
    out.dense = <const void*>cnp.PyArray_DATA(X)
    out.indptr = NULL
    out.indices = NULL
    out.data = NULL
    return X


cdef class RowBatch:
    """A training step's rows, gathered from X in X's own form (dense rows or CSR)."""

    def __cinit__(self):
        self.arrays = None

    def __init__(self, *args):
        raise TypeError("RowBatch is built by the solver")

    cdef void gather(self, const Rows* X, const int64_t* rows, Py_ssize_t nb) noexcept nogil:
        """Copy rows ``rows[0 .. nb-1]`` of X into the batch (its first nb rows)."""
        cdef Py_ssize_t i, t = 0, t0, c, d = X.d
        cdef size_t item = self.item
        for i in range(nb):
            if X.sparse:
                t0 = X.indptr[rows[i]]
                c = X.indptr[rows[i] + 1] - t0
                memcpy(self.indices + t, X.indices + t0, c * sizeof(int32_t))
                memcpy(self.data + t * item, <const char*>X.data + t0 * item, c * item)
                t += c
                self.indptr[i + 1] = t
            else:
                memcpy(self.dense + i * d * item, <const char*>X.dense + rows[i] * d * item,
                       d * item)


cdef RowBatch new_batch(const Rows* X, Py_ssize_t nb_max, object dt, Py_ssize_t max_row_nnz):
    """Room for nb_max rows of X (CSR rows of at most max_row_nnz entries each)."""
    cdef RowBatch b = RowBatch.__new__(RowBatch)
    cdef Py_ssize_t nnz = max(1, nb_max * max_row_nnz)
    b.item = np.dtype(dt).itemsize
    b.rows = X[0]
    if X.sparse:
        indptr = np.zeros(nb_max + 1, dtype=np.int64)
        indices = np.empty(nnz, dtype=np.int32)
        data = np.empty(nnz, dtype=dt)
        b.arrays = (indptr, indices, data)
        b.indptr = <int64_t*>cnp.PyArray_DATA(indptr)
        b.indices = <int32_t*>cnp.PyArray_DATA(indices)
        b.data = <char*>cnp.PyArray_DATA(data)
        b.rows.indptr = b.indptr
        b.rows.indices = b.indices
        b.rows.data = b.data
    else:
        dense = np.empty((nb_max, X.d), dtype=dt)
        b.arrays = dense
        b.dense = <char*>cnp.PyArray_DATA(dense)
        b.rows.dense = b.dense
    return b


cdef class PyFeatureMapAdapter(CyFeatureMap):
    """Runs a pure-Python :class:`onlinekernel.FeatureMap` through the solver.

    ``generate`` and ``transform`` take the GIL and call the Python map's
    ``generate_params(seed, block)`` and ``features(params, X)``; their
    results are checked (shape, finiteness).  An exception is kept and
    raised when the solver call returns, and a block whose generation failed
    is never cached.  One Python call per block and tile: slower than a
    compiled map, the same algorithm.
    """
    cdef public object map_obj

    def __init__(self, map_obj):
        super().__init__(map_obj.n_components)
        self.parallel_safe = False  # every call takes the GIL
        self.map_obj = map_obj
        if map_obj.n_features_in:
            self.bind(map_obj.n_features_in)

    @property
    def name(self):
        return getattr(self.map_obj, "name", None)

    def _sizes(self, Py_ssize_t d):
        self.map_obj.bind(d)
        return int(self.map_obj.param_size()), 0

    def __getattr__(self, attr):
        # kernel parameters (gamma, ...) and kernel() of the wrapped map
        return getattr(self.map_obj, attr)

    cdef void _fail(self, exc) noexcept:
        if self.pending is None:
            self.pending = exc
        self.failed = 1

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t size = self.param_size
        with gil:
            try:
                p = np.asarray(self.map_obj.generate_params(int(seed), int(block)),
                               dtype=np.float64).reshape(-1)
                if p.shape[0] != size:
                    raise ValueError(f"{type(self.map_obj).__name__}.generate_params returned "
                                     f"{p.shape[0]} values, expected param_size() = {size}")
                if size:
                    (<double[:size]> params)[:] = p
            except BaseException as exc:
                self._fail(exc)
                if size:
                    (<double[:size]> params)[:] = np.nan

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        cdef Py_ssize_t F = self.n_components, d = self.n_features_in
        cdef Py_ssize_t size = self.param_size
        with gil:
            try:
                p = np.asarray(<const double[:max(size, 1)]> params)[:size].copy()
                x = np.asarray(<const double[:n, :ldx]> X)[:, :d].copy()
                z = np.asarray(self.map_obj.features(p, x), dtype=np.float64)
                if z.shape != (n, F):
                    raise ValueError(f"{type(self.map_obj).__name__}.features returned shape "
                                     f"{z.shape}, expected {(n, F)}")
                if not np.isfinite(z).all():
                    raise FloatingPointError(
                        f"{type(self.map_obj).__name__}.features returned non-finite values")
                (<double[:n, :F]> out)[:, :] = z
            except BaseException as exc:
                self._fail(exc)
                (<double[:n, :F]> out)[:, :] = np.nan

    def get_params(self, deep=True):
        return self.map_obj.get_params()

    def set_params(self, **params):
        self.map_obj.set_params(**params)
        self.n_components = self.map_obj.n_components
        if self.n_features_in:
            self.bind(self.n_features_in)  # the map's sizes may have changed
        return self

    def __sklearn_clone__(self):
        return PyFeatureMapAdapter(clone_of(self.map_obj))

    def __reduce__(self):
        return (_rebuild_adapter, (self.map_obj, self.n_features_in))

    def __eq__(self, other):
        return (isinstance(other, PyFeatureMapAdapter) and self.map_obj == other.map_obj
                and self.n_features_in == other.n_features_in)

    def __hash__(self):
        return hash((PyFeatureMapAdapter, self.map_obj))

    def __repr__(self):
        return f"PyFeatureMapAdapter({self.map_obj!r})"


def _rebuild_adapter(map_obj, n_features_in):
    adapter = PyFeatureMapAdapter(map_obj)
    if n_features_in:
        adapter.bind(n_features_in)
    return adapter


def as_cy_feature_map(obj):
    """Return the object the solver runs for feature map ``obj`` (compiled or Python)."""
    from onlinekernel.featuremaps import FeatureMap
    return as_compiled(obj, CyFeatureMap, FeatureMap, PyFeatureMapAdapter, "feature map")
