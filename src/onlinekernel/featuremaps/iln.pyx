# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Random units of an infinite layer network (Livni, Carmon & Globerson 2017)."""
import numbers

import numpy as np
from libc.math cimport exp, expf, sqrt, INFINITY
from libc.stdint cimport uint64_t
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.core.streams cimport ok_fill_normal
from onlinekernel.core.linalg cimport gemm_real, real

cdef double SQRT2 = 1.4142135623730951

# activation codes (the C loops switch on an int, not a string)
cdef enum:
    RELU = 0
    SIGMOID = 1

_ACTIVATIONS = {"relu": RELU, "sigmoid": SIGMOID}


cdef void _units(int act, const real* params, const real* X, Py_ssize_t n, Py_ssize_t ldx,
                 Py_ssize_t d_, Py_ssize_t F_, real* out) noexcept nogil:
    """out (n x F) = the units sigma(X W^T + b) of a block [W (F x d) | b (F)], either precision."""
    cdef int d = <int>d_, F = <int>F_
    cdef const real* b = params + <Py_ssize_t>F * d
    cdef Py_ssize_t i, k
    cdef real z, e
    cdef real* row
    gemm_real(False, True, <int>n, F, d, 1.0, X, <int>ldx, params, d, 0.0, out, F)
    # one branch-light loop per activation so the compiler vectorises each
    if act == RELU:
        for i in range(n):
            row = out + i * F
            for k in range(F):
                z = row[k] + b[k]
                row[k] = <real>SQRT2 * z if z > 0.0 else 0.0
    else:
        for i in range(n):
            row = out + i * F
            for k in range(F):
                z = row[k] + b[k]
                # exp of a non-positive number only: no overflow for any z
                if real is float:
                    e = expf(-z if z >= 0.0 else z)
                else:
                    e = exp(-z if z >= 0.0 else z)
                row[k] = 1.0 / (1.0 + e) if z >= 0.0 else e / (1.0 + e)


cdef class InfiniteLayerUnits(CyFeatureMap):
    r"""Random hidden units :math:`\sigma(w^\top x + b)` of an infinite layer network.

    An infinite layer network (ILN) is a one-hidden-layer network whose
    hidden layer integrates over a distribution :math:`\mu` of units,
    :math:`x \mapsto \int \psi(x; w) f(w)\,d\mu(w)` with
    :math:`\psi(x; w) = \sigma(w^\top x + b)`; its kernel is
    :math:`k(x, x') = E_{w \sim \mu}[\psi(x; w)\psi(x'; w)]`.  Here
    :math:`w \sim N(0, \gamma I)` and :math:`b \sim N(0, \mathrm{bias}^2)`
    (Livni et al. write :math:`\psi(x; w) = \sigma(x \cdot w)`: ``bias=0``,
    the default; a bias is a constant input coordinate ``bias`` with the
    weights of the others scaled by :math:`\sqrt\gamma`).

    * ``activation="relu"``: :math:`\psi = \sqrt2\,\max(0, w^\top x + b)`.
      The kernel has a closed form, the arc-cosine kernel of order 1
      (Cho & Saul 2009) of the augmented inputs
      :math:`\tilde x = (\sqrt\gamma\, x, \mathrm{bias})`:
      :math:`k(x, y) = \frac1\pi \|\tilde x\| \|\tilde y\|
      (\sin\theta + (\pi - \theta)\cos\theta)`, :math:`\theta` the angle
      between :math:`\tilde x` and :math:`\tilde y`; with ``gamma=1`` and
      ``bias=0`` these are exactly the features of ``arccos`` (order 1).
      The units are not bounded.
    * ``activation="sigmoid"``: :math:`\psi = 1/(1 + e^{-(w^\top x + b)})`,
      in :math:`(0, 1)` as Livni et al.'s analysis assumes.  Its kernel has
      no closed form, so the map has no ``kernel`` method: learn with the
      features only (:class:`onlinekernel.ShrinkingGradientRegressor`,
      or the DSG estimators).

    Block parameters: ``w`` (``F x d``, row-major) from stream 0 (standard
    normal draws times :math:`\sqrt\gamma`), then ``b`` (``F``) from
    stream 1 (standard normal draws times ``bias``).

    Parameters
    ----------
    n_components : int, default=256
        Features (units) per block.
    gamma : float, default=1.0
        Variance of the entries of ``w``, finite and > 0.
    activation : {"relu", "sigmoid"}, default="relu"
        The units' nonlinearity.
    bias : float, default=0.0
        Standard deviation of the offsets ``b``, finite and >= 0.

    References
    ----------
    R. Livni, D. Carmon and A. Globerson (2017), *Learning infinite layer
    networks without the kernel trick*, ICML.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> relu = get_feature_map("iln", n_components=4096, gamma=0.5, bias=1.0).bind(2)
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> K = relu.kernel(X, X)
    >>> Z = relu.transform_block(seed=0, block=0, X=X)
    >>> bool(abs(Z[0] @ Z[1] / Z.shape[1] - K[0, 1]) < 0.05)
    True
    >>> sigmoid = get_feature_map("iln", activation="sigmoid").bind(2)
    >>> hasattr(sigmoid, "kernel")  # no closed form
    False
    >>> S = sigmoid.transform_block(seed=0, block=0, X=X)
    >>> bool(((S > 0) & (S < 1)).all())
    True
    """
    name = "iln"
    cdef readonly double gamma
    cdef readonly double bias
    cdef int _act

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0, activation="relu",
                 double bias=0.0):
        super().__init__(n_components)
        if not (gamma > 0.0 and gamma < INFINITY):
            raise ValueError(f"iln: gamma must be a finite number > 0, got {gamma}")
        if not isinstance(activation, str) or activation not in _ACTIVATIONS:
            raise ValueError(f"iln: activation must be one of "
                             f"{', '.join(map(repr, _ACTIVATIONS))}, got {activation!r}")
        if not (bias >= 0.0 and bias < INFINITY):
            raise ValueError(f"iln: bias must be a finite number >= 0, got {bias}")
        self.gamma = gamma
        self.bias = bias
        self._act = _ACTIVATIONS[activation]

    @property
    def activation(self):
        """The units' nonlinearity, ``"relu"`` or ``"sigmoid"``."""
        return "relu" if self._act == RELU else "sigmoid"

    def _sizes(self, Py_ssize_t d):
        return self.n_components * d + self.n_components, 0

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t i, F = self.n_components, size = F * self.n_features_in
        cdef double s = sqrt(self.gamma)
        ok_fill_normal(seed, block, 0, size, params)
        for i in range(size):
            params[i] *= s
        if self.bias == 0.0:
            for i in range(F):
                params[size + i] = 0.0  # no draws: exact zeros, not -0.0
        else:
            ok_fill_normal(seed, block, 1, F, params + size)
            for i in range(F):
                params[size + i] *= self.bias

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        _units(self._act, params, X, n, ldx, self.n_features_in, self.n_components, out)

    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil:
        _units(self._act, params, X, n, ldx, self.n_features_in, self.n_components, out)

    @property
    def kernel(self):
        """The exact kernel ``kernel(X, Y)`` (ReLU units only: sigmoid units have none).

        Raises AttributeError for sigmoid units, so that
        ``hasattr(fmap, "kernel")`` tells whether the closed form exists.
        """
        if self._act != RELU:
            raise AttributeError("iln: sigmoid units have no closed-form kernel; estimate "
                                 "it from the features (the mean of phi(x) phi(y) over units)")
        return self._relu_kernel

    def _relu_kernel(self, X, Y):
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        # arc-cosine kernel of order 1 on (sqrt(gamma) x, bias)
        b2 = self.bias ** 2
        nx = np.sqrt(self.gamma * (X ** 2).sum(1) + b2)[:, None]
        ny = np.sqrt(self.gamma * (Y ** 2).sum(1) + b2)[None, :]
        norms = nx * ny
        nonzero = norms > 0.0
        dot = self.gamma * (X @ Y.T) + b2
        cos = np.clip(np.divide(dot, norms, out=np.zeros_like(norms), where=nonzero), -1.0, 1.0)
        theta = np.arccos(cos)
        J = np.sqrt(1.0 - cos ** 2) + (np.pi - theta) * cos
        return np.where(nonzero, norms * J / np.pi, 0.0)

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma,
                "activation": self.activation, "bias": self.bias}
