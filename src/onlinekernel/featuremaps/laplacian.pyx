# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Random Fourier features of the Laplacian (L1) kernel."""
import numpy as np
from libc.math cimport INFINITY, fabs
from libc.stdint cimport int32_t, int64_t, uint64_t
from onlinekernel.featuremaps.distances cimport l1_distances
from onlinekernel.featuremaps.base cimport CyFeatureMap, FourierFeatureMap
from onlinekernel.core.streams cimport ok_exp_neg, ok_fill_cauchy, ok_fill_uniform

cdef double TWO_PI = 6.283185307179586


def laplacian_kernel(X, Y, double gamma):
    """:math:`\\exp(-\\gamma \\|x - y\\|_1)` for every row ``x`` of ``X`` and ``y`` of ``Y``."""
    from scipy.spatial.distance import cdist
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    return np.exp(-gamma * cdist(X, Y, "cityblock"))


cdef class Laplacian(FourierFeatureMap):
    r"""Random Fourier features of :math:`k(x, x') = \exp(-\gamma \|x - x'\|_1)`.

    The kernel is a product over coordinates of :math:`e^{-\gamma |t|}`, the
    characteristic function of the Cauchy distribution with scale
    :math:`\gamma`; by Bochner's theorem each feature is
    :math:`\sqrt2 \cos(w^\top x + b)` with :math:`w_i \sim \mathrm{Cauchy}(0,
    \gamma)` i.i.d. and :math:`b \sim U[0, 2\pi)`, so that
    :math:`k(x, x') \approx \frac1F \sum_k \phi_k(x) \phi_k(x')`.

    Block parameters: ``w`` (``F x d``, row-major) from stream 0 (standard
    Cauchy draws times ``gamma``), then ``b`` from stream 1.

    Parameters
    ----------
    n_components : int, default=256
        Features per block.
    gamma : float, default=1.0
        Kernel bandwidth parameter, finite and > 0.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("laplacian", n_components=4096, gamma=0.5).bind(3)
    >>> X = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 0.0]])
    >>> fmap.kernel(X, X).round(4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - fmap.kernel(X[:1], X[1:])[0, 0]) < 0.05)
    True
    """
    name = "laplacian"
    cdef readonly double gamma

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0):
        super().__init__(n_components)
        if not (gamma > 0.0 and gamma < INFINITY):
            raise ValueError(f"laplacian: gamma must be a finite number > 0, got {gamma}")
        self.gamma = gamma

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t i, size = self.n_components * self.n_features_in
        ok_fill_cauchy(seed, block, 0, size, params)
        for i in range(size):
            params[i] *= self.gamma
        ok_fill_uniform(seed, block, 1, self.n_components, 0.0, TWO_PI, params + size)

    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil:
        # Cauchy frequencies give the odd huge argument, which float rounds badly
        # (features off by up to 6e-4): float32 models evaluate in double.
        CyFeatureMap.transform_f32(self, params, X, n, ldx, out, work)

    cdef void transform_csr_f32(self, const float* params, const float* params_t,
                                const int64_t* indptr, const int32_t* indices,
                                const float* data, Py_ssize_t n, float* out,
                                float* work) noexcept nogil:
        CyFeatureMap.transform_csr_f32(self, params, params_t, indptr, indices, data, n, out,
                                       work)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        return laplacian_kernel(X, Y, self.gamma)

    cdef int kernel_row(self, const double* C, Py_ssize_t n, const double* x,
                        double* out) noexcept nogil:
        cdef Py_ssize_t i
        l1_distances(C, n, self.n_features_in, x, out)
        for i in range(n):
            out[i] = -self.gamma * out[i]
        ok_exp_neg(out, n)  # one vectorised pass
        return 0

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma}
