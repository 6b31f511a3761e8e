# cython: language_level=3
"""Distances from one row to stored rows, for the compiled ``kernel_row`` of the maps.

Four stored rows at a time, each its own sum over the features in order:
the same bits as one row at a time, but four independent chains of
additions in flight instead of one (a sum of ``d`` terms is otherwise
bound by the latency of its additions; at ``d = 10`` that is most of a
NORMA step).
"""
from libc.math cimport fabs


cdef inline void squared_distances(const double* C, Py_ssize_t n, Py_ssize_t d,
                                   const double* x, double* out) noexcept nogil:
    """``out[i] = sum_j (C[i, j] - x[j])^2`` for the ``n`` rows of ``C`` (C order)."""
    cdef Py_ssize_t i = 0, j
    cdef double r0, r1, r2, r3, t0, t1, t2, t3
    while i + 4 <= n:
        r0 = r1 = r2 = r3 = 0.0
        for j in range(d):
            t0 = C[i * d + j] - x[j]
            t1 = C[(i + 1) * d + j] - x[j]
            t2 = C[(i + 2) * d + j] - x[j]
            t3 = C[(i + 3) * d + j] - x[j]
            r0 += t0 * t0
            r1 += t1 * t1
            r2 += t2 * t2
            r3 += t3 * t3
        out[i], out[i + 1], out[i + 2], out[i + 3] = r0, r1, r2, r3
        i += 4
    while i < n:
        r0 = 0.0
        for j in range(d):
            t0 = C[i * d + j] - x[j]
            r0 += t0 * t0
        out[i] = r0
        i += 1


cdef inline void l1_distances(const double* C, Py_ssize_t n, Py_ssize_t d,
                              const double* x, double* out) noexcept nogil:
    """``out[i] = sum_j |C[i, j] - x[j]|`` for the ``n`` rows of ``C`` (C order)."""
    cdef Py_ssize_t i = 0, j
    cdef double r0, r1, r2, r3
    while i + 4 <= n:
        r0 = r1 = r2 = r3 = 0.0
        for j in range(d):
            r0 += fabs(C[i * d + j] - x[j])
            r1 += fabs(C[(i + 1) * d + j] - x[j])
            r2 += fabs(C[(i + 2) * d + j] - x[j])
            r3 += fabs(C[(i + 3) * d + j] - x[j])
        out[i], out[i + 1], out[i + 2], out[i + 3] = r0, r1, r2, r3
        i += 4
    while i < n:
        r0 = 0.0
        for j in range(d):
            r0 += fabs(C[i * d + j] - x[j])
        out[i] = r0
        i += 1
