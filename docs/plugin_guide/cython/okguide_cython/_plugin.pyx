# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The pseudo-Huber loss and exponential-kernel features, compiled.

Ports of the pure-Python prototypes of ``okguide_python``: the same
parameters, the same random streams, so the same block parameters bit for
bit; the solver calls the ``nogil`` methods directly.
"""
from libc.math cimport fabs, sqrt
from libc.stdint cimport uint64_t

import numpy as np

from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.losses.base cimport CyScalarLoss
from onlinekernel.core.streams cimport ok_cos_tile, ok_fill_normal, ok_fill_uniform

cdef double TWO_PI = 6.283185307179586
cdef double SQRT2 = 1.4142135623730951


cdef class PseudoHuber(CyScalarLoss):
    r"""Pseudo-Huber loss :math:`\delta^2 (\sqrt{1 + (r/\delta)^2} - 1)`, :math:`r = u - y`."""
    name = "pseudo_huber"
    target_encoding = "real"
    cdef readonly double delta

    def __init__(self, double delta=1.0):
        # parameters are checked in Python; the nogil methods read C fields
        if not delta > 0.0 or delta == float("inf"):
            raise ValueError(f"pseudo_huber: delta must be a finite number > 0, got {delta}")
        self.delta = delta

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double r = (raw - y) / self.delta
        return self.delta * self.delta * (sqrt(1.0 + r * r) - 1.0)

    cdef double deriv(self, double y, double raw) noexcept nogil:
        cdef double r = raw - y
        cdef double q = r / self.delta
        return r / sqrt(1.0 + q * q)

    def get_params(self, deep=True):
        # what pickling, model files and listings record
        return {"delta": self.delta}


cdef class ExponentialFeatures(CyFeatureMap):
    r"""Random Fourier features of :math:`k(x, x') = \exp(-\gamma \|x - x'\|_2)`."""
    name = "exponential"
    cdef readonly double gamma

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0):
        super().__init__(n_components)
        if not gamma > 0.0 or gamma == float("inf"):
            raise ValueError(f"exponential: gamma must be a finite number > 0, got {gamma}")
        self.gamma = gamma

    def _sizes(self, Py_ssize_t d):
        # (doubles of parameters per block, doubles of scratch per row)
        return self.n_components * (d + 1), 0

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t F = self.n_components, d = self.n_features_in, k, l
        cdef double* w = params
        cdef double* b = params + F * d
        cdef double s
        # The phase slots hold the per-feature normals n until the end: the
        # parameter buffer doubles as scratch, so nothing is allocated here.
        ok_fill_normal(seed, block, 1, F, b)
        ok_fill_normal(seed, block, 0, F * d, w)
        for k in range(F):
            s = self.gamma / fabs(b[k])
            for l in range(d):
                w[k * d + l] = w[k * d + l] * s
        ok_fill_uniform(seed, block, 2, F, 0.0, TWO_PI, b)

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        cdef Py_ssize_t F = self.n_components, d = self.n_features_in, i, k, l
        cdef const double* w
        cdef double z
        for i in range(n):
            for k in range(F):
                w = params + k * d
                z = 0.0
                for l in range(d):
                    z += X[i * ldx + l] * w[l]
                out[i * F + k] = z
        # out = sqrt(2) cos(out + b), row by row, with onlinekernel's
        # vectorised cosine
        ok_cos_tile(out, n, F, F, params + F * d, SQRT2, 0)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        d2 = (X ** 2).sum(1)[:, None] + (Y ** 2).sum(1)[None, :] - 2.0 * X.dot(Y.T)
        return np.exp(-self.gamma * np.sqrt(np.maximum(d2, 0.0)))

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma}
