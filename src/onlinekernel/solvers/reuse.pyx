# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
r"""Budgeted DSG: which block a training step updates, and how.

A model holds at most ``max_blocks`` blocks of ``F`` random features.  While
it has room, a DSG step (Dai et al. 2014) adds a block with coefficients
``-step / (B F) * Phi^T G`` (``Phi``: the block's features on the batch of
``B`` rows, ``G``: the loss gradients).  The *reuse mode* says what a step
does with the blocks it already has (Li & Póczos 2016):

``"all"``
    Move every block by ``-step / (B F n_blocks) * Phi_j^T G``: the
    expectation of UDSG's update over its uniform choice of block, i.e. the
    functional gradient step projected on all ``M = n_blocks F`` features.
``"uniform"`` (UDSG, Algorithm 3)
    Move one block ``j``, drawn uniformly with the model's seed, by the full
    DSG step ``-step / (B F) * Phi_j^T G``.
``"check"`` (CDSG, Algorithm 4)
    For every block, the largest step ``eta_j`` that keeps the error bound of
    a fresh block (eq. 9, below); take the block with the largest
    ``eta_j`` if ``eta_j >= step``, else add a new block (at the full budget,
    always the best block, with ``max(eta_j, 0)``).
``"none"``
    No reuse: every step is a DSG step on a block of its own.  At the full
    budget the step overwrites the oldest block (slot ``t mod n_blocks``)
    with the DSG step on that slot's features, so the model is the sum of
    the last ``max_blocks`` steps.

``"all"`` and ``"uniform"`` may also reuse before the budget is full: with
``reuse_schedule = (G, U)`` step ``t`` (0-based, counted over the model's
life) adds a block when ``t mod (G + U) < G`` and reuses otherwise.

**The safe step (eq. 9).**  The paper states it for one row and one
feature; with blocks and mini-batches this module uses, for block ``j``
with current coefficients ``beta_j`` (an ``F x K`` matrix) and DSG
direction ``D_j = -Phi_j^T G / (B F)``, the largest ``eta`` with

.. math::

    2 \|\beta_j + \eta D_j\|^2 + 2 \eta^2 S_j / B
    \le \|\beta_j\|^2 + \gamma^2 \|D_j\|^2

(Frobenius norms), where ``S_j`` estimates the variance of the per-row
terms ``d_b = -phi_j(x_b) g_b^T / F`` whose mean is ``D_j`` (the unbiased
sample variance; with one row, its second moment).  The left side bounds the
error of putting the step into the old block, the right side that of a fresh
block with the DSG step ``gamma``.  It is a quadratic
``a eta^2 + b eta + c <= 0`` with ``a = 2 (|D|^2 + S/B)``,
``b = 4 <beta, D>``, ``c = |beta|^2 - gamma^2 |D|^2``, solved analytically
(:func:`safe_step_size`).

**Preconditioning.**  With a ridge ``lam > 0`` a block's update solves
against its feature covariance on the batch, as the DSG reference code does:
``-(step / B^2) (Phi^T Phi / B + lam I)^{-1} Phi^T G``.  On the batch it
moves the outputs by ``-(step / B) Q G`` with
``Q = P (P + lam B I)^{-1}``, ``P = Phi Phi^T``: for ``B <= F`` and a small
ridge every row's output moves by ``step / B`` times its own gradient, the
move plain DSG makes only through the kernel matrix.  The solve uses the
``B x B`` system when ``B <= F`` and the ``F x F`` one otherwise
(:func:`precondition`).

**Projection.**  Prediction is ``f(x) = sum_m c_m phi_m(x)`` over the
``M`` features, each with ``E[phi_w(x) phi_w(x')] = k(x, x')``; the
model's kernel is ``k_M(x, x') = (1/M) sum_m phi_m(x) phi_m(x')`` and the
norm of ``f`` in its RKHS is ``|f|^2 = M |c|^2``.  With a radius ``R``
(``1 / sqrt(alpha)`` for Pegasos) the step ends with
``c <- c min(1, R / |f|)``, one multiplication of the scale.  ``|c|^2`` is
tracked through every update at the cost of the update itself, and computed
afresh (``O(M K)``) once per training call.

Examples
--------
The safe step of a block whose coefficients the gradient points against:

>>> import numpy as np
>>> beta = np.array([[1.0], [0.0]])
>>> D = np.array([[-0.5], [0.0]])
>>> eta = safe_step_size(beta, D, var=0.0, n=64, gamma=1.0)
>>> bool(eta > 1.0)
True
>>> lhs = 2 * np.sum((beta + eta * D) ** 2)
>>> bool(np.isclose(lhs, np.sum(beta ** 2) + np.sum(D ** 2)))
True

UDSG's picks are a pure function of the seed and the step:

>>> uniform_picks(seed=7, first_step=100, n_steps=5, n_blocks=16).tolist()
[6, 15, 15, 10, 12]
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport sqrt, INFINITY
from libc.stdlib cimport malloc, free
from libc.stdint cimport int64_t, uint64_t, uint32_t
from onlinekernel.core.linalg cimport gemm_rm, ok_cholesky, ok_cholesky_solve
from onlinekernel.core.streams cimport ok_stream_words

cnp.import_array()

MODES = ("all", "none", "uniform", "check")

# Block of the seed's stream space whose words pick UDSG's blocks: far above
# any feature block, and apart from the shuffling blocks (1 << 62) + epoch.
cdef uint64_t REUSE_BLOCK = (<uint64_t>3) << 61


cdef double safe_step(double bb, double bd, double dd, double var, Py_ssize_t n,
                      double gamma) noexcept nogil:
    """Largest eta of eq. 9 from |beta|^2, <beta, D>, |D|^2 and the row variance.

    -inf when no step satisfies it.
    """
    cdef double a = 2.0 * (dd + var / n)
    cdef double b = 4.0 * bd
    cdef double c = bb - gamma * gamma * dd
    cdef double disc, r
    if a <= 0.0:
        # D = 0: no step moves anything; the bound holds only for beta = 0
        return 0.0 if bb <= 0.0 else -INFINITY
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        return -INFINITY
    r = sqrt(disc)
    if b <= 0.0:
        return (-b + r) / (2.0 * a)
    return 2.0 * c / (-b - r)  # the same root, without cancellation


cdef class Reuse:
    """How a training call's steps use the blocks (see the module docstring).

    Parameters
    ----------
    mode : {"all", "none", "uniform", "check"}
    new_steps, reuse_steps : int
        The ``(G, U)`` schedule of ``"all"`` and ``"uniform"`` before the
        budget is full.
    ridge : float
        Preconditioning ridge ``lam`` (0: no preconditioning).
    radius : float
        Projection radius in the model's RKHS norm (0: no projection).
    seed : int
        The model's seed (UDSG's picks).
    norm2 : float
        ``|scale * coef|^2`` of the model at the start of the call (used with
        a radius).
    """

    def __cinit__(self):
        self.gram = NULL
        self.rhs = NULL
        self.phi = NULL
        self.direction = NULL
        self.best = NULL
        self.cap_rows = self.cap_F = self.cap_K = 0

    def __init__(self, mode="all", int64_t new_steps=1, int64_t reuse_steps=0,
                 double ridge=0.0, double radius=0.0, uint64_t seed=0, double norm2=0.0):
        if mode not in MODES:
            raise ValueError(f"unknown reuse mode {mode!r}; choose one of {', '.join(MODES)}")
        if new_steps < 1 or reuse_steps < 0:
            raise ValueError(f"the reuse schedule needs G >= 1 new and U >= 0 reuse steps, "
                             f"got ({new_steps}, {reuse_steps})")
        if not (ridge >= 0.0 and radius >= 0.0 and norm2 >= 0.0):
            raise ValueError("ridge, radius and norm2 must be >= 0")
        self.mode = MODES.index(mode)
        self.new_steps = new_steps
        self.reuse_steps = reuse_steps
        self.ridge = ridge
        self.radius = radius
        self.seed = seed
        self.norm2 = norm2
        self.failed = 0

    def __dealloc__(self):
        free(self.gram)
        free(self.rhs)
        free(self.phi)
        free(self.direction)
        free(self.best)

    def prepare(self, Py_ssize_t batch_size, Py_ssize_t F, Py_ssize_t K):
        """Allocate the scratch of steps on ``batch_size`` rows, ``F`` features, ``K`` outputs."""
        if batch_size <= self.cap_rows and F <= self.cap_F and K <= self.cap_K:
            return
        cdef Py_ssize_t r = max(1, min(batch_size, F))
        free(self.gram)
        free(self.rhs)
        free(self.phi)
        free(self.direction)
        free(self.best)
        self.gram = <double*>malloc(r * r * sizeof(double))
        self.rhs = <double*>malloc(r * max(1, K) * sizeof(double))
        self.phi = <double*>malloc(r * max(1, F) * sizeof(double))
        self.direction = <double*>malloc(max(1, F * K) * sizeof(double))
        self.best = <double*>malloc(max(1, F * K) * sizeof(double))
        if (self.gram == NULL or self.rhs == NULL or self.phi == NULL
                or self.direction == NULL or self.best == NULL):
            self.cap_rows = self.cap_F = self.cap_K = 0
            raise MemoryError()
        self.cap_rows, self.cap_F, self.cap_K = batch_size, F, K

    def float32_ready(self, Py_ssize_t batch_size, Py_ssize_t F):
        """Whether float32 steps can run these rules: reuse 'all' with the
        default schedule, preconditioned, no projection, batches <= F rows."""
        return (self.mode == REUSE_ALL and self.new_steps == 1 and self.reuse_steps == 0
                and self.radius <= 0.0 and self.ridge > 0.0 and batch_size <= F)

    def raise_pending(self):
        """Raise (and clear) the error a step left behind."""
        if self.failed:
            self.failed = 0
            raise ValueError("preconditioning failed: a block's feature covariance plus the "
                             "ridge is not positive definite (numerically); use a larger "
                             "precondition ridge")

    @property
    def mode_name(self):
        """The reuse mode, by name."""
        return MODES[self.mode]

    cdef int action(self, Py_ssize_t n_blocks, Py_ssize_t max_blocks, int64_t t) noexcept nogil:
        """What step ``t`` (0-based) does, given the model's blocks and budget."""
        if n_blocks <= 0:
            return ACT_NEW
        if self.mode == REUSE_CHECK:
            return ACT_CHECK
        if n_blocks >= max_blocks:
            if self.mode == REUSE_NONE:
                return ACT_REPLACE
            return ACT_ONE if self.mode == REUSE_UNIFORM else ACT_ALL
        if self.mode == REUSE_NONE or t % (self.new_steps + self.reuse_steps) < self.new_steps:
            return ACT_NEW
        return ACT_ONE if self.mode == REUSE_UNIFORM else ACT_ALL

    cdef Py_ssize_t pick(self, int64_t t, Py_ssize_t n_blocks) noexcept nogil:
        """UDSG's block for step ``t``: word ``t`` of the reuse stream, scaled to ``[0, n)``."""
        cdef uint32_t w
        ok_stream_words(self.seed, REUSE_BLOCK, 0, <uint64_t>t, 1, &w)
        return <Py_ssize_t>((<uint64_t>w * <uint64_t>n_blocks) >> 32)

    cdef void solve_rows(self, const double* phi, Py_ssize_t n, Py_ssize_t F, const double* G,
                         Py_ssize_t K, double c, double* out) noexcept nogil:
        """out (F x K) += c Phi^T (Phi Phi^T + ridge n I)^{-1} G, for n <= F rows."""
        cdef Py_ssize_t i, k
        cdef double mu = self.ridge * n
        gemm_rm(False, True, <int>n, <int>n, <int>F, 1.0, phi, <int>F, phi, <int>F, 0.0,
                self.gram, <int>n)
        for i in range(n):
            self.gram[i * n + i] += mu
        if ok_cholesky(n, self.gram) != 0:
            self.failed = 1
            return
        for i in range(n):  # G (row-major n x K) as a column-major right-hand side
            for k in range(K):
                self.rhs[k * n + i] = G[i * K + k]
        ok_cholesky_solve(n, K, self.gram, self.rhs)
        gemm_rm(True, True, <int>F, <int>K, <int>n, c, phi, <int>F, self.rhs, <int>n, 1.0,
                out, <int>K)

    cdef void solve_cols(self, double* A, double* RT, Py_ssize_t n, Py_ssize_t F,
                         Py_ssize_t K, double c, double* out) noexcept nogil:
        """out (F x K) += c (A + ridge n I)^{-1} R, with A = Phi^T Phi and RT = (Phi^T G)^T.

        ``A`` (F x F) and ``RT`` (K x F, row-major) are overwritten.
        """
        cdef Py_ssize_t i, k
        cdef double mu = self.ridge * n
        for i in range(F):
            A[i * F + i] += mu
        if ok_cholesky(F, A) != 0:
            self.failed = 1
            return
        ok_cholesky_solve(F, K, A, RT)
        for i in range(F):
            for k in range(K):
                out[i * K + k] += c * RT[k * F + i]

    cdef double project(self, double sc, Py_ssize_t n_features) noexcept nogil:
        """The scale after projecting onto the ball of ``radius`` (norm2 follows)."""
        cdef double nrm, s
        if self.radius <= 0.0 or self.norm2 <= 0.0:
            return sc
        nrm = sqrt(n_features * self.norm2)
        if nrm <= self.radius:
            return sc
        s = self.radius / nrm
        self.norm2 *= s * s
        return sc * s


# ---------------------------------------------------------------------------
# Python access to the rules, for tests and for reading the module
# ---------------------------------------------------------------------------
def safe_step_size(beta, direction, double var, Py_ssize_t n, double gamma):
    """The largest step of eq. 9 for a block (see the module docstring).

    Parameters
    ----------
    beta : array-like
        The block's coefficients (any shape).
    direction : array-like
        The DSG direction ``D = -Phi^T G / (B F)``, shaped like ``beta``.
    var : float
        The variance estimate ``S`` of the per-row terms of ``D``.
    n : int
        Rows in the batch (``B``).
    gamma : float
        The DSG step.

    Returns
    -------
    float
        The largest ``eta`` satisfying the inequality, ``-inf`` if none.
    """
    b = np.asarray(beta, dtype=np.float64)
    d = np.asarray(direction, dtype=np.float64)
    if b.shape != d.shape:
        raise ValueError(f"beta {b.shape} and direction {d.shape} differ in shape")
    if n < 1 or not var >= 0.0:
        raise ValueError("n must be >= 1 and var >= 0")
    return safe_step(float(np.sum(b * b)), float(np.sum(b * d)), float(np.sum(d * d)), var, n,
                     gamma)


def precondition(Phi, G, double ridge):
    """``(Phi^T Phi + ridge n I)^{-1} Phi^T G`` by the solver's own routines.

    Uses the ``n x n`` system for ``n <= F`` rows and the ``F x F`` one
    otherwise, as a training step does.

    Parameters
    ----------
    Phi : array-like of shape (n, F)
        A block's features on ``n`` rows.
    G : array-like of shape (n, K)
        The gradients.
    ridge : float
        ``lam > 0``.

    Returns
    -------
    ndarray of shape (F, K)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Phi, G = rng.normal(size=(5, 8)), rng.normal(size=(5, 2))
    >>> X = precondition(Phi, G, 0.1)
    >>> bool(np.allclose((Phi.T @ Phi + 0.1 * 5 * np.eye(8)) @ X, Phi.T @ G))
    True
    """
    cdef double[:, ::1] P = np.ascontiguousarray(Phi, dtype=np.float64)
    cdef double[:, ::1] Gm = np.ascontiguousarray(G, dtype=np.float64)
    cdef Py_ssize_t n = P.shape[0], F = P.shape[1], K = Gm.shape[1]
    if Gm.shape[0] != n or n < 1 or F < 1 or K < 1:
        raise ValueError("Phi (n x F) and G (n x K) need the same n >= 1 rows")
    if not ridge > 0.0:
        raise ValueError(f"ridge must be > 0, got {ridge}")
    out = np.zeros((F, K))
    cdef double[:, ::1] o = out
    cdef Reuse ru = Reuse(ridge=ridge)
    ru.prepare(n, F, K)
    cdef double[:, ::1] A
    cdef double[:, ::1] RT
    if n <= F:
        ru.solve_rows(&P[0, 0], n, F, &Gm[0, 0], K, 1.0, &o[0, 0])
    else:
        A = np.ascontiguousarray(np.asarray(P).T @ np.asarray(P))
        RT = np.ascontiguousarray((np.asarray(P).T @ np.asarray(Gm)).T)
        ru.solve_cols(&A[0, 0], &RT[0, 0], n, F, K, 1.0, &o[0, 0])
    ru.raise_pending()
    return out


def uniform_picks(uint64_t seed, int64_t first_step, Py_ssize_t n_steps, Py_ssize_t n_blocks):
    """The blocks UDSG moves at steps ``first_step .. first_step + n_steps - 1``.

    Parameters
    ----------
    seed : int
        The model's ``seed_``.
    first_step : int
        The 0-based step count ``t_`` before the first of the steps.
    n_steps : int
    n_blocks : int
        The model's blocks at those steps.

    Returns
    -------
    ndarray of int64
    """
    if n_blocks < 1 or n_steps < 0 or first_step < 0:
        raise ValueError("n_blocks must be >= 1, n_steps and first_step >= 0")
    cdef Reuse ru = Reuse(mode="uniform", seed=seed)
    out = np.empty(n_steps, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef Py_ssize_t i
    for i in range(n_steps):
        o[i] = ru.pick(first_step + i, n_blocks)
    return out
