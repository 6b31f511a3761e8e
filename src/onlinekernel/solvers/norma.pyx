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

A stream that learns one row at a time calls :class:`NormaRows` (and
:class:`LinearRows`, the linear kernel's form): the same arithmetic, with
the arrays' views taken once instead of at every call.
"""
import numpy as np
cimport numpy as cnp
from libc.stdlib cimport free, malloc
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.losses.base cimport CyLoss

cnp.import_array()


cdef void _outputs(CyFeatureMap fmap, object kernel, object centres, const double[:, ::1] C,
                   const double[:, ::1] A, Py_ssize_t filled, object X, Py_ssize_t i,
                   const double* x, double* kbuf, double* out) except *:
    """``out = f(x)`` (``A.shape[1]`` values) for row ``i`` of ``X`` (``x`` its values;
    ``kbuf``: room for ``filled`` kernel values)."""
    cdef Py_ssize_t j, c, K = A.shape[1]
    cdef double kj
    cdef const double[::1] values
    for c in range(K):
        out[c] = 0.0
    if filled == 0:
        return
    if fmap.kernel_row(&C[0, 0], filled, x, kbuf) != 0:
        values = np.ascontiguousarray(kernel(centres[:filled], X[i:i + 1]),
                                      dtype=np.float64).reshape(-1)
        if values.shape[0] != filled:
            raise ValueError(f"the kernel of {fmap!r} returned {values.shape[0]} values for "
                             f"{filled} rows against one")
        for j in range(filled):
            kbuf[j] = values[j]
    for j in range(filled):
        kj = kbuf[j]
        for c in range(K):
            out[c] += kj * A[j, c]


cdef void _step(CyLoss loss, double eta, double shrink, double[:, ::1] C, double[:, ::1] A,
                Py_ssize_t* filled, Py_ssize_t* nxt, const double* x, const double* y,
                Py_ssize_t m, const double* u, double* g) except *:
    """Steps 2-3 on the row ``x`` (targets ``y``, outputs ``u`` before the step; ``g``
    receives the gradient): the ring's ``filled`` and ``nxt`` move in place."""
    cdef Py_ssize_t j, c, budget = C.shape[0], d = C.shape[1], K = A.shape[1]
    cdef bint store = False
    # batch_gradient of one row: a Python loss's adapter implements it, not row_gradient
    loss.batch_gradient(y, m, u, 1, K, g)
    if shrink != 1.0:
        for j in range(filled[0]):
            for c in range(K):
                A[j, c] *= shrink
    for c in range(K):
        if g[c] != 0.0:
            store = True
    if store:
        for j in range(d):
            C[nxt[0], j] = x[j]
        for c in range(K):
            A[nxt[0], c] = -eta * g[c]
        nxt[0] = (nxt[0] + 1) % budget
        if filled[0] < budget:
            filled[0] += 1


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
        _outputs(fmap, kernel, centres, C, A, filled, X, i, &Xv[i, 0], &kbuf[0], &o[i, 0])
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
    cdef Py_ssize_t budget = C.shape[0], K = A.shape[1], m = Yv.shape[1]
    cdef Py_ssize_t i, n = Xv.shape[0]
    cdef Py_ssize_t filled = ring[0], nxt = ring[1]
    if raw is None:
        raw = np.empty((n, K), dtype=np.float64)
    cdef double[:, ::1] U = raw
    cdef double[::1] kbuf = np.empty(budget, dtype=np.float64)
    cdef double[::1] g = np.empty(K, dtype=np.float64)
    for i in range(n):
        if i > 0 or not first_known:
            _outputs(fmap, kernel, centres, C, A, filled, X, i, &Xv[i, 0], &kbuf[0], &U[i, 0])
        _step(loss, eta, shrink, C, A, &filled, &nxt, &Xv[i, 0], &Yv[i, 0], m, &U[i, 0], &g[0])
    ring[0], ring[1] = filled, nxt
    return raw


cdef const double[:, ::1] _one_row(Z, Py_ssize_t d) except *:
    """``Z`` as one row of ``d`` inputs, or a named error."""
    cdef const double[:, ::1] z = Z
    if z.shape[0] != 1 or z.shape[1] != d:
        raise ValueError(f"one row of {d} inputs expected, got {z.shape[0]} x {z.shape[1]}")
    return z


cdef int _take_outputs(raw, double[::1] u, Py_ssize_t K) except -1:
    """Copy the ``K`` given outputs ``raw`` into ``u``, or a named error."""
    cdef const double[::1] given = raw
    cdef Py_ssize_t c
    if given.shape[0] != K:
        raise ValueError(f"{given.shape[0]} outputs given for a model of {K}")
    for c in range(K):
        u[c] = given[c]
    return 0


cdef int _check_targets(CyLoss loss, const double[:, ::1] y, Py_ssize_t K) except -1:
    """Refuse targets that are not one row of the loss's width for ``K`` outputs (the loss
    reads that many)."""
    cdef Py_ssize_t m = loss.n_targets(K)
    if y.shape[0] != 1 or y.shape[1] != m:
        raise ValueError(f"targets of one row of {m} values expected for {K} outputs, got "
                         f"{y.shape[0]} x {y.shape[1]}")
    return 0


cdef class NormaRows:
    """A NORMA model's one-row calls, bound to its arrays: :func:`norma_outputs` and
    :func:`norma_steps` on one row, with the same bits.

    For a stream fed one prepared row at a time (the River classifiers):
    the array views and the step's scratch are taken once here rather than
    at every call, which at a row's cost of a few microseconds is most of it.
    The arrays are shared, not copied: a step changes them in place.
    Bound to ``coef`` as it is; a model that adds an output makes a new
    ``coef``, and binds again.  :meth:`outputs` may run in several threads
    at once; :meth:`learn` changes the arrays and needs them to itself.

    Parameters
    ----------
    fmap : CyFeatureMap
        The kernel's map, bound to ``centers.shape[1]`` inputs.
    centers, coef, ring : ndarray
        As :func:`norma_steps` takes them.
    loss, eta, shrink
        As :func:`norma_steps` takes them.
    """
    cdef CyFeatureMap fmap
    cdef object kernel
    cdef readonly object centers, coef, ring
    cdef double[:, ::1] C, A
    cdef Py_ssize_t[::1] R
    cdef double[::1] g, u
    cdef CyLoss loss
    cdef double eta, shrink

    def __init__(self, CyFeatureMap fmap, centers, coef, ring, CyLoss loss, double eta,
                 double shrink):
        self.C, self.A, self.R = centers, coef, ring
        if self.A.shape[0] != self.C.shape[0] or self.R.shape[0] != 2:
            raise ValueError(f"{self.C.shape[0]} centres against {self.A.shape[0]} rows of "
                             f"coefficients and a ring of {self.R.shape[0]}")
        self.fmap, self.kernel = fmap, fmap.kernel
        self.centers, self.coef, self.ring = centers, coef, ring
        self.loss, self.eta, self.shrink = loss, eta, shrink
        self.g = np.empty(max(1, self.A.shape[1]), dtype=np.float64)
        self.u = np.empty(max(1, self.A.shape[1]), dtype=np.float64)

    def outputs(self, Z):
        """``f(z)`` of the one row ``Z`` (float64, ``(1, d)``): a new ``(K,)`` array."""
        cdef const double[:, ::1] z = _one_row(Z, self.C.shape[1])
        cdef cnp.npy_intp K = self.A.shape[1]
        out = cnp.PyArray_EMPTY(1, &K, cnp.NPY_FLOAT64, 0)
        self._into(Z, z, <double*>cnp.PyArray_DATA(out))
        return out

    cdef void _into(self, Z, const double[:, ::1] z, double* out) except *:
        # the kernel values' room is the call's own: outputs may run in several threads
        cdef double* kbuf = <double*>malloc(max(1, self.C.shape[0]) * sizeof(double))
        if kbuf == NULL:
            raise MemoryError()
        try:
            _outputs(self.fmap, self.kernel, self.centers, self.C, self.A, self.R[0], Z, 0,
                     &z[0, 0], kbuf, out)
        finally:
            free(kbuf)

    def learn(self, Z, Y, raw=None):
        """One step on the row ``Z`` with targets ``Y`` (``(1, m)``), in place; ``raw``:
        the row's outputs under the model as it is, else computed."""
        cdef const double[:, ::1] z = _one_row(Z, self.C.shape[1])
        cdef const double[:, ::1] y = Y
        cdef Py_ssize_t K = self.A.shape[1], filled = self.R[0], nxt = self.R[1]
        _check_targets(self.loss, y, K)
        if raw is None:
            self._into(Z, z, &self.u[0])
        else:
            _take_outputs(raw, self.u, K)
        _step(self.loss, self.eta, self.shrink, self.C, self.A, &filled, &nxt, &z[0, 0],
              &y[0, 0], y.shape[1], &self.u[0], &self.g[0])
        self.R[0], self.R[1] = filled, nxt


cdef class LinearRows:
    """NORMA's linear-kernel form on one row at a time, bound to its weights and intercepts.

    ``f(z) = z W + b``, summed over the inputs in order (the same bits on
    every machine, where a BLAS product's order depends on the CPU); a
    step makes ``W`` ``shrink * W - eta * z g^T`` and ``b`` ``b - eta * g``,
    ``g`` the loss's gradient at the row's outputs.  Shared arrays,
    changed in place; bound to ``W`` (``(d, K)``) and ``b`` (``(K,)``) as
    they are.  :meth:`outputs` may run in several threads at once;
    :meth:`learn` changes the arrays and needs them to itself.
    """
    cdef readonly object weights, intercept
    cdef double[:, ::1] W
    cdef double[::1] b, g, u
    cdef CyLoss loss
    cdef double eta, shrink

    def __init__(self, weights, intercept, CyLoss loss, double eta, double shrink):
        self.W, self.b = weights, intercept
        if self.b.shape[0] != self.W.shape[1]:
            raise ValueError(f"{self.W.shape[1]} outputs of weights against "
                             f"{self.b.shape[0]} intercepts")
        self.weights, self.intercept = weights, intercept
        self.loss, self.eta, self.shrink = loss, eta, shrink
        self.g = np.empty(max(1, self.W.shape[1]), dtype=np.float64)
        self.u = np.empty(max(1, self.W.shape[1]), dtype=np.float64)

    cdef void _outputs(self, const double* z, double* out) noexcept nogil:
        cdef Py_ssize_t j, c, d = self.W.shape[0], K = self.W.shape[1]
        for c in range(K):
            out[c] = 0.0
        for j in range(d):
            for c in range(K):
                out[c] += z[j] * self.W[j, c]
        for c in range(K):
            out[c] += self.b[c]

    def outputs(self, Z):
        """``f(z)`` of the one row ``Z`` (float64, ``(1, d)``): a new ``(K,)`` array."""
        cdef const double[:, ::1] z = _one_row(Z, self.W.shape[0])
        cdef cnp.npy_intp K = self.W.shape[1]
        out = cnp.PyArray_EMPTY(1, &K, cnp.NPY_FLOAT64, 0)
        self._outputs(&z[0, 0], <double*>cnp.PyArray_DATA(out))
        return out

    def learn(self, Z, Y, raw=None):
        """One step on the row ``Z`` with targets ``Y`` (``(1, m)``), in place; ``raw``:
        the row's outputs under the model as it is, else computed."""
        cdef const double[:, ::1] z = _one_row(Z, self.W.shape[0])
        cdef const double[:, ::1] y = Y
        cdef Py_ssize_t d = self.W.shape[0], K = self.W.shape[1], j, c
        _check_targets(self.loss, y, K)
        if raw is None:
            self._outputs(&z[0, 0], &self.u[0])
        else:
            _take_outputs(raw, self.u, K)
        self.loss.batch_gradient(&y[0, 0], y.shape[1], &self.u[0], 1, K, &self.g[0])
        for c in range(K):
            self.g[c] = self.eta * self.g[c]
            self.b[c] -= self.g[c]
        for j in range(d):
            for c in range(K):
                self.W[j, c] = self.shrink * self.W[j, c] - z[0, j] * self.g[c]
