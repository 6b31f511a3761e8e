# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
r"""The Gaussian-process posterior variance as an operator objective.

Dai et al. (2014, section 4 and appendix) write the posterior variance of GP
regression with kernel :math:`k` and noise variance :math:`\sigma^2` on
:math:`n` rows,

.. math::

    \sigma^2(x) = k(x, x) - k_x^\top (K + \sigma^2 I)^{-1} k_x ,

through the covariance operator :math:`C = E_x[k(x,\cdot)\otimes k(x,\cdot)]`:
by :math:`\Phi(\Phi^\top\Phi + \sigma^2 I)^{-1}\Phi^\top
= \Phi\Phi^\top(\Phi\Phi^\top + \sigma^2 I)^{-1}`,
:math:`\sigma^2(x) = k(x,x) - \langle k_x, A\, k_x\rangle` with
:math:`A = C (C + \nu I)^{-1}`, :math:`\nu = \sigma^2 / n`, the minimiser of
the strongly convex operator objective

.. math::

    R(A) = \tfrac12 E_x \|k_x - A\, k_x\|^2 + \tfrac{\nu}{2}\|A\|_{HS}^2 .

With ``M`` random features :math:`z(x) = \phi_\omega(x)/\sqrt M`
(:math:`z(x)^\top z(x') \approx k(x, x')`), the iterate lives in the span of
the feature pairs, :math:`A = \sum_{ij} A_{ij}\, z_i \otimes z_j`, and the
objective becomes, for a symmetric ``M x M`` matrix :math:`A`,

.. math::

    R(A) = \tfrac12 E_x \|z - A z\|^2 + \tfrac{\nu}{2}\|A\|_F^2,
    \qquad \nabla R = \operatorname{sym}\big((A - I)\,C\big) + \nu A,
    \qquad A^\star = C (C + \nu I)^{-1},

with :math:`C = E[z z^\top]`.  The readout is the variance of the GP whose
kernel is the features' own, :math:`\hat k(x, x') = z(x)^\top z(x')`:

.. math::

    \hat\sigma^2(x) = z^\top z - z^\top A z
    \;\overset{A = A^\star}{=}\; \sigma^2\, z^\top (Z^\top Z + \sigma^2 I)^{-1} z .

The prior term is :math:`\hat k(x,x) = z^\top z`, not the exact
:math:`k(x,x)`: both terms are then estimated by the same features and the
difference stays a variance (non-negative at :math:`A^\star`), whereas the
exact :math:`k(x, x)` minus a random-feature estimate of size
:math:`\approx k(x,x)` leaves an error of order :math:`M^{-1/2}`, larger than
the posterior variance itself wherever data are dense.

Dai et al.'s doubly stochastic version draws fresh features
:math:`\omega, \omega'` at every step, so the pair set, and the memory,
grow as :math:`t^2`; here the features are the first blocks of the model's
seeded stream, fixed from the start (the feature budget :math:`M`), and the
steps are stochastic in the data only.

Two ways to reach :math:`A^\star` (the operator loops of
:mod:`onlinekernel.losses.operator` call them):

* ``sgd_step`` -- Dai et al.'s stochastic step with the symmetrised batch
  gradient, for rows :math:`z_b` with weights :math:`w_b`:
  :math:`A \leftarrow (1 - \gamma\nu) A + \frac{\gamma}{B}\sum_b w_b
  \operatorname{sym}\big((z_b - A z_b) z_b^\top\big)`.  Stable for
  :math:`\gamma \lesssim 1/\lambda_{\max}(C)` (:math:`\le 1`, since
  :math:`\operatorname{tr} C = E\|z\|^2 \approx 1`), but a direction of
  :math:`C` with eigenvalue :math:`c` converges at the rate
  :math:`(1 - \gamma(c + \nu))^t`, and the variance is decided by the
  directions with :math:`c \approx \nu = \sigma^2/n`: about
  :math:`n/\sigma^2` steps.
* ``exact_update`` -- the exact minimiser of the sum-form objective
  :math:`\frac12\sum_i w_i\|z_i - A z_i\|^2 + \frac{\lambda}{2}\|A\|_F^2`
  (:math:`\lambda = \sigma^2`), :math:`A = S(S + \lambda I)^{-1}`,
  :math:`S = \sum_i w_i z_i z_i^\top`, updated batch by batch (Woodbury):
  with :math:`Z_w = \operatorname{diag}(\sqrt w) Z` and
  :math:`W = (I - A) Z_w^\top`,

  .. math::

      A \leftarrow A + W\,(\lambda I + Z_w W)^{-1} W^\top,

  which costs :math:`O(B M^2)` per batch of :math:`B` rows, needs no
  :math:`M^3` factorisation and gives the same matrix whatever the order and
  the batching of the rows.

Memory: the matrix, :math:`8 M^2` bytes (32 MiB for 2048 features).
"""
import numpy as np
from libc.math cimport sqrt
from scipy.linalg.cython_blas cimport dgemm, dsymm, dsyr2k, dsyrk, dtrsm
from scipy.linalg.cython_lapack cimport dpotrf
from onlinekernel.losses.operator cimport CyOperatorObjective


cdef enum:
    MIRROR_TILE = 64


cdef inline void _mirror(double* A, Py_ssize_t M) noexcept nogil:
    """Copy the upper triangle (column-major) of A onto its lower one.

    Tile by tile, so that the strided reads of a tile stay in cache.
    """
    cdef Py_ssize_t i0 = 0, j0, i, j, i1, j1
    while i0 < M:
        i1 = min(i0 + <Py_ssize_t>MIRROR_TILE, M)
        j0 = i0
        while j0 < M:
            j1 = min(j0 + <Py_ssize_t>MIRROR_TILE, M)
            for i in range(i0, i1):
                for j in range(max(j0, i + 1), j1):
                    A[j + i * M] = A[i + j * M]
            j0 = j1
        i0 = i1


cdef inline void _sym_times(const double* A, const double* Z, Py_ssize_t n, Py_ssize_t M,
                            double* out) noexcept nogil:
    """out (M x n, column-major) = A Z^T, Z given row-major n x M."""
    cdef char side = b'L', uplo = b'U'
    cdef int m_ = <int>M, n_ = <int>n
    cdef double one = 1.0, zero = 0.0
    dsymm(&side, &uplo, &m_, &n_, &one, <double*>A, &m_, <double*>Z, &m_, &zero, out, &m_)


cdef class GPVariance(CyOperatorObjective):
    r"""Posterior variance of GP regression: Dai et al.'s operator objective.

    Learns :math:`A \approx C(C + \nu I)^{-1}` over the pairs of ``M``
    random features, and reads out :math:`z^\top z - z^\top A z`, the
    posterior variance of the latent function (see the module docstring
    for the derivation).  The penalty is supplied by the caller: ``alpha``
    :math:`= \nu = \sigma^2/n` for stochastic steps, ``lam``
    :math:`= \sigma^2` for the exact update.  Used by
    :class:`onlinekernel.DSGGaussianProcessRegressor`.

    Examples
    --------
    The exact update reproduces the posterior variance of Bayesian linear
    regression on the features, in any batching:

    >>> import numpy as np
    >>> from onlinekernel import get_loss
    >>> obj = get_loss("gp_variance")
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(50, 8)) / np.sqrt(8)
    >>> A = obj.update(Z[:20], obj.initial(8), lam=0.1)
    >>> A = obj.update(Z[20:], A, lam=0.1)
    >>> z = rng.normal(size=(3, 8)) / np.sqrt(8)
    >>> exact = 0.1 * np.einsum("ij,jk,ik->i", z, np.linalg.inv(Z.T @ Z + 0.1 * np.eye(8)), z)
    >>> bool(np.allclose(obj.predict(z, A), exact))
    True
    """
    name = "gp_variance"
    has_exact_update = True

    def __init__(self):
        pass

    def work_size(self, Py_ssize_t n, Py_ssize_t M):
        return 2 * n * M + n * n

    cdef int sgd_step(self, const double* Z, const double* sw, Py_ssize_t n, Py_ssize_t M,
                      double* A, double step, double alpha, double* work) except -1 nogil:
        cdef double* R = work
        cdef double* Zw = work + n * M
        cdef Py_ssize_t i, k
        cdef char uplo = b'U', trans = b'N'
        cdef int m_ = <int>M, n_ = <int>n
        cdef double coef = step / (2.0 * n)
        cdef double beta = 1.0 - step * alpha
        if beta < 0.0:
            beta = 0.0  # a step beyond 1/alpha empties A; it never flips its sign
        _sym_times(A, Z, n, M, R)
        for i in range(n):
            for k in range(M):
                R[i * M + k] = Z[i * M + k] - R[i * M + k]
                Zw[i * M + k] = sw[i] * Z[i * M + k]
        # A <- beta A + step/(2n) (R Zw^T + Zw R^T): the symmetrised gradient
        dsyr2k(&uplo, &trans, &m_, &n_, &coef, R, &m_, Zw, &m_, &beta, A, &m_)
        _mirror(A, M)
        return 0

    cdef int exact_update(self, const double* Z, const double* sw, Py_ssize_t n, Py_ssize_t M,
                          double* A, double lam, double* work) except -1 nogil:
        cdef double* Zw = work
        cdef double* W = work + n * M
        cdef double* K = work + 2 * n * M
        cdef Py_ssize_t i, k
        cdef double r
        cdef int m_ = <int>M, n_ = <int>n, info = 0
        cdef char tr = b'T', nt = b'N', lo = b'L', up = b'U', right = b'R'
        cdef double one = 1.0, zero = 0.0
        if not lam > 0.0:
            with gil:
                raise ValueError(f"gp_variance: the exact update needs lam > 0, got {lam}")
        for i in range(n):
            r = sqrt(sw[i]) if sw[i] > 0.0 else 0.0
            for k in range(M):
                Zw[i * M + k] = r * Z[i * M + k]
        # W = (I - A) Zw^T
        _sym_times(A, Zw, n, M, W)
        for i in range(n * M):
            W[i] = Zw[i] - W[i]
        # K = lam I + Zw W  (n x n, symmetric positive definite: eigenvalues >= lam)
        dgemm(&tr, &nt, &n_, &n_, &m_, &one, Zw, &m_, W, &m_, &zero, K, &n_)
        for i in range(n):
            K[i * n + i] += lam
        dpotrf(&lo, &n_, K, &n_, &info)
        if info != 0:
            with gil:
                raise FloatingPointError(
                    f"gp_variance: the update matrix is not positive definite (LAPACK dpotrf "
                    f"info={info}); the noise variance {lam!r} is too small for float64 here")
        # W <- W L^{-T}, then A += W W^T = (I - A) Zw^T K^{-1} Zw (I - A)
        dtrsm(&right, &lo, &tr, &nt, &m_, &n_, &one, K, &n_, W, &m_)
        dsyrk(&up, &nt, &m_, &n_, &one, W, &m_, &one, A, &m_)
        _mirror(A, M)
        return 0

    cdef int readout(self, const double* Z, Py_ssize_t n, Py_ssize_t M, const double* A,
                     double* out, double* work) except -1 nogil:
        cdef double* P = work
        cdef Py_ssize_t i, k
        cdef double s
        _sym_times(A, Z, n, M, P)
        for i in range(n):
            s = 0.0
            for k in range(M):
                s += Z[i * M + k] * (Z[i * M + k] - P[i * M + k])
            out[i] = s
        return 0

    def value(self, Z, A, double alpha, sample_weight=None):
        r"""The mean-form objective :math:`\frac1{2n}\sum_i w_i\|z_i - A z_i\|^2 + \frac{\alpha}{2}\|A\|_F^2`."""
        Z = np.asarray(Z, dtype=np.float64)
        A = np.asarray(A, dtype=np.float64)
        w = np.ones(Z.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)
        R = Z - Z @ A.T
        return float(0.5 * np.mean(w * (R ** 2).sum(axis=1)) + 0.5 * alpha * (A ** 2).sum())

    def get_params(self, deep=True):
        return {}
