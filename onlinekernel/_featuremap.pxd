# cython: language_level=3
"""The feature-map protocol seen by the solver (declarations)."""
from libc.stdint cimport uint64_t

cdef class CyFeatureMap:
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
