"""Second-order information of a loss, for the batch solvers.

Losses tell the solvers how curved they are through two attributes of the
loss protocol:

``curvature``
    ``"constant"`` (a quadratic loss: the Hessian does not depend on the
    model, so one Cholesky solve reaches the optimum), ``"smooth"`` (a
    useful second derivative almost everywhere: Newton and quasi-Newton
    methods converge), ``"piecewise_linear"`` (the second derivative is zero
    almost everywhere: hinge, quantile, epsilon-insensitive; dual coordinate
    descent solves these) or ``None`` (not declared: ``solver="auto"`` uses
    stochastic gradients).
``curvature_bound`` (optional)
    A number bounding the largest eigenvalue of the loss's Hessian in the
    raw outputs over all targets and outputs (squared 1, logistic 1/4,
    multinomial 1/2); the step of the variance-reduced solvers
    (:mod:`onlinekernel.solvers.variance_reduced`) follows from it.  When
    it is missing they estimate it from the curvature at the start.
``separable_outputs`` (optional, default False)
    True when the loss of a row is a sum of one term per output (every
    elementwise loss applied one-vs-rest), so that its Hessian is block
    diagonal, one block per output; ``newton-cg`` then runs one
    conjugate-gradient recurrence per output.  The multinomial loss couples
    its outputs.
``hessian_product(y, raw, v)``
    Per row, the Hessian of the loss with respect to ``raw`` times ``v``
    (shape ``(n, k)``).  The default below takes central differences of the
    loss's own ``gradient``, so every loss has one; a loss may override it
    with the exact product.  The compiled elementwise losses compute it in
    one loop from their second derivative (exact for squared, logistic,
    squared hinge and Huber, central differences of the derivative for the
    others), the multinomial loss from its softmax: the solvers call it on
    every row batch of every Hessian product, where the differences' two
    gradient evaluations and temporaries cost as much as the features'
    products on small batches.

Examples
--------
>>> from onlinekernel import get_loss
>>> loss = get_loss("logistic")
>>> y, raw, v = np.array([[1.0]]), np.array([[0.0]]), np.array([[1.0]])
>>> round(float(loss.hessian_product(y, raw, v)[0, 0]), 6)  # p (1 - p) at p = 1/2
0.25
"""
import numpy as np

__all__ = ["CURVATURES", "finite_difference_hessian_product"]

CURVATURES = ("constant", "smooth", "piecewise_linear", None)

# Relative step of the central differences: its truncation error is about
# 1e-8 relative for smooth losses, its rounding error about 1e-12.
_STEP = 1e-4


def finite_difference_hessian_product(loss, y, raw, v):
    """``H(raw) v`` per row, by central differences of ``loss.gradient``."""
    U = np.asarray(raw, dtype=np.float64)
    V = np.asarray(v, dtype=np.float64)
    if U.ndim == 1:
        U, V = U[:, None], V[:, None]
    size = np.abs(V).max(axis=1, keepdims=True)
    h = _STEP * np.maximum(1.0, np.abs(U).max(axis=1, keepdims=True))
    h = np.where(size > 0, h / np.where(size > 0, size, 1.0), 0.0)
    gp = np.asarray(loss.gradient(y, U + h * V), dtype=np.float64)
    gm = np.asarray(loss.gradient(y, U - h * V), dtype=np.float64)
    if gp.ndim == 1:
        gp, gm = gp[:, None], gm[:, None]
    return np.where(h > 0, (gp - gm) / np.where(h > 0, 2 * h, 1.0), 0.0)
