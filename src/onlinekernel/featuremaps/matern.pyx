# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
r"""Random Fourier features of the Matern and the isotropic Cauchy kernels.

Both kernels are isotropic and their spectral densities are scale mixtures
of Gaussians, :math:`w = s\,z` with :math:`z \sim N(0, I_d)` and a random
scale :math:`s` that is a function of a chi-square variable
:math:`u \sim \chi^2_m` with a small integer ``m``.  ``u`` is drawn as the
sum of squares of ``m`` standard normals, each from its own stream of the
package's counter-based generator, so every parameter of a block is a pure
function of ``(seed, block)`` and needs only IEEE-exact operations (squares,
sums, ``sqrt``, divisions) on top of the stable normal stream.

Block layout (both maps): ``w`` (``F x d``, row-major) then ``b`` (``F``).

* ``z`` (the rows of ``w`` before scaling): stream 0, ``F * d`` normals;
* ``b``: stream 1, ``F`` uniforms on :math:`[0, 2\pi)`;
* ``u``: streams ``2 .. 2 + m - 1``, ``F`` normals each;
  :math:`u_k = \sum_j g_{j,k}^2` for feature ``k``.
"""
import numbers

import numpy as np
from libc.math cimport INFINITY, sqrt
from libc.stdint cimport uint64_t
from onlinekernel.featuremaps.base cimport FourierFeatureMap
from onlinekernel.core.streams cimport ok_fill_normal, ok_fill_uniform

cdef double TWO_PI = 6.283185307179586
# the smallest chi-square value used (u = 0 has probability 0 but would make
# an infinite frequency for the Matern map): frequencies stay finite
cdef double U_MIN = 1e-300

# Matern smoothness -> degrees of freedom 2 nu of the chi-square variable
_DOF = {0.5: 1, 1.5: 3, 2.5: 5}


cdef void _scale_mixture(uint64_t seed, uint64_t block, Py_ssize_t F, Py_ssize_t d,
                         int m, bint divide, double c, double* params) noexcept nogil:
    """Write ``w`` and ``b`` of a block: row ``k`` of ``w`` is ``z_k * s_k``.

    ``s_k = c * sqrt(m / u_k)`` when ``divide`` (a Student t of ``m`` degrees
    of freedom and scale ``c``), else ``s_k = sqrt(c * u_k)``; ``u_k`` is the
    sum of the squares of the k-th normals of streams ``2 .. 2 + m - 1``.
    No scratch memory: the ``w`` area (at least ``F`` doubles) holds each
    stream's normals while ``u`` and then ``s`` build up in the ``b`` area,
    which is filled with the phases last.
    """
    cdef Py_ssize_t i, k, size = F * d
    cdef double* tmp = params
    cdef double* acc = params + size
    cdef double u, s
    cdef int j
    for j in range(m):
        ok_fill_normal(seed, block, 2 + j, F, tmp)
        if j == 0:
            for k in range(F):
                acc[k] = tmp[k] * tmp[k]
        else:
            for k in range(F):
                acc[k] += tmp[k] * tmp[k]
    for k in range(F):
        u = acc[k]
        if divide:
            if u < U_MIN:
                u = U_MIN
            acc[k] = c * sqrt(m / u)
        else:
            acc[k] = sqrt(c * u)
    ok_fill_normal(seed, block, 0, size, params)
    for k in range(F):
        s = acc[k]
        for i in range(k * d, (k + 1) * d):
            params[i] *= s
    ok_fill_uniform(seed, block, 1, F, 0.0, TWO_PI, acc)


def _pair(X, Y, name):
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError(f"{name}: kernel needs two 2-d arrays with the same number of columns, "
                         f"got shapes {X.shape} and {Y.shape}")
    return X, Y


def _check_gamma(name, gamma):
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise ValueError(f"{name}: gamma must be a finite number > 0, got {gamma!r}")
    gamma = float(gamma)
    if not (gamma > 0.0 and gamma < INFINITY):
        raise ValueError(f"{name}: gamma must be a finite number > 0, got {gamma}")
    return gamma


cdef class Matern(FourierFeatureMap):
    r"""Random Fourier features of the Matern kernel of smoothness ``nu``.

    With :math:`r = \|x - x'\|_2` and :math:`\rho = \sqrt{2\nu}\,\gamma r`
    (``gamma`` is the inverse length scale, :math:`\gamma = 1/\ell`):

    * ``nu=0.5``: :math:`k = e^{-\gamma r}` (the exponential kernel; the
      Euclidean-distance counterpart of ``"laplacian"``);
    * ``nu=1.5``: :math:`k = (1 + \rho)\, e^{-\rho}`;
    * ``nu=2.5``: :math:`k = (1 + \rho + \rho^2 / 3)\, e^{-\rho}`.

    As ``nu`` grows the kernel tends to :math:`\exp(-\gamma^2 r^2 / 2)`,
    the ``"gaussian"`` map with its ``gamma`` equal to :math:`\gamma^2/2`.
    Functions in its RKHS are about ``nu`` times differentiable: rougher
    than the Gaussian's, smoother than the Laplacian's for ``nu > 1/2``.

    By Bochner's theorem the spectral density is a multivariate Student t
    with :math:`2\nu` degrees of freedom and scale :math:`\gamma`: each
    feature is :math:`\sqrt2 \cos(w^\top x + b)` with
    :math:`w = \gamma \sqrt{2\nu / u}\, z`, :math:`z \sim N(0, I_d)`,
    :math:`u \sim \chi^2_{2\nu}` and :math:`b \sim U[0, 2\pi)`.

    Block parameters: ``z`` from stream 0, ``b`` from stream 1 and ``u`` as
    the sum of squares of one normal from each of the streams
    ``2 .. 2 + 2 nu - 1`` (``F`` normals per stream), so a block is a pure
    function of ``(seed, block)``, the same on every machine.

    Parameters
    ----------
    n_components : int, default=256
        Features per block.
    gamma : float, default=1.0
        Inverse length scale :math:`1/\ell`, finite and > 0.
    nu : {0.5, 1.5, 2.5}, default=1.5
        Smoothness.  Only these half-integers have closed forms and a
        chi-square draw from 1, 3 or 5 normals.

    Raises
    ------
    ValueError
        If ``gamma`` is not a finite number > 0, ``nu`` is not one of 0.5,
        1.5 and 2.5, or ``n_components`` < 1.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("matern", n_components=4096, gamma=0.5, nu=1.5).bind(3)
    >>> X = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 0.0]])
    >>> fmap.kernel(X, X).round(4)
    array([[1.    , 0.6537],
           [0.6537, 1.    ]])
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - fmap.kernel(X[:1], X[1:])[0, 0]) < 0.05)
    True

    ``nu=0.5`` is the exponential kernel of the Euclidean distance:

    >>> e = get_feature_map("matern", gamma=0.5, nu=0.5)
    >>> float(e.kernel([[0.0, 0.0]], [[3.0, 4.0]])[0, 0]) == float(np.exp(-2.5))
    True
    """
    name = "matern"
    cdef readonly double gamma
    cdef readonly double nu
    cdef int dof

    def __init__(self, Py_ssize_t n_components=256, gamma=1.0, nu=1.5):
        super().__init__(n_components)
        self.gamma = _check_gamma("matern", gamma)
        if (isinstance(nu, bool) or not isinstance(nu, numbers.Real)
                or float(nu) not in _DOF):
            raise ValueError(f"matern: nu must be 0.5, 1.5 or 2.5, got {nu!r}")
        self.nu = float(nu)
        self.dof = _DOF[self.nu]

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        _scale_mixture(seed, block, self.n_components, self.n_features_in, self.dof, True,
                       self.gamma, params)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        from scipy.spatial.distance import cdist
        X, Y = _pair(X, Y, "matern")
        r = cdist(X, Y, "euclidean")
        if self.nu == 0.5:
            return np.exp(-self.gamma * r)
        rho = np.sqrt(2.0 * self.nu) * self.gamma * r
        if self.nu == 1.5:
            return (1.0 + rho) * np.exp(-rho)
        return (1.0 + rho + rho * rho / 3.0) * np.exp(-rho)

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma, "nu": self.nu}


cdef class IsotropicCauchy(FourierFeatureMap):
    r"""Random Fourier features of :math:`k(x, x') = 1 / (1 + \gamma \|x - x'\|_2^2)`.

    The isotropic Cauchy kernel (the rational quadratic kernel with
    :math:`\alpha = 1`): its decay is polynomial, far heavier-tailed than
    the Gaussian :math:`\exp(-\gamma \|x - x'\|^2)`, which it matches to
    second order at 0 for the same ``gamma``.  Registered as
    ``"isotropic_cauchy"``; the example third-party plugin's ``"cauchy"`` is
    the product form :math:`\prod_i 1 / (1 + \gamma (x_i - x'_i)^2)`, a
    different kernel in more than one dimension.

    It is a scale mixture of Gaussian kernels,
    :math:`k = E_s[\exp(-s \gamma r^2)]` with :math:`s \sim \mathrm{Exp}(1)
    = \chi^2_2 / 2`, so by Bochner's theorem each feature is
    :math:`\sqrt2 \cos(w^\top x + b)` with
    :math:`w = \sqrt{\gamma u}\, z`, :math:`z \sim N(0, I_d)`,
    :math:`u \sim \chi^2_2` and :math:`b \sim U[0, 2\pi)`.

    Block parameters: ``z`` from stream 0, ``b`` from stream 1 and ``u`` as
    the sum of the squares of one normal of stream 2 and one of stream 3.

    Parameters
    ----------
    n_components : int, default=256
        Features per block.
    gamma : float, default=1.0
        Inverse squared length scale, finite and > 0 (as the Gaussian's).

    Raises
    ------
    ValueError
        If ``gamma`` is not a finite number > 0 or ``n_components`` < 1.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("isotropic_cauchy", n_components=4096, gamma=0.5).bind(3)
    >>> X = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 0.0]])
    >>> fmap.kernel(X, X)
    array([[1. , 0.5],
           [0.5, 1. ]])
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - fmap.kernel(X[:1], X[1:])[0, 0]) < 0.05)
    True
    """
    name = "isotropic_cauchy"
    cdef readonly double gamma

    def __init__(self, Py_ssize_t n_components=256, gamma=1.0):
        super().__init__(n_components)
        self.gamma = _check_gamma("isotropic_cauchy", gamma)

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        _scale_mixture(seed, block, self.n_components, self.n_features_in, 2, False,
                       self.gamma, params)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``."""
        from scipy.spatial.distance import cdist
        X, Y = _pair(X, Y, "isotropic_cauchy")
        return 1.0 / (1.0 + self.gamma * cdist(X, Y, "sqeuclidean"))

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma}
