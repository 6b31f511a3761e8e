"""The regularised empirical risk every batch solver minimises.

For coefficients ``C`` (``M x K``) and intercepts ``b`` (``K``)::

    J(C, b) = sum_i w_i loss(y_i, Phi_i C + b) + (alpha * M / 2) * ||C||^2

with row weights ``w`` summing to one.  ``alpha * M * ||C||^2`` is the RKHS
norm of ``f = sum_k C_k phi_k`` under the random-feature kernel
``(1/M) sum_k phi_k(x) phi_k(x')``, so ``alpha`` means what it means to the
stochastic solver: both minimise the same objective.  The intercept is not
penalised.  A solver sees the loss only through the loss protocol
(``loss``, ``gradient``, ``hessian_product``) and the features only through
:class:`~onlinekernel.solvers.features.FeatureOperator`.
"""
from dataclasses import dataclass

import numpy as np

from onlinekernel.core import blas

__all__ = ["Problem", "Solution", "weighted_hessian_product", "constant_terms", "distinct_rows"]

# distinct_rows' sample: more distinct target rows than this among its first
# rows (continuous targets) and the rows stay as they are
_DISTINCT_SAMPLE = 1024
_DISTINCT_MAX = 256


def distinct_rows(Y, w):
    """The distinct rows of ``Y`` with their summed weights, or ``(Y, w)`` when they are many.

    A constant model's risk depends on a row only through its target, so a
    classifier's ``n`` rows are as good as its few distinct targets weighed
    by their rows' total weight (:meth:`Problem.constant_terms`: magic04,
    15,216 rows: the intercept's start 4.4 -> 1.1 ms, of a 29 ms
    128-feature fit).  Continuous targets, told by more than 256 distinct rows among the
    first 1,024, are returned unchanged.

    Examples
    --------
    >>> Y = np.array([[1.0], [-1.0], [1.0], [1.0]])
    >>> Yd, wd = distinct_rows(Y, np.array([0.1, 0.2, 0.3, 0.4]))
    >>> Yd.ravel().tolist(), np.round(wd, 12).tolist()
    ([-1.0, 1.0], [0.2, 0.8])
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    # one column: a plain sort; several: each row's bytes as one item
    keys = Y[:, 0] if Y.shape[1] == 1 else \
        Y.view(np.dtype((np.void, Y.itemsize * Y.shape[1])))[:, 0]
    if np.unique(keys[:_DISTINCT_SAMPLE]).size > _DISTINCT_MAX:
        return Y, w
    first, inverse = np.unique(keys, return_index=True, return_inverse=True)[1:]
    return Y[first], np.bincount(inverse.ravel(), weights=w, minlength=first.size)


def constant_terms(loss, Y, w, b):
    """The risk of the constant outputs ``b`` (shape ``(K,)``) on every row, with its derivatives.

    Returns ``(value, grad, hess)``: ``sum_i w_i loss(y_i, b)``, its
    gradient ``(K,)`` and Hessian ``(K, K)`` with respect to ``b``, from the
    loss protocol (``loss``, ``gradient``, ``hessian_product``; a loss whose
    ``separable_outputs`` says its outputs are terms of their own has a
    diagonal Hessian, one product with a vector of ones).  Sums over rows,
    so a distributed problem adds up its partitions' terms.

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> v, g, H = constant_terms(get_loss("squared"), np.array([[1.0], [3.0]]),
    ...                          np.array([0.5, 0.5]), np.zeros(1))
    >>> float(g[0]), float(H[0, 0])
    (-2.0, 1.0)
    """
    n, K = Y.shape[0], b.shape[0]
    U = np.empty((n, K))
    U[:] = b
    value = float(w @ loss.loss(Y, U))
    grad = w @ loss.gradient(Y, U)
    if getattr(loss, "separable_outputs", False):
        hess = np.diag(w @ loss.hessian_product(Y, U, np.ones((n, K))))
    else:
        hess = np.empty((K, K))
        E = np.zeros((n, K))
        for k in range(K):  # column k of the Hessian: its product with the unit vector e_k
            E[:, k] = 1.0
            hess[:, k] = w @ loss.hessian_product(Y, U, E)
            E[:, k] = 0.0
    return value, np.asarray(grad, dtype=np.float64), hess


def weighted_hessian_product(features, loss, Y, w, U, VC, vb):
    """The risk's Hessian at raw outputs ``U`` times ``(VC, vb)``, without the penalty.

    Returns ``(Phi^T H, sum of H's rows, V)`` with ``V = Phi VC + vb`` the
    direction's raw outputs and ``H = w * loss.hessian_product(Y, U, V)``,
    in one pass over the features (:meth:`FeatureOperator.sandwich`).
    ``vb`` is None without an intercept.  A distributed problem sums its
    partitions' terms.
    """
    hb = np.zeros(VC.shape[1])

    def weigh(r0, r1, V):
        nonlocal hb
        if vb is not None:
            V += vb
        H = loss.hessian_product(Y[r0:r1], U[r0:r1], V) * w[r0:r1, None]
        hb = hb + H.sum(axis=0)
        return H

    hC, V = features.sandwich(VC, weigh)
    return hC, hb, V


@dataclass
class Solution:
    """What a batch solver returns."""
    coef: np.ndarray          # (M, K)
    intercept: np.ndarray     # (K,)
    n_iter: int               # outer iterations (Newton steps, L-BFGS steps, CD epochs)
    converged: bool           # the stopping rule was met before max_iter
    objective: float          # J at the solution
    gradient_norm: float      # relative: |grad J| / |grad J at zero| (or the gap)


class Problem:
    """One regularised risk on fixed random features (see the module docstring).

    Parameters
    ----------
    features : FeatureOperator
    loss : CyLoss or Loss
        Any loss of the protocol (``loss``, ``gradient``; ``hessian_product``
        for second-order solvers).
    Y : ndarray of shape (n, m)
        Encoded targets, as the loss takes them.
    sample_weight : ndarray of shape (n,)
        Non-negative row weights (normalised here to sum to one).
    alpha : float
        Penalty strength, as the estimators' ``alpha``.
    fit_intercept : bool
    n_outputs : int
        ``K``, the number of raw outputs.
    """

    def __init__(self, features, loss, Y, sample_weight, alpha, fit_intercept, n_outputs):
        self.features = features
        self.loss = loss
        self.Y = np.ascontiguousarray(Y, dtype=np.float64)
        w = np.asarray(sample_weight, dtype=np.float64)
        self.w = w / w.sum()
        self.M = features.shape[1]
        self.K = int(n_outputs)
        self.lam = float(alpha) * self.M
        self.fit_intercept = bool(fit_intercept)

    #: Whether :meth:`normal_equations` keeps its result for the next call
    #: (a regularisation path solves the same rows for several ``lam``).
    keep_normal_equations = False
    # what is kept (class defaults: a subclass may build its instances alone)
    _normal = _row_gram = _zero_gradient_norm = _distinct = None

    def raw(self, C, b):
        """Raw outputs ``Phi C + b``, shape ``(n, K)``."""
        if not np.any(C):  # a cold start: no pass over the features for zeros
            U = np.empty((self.features.shape[0], self.K))
            U[:] = b
            return U
        return self.features.matvec(C) + b

    def value(self, C, U):
        """``J`` from the coefficients and their raw outputs ``U``."""
        return float(self.w @ self.loss.loss(self.Y, U)) + 0.5 * self.lam * float(
            np.einsum("ij,ij->", C, C))

    def gradient(self, C, U):
        """``(dJ/dC, dJ/db)`` at raw outputs ``U``."""
        G = self.loss.gradient(self.Y, U) * self.w[:, None]
        gC = self.features.rmatvec(G) + self.lam * C
        gb = G.sum(axis=0) if self.fit_intercept else np.zeros(self.K)
        return gC, gb

    def hessian_product(self, U, VC, vb, outputs=False):
        """The Hessian of ``J`` at raw outputs ``U`` times the direction ``(VC, vb)``.

        With ``outputs=True`` also the direction's raw outputs ``Phi VC + vb``
        (computed on the way), so that a solver combining directions gets
        their outputs without another pass over the features.
        """
        hC, hb, V = weighted_hessian_product(self.features, self.loss, self.Y, self.w, U, VC,
                                             vb if self.fit_intercept else None)
        hC += self.lam * VC
        hb = hb if self.fit_intercept else np.zeros(self.K)
        return (hC, hb, V) if outputs else (hC, hb)

    #: Whether a solver may draw rows and read their features
    #: (:meth:`FeatureOperator.rows`): the sampled preconditioner of
    #: ``newton-cg`` does.  A distributed problem, whose rows stay on the
    #: workers, does not allow it.
    samples_rows = True

    def curvature_weights(self):
        """``(d, G0)`` of a quadratic loss: the rows' curvatures and the gradient at zero outputs.

        ``d`` (shape ``(n,)``) is ``w`` times the loss's second derivative,
        the same for every output (else ``ValueError``); ``G0`` (``n x K``)
        is ``w`` times the loss's gradient at ``U = 0`` (``-d t`` for targets
        ``t``).
        """
        U0 = np.zeros((self.features.shape[0], self.K))
        D = self.loss.hessian_product(self.Y, U0, np.ones_like(U0)) * self.w[:, None]
        if not np.allclose(D, D[:, :1]):
            raise ValueError(f"{getattr(self.loss, 'name', None) or type(self.loss).__name__}: "
                             f"the outputs have different curvatures; solver 'cholesky' "
                             f"needs one Hessian for all outputs")
        return D[:, 0], self.loss.gradient(self.Y, U0) * self.w[:, None]

    def normal_equations(self, tol=None):
        """What the normal equations of a quadratic loss need, in one pass over the features.

        Returns ``(A, s, h, gC, gb, risk0)``: ``A = Phi^T diag(d) Phi``
        (``M x M``), ``s = Phi^T d``, ``h = sum(d)`` (0 without an
        intercept), the gradient ``(gC, gb)`` at zero coefficients, for the
        curvatures ``d`` of :meth:`curvature_weights`, and the risk at zero
        outputs ``sum_i w_i loss(y_i, 0)`` (with the gradient and ``A``, the
        quadratic objective anywhere, :func:`~onlinekernel.solvers.newton.solve_cholesky`).
        All are sums over rows, so a distributed problem adds up its
        partitions' terms.  With ``tol``, the solve's tolerance, a factored
        map's ``A`` may come from ``B^T D B`` where its rounding still lets
        the penalty ``lam`` reach it (:meth:`FeatureOperator.gram`); kept
        for a path of penalties, or without ``tol``, ``A`` is always formed
        from whitened rows.
        """
        if self._normal is not None:
            A, s, h, gC, gb, risk0 = self._normal
            return A.copy(), s, h, gC, gb, risk0  # the solver overwrites A
        exact = tol is None or self.keep_normal_equations  # a path's penalties may be smaller
        ridge, tol = (0.0, 0.0) if exact else (self.lam, tol)
        A, s, h, gC, gb, risk0 = self.normal_terms(
            lambda d, G: self.features.gram(d, G, ridge=ridge, tol=tol))
        if self.keep_normal_equations:
            self._normal = (A.copy(), s, h, gC, gb, risk0)
        return A, s, h, gC, gb, risk0

    def normal_terms(self, gram):
        """:meth:`normal_equations`' terms, with ``(A, s, gC)`` from ``gram(d, G0)``.

        ``d`` and ``G0`` are :meth:`curvature_weights`; ``gram`` is the
        features' :meth:`FeatureOperator.gram` (with its ridge and tol), or
        a partition's sums over a factored map's ``B`` that a distributed
        problem finishes once they are added up.
        """
        d, G0 = self.curvature_weights()
        gb = G0.sum(axis=0) if self.fit_intercept else np.zeros(self.K)
        A, s, gC = gram(d, G0)
        h = float(d.sum()) if self.fit_intercept else 0.0
        risk0 = float(self.w @ self.loss.loss(self.Y, np.zeros((self.Y.shape[0], self.K))))
        return A, s, h, gC, gb, risk0

    def row_gram(self):
        """``Phi Phi^T`` (``n x n``, float64) of the cached features, for fewer rows than features.

        Kept for the next call like :meth:`normal_equations`.
        """
        if self._row_gram is not None:
            return self._row_gram.copy()
        Phi = np.asarray(self.features.dense(), dtype=np.float64)  # float32 rounding of
        K = blas.gram(Phi.T)  # the products would leave K indefinite at small penalties
        if self.keep_normal_equations:
            self._row_gram = K.copy()
        return K

    def constant_terms(self, b):
        """:func:`constant_terms` of this problem's rows (the intercept-only risk at ``b``).

        Over the :func:`distinct_rows` of the targets, found at the first call.
        """
        if self._distinct is None:
            self._distinct = distinct_rows(self.Y, self.w)
        Y, w = self._distinct
        return constant_terms(self.loss, Y, w, np.asarray(b, dtype=np.float64))

    def reference_gradient_norm(self, C, b, gnorm):
        """``|grad J|`` at the zero model (``C = 0``, ``b = 0``): what the solvers' ``tol`` is relative to.

        ``gnorm`` is the gradient's norm at a solver's start ``(C, b)``: a
        zero start is the zero model; any other start costs one gradient at
        zero.  Measured from a warm start's own gradient instead, a start
        near the optimum would ask for an ever smaller gradient (a path of
        penalties, each solve started from the last one's solution: Huber at
        alpha = 1e-9 ran 1,000 Newton steps at 3e-3 of a 1e-3 target);
        LIBLINEAR measures from zero for the same reason.  The penalty's gradient
        vanishes at zero, so the value holds for every ``alpha`` and is kept.
        """
        if self._zero_gradient_norm is None:
            if np.any(C) or np.any(b):
                C0, b0 = np.zeros((self.M, self.K)), np.zeros(self.K)
                gnorm = Problem.norm(*self.gradient(C0, self.raw(C0, b0)))
            self._zero_gradient_norm = max(float(gnorm), np.finfo(float).tiny)
        return self._zero_gradient_norm

    @staticmethod
    def norm(gC, gb):
        return float(np.sqrt(np.einsum("ij,ij->", gC, gC) + gb @ gb))
