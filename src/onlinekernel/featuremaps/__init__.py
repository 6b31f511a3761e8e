"""Base class for random-feature maps written in pure Python.

Subclass :class:`FeatureMap` to add a kernel without compiling anything:
implement ``param_size``, ``generate_params`` (the parameters of block
``j``, drawn from the package's counter-based streams so that any block is
regenerated alone) and ``features`` (the block's features on rows of X).
The solver calls ``features`` with the GIL held, once per block and tile of
rows: slower than a compiled map, the same algorithm.

Examples
--------
Random Fourier features of the Cauchy kernel
``prod_k 1 / (1 + gamma (x_k - x'_k)^2)``, whose spectral density is a
Laplace distribution, drawn as ``z1 z2 - z3 z4`` from four standard normals
(only products and sums, so the block is bit for bit the same everywhere):

>>> import numpy as np
>>> from onlinekernel import FeatureMap, DSGClassifier
>>> class CauchyRFF(FeatureMap):
...     name = "cauchy_rff"
...     def __init__(self, n_components=256, gamma=1.0):
...         super().__init__(n_components)
...         self.gamma = gamma
...     def param_size(self):
...         return self.n_components * (self.n_features_in + 1)
...     def generate_params(self, seed, block):
...         F, d = self.n_components, self.n_features_in
...         z = self.normal(seed, block, 0, 4 * F * d).reshape(4, -1)
...         w = (z[0] * z[1] - z[2] * z[3]) * np.sqrt(self.gamma)
...         b = self.uniform(seed, block, 1, F, 0.0, 2 * np.pi)
...         return np.concatenate([w, b])
...     def features(self, params, X):
...         F, d = self.n_components, self.n_features_in
...         W, b = params[:F * d].reshape(F, d), params[F * d:]
...         return np.sqrt(2.0) * np.cos(X @ W.T + b)
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 2))
>>> y = (np.hypot(X[:, 0], X[:, 1]) < 1.0).astype(int)
>>> clf = DSGClassifier(kernel=CauchyRFF(gamma=1.0), random_state=0).fit(X, y)
>>> float(clf.score(X, y)) > 0.85
True
"""
from abc import ABC, abstractmethod

from onlinekernel.core import streams as _random
from onlinekernel.core.params import ParamsMixin

__all__ = ["FeatureMap", "MAX_BLOCK_SIZE"]

# Features per block beyond which a block's parameters and scratch cannot be
# allocated sensibly (2**20 Gaussian features on 784 inputs are 6 GiB); the
# estimators refuse a larger block_size and model files a larger map.
MAX_BLOCK_SIZE = 2 ** 20


class FeatureMap(ParamsMixin, ABC):
    """A random-feature map written in Python.

    Parameters
    ----------
    n_components : int, default=256
        Features per block.

    Attributes
    ----------
    n_features_in : int
        The input dimension, set by :meth:`bind` before any block is made.
    """

    name = None

    def __init__(self, n_components=256):
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be an integer >= 1, got {n_components!r}")
        self.n_components = int(n_components)
        self.n_features_in = 0

    def bind(self, n_features_in):
        """Fix the input dimension (called by the estimators); returns self."""
        self.n_features_in = int(n_features_in)
        return self

    @abstractmethod
    def param_size(self):
        """Number of float64 parameters of one block, for ``n_features_in``."""

    @abstractmethod
    def generate_params(self, seed, block):
        """Parameters of block ``block`` (flat float64 array of ``param_size()``).

        Draw them only from the streams of ``(seed, block)`` (the methods
        below), so that a block is the same whenever and wherever it is made.
        """

    @abstractmethod
    def features(self, params, X):
        """Features of the block with ``params`` on rows ``X``, shape ``(n, F)``.

        Scale them so that ``(1/F) sum_k phi_k(x) phi_k(x')`` estimates the
        kernel.
        """

    # the package's stable streams (the same values on every machine)
    @staticmethod
    def uniform(seed, block, stream, n, low=0.0, high=1.0):
        """``n`` uniforms in ``[low, high)`` from stream ``(seed, block, stream)``."""
        return _random.uniform(seed, block, stream, n, low, high)

    @staticmethod
    def normal(seed, block, stream, n):
        """``n`` standard normals from stream ``(seed, block, stream)``."""
        return _random.normal(seed, block, stream, n)

    @staticmethod
    def cauchy(seed, block, stream, n):
        """``n`` standard Cauchy draws from stream ``(seed, block, stream)``."""
        return _random.cauchy(seed, block, stream, n)

    @staticmethod
    def hashes(seed, block, stream, n, m):
        """``n`` hashes in ``[0, m)`` from stream ``(seed, block, stream)``."""
        return _random.hashes(seed, block, stream, n, m)

    @staticmethod
    def signs(seed, block, stream, n):
        """``n`` random signs (+1.0 / -1.0) from stream ``(seed, block, stream)``."""
        return _random.signs(seed, block, stream, n)
