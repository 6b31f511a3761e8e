# cython: language_level=3
"""Budgeted DSG: which block a step updates, and how (declarations).

See ``_reuse.pyx`` for the rules; the solver cimports these.
"""
from libc.stdint cimport int64_t, uint64_t

# reuse modes
cdef enum:
    REUSE_ALL = 0
    REUSE_NONE = 1
    REUSE_UNIFORM = 2
    REUSE_CHECK = 3

# what one training step does with the blocks
cdef enum:
    ACT_NEW = 0       # add block n_blocks with the DSG step
    ACT_ALL = 1       # move every block by 1/n_blocks of the DSG step
    ACT_ONE = 2       # move one block, picked uniformly, by the DSG step (UDSG)
    ACT_REPLACE = 3   # overwrite the oldest block with the DSG step on its features
    ACT_CHECK = 4     # CDSG: the safe steps of the blocks decide


cdef double safe_step(double bb, double bd, double dd, double var, Py_ssize_t n,
                      double gamma) noexcept nogil


cdef class Reuse:
    cdef readonly int mode
    cdef readonly int64_t new_steps, reuse_steps
    cdef readonly double ridge
    cdef readonly double radius
    cdef readonly uint64_t seed
    # sc^2 ||coef||^2 of the model (tracked only when radius > 0)
    cdef public double norm2
    cdef public int failed
    # scratch, sized by prepare(batch_size, F, K)
    cdef Py_ssize_t cap_rows, cap_F, cap_K
    cdef double* gram
    cdef double* rhs
    cdef double* phi
    cdef double* direction
    cdef double* best

    cdef int action(self, Py_ssize_t n_blocks, Py_ssize_t max_blocks, int64_t t) noexcept nogil
    cdef Py_ssize_t pick(self, int64_t t, Py_ssize_t n_blocks) noexcept nogil
    cdef void solve_rows(self, const double* phi, Py_ssize_t n, Py_ssize_t F, const double* G,
                         Py_ssize_t K, double c, double* out) noexcept nogil
    cdef void solve_cols(self, double* A, double* RT, Py_ssize_t n, Py_ssize_t F,
                         Py_ssize_t K, double c, double* out) noexcept nogil
    cdef double project(self, double sc, Py_ssize_t n_features) noexcept nogil
