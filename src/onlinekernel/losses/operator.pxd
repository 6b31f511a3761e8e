# cython: language_level=3
"""The operator-objective protocol seen by the operator loops (declarations).

An operator objective has a matrix-valued coefficient ``A`` (``M x M``,
symmetric, C-contiguous) over the pairs of ``M`` random features; the loops
of :mod:`onlinekernel.losses.operator` evaluate a batch of features ``Z``
(``n x M``, row ``i`` = ``z(x_i)``, scaled so that ``z(x)^T z(x')``
estimates the kernel) and hand it to these methods.  ``work`` holds at least
``work_size(n, M)`` doubles.  A method returns 0, or -1 with a Python
exception set.
"""

from onlinekernel.core.protocol cimport CyParams

cdef class CyOperatorObjective(CyParams):
    # One stochastic gradient step of size `step` on the mean-form objective
    # with penalty `alpha`, from the n rows of Z with weights sw.
    cdef int sgd_step(self, const double* Z, const double* sw, Py_ssize_t n, Py_ssize_t M,
                      double* A, double step, double alpha, double* work) except -1 nogil
    # The exact minimiser of the sum-form objective with penalty `lam` once the
    # n rows of Z (weights sw) are added to the rows A already accounts for.
    cdef int exact_update(self, const double* Z, const double* sw, Py_ssize_t n, Py_ssize_t M,
                          double* A, double lam, double* work) except -1 nogil
    # out[i] = the objective's prediction for row i of Z.
    cdef int readout(self, const double* Z, Py_ssize_t n, Py_ssize_t M, const double* A,
                     double* out, double* work) except -1 nogil
