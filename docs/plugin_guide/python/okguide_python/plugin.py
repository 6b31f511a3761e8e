"""A pure-Python onlinekernel plugin: one loss, one feature map, two hooks.

The classes are the prototypes that ``okguide_cython`` compiles; both
packages register their components under different names, so they can be
installed side by side and compared.
"""
import numbers

import numpy as np

from onlinekernel import FeatureMap, Loss
from onlinekernel.hookspecs import Plugin


class PseudoHuber(Loss):
    r"""Pseudo-Huber loss :math:`\delta^2 (\sqrt{1 + (r/\delta)^2} - 1)`, :math:`r = u - y`.

    A smooth Huber loss: quadratic near zero, linear in the tails, with a
    gradient bounded by ``delta``.
    """

    name = "pseudo_huber_py"    # the registered name: model files store it
    target_encoding = "real"    # real-valued targets: a regression loss
    link = "identity"           # raw outputs are the predictions

    def __init__(self, delta=1.0):
        # validate in the constructor: the registry and model-file loading
        # build the loss through it
        if not (isinstance(delta, numbers.Real) and np.isfinite(delta) and delta > 0):
            raise ValueError(f"pseudo_huber_py: delta must be a finite number > 0, "
                             f"got {delta!r}")
        self.delta = float(delta)  # get_params() reads constructor arguments back

    def loss(self, y, raw):
        # y: (n, 1) targets, raw: (n, 1) predictions; one value per row
        r = (raw - y) / self.delta
        return (self.delta ** 2 * (np.sqrt(1.0 + r ** 2) - 1.0)).sum(axis=1)

    def gradient(self, y, raw):
        # d loss / d raw, the shape of raw
        r = raw - y
        return r / np.sqrt(1.0 + (r / self.delta) ** 2)


class ExponentialFeatures(FeatureMap):
    r"""Random Fourier features of :math:`k(x, x') = \exp(-\gamma \|x - x'\|_2)`.

    The exponential (Matérn-1/2) kernel in the Euclidean norm.  Its spectral
    density is a multivariate Cauchy distribution: :math:`w = \gamma z / |n|`
    with :math:`z \sim N(0, I_d)` and one more standard normal :math:`n` per
    feature; each feature is :math:`\sqrt2 \cos(w^\top x + b)`,
    :math:`b \sim U[0, 2\pi)`.
    """

    name = "exponential_py"

    def __init__(self, n_components=256, gamma=1.0):
        super().__init__(n_components)
        if not (isinstance(gamma, numbers.Real) and np.isfinite(gamma) and gamma > 0):
            raise ValueError(f"exponential_py: gamma must be a finite number > 0, "
                             f"got {gamma!r}")
        self.gamma = float(gamma)

    def param_size(self):
        # per block: the frequencies W (F x d, row-major), then the phases b (F)
        return self.n_components * (self.n_features_in + 1)

    def generate_params(self, seed, block):
        # Only the streams of (seed, block): block j is the same whenever,
        # wherever and in whatever order it is generated.
        F, d = self.n_components, self.n_features_in
        n = self.normal(seed, block, 1, F)
        w = self.normal(seed, block, 0, F * d).reshape(F, d) * (self.gamma / np.abs(n))[:, None]
        b = self.uniform(seed, block, 2, F, 0.0, 2.0 * np.pi)
        return np.concatenate([w.ravel(), b])

    def features(self, params, X):
        # (n, F) features, scaled so that mean_k phi_k(x) phi_k(x') ~ k(x, x')
        F, d = self.n_components, self.n_features_in
        W, b = params[:F * d].reshape(F, d), params[F * d:]
        return np.sqrt(2.0) * np.cos(X @ W.T + b)

    def kernel(self, X, Y):
        """The exact kernel matrix (optional: used by tests and diagnostics)."""
        X, Y = np.atleast_2d(X), np.atleast_2d(Y)
        d2 = (X ** 2).sum(1)[:, None] + (Y ** 2).sum(1)[None, :] - 2.0 * X @ Y.T
        return np.exp(-self.gamma * np.sqrt(np.maximum(d2, 0.0)))


# both hooks in one object; pyproject.toml names it under the entry-point group
plugin = Plugin(losses=[PseudoHuber], feature_maps=[ExponentialFeatures])
