# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The KL density-ratio objective of Nguyen, Wainwright & Jordan (2008) as a loss.

The objective takes samples from two distributions.  It fits the
row-by-row loss protocol as *paired samples*: each row's target says which
sample it comes from, and an estimator (:class:`onlinekernel.DSGDensityRatio`)
builds every mini-batch from equal numbers of rows of both, so the solver's
one block of random features serves both halves of the step, as in the
paired update of DESIGN.md.
"""
from libc.float cimport DBL_MAX
from libc.math cimport exp
from onlinekernel.losses.base cimport CyScalarLoss

# Largest exponent evaluated: exp(700) ~ 1.0e304 is finite with room to spare
# (exp overflows beyond ~709.78).  Beyond it the exponential is continued by
# its tangent, so the loss stays convex and differentiable.
cdef double MAX_EXPONENT = 700.0


cdef inline double _clip(double v) noexcept nogil:
    # saturate at the largest finite double: no input gives an infinite value
    if v > DBL_MAX:
        return DBL_MAX
    if v < -DBL_MAX:
        return -DBL_MAX
    return v


cdef class KLDensityRatio(CyScalarLoss):
    r"""Loss of the KL density-ratio objective, for rows marked by their sample.

    Rows from the numerator distribution :math:`p` have target ``+1`` and rows
    from the denominator :math:`q` target ``-1`` (any positive target counts
    as ``+1``, anything else as ``-1``):

    .. math::

        \ell(u, +1) = -u, \qquad \ell(u, -1) = e^{u}, \qquad
        \frac{\partial \ell}{\partial u} = -1 \text{ or } e^{u}.

    A batch holding :math:`h` rows of each sample has the mean gradient
    :math:`\frac12 \big(\frac1h\sum_{q} e^{f(x')}\phi(x') - \frac1h\sum_{p}
    \phi(x)\big)`, half the paired step of the objective
    :math:`E_q[e^{f}] - E_p[f]`, whose minimiser (with the RKHS penalty
    vanishing) is :math:`f = \log(p/q)`.  :class:`onlinekernel.DSGDensityRatio`
    gives every row the weight 2 to make the step exactly the paired one.

    The exponential is guarded: for :math:`u > 700` it is continued by its
    tangent at 700, :math:`e^{700}(1 + u - 700)`, so the gradient never
    exceeds :math:`e^{700} \approx 10^{304}`; values saturate at the largest
    double.  No finite or infinite raw prediction gives an infinite or NaN
    value or gradient.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> loss = get_loss("kl_density_ratio")
    >>> loss.gradient([[1.0], [-1.0]], [[0.5], [0.0]])
    array([[-1.],
           [ 1.]])
    >>> loss.loss([[-1.0]], [[1e6]]) < float("inf")
    array([ True])
    """
    name = "kl_density_ratio"
    target_encoding = "margin"
    #: Exponent beyond which e^u is continued linearly (a Python-visible copy).
    max_exponent = MAX_EXPONENT

    cdef double value(self, double y, double raw) noexcept nogil:
        if y > 0.0:
            return _clip(-raw)
        if raw <= MAX_EXPONENT:
            return exp(raw)
        return _clip(exp(MAX_EXPONENT) * (1.0 + (raw - MAX_EXPONENT)))

    cdef double deriv(self, double y, double raw) noexcept nogil:
        if y > 0.0:
            return -1.0
        # the comparison sends NaN to the cap too: the gradient is always finite
        return exp(raw) if raw < MAX_EXPONENT else exp(MAX_EXPONENT)
