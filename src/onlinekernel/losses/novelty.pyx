# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The one-class SVM (novelty detection) objective as a loss with its own offset.

Schölkopf et al.'s one-class SVM, in the form of DESIGN.md:

.. math::

    \\min_{f, \\rho}\\; E\\big[\\max(0, \\rho - f(x))\\big]
        + \\frac{\\nu}{2}\\|f\\|^2_{\\mathcal H} - \\nu\\rho .

The offset :math:`\\rho` is the objective's unkernelised state.  It is the
model's intercept with the sign flipped, :math:`b = -\\rho`, so the raw
prediction is the decision value :math:`u = f(x) - \\rho`; the loss steps it
through :meth:`CyLoss.intercept_step`, and the solver stays unaware of it.
"""
import numpy as np

from onlinekernel.losses.base cimport CyScalarLoss


cdef class Novelty(CyScalarLoss):
    r"""One-class SVM loss :math:`\max(0, -u)` on the decision value :math:`u = f(x) - \rho`.

    With the intercept :math:`b = -\rho`, the objective
    :math:`E[\max(0, \rho - f(x))] + \frac{\nu}{2}\|f\|^2 - \nu\rho` has the
    per-row loss :math:`\max(0, -u)` with the (sub)gradient

    .. math::

        \frac{\partial \ell}{\partial u} = -\mathbb 1[u \le 0]

    and the offset part :math:`-\nu\rho = \nu b`, which is not a per-row
    term: it enters through the intercept step, which for a batch gradient
    :math:`g` is

    .. math::

        b \leftarrow b - \gamma_t \big(\operatorname{mean}(g) + \nu\big),
        \qquad\text{i.e.}\qquad
        \rho \leftarrow \rho + \gamma_t\big(\nu - \operatorname{mean} \mathbb 1[f(x) \le \rho]\big)

    (DESIGN.md; :math:`\rho` is not regularised, so the intercept is not
    shrunk).  At a fixed point the fraction of rows with :math:`f(x) < \rho`
    is at most :math:`\nu`, and at least :math:`\nu` counting the rows on
    the boundary: the :math:`\nu`-property.  The gradient counts a row on
    the boundary (:math:`u = 0`) as a violation: a model that starts from
    :math:`f = 0, \rho = 0` then learns :math:`f` from its first step.  The
    coefficients' penalty :math:`\nu` is the estimator's ``alpha`` (see
    :class:`onlinekernel.DSGOneClassSVM`, which ties the two).

    Targets are not used (:class:`onlinekernel.DSGOneClassSVM` passes
    zeros); ``target_encoding`` is ``"real"`` so that a column of any real
    values is accepted.  With sample weights the gradient is weighted and the
    offset step is :math:`\operatorname{mean}(w g) + \nu`: the weights scale
    each row's hinge term.

    ``intercept_rule = "offset"`` tells code that inspects a loss from
    Python that the intercept is not the default regularised constant
    feature (a pure-Python :class:`onlinekernel.Loss` always has that
    default).

    Parameters
    ----------
    nu : float, default=0.1
        The fraction :math:`\nu` in (0, 1]: an upper bound on the fraction
        of training rows outside the learned region, and the penalty of
        :math:`f`.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> loss = get_loss("novelty", nu=0.2)
    >>> loss.loss([[0.0], [0.0]], [[-0.5], [0.3]])
    array([0.5, 0. ])
    >>> loss.gradient([[0.0], [0.0]], [[-0.5], [0.3]])
    array([[-1.],
           [ 0.]])
    >>> # half the rows violate, nu = 0.2: rho moves down by 0.5 * (0.5 - 0.2)
    >>> loss.intercept_update([0.0], [[-1.0], [0.0]], step=0.5)
    array([0.15])
    """
    name = "novelty"
    target_encoding = "real"
    #: How the intercept moves: the offset rule above, not a constant feature.
    intercept_rule = "offset"
    cdef readonly double nu

    def __init__(self, double nu=0.1):
        if not 0.0 < nu <= 1.0:
            raise ValueError(f"novelty: nu must be in (0, 1], got {nu}")
        self.nu = nu

    cdef double value(self, double y, double raw) noexcept nogil:
        return -raw if raw < 0.0 else 0.0

    cdef double deriv(self, double y, double raw) noexcept nogil:
        return -1.0 if raw <= 0.0 else 0.0

    cdef void intercept_step(self, double* b, const double* G, Py_ssize_t n, Py_ssize_t k,
                             double step, double shrink) noexcept nogil:
        # rho = -b is not regularised: no shrink
        cdef Py_ssize_t i, c
        cdef double gsum
        for c in range(k):
            gsum = 0.0
            for i in range(n):
                gsum += G[i * k + c]
            b[c] = b[c] - step * (gsum / n + self.nu)

    def intercept_update(self, intercept, gradient, double step, double shrink=1.0):
        """The intercept after one step, as the solver computes it (for inspection).

        Parameters
        ----------
        intercept : array-like of shape (k,)
        gradient : array-like of shape (n, k)
            The batch gradient (already weighted).
        step : float
            The step size :math:`\\gamma_t`.
        shrink : float, default=1.0
            The coefficients' shrink factor; unused: :math:`\\rho` is not
            regularised.

        Returns
        -------
        ndarray of shape (k,)
        """
        b = np.array(intercept, dtype=np.float64, ndmin=1, order="C")
        G = np.ascontiguousarray(gradient, dtype=np.float64)
        if G.ndim == 1:
            G = G[:, None]
        if G.ndim != 2 or G.shape[1] != b.shape[0] or G.shape[0] < 1:
            raise ValueError(f"gradient of shape {G.shape} does not match an intercept of "
                             f"shape {b.shape}")
        cdef double[::1] b_ = b
        cdef const double[:, ::1] g_ = G
        self.intercept_step(&b_[0], &g_[0, 0], G.shape[0], G.shape[1], step, shrink)
        return b

    def get_params(self, deep=True):
        return {"nu": self.nu}
