"""EigenPro 2 on the exact kernel: kernel regression with every training row as a centre.

Ma & Belkin (2017, 2019).  The model is ``f(x) = sum_i a_i k(c_i, x)`` over
the ``n`` training rows ``c_i`` -- the exact kernel machine, not an
approximation by ``M`` random or Nystrom features -- fitted to the squared
loss by mini-batch gradient steps in the kernel's function space: a batch
``b`` of rows with residuals ``g = f(c_b) - y_b`` moves its own
coefficients, ``a_b -= eta / m * g``.  Plain steps are limited to about
``1 / lambda_1`` (``lambda_1`` the largest eigenvalue of the kernel's
integral operator on the data), so the directions of the small eigenvalues
crawl.  EigenPro estimates the top ``q + 1`` eigenpairs from the kernel
matrix of ``s`` subsampled rows, ``K_ss = V diag(sigma) V^T``, and steps
along

.. math::

    P h = h - \\sum_{i \\le q} (1 - \\sigma_{q+1} / \\sigma_i)
          \\langle \\psi_i, h \\rangle_{\\mathcal H} \\psi_i ,

``psi_i`` the eigenfunctions of unit norm, which shrinks the top ``q``
directions to the size of the ``(q+1)``-th.  In coefficients the correction
lives on the subsample: ``a_s += eta / m * V D V^T k(c_s, c_b) g`` with
``D = diag((1 - sigma_{q+1} / sigma_i) / sigma_i)``.  The batch size and
step are EigenPro 2's: ``m = beta / lambda_{q+1}`` (``beta = max k(x, x)``,
``lambda = sigma / s``) and ``eta = m / (beta + (m - 1) lambda_{q+1})``.

Each epoch costs ``n^2`` kernel values (``O(n^2 d)``), computed tile by tile
through the feature map's exact ``kernel(X, Y)`` and never stored: memory is
the centres, the coefficients and one batch's tiles.  The tiles of centres
are shared among ``n_jobs`` threads (one BLAS thread each) and their products
summed in tile order, so the result does not depend on the threads.
"""
import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from onlinekernel.core.streams import words

__all__ = ["Preconditioner", "preconditioner", "kernel_products", "centre_order",
           "eigenpro_epoch"]

#: Centres per kernel tile: a 2,048-row batch's tile is 16 MiB in float32.
TILE = 2048
#: The seeded draws' block of the package's Philox streams: the centres' order
#: (the subsample first); block ``_ORDER_BLOCK + 1 + e`` orders epoch ``e``'s batches.
_ORDER_BLOCK = 0


def kernel_products(kernel, X, C, A, n_jobs=1, keep=0):
    """``k(X, C) @ A`` by tiles of ``TILE`` centres, and the first ``keep`` columns of ``k(X, C)``.

    Parameters
    ----------
    kernel : callable
        ``kernel(X, Y)``, the exact kernel matrix (a feature map's ``kernel``).
    X : ndarray of shape (m, d)
    C : ndarray of shape (n, d)
        The centres.
    A : ndarray of shape (n, K)
        Their coefficients.
    n_jobs : int, default=1
        Threads sharing the tiles; each tile runs on one BLAS thread.
    keep : int, default=0
        Columns of ``k(X, C)`` to return as well.

    Returns
    -------
    out : ndarray of shape (m, K), float64
        The tiles' products summed in tile order (the same for any ``n_jobs``).
    kept : ndarray of shape (m, keep)

    Examples
    --------
    >>> from onlinekernel.featuremaps.gaussian import gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X, C, A = rng.normal(size=(3, 2)), rng.normal(size=(5000, 2)), rng.normal(size=(5000, 1))
    >>> k = lambda X, Y: gaussian_kernel(X, Y, 0.5)
    >>> out, kept = kernel_products(k, X, C, A, n_jobs=2, keep=4)
    >>> bool(np.allclose(out, k(X, C) @ A)), kept.shape
    (True, (3, 4))
    """
    starts = range(0, C.shape[0], TILE)
    kept = {}

    def tile(start):
        Kt = kernel(X, C[start:start + TILE])
        if start < keep:
            kept[start] = np.array(Kt[:, :keep - start])
        return Kt @ A[start:start + TILE]

    n_threads = max(1, min(n_jobs, len(starts)))
    # one BLAS thread per tile whatever n_jobs: a product's bits depend on how
    # BLAS splits it, and the model must not depend on the threads
    with threadpool_limits(1, user_api="blas"):
        if n_threads == 1:
            parts = [tile(s) for s in starts]
        else:
            with ThreadPoolExecutor(n_threads) as pool:
                parts = list(pool.map(tile, starts))
    out = np.zeros((X.shape[0], A.shape[1]))
    for p in parts:
        out += p
    if not keep:
        return out, np.empty((X.shape[0], 0), dtype=A.dtype)
    return out, np.hstack([kept[s] for s in sorted(kept)])


@dataclasses.dataclass(frozen=True)
class Preconditioner:
    """EigenPro's step on a subsample: ``V`` (``s x q``), ``D`` (``q``), batch size and step."""

    V: np.ndarray
    D: np.ndarray
    batch_size: int
    eta: float
    beta: float
    tail: float  # lambda_{q+1}, the largest eigenvalue the steps see

    def correction(self, Ks, G):
        """The subsample's coefficients' share of a step, per unit step: ``V D V^T Ks^T G``."""
        if not self.D.shape[0]:
            return None
        return (self.V * self.D) @ (self.V.T @ (Ks.T @ G))


def preconditioner(kernel, Cs, n_eigenpairs, max_batch):
    """EigenPro 2's preconditioner from the subsample ``Cs`` (``s`` rows), batches <= max_batch.

    A step of ``m`` rows is as large as ``m / beta`` allows up to EigenPro's
    critical batch ``beta / lambda_{q+1}``; beyond it the batch buys no
    larger step.  ``q`` is therefore the largest number of eigenpairs, at
    most ``n_eigenpairs`` (and ``s - 1``), whose critical batch is at most
    ``max_batch``: flattening more directions than the batch can step over
    would only slow them (the tail of a smooth kernel's spectrum is tiny).
    The batch is then the critical one, capped at ``max_batch``.

    Examples
    --------
    >>> from onlinekernel.featuremaps.gaussian import gaussian_kernel
    >>> C = np.random.default_rng(0).normal(size=(200, 3))
    >>> P = preconditioner(lambda X, Y: gaussian_kernel(X, Y, 0.5), C[:100], 10, 50)
    >>> P.V.shape[0], P.beta
    (100, 1.0)
    >>> bool(P.V.shape[1] <= 10 and P.batch_size <= 50 and P.beta / P.tail <= 50)
    True
    """
    s = Cs.shape[0]
    Kss = np.asarray(kernel(Cs, Cs), dtype=np.float64)
    beta = float(np.max(np.diag(Kss)))
    q = max(0, min(n_eigenpairs, s - 1))
    # the q + 1 largest eigenpairs, largest first
    sigma, V = scipy.linalg.eigh(Kss, subset_by_index=[s - q - 1, s - 1])
    sigma, V = sigma[::-1], V[:, ::-1]
    if not sigma[0] > 0.0:
        raise ValueError("the kernel matrix of the subsample has no positive eigenvalue: "
                         "is gamma so large that every kernel value is 0?")
    lam = sigma / s
    # the eigenvalue a step sees after flattening q directions is lam[q]
    while q > 0 and not lam[q] * max_batch >= beta:
        q -= 1
    tail = float(lam[q])
    m = int(max(1, min(max_batch, round(beta / tail))))
    eta = m / (beta + (m - 1) * tail)
    D = (1.0 - sigma[q] / sigma[:q]) / sigma[:q]
    return Preconditioner(np.ascontiguousarray(V[:, :q]), D, m, eta, beta, tail)


def centre_order(seed, n):
    """A seeded permutation of ``n`` rows (the centres' order: the first ``s`` are the subsample).

    Philox words as sort keys: the same order under any numpy version.
    """
    return np.argsort(words(seed, _ORDER_BLOCK, 0, n), kind="stable")


def eigenpro_epoch(kernel, C, Y, A, P, seed, epoch, n_jobs=1):
    """One epoch of EigenPro steps on the centres ``C`` (their own training rows), on ``A``.

    The subsample is ``C[:s]`` (``s = P.V.shape[0]``).  Returns the mean
    squared residual of the rows, each measured before its batch's step (the
    epoch's progressive training loss).
    """
    n, s = C.shape[0], P.V.shape[0]
    order = np.argsort(words(seed, _ORDER_BLOCK + 1 + epoch, 0, n), kind="stable")
    m = P.batch_size
    sse = 0.0
    for start in range(0, n, m):
        b = np.sort(order[start:start + m])
        F, Ks = kernel_products(kernel, C[b], C, A, n_jobs, keep=s)
        G = F - Y[b]
        sse += float(np.einsum("ij,ij->", G, G))
        step = P.eta / b.shape[0]
        fix = P.correction(Ks, G)
        A[b] -= (step * G).astype(A.dtype, copy=False)
        if fix is not None:
            A[:s] += (step * fix).astype(A.dtype, copy=False)
    return sse / n
