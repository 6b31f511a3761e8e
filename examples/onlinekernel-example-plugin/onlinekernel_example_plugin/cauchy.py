r"""Random Fourier features of the Cauchy kernel.

The Cauchy kernel :math:`k(x, x') = \prod_k 1 / (1 + \gamma (x_k - x'_k)^2)`
is shift-invariant; by Bochner's theorem it is the expectation of
:math:`2 \cos(w^\top x + b) \cos(w^\top x' + b)` with ``b`` uniform on
:math:`[0, 2\pi)` and ``w`` drawn from its spectral density, here a product
of Laplace distributions of scale :math:`\sqrt\gamma` (the characteristic
function of a Laplace variable of scale ``s`` is :math:`1 / (1 + s^2 t^2)`).
Heavier-tailed than the Gaussian kernel, it decays polynomially with distance.

Examples
--------
>>> import numpy as np
>>> from onlinekernel_example_plugin.cauchy import CauchyFeatures
>>> fmap = CauchyFeatures(gamma=4.0).bind(2)
>>> fmap.kernel(np.array([[0.0, 0.0]]), np.array([[0.5, 0.0], [0.5, 0.5]]))
array([[0.5 , 0.25]])
"""
import math
import numbers

import numpy as np

from onlinekernel import FeatureMap

__all__ = ["CauchyFeatures"]

_TWO_PI = 2.0 * math.pi
_SQRT2 = math.sqrt(2.0)


class CauchyFeatures(FeatureMap):
    r"""Random Fourier features of :math:`\prod_k 1 / (1 + \gamma (x_k - x'_k)^2)`.

    Each feature is :math:`\sqrt2 \cos(w^\top x + b)` with independent
    coordinates :math:`w_k \sim \mathrm{Laplace}(0, \sqrt\gamma)` and
    :math:`b \sim U[0, 2\pi)`, so the mean of :math:`\phi(x)\phi(x')` over the
    features estimates the kernel.  Registered as ``"cauchy"``.

    The block parameters come only from the package's counter-based streams
    of ``(seed, block)``, so block ``j`` is regenerated alone, identically on
    any machine: a Laplace variable is drawn as :math:`z_1 z_2 - z_3 z_4`
    from four standard normals of stream 0 (its characteristic function is
    :math:`(1 + t^2)^{-1/2}` squared), which needs only multiplications and
    no platform-dependent ``log``; the phases ``b`` come from stream 1.

    Parameters
    ----------
    n_components : int, default=256
        Features per block.
    gamma : float, default=1.0
        Inverse squared length scale, > 0.

    Raises
    ------
    ValueError
        If ``gamma`` is not a finite number > 0 or ``n_components`` < 1.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("cauchy", n_components=4096, gamma=0.5).bind(3)
    >>> X = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 0.0]])
    >>> Z = fmap.features(fmap.generate_params(seed=0, block=0), X)
    >>> Z.shape
    (2, 4096)
    >>> exact = fmap.kernel(X[:1], X[1:])[0, 0]
    >>> round(float(exact), 4)
    0.4444
    >>> bool(abs(Z[0] @ Z[1] / Z.shape[1] - exact) < 0.05)
    True
    """

    name = "cauchy"

    def __init__(self, n_components=256, gamma=1.0):
        super().__init__(n_components)
        if (not isinstance(gamma, numbers.Real) or isinstance(gamma, bool)
                or not np.isfinite(gamma) or gamma <= 0):
            raise ValueError(f"cauchy: gamma must be a finite number > 0, got {gamma!r}")
        self.gamma = float(gamma)

    def param_size(self):
        """``n_components * (n_features_in + 1)``: the frequencies, then the phases."""
        return self.n_components * (self.n_features_in + 1)

    def generate_params(self, seed, block):
        """Frequencies (row-major ``(F, d)``) and phases ``(F,)`` of one block, flat.

        Parameters
        ----------
        seed, block : int
            The model's seed and the block index (both 64-bit unsigned).

        Returns
        -------
        ndarray of shape (param_size(),)
        """
        F, d = self.n_components, self.n_features_in
        if d < 1:
            raise ValueError("cauchy: call bind(n_features_in) before generating blocks")
        z = self.normal(seed, block, 0, 4 * F * d)
        # Laplace(0, 1) = z1 z2 - z3 z4; IEEE products are exact-rounded everywhere
        w = (z[0::4] * z[1::4] - z[2::4] * z[3::4]) * math.sqrt(self.gamma)
        b = self.uniform(seed, block, 1, F, 0.0, _TWO_PI)
        return np.concatenate([w, b])

    def features(self, params, X):
        """The block's features on the rows of ``X``, shape ``(n, n_components)``.

        Parameters
        ----------
        params : ndarray of shape (param_size(),)
            The block's parameters, from :meth:`generate_params`.
        X : ndarray of shape (n, n_features_in)
            Input rows.

        Returns
        -------
        ndarray of shape (n, n_components)
        """
        F, d = self.n_components, self.n_features_in
        W, b = params[:F * d].reshape(F, d), params[F * d:]
        return _SQRT2 * np.cos(X @ W.T + b)

    def kernel(self, X, Y):
        """The exact kernel matrix between the rows of ``X`` and ``Y``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        Y : array-like of shape (m, d)

        Returns
        -------
        ndarray of shape (n, m)
        """
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"cauchy: X has {X.shape[1]} columns and Y has {Y.shape[1]}")
        K = np.ones((X.shape[0], Y.shape[0]))
        for k in range(X.shape[1]):  # one coordinate at a time: O(n m) memory
            K /= 1.0 + self.gamma * (X[:, k, None] - Y[None, :, k]) ** 2
        return K
