# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Random features of the arc-cosine kernels (Cho & Saul 2009)."""
import numbers

import numpy as np
from libc.stdint cimport int32_t, int64_t, uint64_t
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.core.streams cimport ok_fill_normal
from onlinekernel.core.linalg cimport csr_project, gemm_rm

cdef double SQRT2 = 1.4142135623730951


cdef inline void _rectify(int order, double* out, Py_ssize_t total) noexcept nogil:
    """The arc-cosine feature of each projection: sqrt(2) * step(z) z^order."""
    cdef Py_ssize_t i
    cdef double z
    # one branch-free loop per order so the compiler vectorises each
    if order == 0:
        for i in range(total):
            out[i] = SQRT2 if out[i] > 0.0 else 0.0
    elif order == 1:
        for i in range(total):
            z = out[i]
            out[i] = SQRT2 * z if z > 0.0 else 0.0
    else:
        for i in range(total):
            z = out[i]
            out[i] = SQRT2 * z * z if z > 0.0 else 0.0


cdef class ArcCosine(CyFeatureMap):
    r"""Random features of the arc-cosine kernel of order :math:`n \in \{0, 1, 2\}`.

    Cho & Saul's kernel is the covariance of an infinite layer of random
    threshold (:math:`n = 0`), ReLU (:math:`n = 1`) or squared-ReLU
    (:math:`n = 2`) units:

    .. math::

        k_n(x, y) = 2\,\mathbb E_{w \sim N(0, I)}\big[H(w^\top x) H(w^\top y)
                    (w^\top x)^n (w^\top y)^n\big]
                  = \frac1\pi \|x\|^n \|y\|^n J_n(\theta),

    with :math:`\theta` the angle between :math:`x` and :math:`y`,
    :math:`J_0 = \pi - \theta`, :math:`J_1 = \sin\theta + (\pi - \theta)\cos\theta`
    and :math:`J_2 = 3\sin\theta\cos\theta + (\pi - \theta)(1 + 2\cos^2\theta)`.
    Each feature is :math:`\sqrt2\, H(w^\top x)\, (w^\top x)^n` with
    :math:`H` the Heaviside step (:math:`H(0) = 0`), so that
    :math:`k(x, y) \approx \frac1F \sum_k \phi_k(x) \phi_k(y)`.

    For order 0 the kernel at a zero input has no limit; it is defined as 0
    there, which is what the features give.

    The Monte-Carlo variance grows with the order: at :math:`x = y` the
    relative standard deviation of one feature product is 1, 2.2 and 4.7
    for orders 0, 1 and 2.

    Block parameters: ``w`` (``F x d``, row-major, standard normal) from
    stream 0; they do not depend on the order.

    Parameters
    ----------
    n_components : int, default=256
        Features per block.
    order : {0, 1, 2}, default=1
        Order of the kernel.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("arccos", n_components=4096, order=1).bind(2)
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> fmap.kernel(X, X).round(4)   # 1 on the diagonal, 1/pi at a right angle
    array([[1.    , 0.3183],
           [0.3183, 1.    ]])
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - 1 / np.pi) < 0.05)
    True
    """
    name = "arccos"
    cdef readonly int order

    def __init__(self, Py_ssize_t n_components=256, order=1):
        super().__init__(n_components)
        if (isinstance(order, (bool, np.bool_)) or not isinstance(order, numbers.Integral)
                or order not in (0, 1, 2)):
            raise ValueError(f"arccos: order must be 0, 1 or 2, got {order!r}")
        self.order = int(order)

    def _sizes(self, Py_ssize_t d):
        return self.n_components * d, 0

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        ok_fill_normal(seed, block, 0, self.n_components * self.n_features_in, params)

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        cdef int d = <int>self.n_features_in, F = <int>self.n_components
        gemm_rm(False, True, <int>n, F, d, 1.0, X, <int>ldx, params, d, 0.0, out, F)
        _rectify(self.order, out, n * F)

    cdef void transform_csr(self, const double* params, const double* params_t,
                            const int64_t* indptr, const int32_t* indices,
                            const double* data, Py_ssize_t n, double* out,
                            double* work) noexcept nogil:
        cdef Py_ssize_t F = self.n_components
        csr_project(params, params_t, F, self.n_features_in, indptr, indices, data, n, out, F)
        _rectify(self.order, out, n * F)

    def _frequency_rows(self):
        # the block is W (F x d) alone, the sparse product's frequencies
        return self.n_components

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        nx = np.sqrt((X ** 2).sum(1))[:, None]
        ny = np.sqrt((Y ** 2).sum(1))[None, :]
        norms = nx * ny
        nonzero = norms > 0.0
        cos = np.divide(X @ Y.T, norms, out=np.zeros_like(norms), where=nonzero)
        cos = np.clip(cos, -1.0, 1.0)
        theta = np.arccos(cos)
        sin = np.sqrt(1.0 - cos ** 2)
        if self.order == 0:
            J = np.pi - theta
        elif self.order == 1:
            J = sin + (np.pi - theta) * cos
        else:
            J = 3.0 * sin * cos + (np.pi - theta) * (1.0 + 2.0 * cos ** 2)
        return np.where(nonzero, norms ** self.order * J / np.pi, 0.0)

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "order": self.order}
