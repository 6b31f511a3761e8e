# cython: language_level=3
"""The loss protocol seen by the solver (declarations)."""

from onlinekernel.core.protocol cimport CyParams

cdef class CyLoss(CyParams):
    # Per-row value and gradient; y has n_targets entries, raw has k outputs.
    cdef double row_loss(self, const double* y, const double* raw, Py_ssize_t k) noexcept nogil
    cdef void row_gradient(self, const double* y, const double* raw, Py_ssize_t k,
                           double* out) noexcept nogil
    # Batch gradient G (n x k) of Y (n x m) at U (n x k): the solver's only call.
    cdef int batch_gradient(self, const double* Y, Py_ssize_t m, const double* U,
                            Py_ssize_t n, Py_ssize_t k, double* G) except -1 nogil
    cdef int batch_loss(self, const double* Y, Py_ssize_t m, const double* U,
                        Py_ssize_t n, Py_ssize_t k, double* out) except -1 nogil
    # One step on the intercept b (k values) given the batch gradient G: the
    # intercept is the objective's unkernelised state (e.g. -rho for novelty).
    cdef void intercept_step(self, double* b, const double* G, Py_ssize_t n, Py_ssize_t k,
                             double step, double shrink) noexcept nogil


cdef class CyScalarLoss(CyLoss):
    # Elementwise losses implement these two: l(y, raw) and dl/draw.
    cdef double value(self, double y, double raw) noexcept nogil
    cdef double deriv(self, double y, double raw) noexcept nogil
    # d2l/draw2 (the Hessian's diagonal: the batch solvers' curvature);
    # by default central differences of deriv
    cdef double second(self, double y, double raw) noexcept nogil
