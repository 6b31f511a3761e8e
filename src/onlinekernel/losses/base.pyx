# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Loss protocol: the compiled base classes and the adapter for Python losses.

A loss maps targets ``y`` (``n x m``) and raw predictions ``raw`` (``n x k``)
to per-sample values and to the gradient ``d loss / d raw`` (``n x k``).  One
argument order, ``(y, raw)``, and one sign convention, the derivative with
respect to the raw prediction, hold everywhere.

Compiled losses subclass :class:`CyScalarLoss` (elementwise, ``m == k``) or
:class:`CyLoss` (row-wise, e.g. the multinomial loss with ``m == 1``) and
implement ``nogil`` methods; pure-Python losses subclass
:class:`onlinekernel.Loss` and are wrapped by :class:`PyLossAdapter`.

Both kinds expose the same Python-level interface, vectorised over rows:
``loss(y, raw)`` returns one value per row and ``gradient(y, raw)`` the
``n x k`` gradient; ``target_encoding`` (``"margin"``, ``"class_index"`` or
``"real"``), ``link`` (``"identity"``, ``"logistic"``, ``"softmax"``),
``multiclass_loss()`` and ``get_params()`` tell the estimators how to use it.
"""
import numpy as np

from libc.math cimport fabs

from onlinekernel.core.curvature import finite_difference_hessian_product
from onlinekernel.core.params import clone_of
from onlinekernel.core.protocol import as_compiled
cimport numpy as cnp

cnp.import_array()

# The central differences' relative step (onlinekernel.core.curvature's).
cdef double FD_STEP = 1e-4


def _as_2d(a, name):
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-d or 2-d, got shape {np.shape(a)}")
    return arr


cdef class CyLoss(CyParams):
    """Base class of compiled losses (see the module docstring).

    Subclasses override the ``nogil`` row methods; the batch methods loop
    over rows.  Python attributes (class level) describe how estimators use
    the loss: ``name``, ``target_encoding``, ``link``.
    """
    name = None
    target_encoding = "margin"
    link = "identity"
    # how intercept_step treats the intercept: "constant_feature" (the
    # default rule) or a loss's own name for the rule it implements
    intercept_rule = "constant_feature"
    # How the batch solvers may treat the loss (see onlinekernel.core.curvature)
    # and which constructor parameters are in the target's units (divided by
    # the target's scale when a regressor standardises its targets).
    curvature = None
    target_unit_params = ()
    # whether each output's loss is a term of its own (a block-diagonal Hessian)
    separable_outputs = False

    cdef double row_loss(self, const double* y, const double* raw, Py_ssize_t k) noexcept nogil:
        return 0.0

    cdef void row_gradient(self, const double* y, const double* raw, Py_ssize_t k,
                           double* out) noexcept nogil:
        cdef Py_ssize_t c
        for c in range(k):
            out[c] = 0.0

    cdef int batch_gradient(self, const double* Y, Py_ssize_t m, const double* U,
                            Py_ssize_t n, Py_ssize_t k, double* G) except -1 nogil:
        cdef Py_ssize_t i
        for i in range(n):
            self.row_gradient(Y + i * m, U + i * k, k, G + i * k)
        return 0

    cdef int batch_loss(self, const double* Y, Py_ssize_t m, const double* U,
                        Py_ssize_t n, Py_ssize_t k, double* out) except -1 nogil:
        cdef Py_ssize_t i
        for i in range(n):
            out[i] = self.row_loss(Y + i * m, U + i * k, k)
        return 0

    cdef void intercept_step(self, double* b, const double* G, Py_ssize_t n, Py_ssize_t k,
                             double step, double shrink) noexcept nogil:
        """Default: the intercept is the weight of a constant feature (kernel
        k + 1): shrunk like the coefficients, moved by ``-step * mean(G)``.
        Objectives with their own scalar state (novelty's offset) override
        this."""
        cdef Py_ssize_t i, c
        cdef double gsum
        for c in range(k):
            gsum = 0.0
            for i in range(n):
                gsum += G[i * k + c]
            b[c] = shrink * b[c] - step * gsum / n

    def n_targets(self, Py_ssize_t n_outputs):
        """Number of target columns for ``n_outputs`` raw outputs."""
        return 1 if self.target_encoding == "class_index" else n_outputs

    def _check(self, y, raw):
        Y = _as_2d(y, "y")
        U = _as_2d(raw, "raw")
        if Y.shape[0] != U.shape[0] or Y.shape[1] != self.n_targets(U.shape[1]):
            raise ValueError(f"y of shape {Y.shape} does not match raw of shape {U.shape}")
        return Y, U

    def _direction(self, v, U):
        """The direction ``v`` of a Hessian product as a float64 array of ``raw``'s shape."""
        V = _as_2d(v, "v")
        if V.shape != U.shape:
            raise ValueError(f"v of shape {np.shape(v)} does not match raw of shape {U.shape}")
        return V

    def loss(self, y, raw):
        """Per-row loss values, shape ``(n,)``."""
        Y, U = self._check(y, raw)
        out = np.empty(U.shape[0], dtype=np.float64)
        cdef const double[:, ::1] y_ = Y
        cdef const double[:, ::1] u_ = U
        cdef double[::1] o_ = out
        if U.shape[0]:
            self.batch_loss(&y_[0, 0], Y.shape[1], &u_[0, 0], U.shape[0], U.shape[1], &o_[0])
        return out

    def gradient(self, y, raw):
        """Gradient with respect to ``raw``, shape ``(n, k)``."""
        Y, U = self._check(y, raw)
        out = np.empty_like(U)
        cdef const double[:, ::1] y_ = Y
        cdef const double[:, ::1] u_ = U
        cdef double[:, ::1] o_ = out
        if U.shape[0]:
            self.batch_gradient(&y_[0, 0], Y.shape[1], &u_[0, 0], U.shape[0], U.shape[1],
                                &o_[0, 0])
        return out

    def hessian_product(self, y, raw, v):
        """Per row, the Hessian with respect to ``raw`` times ``v``, shape ``(n, k)``.

        By default central differences of :meth:`gradient`
        (:mod:`onlinekernel.core.curvature`); subclasses may give the exact product.
        """
        return finite_difference_hessian_product(self, y, raw, v)

    def multiclass_loss(self):
        """The loss used for more than two classes (default: self, one-vs-rest)."""
        return self


cdef class CyScalarLoss(CyLoss):
    """Base class of elementwise compiled losses: implement ``value`` and ``deriv``."""
    separable_outputs = True  # one term per output

    cdef double value(self, double y, double raw) noexcept nogil:
        return 0.0

    cdef double deriv(self, double y, double raw) noexcept nogil:
        return 0.0

    cdef double second(self, double y, double raw) noexcept nogil:
        # central differences, the step relative to the output as in
        # onlinekernel.core.curvature
        cdef double h = FD_STEP * (fabs(raw) if fabs(raw) > 1.0 else 1.0)
        return (self.deriv(y, raw + h) - self.deriv(y, raw - h)) / (2.0 * h)

    def hessian_product(self, y, raw, v):
        """Per row, the Hessian with respect to ``raw`` times ``v``: ``second(y, raw) * v``.

        An elementwise loss's Hessian is diagonal; its entries are the
        compiled ``second`` (exact where the loss defines it, else central
        differences of ``deriv``), one pass without temporaries (the batch
        solvers call this on every Hessian product).

        Examples
        --------
        >>> from onlinekernel import get_loss
        >>> get_loss("squared").hessian_product([[1.0]], [[3.0]], [[2.0]])
        array([[2.]])
        """
        Y, U = self._check(y, raw)
        V = self._direction(v, U)
        out = np.empty_like(U)
        cdef const double[:, ::1] y_ = Y
        cdef const double[:, ::1] u_ = U
        cdef const double[:, ::1] v_ = V
        cdef double[:, ::1] o_ = out
        cdef Py_ssize_t i, c
        with nogil:
            for i in range(u_.shape[0]):
                for c in range(u_.shape[1]):
                    o_[i, c] = self.second(y_[i, c], u_[i, c]) * v_[i, c]
        return out

    cdef double row_loss(self, const double* y, const double* raw, Py_ssize_t k) noexcept nogil:
        cdef Py_ssize_t c
        cdef double s = 0.0
        for c in range(k):
            s += self.value(y[c], raw[c])
        return s

    cdef void row_gradient(self, const double* y, const double* raw, Py_ssize_t k,
                           double* out) noexcept nogil:
        cdef Py_ssize_t c
        for c in range(k):
            out[c] = self.deriv(y[c], raw[c])


cdef class PyLossAdapter(CyLoss):
    """Runs a pure-Python :class:`onlinekernel.Loss` through the compiled solver.

    The solver calls ``batch_gradient`` once per mini-batch; this adapter
    takes the GIL, calls the Python loss's vectorised ``gradient`` and checks
    its shape and finiteness.  It is slower than a compiled loss (one Python
    call per mini-batch), which is why it exists only as an adapter.
    """
    cdef public object loss_obj

    def __init__(self, loss_obj):
        self.loss_obj = loss_obj

    @property
    def name(self):
        return getattr(self.loss_obj, "name", None)

    @property
    def target_encoding(self):
        return self.loss_obj.target_encoding

    @property
    def link(self):
        return self.loss_obj.link

    @property
    def curvature(self):
        return getattr(self.loss_obj, "curvature", None)

    @property
    def target_unit_params(self):
        return tuple(getattr(self.loss_obj, "target_unit_params", ()))

    @property
    def separable_outputs(self):
        return bool(getattr(self.loss_obj, "separable_outputs", False))

    def hessian_product(self, y, raw, v):
        """The Python loss's own ``hessian_product``, its shape checked."""
        Y, U = self._check(y, raw)
        h = np.asarray(self.loss_obj.hessian_product(Y, U, np.asarray(v, dtype=np.float64)),
                       dtype=np.float64)
        if h.ndim == 1 and U.shape[1] == 1:
            h = h[:, None]
        if h.shape != U.shape:
            raise ValueError(f"{type(self.loss_obj).__name__}.hessian_product returned shape "
                             f"{h.shape}, expected {U.shape}")
        return h

    def __getattr__(self, name):
        # the optional protocol of the batch solvers, where the loss has it
        if name == "dual_form" and hasattr(self.loss_obj, "dual_form"):
            return self.loss_obj.dual_form
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    cdef int batch_gradient(self, const double* Y, Py_ssize_t m, const double* U,
                            Py_ssize_t n, Py_ssize_t k, double* G) except -1 nogil:
        with gil:
            y = np.asarray(<double[:n, :m]> Y).copy()
            u = np.asarray(<double[:n, :k]> U).copy()
            g = np.asarray(self.loss_obj.gradient(y, u), dtype=np.float64)
            if g.ndim == 1 and k == 1:
                g = g[:, None]
            if g.shape != (n, k):
                raise ValueError(
                    f"{type(self.loss_obj).__name__}.gradient returned shape {g.shape}, "
                    f"expected {(n, k)}")
            if not np.isfinite(g).all():
                raise FloatingPointError(
                    f"{type(self.loss_obj).__name__}.gradient returned non-finite values")
            (<double[:n, :k]> G)[:, :] = np.ascontiguousarray(g)
        return 0

    cdef int batch_loss(self, const double* Y, Py_ssize_t m, const double* U,
                        Py_ssize_t n, Py_ssize_t k, double* out) except -1 nogil:
        with gil:
            y = np.asarray(<double[:n, :m]> Y).copy()
            u = np.asarray(<double[:n, :k]> U).copy()
            v = np.asarray(self.loss_obj.loss(y, u), dtype=np.float64).reshape(-1)
            if v.shape != (n,):
                raise ValueError(
                    f"{type(self.loss_obj).__name__}.loss returned shape {v.shape}, "
                    f"expected {(n,)}")
            (<double[:n]> out)[:] = v
        return 0

    def multiclass_loss(self):
        inner = self.loss_obj.multiclass_loss()
        return self if inner is self.loss_obj else as_cy_loss(inner)

    def get_params(self, deep=True):
        return self.loss_obj.get_params()

    def set_params(self, **params):
        self.loss_obj.set_params(**params)
        return self

    def __sklearn_clone__(self):
        return PyLossAdapter(clone_of(self.loss_obj))

    def __reduce__(self):
        return (PyLossAdapter, (self.loss_obj,))

    def __repr__(self):
        return f"PyLossAdapter({self.loss_obj!r})"


def as_cy_loss(obj):
    """Return the object the solver runs for loss ``obj`` (compiled or Python)."""
    from onlinekernel.losses import Loss
    return as_compiled(obj, CyLoss, Loss, PyLossAdapter, "loss")
