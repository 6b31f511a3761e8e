# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Random Fourier features of the Gaussian (RBF) kernel."""
import numpy as np
from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t, uint64_t
from onlinekernel._featuremap cimport CyFeatureMap
from onlinekernel._random cimport ok_fill_normal, ok_fill_uniform, ok_cos_tile, ok_cos_tile_f32
from onlinekernel._linalg cimport csr_project, gemm_rm, gemm_rm_f32, real

cdef double TWO_PI = 6.283185307179586


cdef class Gaussian(CyFeatureMap):
    r"""Random Fourier features of :math:`k(x, x') = \exp(-\gamma \|x - x'\|^2)`.

    Each feature is :math:`\sqrt2 \cos(w^\top x + b)` with
    :math:`w \sim N(0, 2\gamma I)` and :math:`b \sim U[0, 2\pi)`; with
    ``pairs=True`` a block holds ``F/2`` frequencies and both
    :math:`\sqrt2\cos(w^\top x)` and :math:`\sqrt2\sin(w^\top x)` (lower
    variance per feature, no phase).

    Block parameters: ``w`` from stream 0 (normal draws), ``b`` from stream 1.

    Parameters
    ----------
    n_components : int, default=256
        Features per block (even when ``pairs=True``).
    gamma : float, default=1.0
        Kernel bandwidth parameter, > 0.
    pairs : bool, default=False
        Use the sin/cos pair variant.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("gaussian", n_components=4096, gamma=0.5).bind(3)
    >>> X = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - fmap.kernel(X[:1], X[1:])[0, 0]) < 0.05)
    True
    """
    name = "gaussian"
    cdef readonly double gamma
    cdef readonly bint pairs

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0, bint pairs=False):
        super().__init__(n_components)
        if not gamma > 0.0:
            raise ValueError(f"gaussian: gamma must be > 0, got {gamma}")
        if pairs and n_components % 2:
            raise ValueError(f"gaussian: pairs=True needs an even n_components, got {n_components}")
        self.gamma = gamma
        self.pairs = pairs

    def _sizes(self, Py_ssize_t d):
        if self.pairs:
            return (self.n_components // 2) * d, 0
        return self.n_components * d + self.n_components, 0

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t nw = self.n_components // 2 if self.pairs else self.n_components
        cdef Py_ssize_t i, size = nw * self.n_features_in
        cdef double s = sqrt(2.0 * self.gamma)
        ok_fill_normal(seed, block, 0, size, params)
        for i in range(size):
            params[i] *= s
        if not self.pairs:
            ok_fill_uniform(seed, block, 1, self.n_components, 0.0, TWO_PI, params + size)

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        cdef int d = <int>self.n_features_in, F = <int>self.n_components
        cdef int h = F // 2
        if self.pairs:
            # out[:, :h] = out[:, h:] = X W^T, then cos on the left, sin on the right
            gemm_rm(False, True, <int>n, h, d, 1.0, X, <int>ldx, params, d, 0.0, out, F)
            gemm_rm(False, True, <int>n, h, d, 1.0, X, <int>ldx, params, d, 0.0, out + h, F)
            ok_cos_tile(out, n, h, F, NULL, 1.4142135623730951, 0)
            ok_cos_tile(out + h, n, h, F, NULL, 1.4142135623730951, 3)
        else:
            gemm_rm(False, True, <int>n, F, d, 1.0, X, <int>ldx, params, d, 0.0, out, F)
            ok_cos_tile(out, n, F, F, params + F * d, 1.4142135623730951, 0)

    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil:
        cdef int d = <int>self.n_features_in, F = <int>self.n_components
        cdef int h = F // 2
        if self.pairs:
            gemm_rm_f32(False, True, <int>n, h, d, 1.0, X, <int>ldx, params, d, 0.0, out, F)
            gemm_rm_f32(False, True, <int>n, h, d, 1.0, X, <int>ldx, params, d, 0.0, out + h, F)
            ok_cos_tile_f32(out, n, h, F, NULL, 1.4142135623730951, 0)
            ok_cos_tile_f32(out + h, n, h, F, NULL, 1.4142135623730951, 3)
        else:
            gemm_rm_f32(False, True, <int>n, F, d, 1.0, X, <int>ldx, params, d, 0.0, out, F)
            ok_cos_tile_f32(out, n, F, F, params + F * d, 1.4142135623730951, 0)

    cdef void transform_csr(self, const double* params, const int64_t* indptr,
                            const int32_t* indices, const double* data, Py_ssize_t n,
                            double* out, double* work) noexcept nogil:
        _csr_features(self, params, indptr, indices, data, n, out)

    cdef void transform_csr_f32(self, const float* params, const int64_t* indptr,
                                const int32_t* indices, const float* data, Py_ssize_t n,
                                float* out, float* work) noexcept nogil:
        _csr_features(self, params, indptr, indices, data, n, out)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        X = np.asarray(X, dtype=np.float64)
        Y = np.asarray(Y, dtype=np.float64)
        d2 = (X ** 2).sum(1)[:, None] + (Y ** 2).sum(1)[None, :] - 2.0 * X @ Y.T
        return np.exp(-self.gamma * np.maximum(d2, 0.0))

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma, "pairs": self.pairs}


cdef void _csr_features(Gaussian fmap, const real* params, const int64_t* indptr,
                        const int32_t* indices, const real* data, Py_ssize_t n,
                        real* out) noexcept nogil:
    """The features of n CSR rows: the sparse projection, then the cosines of ``transform``."""
    cdef Py_ssize_t d = fmap.n_features_in, F = fmap.n_components, h = F // 2
    if fmap.pairs:
        csr_project(params, h, d, indptr, indices, data, n, out, F)
        csr_project(params, h, d, indptr, indices, data, n, out + h, F)
        if real is float:
            ok_cos_tile_f32(out, n, h, F, NULL, 1.4142135623730951, 0)
            ok_cos_tile_f32(out + h, n, h, F, NULL, 1.4142135623730951, 3)
        else:
            ok_cos_tile(out, n, h, F, NULL, 1.4142135623730951, 0)
            ok_cos_tile(out + h, n, h, F, NULL, 1.4142135623730951, 3)
        return
    csr_project(params, F, d, indptr, indices, data, n, out, F)
    if real is float:
        ok_cos_tile_f32(out, n, F, F, params + F * d, 1.4142135623730951, 0)
    else:
        ok_cos_tile(out, n, F, F, params + F * d, 1.4142135623730951, 0)
