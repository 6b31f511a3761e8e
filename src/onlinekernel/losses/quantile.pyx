# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Several quantiles in one model: a pinball loss per output."""
import numbers

import numpy as np

from onlinekernel.losses.base cimport CyLoss
from onlinekernel.losses.base import _as_2d


cdef class MultiQuantile(CyLoss):
    r"""Pinball losses at several levels, one per output.

    Output :math:`c` of a row is fitted at level :math:`\tau_c` (``quantiles[c]``):

    .. math::

        \ell(u, y) = \sum_c \max\big(\tau_c (y_c - u_c), (\tau_c - 1)(y_c - u_c)\big),
        \qquad
        \frac{\partial \ell}{\partial u_c} = \mathbb 1[y_c < u_c] - \tau_c .

    Targets are real, one column per output (``m == k``): for conditional
    quantiles of one target :math:`y`, every column holds :math:`y`.  The
    outputs share the random features and differ in their coefficients and
    intercepts, so the sum is minimised by the separate conditional
    :math:`\tau_c`-quantiles.  :class:`onlinekernel.DSGQuantileRegressor`
    builds such a model with one output per quantile and enforces
    non-crossing at prediction.

    A model may have fewer outputs than levels: its outputs are fitted at the
    leading levels (``DSGRegressor``, with one output, fits
    ``quantiles[0]``); more outputs than levels is an error.

    Parameters
    ----------
    quantiles : sequence of float, default=(0.1, 0.5, 0.9)
        Distinct levels strictly between 0 and 1, in any order.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> loss = get_loss("multi_quantile", quantiles=(0.1, 0.9))
    >>> loss.gradient([[1.0, 1.0]], [[0.0, 2.0]])
    array([[-0.1,  0.1]])
    >>> loss.loss([[1.0, 1.0]], [[0.0, 2.0]])
    array([0.2])
    """
    name = "multi_quantile"
    target_encoding = "real"
    curvature = "piecewise_linear"
    cdef readonly tuple quantiles
    cdef double[::1] taus
    cdef Py_ssize_t n_levels

    def __init__(self, quantiles=(0.1, 0.5, 0.9)):
        if isinstance(quantiles, (str, bytes)) or not hasattr(quantiles, "__len__"):
            raise ValueError(f"multi_quantile: quantiles must be a sequence of levels in "
                             f"(0, 1), got {quantiles!r}")
        levels = []
        for q in quantiles:
            if (not isinstance(q, numbers.Real) or isinstance(q, bool)
                    or not 0.0 < float(q) < 1.0):
                raise ValueError(f"multi_quantile: quantiles must be levels in (0, 1), "
                                 f"got {q!r} in {tuple(quantiles)!r}")
            levels.append(float(q))
        if not levels:
            raise ValueError("multi_quantile: quantiles must hold at least one level")
        if len(set(levels)) != len(levels):
            raise ValueError(f"multi_quantile: quantiles must be distinct, got "
                             f"{tuple(levels)!r}")
        self.quantiles = tuple(levels)
        self.taus = np.array(levels, dtype=np.float64)
        self.n_levels = len(levels)

    @property
    def n_outputs(self):
        """Number of levels: the outputs of a model fitting all of them."""
        return self.n_levels

    cdef double row_loss(self, const double* y, const double* raw, Py_ssize_t k) noexcept nogil:
        cdef Py_ssize_t c
        cdef double r, s = 0.0
        for c in range(k):
            r = y[c] - raw[c]
            s += self.taus[c] * r if r >= 0.0 else (self.taus[c] - 1.0) * r
        return s

    cdef void row_gradient(self, const double* y, const double* raw, Py_ssize_t k,
                           double* out) noexcept nogil:
        cdef Py_ssize_t c
        for c in range(k):
            out[c] = (1.0 if y[c] < raw[c] else 0.0) - self.taus[c]

    cdef int _check_outputs(self, Py_ssize_t k) except -1 nogil:
        if k > self.n_levels:
            with gil:
                raise ValueError(f"multi_quantile has {self.n_levels} levels "
                                 f"{self.quantiles!r} but the model has {k} outputs")
        return 0

    cdef int batch_gradient(self, const double* Y, Py_ssize_t m, const double* U,
                            Py_ssize_t n, Py_ssize_t k, double* G) except -1 nogil:
        self._check_outputs(k)
        return CyLoss.batch_gradient(self, Y, m, U, n, k, G)

    cdef int batch_loss(self, const double* Y, Py_ssize_t m, const double* U,
                        Py_ssize_t n, Py_ssize_t k, double* out) except -1 nogil:
        self._check_outputs(k)
        return CyLoss.batch_loss(self, Y, m, U, n, k, out)

    def dual_form(self, y):
        r"""The loss as :math:`\sum_c \max_{a_c \in [lo, hi]} a_c (r - s u_c) - \epsilon |a_c|`.

        Per output :math:`c` the pinball loss at level :math:`\tau_c`:
        :math:`r = y_c`, :math:`s = 1`, :math:`[lo, hi] = [\tau_c - 1, \tau_c]`,
        :math:`\epsilon = 0`, for the dual coordinate descent solver.  Output
        ``c`` uses ``quantiles[c]``, as in :meth:`loss`.

        ``y``: real targets, shape ``(n, k)``, one column per output (``k`` at
        most the number of levels); returns ``(r, s, lo, hi, eps)``, each a
        float64 ``(n, k)`` array.

        Examples
        --------
        >>> from onlinekernel import get_loss
        >>> loss = get_loss("multi_quantile", quantiles=(0.25, 0.75))
        >>> r, s, lo, hi, eps = loss.dual_form([[1.0, 1.0], [2.0, 2.0]])
        >>> lo
        array([[-0.75, -0.25],
               [-0.75, -0.25]])
        >>> hi
        array([[0.25, 0.75],
               [0.25, 0.75]])
        """
        Y = _as_2d(y, "y")
        self._check_outputs(Y.shape[1])
        tau = np.broadcast_to(np.asarray(self.taus)[:Y.shape[1]], Y.shape)
        return (Y.copy(), np.ones_like(Y), tau - 1.0, np.array(tau), np.zeros_like(Y))

    def get_params(self, deep=True):
        return {"quantiles": self.quantiles}
