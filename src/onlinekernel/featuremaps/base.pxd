# cython: language_level=3
"""The feature-map protocol seen by the solver (declarations)."""
from libc.stdint cimport int32_t, int64_t, uint64_t
from onlinekernel.core.linalg cimport real

from onlinekernel.core.protocol cimport CyParams

cdef class CyFeatureMap(CyParams):
    cdef public Py_ssize_t n_components    # features per block (F)
    cdef public Py_ssize_t n_features_in   # input dimension (d), set by bind()
    cdef public Py_ssize_t param_size      # doubles of parameters per block
    cdef public Py_ssize_t work_per_row    # doubles of scratch per row for transform()
    # May the solver call transform from several threads at once (n_jobs)?
    # True for compiled maps (their scratch is per call); False for Python maps.
    cdef public bint parallel_safe
    # A map whose generate/transform can fail (Python maps) sets `failed`
    # and keeps the exception in `pending`; the solver then does not cache
    # the block and raises `pending` when the call returns (raise_pending).
    cdef int failed
    cdef object pending
    # Rows of a frequency matrix W (frequency_rows x d, row-major) stored as
    # the first values of each block's parameters, which transform_csr reads
    # as a sparse product X W^T; 0 when the map stores none (set by bind()).
    # A block source then keeps W^T beside a cached block for sparse input.
    cdef public Py_ssize_t frequency_rows
    # One-hot maps (random binning): in every block each row has one nonzero
    # feature, sqrt(F), at the bin bins() names.  The solver then gathers and
    # scatters coefficients by bin instead of multiplying dense tiles
    # (transform still writes the dense rows, for every other caller).
    cdef public bint one_hot
    # Write the parameters of block `block` (seeded by `seed`) into params.
    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil
    # out[i, :] = features of row i of X (n rows, leading dimension ldx); out is n x F.
    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil
    # The same in single precision, for float32 models: params are the block's
    # generated parameters rounded to float, work holds work_per_row floats a
    # row.  The base class widens to double and calls transform (correct, not
    # fast); maps with a native float path override it.
    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil
    # The same on n rows given in CSR form: indptr holds the n + 1 offsets of
    # the rows into indices and data.  The base class densifies the rows and
    # calls transform (any map works); maps whose features are a function of
    # a projection X W^T override it with a sparse product (csr_project).
    # params_t is W^T (d x frequency_rows) when the caller keeps it, else
    # NULL; the features are the same bits either way.
    cdef void transform_csr(self, const double* params, const double* params_t,
                            const int64_t* indptr, const int32_t* indices,
                            const double* data, Py_ssize_t n, double* out,
                            double* work) noexcept nogil
    cdef void transform_csr_f32(self, const float* params, const float* params_t,
                                const int64_t* indptr, const int32_t* indices,
                                const float* data, Py_ssize_t n, float* out,
                                float* work) noexcept nogil
    # One-hot maps: out[i] = the bin (0 .. F-1) of row i in the block (see one_hot).
    cdef void bins(self, const double* params, const double* X, Py_ssize_t n, Py_ssize_t ldx,
                   int64_t* out) noexcept nogil
    cdef void bins_f32(self, const float* params, const float* X, Py_ssize_t n,
                       Py_ssize_t ldx, int64_t* out) noexcept nogil
    # The exact kernel: out[j] = k(C[j], x) for the n rows of C (row-major,
    # n_features_in values each) and one row x.  Returns 0, or -1 when the map
    # has no compiled kernel (the base class): the caller then evaluates the
    # map's Python kernel(X, Y).  For models of stored points (NORMA).
    cdef int kernel_row(self, const double* C, Py_ssize_t n, const double* x,
                        double* out) noexcept nogil
    # Report an allocation failure inside a kernel (pending MemoryError, out zeroed).
    cdef void _out_of_memory(self, const char* where, Py_ssize_t size, void* out,
                             bint single) noexcept nogil



cdef class FourierFeatureMap(CyFeatureMap):
    # Random Fourier features sqrt(2) cos(X w^T + b) of a block [W (F x d) | b (F)],
    # or with pairs cos and sin of X w^T for F/2 frequencies (no phase).
    cdef readonly bint pairs
    # out[i, :m] (leading dimension ldo) = the m frequencies' projections X W^T
    # of n dense rows.  The base class multiplies by the stored W; structured
    # maps (SORF, Fastfood) compute the product from a few diagonals and fast
    # transforms instead, and keep the phases b as the block's last F values.
    cdef void project(self, const double* params, const double* X, Py_ssize_t n,
                      Py_ssize_t ldx, Py_ssize_t m, double* out, Py_ssize_t ldo,
                      double* work) noexcept nogil
    cdef void project_f32(self, const float* params, const float* X, Py_ssize_t n,
                          Py_ssize_t ldx, Py_ssize_t m, float* out, Py_ssize_t ldo,
                          float* work) noexcept nogil

# Rows of an input as the compiled loops see it: dense (row-major, d values a
# row) or CSR.  Filled from a numpy array or a scipy CSR matrix by rows_of,
# which returns the arrays that must stay alive while the struct is used.
cdef struct Rows:
    bint sparse
    Py_ssize_t d
    const void* dense        # n x d values of the model's precision (dense rows)
    const int64_t* indptr    # n + 1 offsets (CSR rows)
    const int32_t* indices
    const void* data


cdef object rows_of(object X, object dtype, Rows* out)


cdef class RowBatch:
    """A training step's rows, gathered from X in X's own form (dense rows or CSR)."""
    cdef Rows rows          # what the step's loops read
    cdef object arrays      # the buffers behind rows
    cdef char* dense
    cdef int64_t* indptr
    cdef int32_t* indices
    cdef char* data
    cdef size_t item
    cdef void gather(self, const Rows* X, const int64_t* rows, Py_ssize_t nb) noexcept nogil


cdef RowBatch new_batch(const Rows* X, Py_ssize_t nb_max, object dt, Py_ssize_t max_row_nnz)


cdef void rows_bins(CyFeatureMap fmap, const void* p, bint single, const Rows* R,
                    Py_ssize_t r0, Py_ssize_t n, int64_t* out) noexcept nogil


# Dense rows fewer than this take the CSR route of rows_transform when the
# block's transposed frequencies are at hand (a stream's one-row calls).
cdef enum:
    SMALL_DENSE = 4

# The column indices 0 .. d-1 of a dense row read as CSR (NULL when d is
# larger than the table).
cdef const int32_t* dense_columns(Py_ssize_t d) noexcept nogil


cdef inline void rows_transform(CyFeatureMap fmap, const real* p, const real* pt,
                                const Rows* R, Py_ssize_t r0, Py_ssize_t n, real* out,
                                real* work) noexcept nogil:
    """Features of rows ``r0 .. r0+n`` of ``R`` for one block (the map's transform).

    ``pt``: the block's frequencies transposed (or NULL), for CSR rows and
    for fewer than ``SMALL_DENSE`` dense float64 rows: each such row is then
    read as a CSR row with every column, whose product runs along the
    contiguous ``pt`` (vectorised) where the dense one reads the
    frequencies strided -- the same chains of fused products, so the same
    bits (``transform_csr``'s contract).
    """
    cdef int64_t ptr[2]
    cdef const int32_t* cols
    cdef Py_ssize_t i
    if real is double and not R.sparse and pt != NULL and n < SMALL_DENSE:
        cols = dense_columns(R.d)
        if cols != NULL:
            ptr[0], ptr[1] = 0, R.d
            for i in range(n):
                fmap.transform_csr(p, pt, ptr, cols, <const double*>R.dense + (r0 + i) * R.d,
                                   1, out + i * fmap.n_components, work)
            return
    if R.sparse:
        if real is float:
            fmap.transform_csr_f32(p, pt, R.indptr + r0, R.indices, <const float*>R.data, n,
                                   out, work)
        else:
            fmap.transform_csr(p, pt, R.indptr + r0, R.indices, <const double*>R.data, n,
                               out, work)
    elif real is float:
        fmap.transform_f32(p, <const float*>R.dense + r0 * R.d, n, R.d, out, work)
    else:
        fmap.transform(p, <const double*>R.dense + r0 * R.d, n, R.d, out, work)
