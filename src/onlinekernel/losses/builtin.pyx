# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The built-in compiled losses.

Each loss validates its parameters in Python and keeps plain C fields; the
``nogil`` methods compute the value and the derivative with respect to the
raw prediction (the package's one sign convention).
"""
from libc.math cimport exp, log, log1p, fabs
from onlinekernel.losses.base cimport CyLoss, CyScalarLoss

import math
import numbers

import numpy as np

from onlinekernel.losses.base import _as_2d


def _filled(Y, value):
    return np.full(Y.shape, value, dtype=np.float64)


cdef class Hinge(CyScalarLoss):
    r"""Hinge loss :math:`\max(0, 1 - y u)` for labels :math:`y \in \{-1, +1\}`.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("hinge").loss([[1.0]], [[0.25]])
    array([0.75])
    """
    name = "hinge"
    target_encoding = "margin"
    curvature = "piecewise_linear"

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double z = 1.0 - y * raw
        return z if z > 0.0 else 0.0

    cdef double deriv(self, double y, double raw) noexcept nogil:
        return -y if y * raw < 1.0 else 0.0

    def dual_form(self, y):
        r"""The loss as :math:`\max_{a \in [lo, hi]} a (r - s u) - \epsilon |a|`, per entry.

        For the hinge :math:`r = 1`, :math:`s = y`, :math:`[lo, hi] = [0, 1]`,
        :math:`\epsilon = 0`: the dual variables of the SVM, for the dual
        coordinate descent solver.

        ``y``: labels in {-1, +1}, shape ``(n, k)``, one column per output; returns
        ``(r, s, lo, hi, eps)``, each a float64 ``(n, k)`` array.

        Examples
        --------
        >>> from onlinekernel import get_loss
        >>> r, s, lo, hi, eps = get_loss("hinge").dual_form([[1.0], [-1.0]])
        >>> s.ravel(), lo.ravel(), hi.ravel(), r.ravel(), eps.ravel()
        (array([ 1., -1.]), array([0., 0.]), array([1., 1.]), array([1., 1.]), array([0., 0.]))
        """
        Y = _as_2d(y, "y")
        return (_filled(Y, 1.0), Y.copy(), _filled(Y, 0.0), _filled(Y, 1.0),
                _filled(Y, 0.0))


cdef class SquaredHinge(CyScalarLoss):
    r"""Squared hinge :math:`\frac12 \max(0, 1 - y u)^2`.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("squared_hinge").gradient([[1.0]], [[0.5]])
    array([[-0.5]])
    """
    name = "squared_hinge"
    target_encoding = "margin"
    curvature = "smooth"
    curvature_bound = 1.0  # the largest second derivative, for the step of svrg/sarah

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double z = 1.0 - y * raw
        return 0.5 * z * z if z > 0.0 else 0.0

    cdef double deriv(self, double y, double raw) noexcept nogil:
        cdef double z = 1.0 - y * raw
        return -y * z if z > 0.0 else 0.0

    cdef double second(self, double y, double raw) noexcept nogil:
        # y^2 inside the margin (labels +-1), 0 beyond it
        return y * y if 1.0 - y * raw > 0.0 else 0.0


cdef class Logistic(CyScalarLoss):
    r"""Logistic loss :math:`\log(1 + e^{-y u})`, stable for any finite margin.

    For more than two classes the estimators use :class:`Multinomial`.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> loss = get_loss("logistic")
    >>> loss.loss([[1.0], [1.0]], [[-1e6], [1e6]])
    array([1000000.,       0.])
    """
    name = "logistic"
    target_encoding = "margin"
    curvature = "smooth"
    curvature_bound = 0.25  # p (1 - p) <= 1/4
    link = "logistic"

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double z = -y * raw
        if z > 0.0:
            return z + log1p(exp(-z))
        return log1p(exp(z))

    cdef double deriv(self, double y, double raw) noexcept nogil:
        # -y * sigmoid(-y u), evaluated without overflow
        cdef double m = y * raw
        cdef double e
        if m > 0.0:
            e = exp(-m)
            return -y * e / (1.0 + e)
        return -y / (1.0 + exp(m))

    cdef double second(self, double y, double raw) noexcept nogil:
        # y^2 p (1 - p) with p = sigmoid(y u), as e / (1 + e)^2 without overflow
        cdef double e = exp(-fabs(y * raw))
        return y * y * e / ((1.0 + e) * (1.0 + e))

    def multiclass_loss(self):
        return Multinomial()


cdef class Multinomial(CyLoss):
    r"""Multinomial (softmax cross-entropy) loss :math:`-u_y + \log \sum_c e^{u_c}`.

    Targets are class indices (one column); raw predictions have one column
    per class.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("multinomial").gradient([[0.0]], [[0.0, 0.0]])
    array([[-0.5,  0.5]])
    """
    name = "multinomial"
    target_encoding = "class_index"
    curvature = "smooth"
    curvature_bound = 0.5  # lambda_max(diag(p) - p p^T) <= 1/2
    link = "softmax"

    cdef double row_loss(self, const double* y, const double* raw, Py_ssize_t k) noexcept nogil:
        cdef Py_ssize_t c, cls = <Py_ssize_t>y[0]
        cdef double mx = raw[0], s = 0.0
        for c in range(1, k):
            if raw[c] > mx:
                mx = raw[c]
        for c in range(k):
            s += exp(raw[c] - mx)
        return mx + log(s) - raw[cls]

    cdef void row_gradient(self, const double* y, const double* raw, Py_ssize_t k,
                           double* out) noexcept nogil:
        cdef Py_ssize_t c, cls = <Py_ssize_t>y[0]
        cdef double mx = raw[0], s = 0.0
        for c in range(1, k):
            if raw[c] > mx:
                mx = raw[c]
        for c in range(k):
            out[c] = exp(raw[c] - mx)
            s += out[c]
        for c in range(k):
            out[c] /= s
        out[cls] -= 1.0

    def hessian_product(self, y, raw, v):
        """Per row, ``(diag(p) - p p^T) v`` for the softmax ``p`` of ``raw`` (exact).

        Examples
        --------
        >>> from onlinekernel import get_loss
        >>> get_loss("multinomial").hessian_product([[0.0]], [[0.0, 0.0]], [[1.0, -1.0]])
        array([[ 0.5, -0.5]])
        """
        Y, U = self._check(y, raw)
        V = self._direction(v, U)
        P = np.exp(U - U.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        PV = P * V
        return PV - P * PV.sum(axis=1, keepdims=True)


cdef class Squared(CyScalarLoss):
    r"""Squared loss :math:`\frac12 (u - y)^2`.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("squared").gradient([[1.0]], [[3.0]])
    array([[2.]])
    """
    name = "squared"
    target_encoding = "real"
    curvature = "constant"
    curvature_bound = 1.0  # the second derivative

    cdef double value(self, double y, double raw) noexcept nogil:
        return 0.5 * (raw - y) * (raw - y)

    cdef double deriv(self, double y, double raw) noexcept nogil:
        return raw - y

    cdef double second(self, double y, double raw) noexcept nogil:
        return 1.0


cdef class Huber(CyScalarLoss):
    r"""Huber loss: quadratic for :math:`|u - y| \le \delta`, linear beyond.

    Parameters
    ----------
    delta : float or None, default=None
        Width of the quadratic zone, positive, in the target's units.
        ``None``: 1.0 in the units the loss sees -- one standard deviation
        of the targets in a regressor that standardises them
        (``normalize_y=True``), whatever their scale.  A fixed width in raw
        units is wrong for most targets: ``delta=1`` on house prices makes
        the loss an absolute deviation whose gradients are 1e-5 of a
        standard deviation, and stochastic steps barely move the model.

    Attributes
    ----------
    delta : float
        The width used (1.0 for ``delta=None``).

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("huber", delta=0.5).gradient([[0.0]], [[2.0]])
    array([[0.5]])
    >>> get_loss("huber").get_params(), get_loss("huber").delta
    ({'delta': None}, 1.0)
    """
    name = "huber"
    target_encoding = "real"
    curvature = "smooth"
    curvature_bound = 1.0  # the quadratic zone's second derivative
    target_unit_params = ("delta",)
    cdef readonly double delta
    cdef object given

    def __init__(self, delta=None):
        if delta is not None and not (isinstance(delta, numbers.Real)
                                      and not isinstance(delta, bool) and delta > 0.0
                                      and math.isfinite(delta)):
            raise ValueError(f"huber: delta must be None or a finite number > 0, got {delta!r}")
        self.given = delta
        self.delta = 1.0 if delta is None else float(delta)

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double r = fabs(raw - y)
        if r <= self.delta:
            return 0.5 * r * r
        return self.delta * r - 0.5 * self.delta * self.delta

    cdef double deriv(self, double y, double raw) noexcept nogil:
        cdef double r = raw - y
        if r > self.delta:
            return self.delta
        if r < -self.delta:
            return -self.delta
        return r

    cdef double second(self, double y, double raw) noexcept nogil:
        return 1.0 if fabs(raw - y) <= self.delta else 0.0

    def get_params(self, deep=True):
        return {"delta": self.given}


cdef class EpsilonInsensitive(CyScalarLoss):
    r"""Epsilon-insensitive loss :math:`\max(0, |y - u| - \epsilon)`.

    ``epsilon=0`` is the absolute deviation.

    Parameters
    ----------
    epsilon : float or None, default=None
        Half-width of the insensitive tube, >= 0, in the target's units.
        ``None``: 0.1 in the units the loss sees -- a tenth of the targets'
        standard deviation in a regressor that standardises them.

    Attributes
    ----------
    epsilon : float
        The half-width used (0.1 for ``epsilon=None``).

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("epsilon_insensitive", epsilon=0.0).loss([[1.0]], [[-1.0]])
    array([2.])
    """
    name = "epsilon_insensitive"
    target_encoding = "real"
    curvature = "piecewise_linear"
    target_unit_params = ("epsilon",)
    cdef readonly double epsilon
    cdef object given

    def __init__(self, epsilon=None):
        if epsilon is not None and not (isinstance(epsilon, numbers.Real)
                                        and not isinstance(epsilon, bool) and epsilon >= 0.0
                                        and math.isfinite(epsilon)):
            raise ValueError(f"epsilon_insensitive: epsilon must be None or a finite number "
                             f">= 0, got {epsilon!r}")
        self.given = epsilon
        self.epsilon = 0.1 if epsilon is None else float(epsilon)

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double r = fabs(y - raw) - self.epsilon
        return r if r > 0.0 else 0.0

    cdef double deriv(self, double y, double raw) noexcept nogil:
        if fabs(y - raw) <= self.epsilon:
            return 0.0
        return 1.0 if raw > y else -1.0

    def dual_form(self, y):
        r"""The loss as :math:`\max_{a \in [lo, hi]} a (r - s u) - \epsilon |a|`, per entry.

        Here :math:`r = y`, :math:`s = 1`, :math:`[lo, hi] = [-1, 1]` and
        :math:`\epsilon` is the loss's ``epsilon``: the two-sided dual of
        support vector regression, for the dual coordinate descent solver.

        ``y``: real targets, shape ``(n, k)``, one column per output; returns
        ``(r, s, lo, hi, eps)``, each a float64 ``(n, k)`` array.

        Examples
        --------
        >>> from onlinekernel import get_loss
        >>> r, s, lo, hi, eps = get_loss("epsilon_insensitive", epsilon=0.5).dual_form([[2.0]])
        >>> float(r[0, 0]), float(s[0, 0]), float(lo[0, 0]), float(hi[0, 0]), float(eps[0, 0])
        (2.0, 1.0, -1.0, 1.0, 0.5)
        """
        Y = _as_2d(y, "y")
        return (Y.copy(), _filled(Y, 1.0), _filled(Y, -1.0), _filled(Y, 1.0),
                _filled(Y, self.epsilon))

    def get_params(self, deep=True):
        return {"epsilon": self.given}


cdef class Quantile(CyScalarLoss):
    r"""Pinball loss :math:`\max(\tau (y - u), (\tau - 1)(y - u))`.

    Its minimiser is the :math:`\tau`-quantile of :math:`y` given :math:`x`.

    Parameters
    ----------
    quantile : float, default=0.5
        The quantile :math:`\tau`, strictly between 0 and 1.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> get_loss("quantile", quantile=0.9).gradient([[1.0], [1.0]], [[0.0], [2.0]])
    array([[-0.9],
           [ 0.1]])
    """
    name = "quantile"
    target_encoding = "real"
    curvature = "piecewise_linear"
    cdef readonly double quantile

    def __init__(self, double quantile=0.5):
        if not 0.0 < quantile < 1.0:
            raise ValueError(f"quantile: quantile must be in (0, 1), got {quantile}")
        self.quantile = quantile

    cdef double value(self, double y, double raw) noexcept nogil:
        cdef double r = y - raw
        if r >= 0.0:
            return self.quantile * r
        return (self.quantile - 1.0) * r

    cdef double deriv(self, double y, double raw) noexcept nogil:
        return (1.0 if y < raw else 0.0) - self.quantile

    def dual_form(self, y):
        r"""The loss as :math:`\max_{a \in [lo, hi]} a (r - s u) - \epsilon |a|`, per entry.

        Here :math:`r = y`, :math:`s = 1`, :math:`[lo, hi] = [\tau - 1, \tau]`,
        :math:`\epsilon = 0`, for the dual coordinate descent solver.

        ``y``: real targets, shape ``(n, k)``, one column per output; returns
        ``(r, s, lo, hi, eps)``, each a float64 ``(n, k)`` array.

        Examples
        --------
        >>> from onlinekernel import get_loss
        >>> r, s, lo, hi, eps = get_loss("quantile", quantile=0.9).dual_form([[3.0]])
        >>> float(r[0, 0]), float(s[0, 0]), round(float(lo[0, 0]), 12), float(hi[0, 0])
        (3.0, 1.0, -0.1, 0.9)
        """
        Y = _as_2d(y, "y")
        return (Y.copy(), _filled(Y, 1.0), _filled(Y, self.quantile - 1.0),
                _filled(Y, self.quantile), _filled(Y, 0.0))

    def get_params(self, deep=True):
        return {"quantile": self.quantile}
