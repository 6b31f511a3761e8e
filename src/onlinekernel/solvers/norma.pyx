# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled loop of NORMA (Kivinen, Smola & Williamson 2004): kernel SGD on a budget.

The model is ``f(x) = sum_j A[j] k(C[j], x)`` over at most ``budget``
stored rows ``C`` (its support vectors) with coefficient rows ``A`` (one
value per output).  A step on row ``x`` with targets ``y``:

1. ``u = f(x)``, the outputs before the step (what test-then-train scores);
2. every coefficient shrinks by ``shrink = 1 - eta * alpha`` (the penalty's
   gradient step: an old support vector's weight decays geometrically,
   which is how the model forgets);
3. when the loss's gradient ``g = dl/du`` is not zero, ``x`` is stored with
   coefficients ``-eta * g``, over the oldest support vector once the
   budget is full (NORMA's truncation).

The stored rows form a ring: ``ring = [filled, next]``.  Outputs are summed
over the stored rows in storage order, so one row's prediction is the same
bits alone or in a batch.  Kernel values come from the map's compiled
``kernel_row`` (Gaussian, Laplacian), else from its Python ``kernel(X, Y)``;
the solver knows the map and loss protocols only.
"""
import numpy as np
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.losses.base cimport CyLoss


cdef void _outputs(CyFeatureMap fmap, object kernel, object centres, const double[:, ::1] C,
                   const double[:, ::1] A, Py_ssize_t filled, object X, Py_ssize_t i,
                   const double* x, double[::1] kbuf, double* out) except *:
    """``out = f(x)`` (``A.shape[1]`` values) for row ``i`` of ``X`` (``x`` its values)."""
    cdef Py_ssize_t j, c, K = A.shape[1]
    cdef double kj
    cdef const double[::1] values
    for c in range(K):
        out[c] = 0.0
    if filled == 0:
        return
    if fmap.kernel_row(&C[0, 0], filled, x, &kbuf[0]) != 0:
        values = np.ascontiguousarray(kernel(centres[:filled], X[i:i + 1]),
                                      dtype=np.float64).reshape(-1)
        if values.shape[0] != filled:
            raise ValueError(f"the kernel of {fmap!r} returned {values.shape[0]} values for "
                             f"{filled} rows against one")
        kbuf[:filled] = values
    for j in range(filled):
        kj = kbuf[j]
        for c in range(K):
            out[c] += kj * A[j, c]


def norma_outputs(CyFeatureMap fmap, kernel, centres, coef, Py_ssize_t filled, X):
    """``f(X)``: float64 ``(n, K)`` outputs of the rows ``X`` (float64, C order)."""
    cdef const double[:, ::1] C = centres
    cdef const double[:, ::1] A = coef
    cdef const double[:, ::1] Xv = X
    cdef Py_ssize_t i, n = Xv.shape[0]
    out = np.zeros((n, A.shape[1]), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef double[::1] kbuf = np.empty(max(1, filled), dtype=np.float64)
    for i in range(n):
        _outputs(fmap, kernel, centres, C, A, filled, X, i, &Xv[i, 0], kbuf, &o[i, 0])
    return out


def norma_steps(CyFeatureMap fmap, kernel, centres, coef, Py_ssize_t[::1] ring, X, Y,
                CyLoss loss, double eta, double shrink, raw=None, bint first_known=False):
    """One NORMA step per row of ``X`` (float64, C order), in order, in place.

    Parameters
    ----------
    fmap, kernel : the map (``kernel_row``) and its Python ``kernel(X, Y)``.
    centres : ndarray of shape (budget, d)
        The stored rows (changed in place).
    coef : ndarray of shape (budget, K)
        Their coefficients (changed in place).
    ring : ndarray of two intp
        ``[filled, next]``: rows stored, and the slot the next one takes.
    Y : ndarray of shape (n, m)
        The loss's targets of the rows.
    loss : CyLoss
    eta, shrink : float
        The step, and the factor every coefficient takes at each step.
    raw : ndarray of shape (n, K) or None
        Receives each row's outputs before its step (None: a new array).
    first_known : bool
        ``raw[0]`` already holds the first row's outputs (the row was just
        predicted by this model, test-then-train): they are not computed
        again.

    Returns
    -------
    raw : ndarray of shape (n, K)
        Each row's outputs before its step.
    """
    cdef double[:, ::1] C = centres
    cdef double[:, ::1] A = coef
    cdef const double[:, ::1] Xv = X
    cdef const double[:, ::1] Yv = Y
    cdef Py_ssize_t budget = C.shape[0], d = C.shape[1], K = A.shape[1], m = Yv.shape[1]
    cdef Py_ssize_t i, j, c, n = Xv.shape[0]
    cdef Py_ssize_t filled = ring[0], nxt = ring[1]
    cdef bint store
    if raw is None:
        raw = np.empty((n, K), dtype=np.float64)
    cdef double[:, ::1] U = raw
    cdef double[::1] kbuf = np.empty(budget, dtype=np.float64)
    cdef double[::1] g = np.empty(K, dtype=np.float64)
    for i in range(n):
        if i > 0 or not first_known:
            _outputs(fmap, kernel, centres, C, A, filled, X, i, &Xv[i, 0], kbuf, &U[i, 0])
        # batch_gradient of one row: a Python loss's adapter implements it, not row_gradient
        loss.batch_gradient(&Yv[i, 0], m, &U[i, 0], 1, K, &g[0])
        if shrink != 1.0:
            for j in range(filled):
                for c in range(K):
                    A[j, c] *= shrink
        store = False
        for c in range(K):
            if g[c] != 0.0:
                store = True
        if store:
            for j in range(d):
                C[nxt, j] = Xv[i, j]
            for c in range(K):
                A[nxt, c] = -eta * g[c]
            nxt = (nxt + 1) % budget
            if filled < budget:
                filled += 1
    ring[0], ring[1] = filled, nxt
    return raw


def linear_step(double[:, ::1] W, double[::1] b, const double[:, ::1] Z, const double[:, ::1] Y,
                CyLoss loss, double eta, double shrink, const double[::1] raw):
    """One step of NORMA's linear-kernel form on the row ``Z[0]``, in place.

    ``W`` (``(d, K)``) becomes ``shrink * W - eta * z g^T`` and ``b``
    (``(K,)``) ``b - eta * g``, ``g`` the loss's gradient at the row's
    outputs ``raw`` against its targets ``Y[0]`` (one compiled call where
    numpy would take five).
    """
    cdef Py_ssize_t d = W.shape[0], K = W.shape[1], j, c
    if Z.shape[0] < 1 or Z.shape[1] != d or Y.shape[0] < 1 or b.shape[0] != K or raw.shape[0] != K:
        raise ValueError(f"linear_step: weights {W.shape[0]} x {W.shape[1]} against a row of "
                         f"{Z.shape[1]} inputs, {b.shape[0]} intercepts, {raw.shape[0]} outputs")
    cdef double[::1] g = np.empty(K, dtype=np.float64)
    loss.batch_gradient(&Y[0, 0], Y.shape[1], &raw[0], 1, K, &g[0])
    for c in range(K):
        g[c] = eta * g[c]
        b[c] -= g[c]
    for j in range(d):
        for c in range(K):
            W[j, c] = shrink * W[j, c] - Z[0, j] * g[c]
