"""EigenPro: stochastic steps preconditioned by the top of the features' spectrum.

Ma & Belkin (2017, 2019).  On a fixed set of ``M`` random features with unit
second moment, mini-batch SGD on ``f = Phi c`` is limited to steps of about
``1 / lambda_1``, ``lambda_1`` the largest eigenvalue of the features'
covariance ``C = E[phi phi^T]``: the directions of the kernel's top
eigenfunctions then converge in a few steps and all others crawl.  EigenPro
estimates the top ``k + 1`` eigenpairs of ``C`` from ``s`` rows, once, and
steps along

.. math::

    P g = g - \\sum_{i \\le k} \\big(1 - \\lambda_{k+1} / \\lambda_i\\big)
          \\langle v_i, g\\rangle v_i ,

which shrinks the top ``k`` directions to the size of the ``(k+1)``-th, so a
step of ``1 / lambda_{k+1}`` is as stable as ``1 / lambda_1`` was: on
MNIST (4,096 features) ``lambda_1 / lambda_161`` is about 400.  The
correction costs ``O(M k K)`` per step, against ``O(B M d)`` for the
batch's features.

The eigenpairs come from the ``s x s`` Gram matrix of the features of ``s``
rows (LAPACK's ``eigh``); everything per step is computed by the compiled
loops' products (:func:`onlinekernel.solvers.dsg.gemm`), in one fixed order.
"""
import dataclasses

import numpy as np
import scipy.linalg

from onlinekernel.solvers.dsg import block_features, gemm
from onlinekernel.solvers.features import as_rows

__all__ = ["EigenPro", "Iterate", "max_curvature"]

# Power iterations for the loss's largest curvature per row
_POWER_STEPS = 20


def max_curvature(loss, Y, U):
    """The largest eigenvalue of the loss's Hessian in the raw outputs, over the rows.

    Power iteration on ``loss.hessian_product`` from an alternating start
    (for several outputs; one output: the second derivative itself).

    Examples
    --------
    >>> from onlinekernel import get_loss
    >>> Y, U = np.array([[1.0], [-1.0]]), np.zeros((2, 1))
    >>> round(float(max_curvature(get_loss("logistic"), Y, U)), 6)
    0.25
    >>> round(float(max_curvature(get_loss("squared"), Y, U)), 6)
    1.0
    """
    n, K = U.shape
    V = np.where(np.arange(K) % 2 == 0, 1.0, -1.0) * np.ones((n, 1))
    if K > 1:
        V[:, 0] = 2.0  # not orthogonal to the direction of a shared shift either
    for _ in range(_POWER_STEPS if K > 1 else 1):
        V = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-300)
        HV = np.asarray(loss.hessian_product(Y, U, V), dtype=np.float64).reshape(n, K)
        if K == 1:
            return float(np.max(np.abs(HV)))
        V = HV
    return float(np.max(np.linalg.norm(V, axis=1)))


@dataclasses.dataclass
class Iterate:
    """The coefficients a run of steps moves (``coef`` already scaled: ``f = Phi coef + b``)."""
    coef: np.ndarray
    intercept: np.ndarray
    coef_avg: np.ndarray
    intercept_avg: np.ndarray
    t: int
    n_averaged: int
    average_start: int
    average_decay: float = 0.0  # polynomial-decay averaging's eta (0: the plain mean)


@dataclasses.dataclass(frozen=True)
class EigenPro:
    """The preconditioner: ``vectors`` (``M x k``) and ``values`` (``k + 1``) of ``C``, the step.

    ``level`` is the eigenvalue the top directions are flattened to:
    ``lambda_{k+1}``, or more when the batch bound below limits the step
    (directions under the level are then left alone: damping them would
    only slow them down).

    The step is Ma & Belkin's for batches of ``m`` rows,
    ``c m / (beta + (m - 1) level)``, with ``beta`` the largest squared norm
    of a row's features, ``level = max(lambda_{k+1}, beta / m)`` (a batch
    below the critical size ``beta / lambda_{k+1}`` is limited by its own
    noise, not by the spectrum, so the top directions are flattened only
    down to ``beta / m``) and ``c = min(2, 1 / L)``, ``L`` the loss's largest
    curvature (second derivative in the raw output, the largest eigenvalue
    of its Hessian for several outputs) on the rows the spectrum was
    estimated from.  Larger steps -- flattening down to ``lambda_{k+1}``
    with a step of ``2 / lambda_{k+1}`` -- gave lower errors after one pass
    with the logistic losses (MNIST 3.2 %, ijcnn1 2.3 %), but diverged with
    the squared loss (kin40k, cadata) and on ijcnn1's rows in file order
    (19 % error); this rule did not diverge on any of them.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Phi = rng.normal(size=(400, 30)) * np.linspace(3.0, 0.1, 30)  # a decaying spectrum
    >>> pre = EigenPro.estimate(Phi, k=5)
    >>> pre.vectors.shape, pre.values.shape
    ((30, 5), (6,))
    >>> g = rng.normal(size=(30, 1))
    >>> Pg = pre.correct(g)
    >>> # along v_1 the gradient shrinks by lambda_6 / lambda_1, orthogonal to the v_i it stays
    >>> v1 = pre.vectors[:, :1]
    >>> bool(np.isclose((v1.T @ Pg).item(), (v1.T @ g).item() * pre.values[5] / pre.values[0]))
    True
    """
    vectors: np.ndarray
    values: np.ndarray
    step: float
    level: float

    def __post_init__(self):
        V, lam = self.vectors, self.values
        if not (isinstance(V, np.ndarray) and isinstance(lam, np.ndarray) and V.ndim == 2
                and lam.ndim == 1 and lam.shape[0] == V.shape[1] + 1 and V.shape[1] >= 1
                and np.all(np.isfinite(V)) and np.all(np.isfinite(lam)) and lam[-1] > 0
                and np.isfinite(self.step) and self.step > 0
                and np.isfinite(self.level) and self.level >= lam[-1]):
            raise ValueError("an EigenPro preconditioner is M x k vectors, k + 1 finite "
                             "eigenvalues, the last positive, a positive step and a level "
                             "at least the last eigenvalue")

    @classmethod
    def estimate(cls, Phi, k, curvature=1.0, batch_size=None):
        """The top ``k + 1`` eigenpairs of ``Phi^T Phi / s`` from the ``s x s`` Gram matrix.

        ``curvature`` is the loss's ``L`` (see above; :func:`max_curvature`),
        ``batch_size`` the rows per step (``None``: no batch bound).
        """
        s = Phi.shape[0]
        if not 1 <= k < s:
            raise ValueError(f"EigenPro needs more rows ({s}) than directions k={k}")
        P = np.asarray(Phi, dtype=np.float64)
        gram = gemm(np.ascontiguousarray(P), np.ascontiguousarray(P.T)) / s
        values, U = scipy.linalg.eigh(gram, subset_by_index=[s - k - 1, s - 1])
        values, U = values[::-1].copy(), np.ascontiguousarray(U[:, ::-1])
        if not values[k] > 0:
            raise ValueError("the features' covariance has fewer than k + 1 positive "
                             "eigenvalues on these rows: use fewer directions")
        # v_i = Phi^T u_i / sqrt(s lambda_i): unit vectors of C
        vectors = gemm(P, np.ascontiguousarray(U[:, :k]), transpose_a=True)
        vectors /= np.sqrt(s * values[:k])
        factor = min(2.0, 1.0 / max(float(curvature), 1e-12))
        level = float(values[k])
        if batch_size is None:
            return cls(np.ascontiguousarray(vectors.astype(Phi.dtype)), values,
                       factor / level, level)
        # Ma & Belkin's step for batches of m rows, m / (beta + (m - 1) lambda),
        # where beta = max |phi(x)|^2; a batch below the critical size
        # beta / lambda_{k+1} cannot use the flattest level: flatten to beta / m
        beta = float(np.max(np.einsum("ij,ij->i", P, P)))
        m = float(batch_size)
        level = max(level, beta / m)
        step = factor * m / (beta + (m - 1.0) * level)
        return cls(np.ascontiguousarray(vectors.astype(Phi.dtype)), values, step, level)

    def correct(self, g):
        """``P g``: the top ``k`` directions of ``g`` shrunk to the ``level``."""
        V = self.vectors
        damp = np.maximum(0.0, 1.0 - self.level / self.values[:-1]).astype(g.dtype)
        coords = gemm(V, np.ascontiguousarray(g), transpose_a=True) * damp[:, None]
        return g - gemm(V, coords)

    def steps(self, src, loss, X, Y, sw, order, batch_size, alpha, fit_intercept, it,
              n_jobs=1):
        """Mini-batch steps over ``X[order]`` on the full feature set, moving ``it``.

        Each step: features ``Phi`` of the batch, raw outputs, the loss's
        weighted gradient ``G``, then ``coef -= step * P (Phi^T G / B +
        alpha M coef)``; the intercept (a constant feature of second moment
        1) moves by ``min(step, 1)`` times the mean of ``G``.
        """
        M = it.coef.shape[0]
        dt = it.coef.dtype
        step = self.step
        for s in range(0, order.shape[0], batch_size):
            rows = order[s:s + batch_size]
            B = rows.shape[0]
            Xb = as_rows(X[rows], dt)
            Phi = block_features(src, Xb, M // src.fmap.n_components, n_jobs)
            U = gemm(Phi, it.coef).astype(np.float64) + it.intercept
            G = loss.gradient(Y[rows], U) * sw[rows, None]
            g = gemm(Phi, np.ascontiguousarray(G.astype(dt)), transpose_a=True) / B
            if alpha:
                g += (alpha * M) * it.coef
            it.coef -= (step * self.correct(g)).astype(dt)
            if fit_intercept:
                it.intercept = it.intercept - min(step, 1.0) * G.sum(axis=0) / B
            it.t += 1
            if it.average_start >= 0 and it.t > it.average_start:
                it.n_averaged += 1
                w = (1.0 + it.average_decay) / (it.n_averaged + it.average_decay)
                it.coef_avg += (w * (it.coef - it.coef_avg)).astype(dt)
                it.intercept_avg = it.intercept_avg + w * (it.intercept - it.intercept_avg)
            if not (np.all(np.isfinite(it.coef)) and np.all(np.isfinite(it.intercept))):
                raise FloatingPointError("the EigenPro steps diverge (non-finite "
                                         "coefficients); the model is unchanged")
        return it
