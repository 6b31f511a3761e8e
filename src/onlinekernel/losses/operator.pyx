# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Operator objectives: losses whose coefficients are a matrix over feature pairs.

Most objectives of the package learn a function
:math:`f = \\sum_i \\alpha_i \\phi_{\\omega_i}`, a vector of coefficients
stepped by the solver of :mod:`onlinekernel.solvers.dsg` through the
:class:`~onlinekernel.losses.base.CyLoss` protocol.  Some learn an *operator*
instead: an iterate
:math:`A = \\sum_{i,j} \\beta_{ij}\\, \\phi_{\\omega_i} \\otimes \\phi_{\\omega_j}`
in the span of feature pairs, whose coefficients form a matrix (the
Gaussian-process posterior variance of Dai et al., 2014, section 4, is
the example: the ``gp_variance`` plugin).  Such an objective subclasses
:class:`CyOperatorObjective` and is registered through the same
``onlinekernel_register_losses`` hook as any loss; the estimators that
train operators look it up by name and hand it to the loops of :mod:`onlinekernel.solvers.operator`, which
know only this protocol:

* :func:`~onlinekernel.solvers.operator.operator_pass` evaluates the first ``n_blocks`` blocks of random
  features of a model (``M = n_blocks * F`` features, regenerated from
  ``(seed, j)`` like every block of the package) on each mini-batch, scaled
  by :math:`1/\\sqrt M` so that :math:`z(x)^\\top z(x')` estimates the
  kernel, and calls the objective's ``sgd_step`` (with a step size per
  batch) or ``exact_update`` (the exact minimiser, updated batch by batch);
  it can also accumulate the weighted cross-moments :math:`Z^\\top W Y` and
  :math:`Z^\\top w` of the features with targets in the same pass;
* :func:`~onlinekernel.solvers.operator.operator_readout` evaluates the objective's ``readout`` (a per-row
  prediction from ``A``) on new rows.

The coefficient matrix is ``M x M`` float64, so the memory of an operator is
``8 M^2`` bytes: its feature budget ``M`` bounds it (and the cost of a step,
``O(n M^2)`` for ``n`` rows).

Subclasses implement the ``nogil`` methods declared in ``operator.pxd``;
``has_exact_update`` says whether ``exact_update`` is defined and
``work_size(n, M)`` how much scratch the methods need.
"""
import numpy as np


def _as_square(A, M, name="A"):
    if not isinstance(A, np.ndarray) or A.dtype != np.float64 or A.shape != (M, M) \
            or not A.flags.c_contiguous or not A.flags.writeable:
        raise ValueError(f"{name} must be a writeable C-contiguous float64 array of shape "
                         f"{(M, M)}")
    return A


cdef class CyOperatorObjective(CyParams):
    """Base class of compiled operator objectives (see the module docstring).

    Python attributes describe the objective to the code that uses it:
    ``name`` (the registered name), ``has_exact_update`` and
    ``target_encoding = "none"`` (the objective takes no targets; a
    per-sample estimator given one refuses it with this reason).

    The Python methods :meth:`step`, :meth:`update` and :meth:`predict` run
    the compiled methods on a feature matrix, for tests and experiments.
    """
    name = None
    target_encoding = "none"
    link = "identity"
    has_exact_update = False

    cdef int sgd_step(self, const double* Z, const double* sw, Py_ssize_t n, Py_ssize_t M,
                      double* A, double step, double alpha, double* work) except -1 nogil:
        with gil:
            raise TypeError(f"{type(self).__name__} defines no stochastic step")

    cdef int exact_update(self, const double* Z, const double* sw, Py_ssize_t n, Py_ssize_t M,
                          double* A, double lam, double* work) except -1 nogil:
        with gil:
            raise TypeError(f"operator objective {self.name!r} has no exact update; train it "
                            f"with stochastic steps")

    cdef int readout(self, const double* Z, Py_ssize_t n, Py_ssize_t M, const double* A,
                     double* out, double* work) except -1 nogil:
        with gil:
            raise TypeError(f"{type(self).__name__} defines no readout")

    def work_size(self, Py_ssize_t n, Py_ssize_t M):
        """Doubles of scratch the methods need for ``n`` rows and ``M`` features."""
        return 2 * n * M + n * n

    def initial(self, Py_ssize_t M):
        """The iterate before any data: zeros (no operator)."""
        return np.zeros((M, M))

    # ------------------------------------------------------------------ #
    # Python access (tests, experiments)
    # ------------------------------------------------------------------ #
    def _args(self, Z, A, sample_weight):
        Zc = np.ascontiguousarray(Z, dtype=np.float64)
        if Zc.ndim != 2:
            raise ValueError(f"Z must be 2-d, got shape {np.shape(Z)}")
        A2 = np.array(A, dtype=np.float64, order="C", copy=True)
        _as_square(A2, Zc.shape[1])
        if sample_weight is None:
            sw = np.ones(Zc.shape[0])
        else:
            sw = np.ascontiguousarray(sample_weight, dtype=np.float64)
            if sw.shape != (Zc.shape[0],):
                raise ValueError(f"sample_weight must have shape {(Zc.shape[0],)}")
        work = np.empty(max(1, self.work_size(Zc.shape[0], Zc.shape[1])))
        return Zc, A2, sw, work

    def step(self, Z, A, double step, double alpha, sample_weight=None):
        """``A`` after one stochastic step on the rows of ``Z`` (a new array)."""
        return _apply(self, Z, A, sample_weight, False, step, alpha)

    def update(self, Z, A, double lam, sample_weight=None):
        """``A`` after the exact update with the rows of ``Z`` (a new array)."""
        return _apply(self, Z, A, sample_weight, True, lam, 0.0)

    def predict(self, Z, A):
        """The readout of each row of ``Z``, shape ``(n,)``."""
        Zc, A2, sw, work = self._args(Z, A, None)
        out = np.zeros(Zc.shape[0])
        cdef const double[:, ::1] z = Zc
        cdef double[:, ::1] a = A2
        cdef double[::1] o = out
        cdef double[::1] wk = work
        if Zc.shape[0] and Zc.shape[1]:
            self.readout(&z[0, 0], Zc.shape[0], Zc.shape[1], &a[0, 0], &o[0], &wk[0])
        return out


cdef object _apply(CyOperatorObjective obj, Z, A, sample_weight, bint exact, double a,
                   double alpha):
    """A copy of ``A`` after ``obj``'s exact update (penalty ``a``) or its step (size ``a``)."""
    Zc, A2, sw, work = obj._args(Z, A, sample_weight)
    cdef const double[:, ::1] z = Zc
    cdef double[:, ::1] c = A2
    cdef const double[::1] w = sw
    cdef double[::1] wk = work
    if Zc.shape[0] and Zc.shape[1]:
        if exact:
            obj.exact_update(&z[0, 0], &w[0], Zc.shape[0], Zc.shape[1], &c[0, 0], a, &wk[0])
        else:
            obj.sgd_step(&z[0, 0], &w[0], Zc.shape[0], Zc.shape[1], &c[0, 0], a, alpha,
                         &wk[0])
    return A2
