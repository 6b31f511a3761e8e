"""DSGQuantileRegressor: several conditional quantiles in one kernel model."""
import numpy as np
from sklearn.metrics import d2_pinball_score

from onlinekernel import registry
from onlinekernel.estimators._base import BaseDSG


class DSGQuantileRegressor(BaseDSG):
    r"""Conditional quantiles at several levels, sharing one set of random features.

    Learns one output :math:`f_c(x) = b_c + \sum_{j,k}\alpha_{jk,c}
    \phi_{\omega_{jk}}(x)` per level :math:`\tau_c` by doubly stochastic
    gradients (Dai et al., 2014) on

    .. math::

        \min_{f_1..f_Q}\; E\Big[\sum_c \rho_{\tau_c}\big(y - f_c(x)\big)\Big]
            + \frac{\alpha}{2}\sum_c \|f_c\|^2_{\mathcal H},
        \qquad \rho_\tau(r) = \max(\tau r, (\tau - 1) r),

    the ``multi_quantile`` loss: the sum separates, so output :math:`c`
    estimates the conditional :math:`\tau_c`-quantile, while every step
    evaluates one block of random features for all levels (the cost of
    :math:`Q` levels is close to that of one).

    Separately fitted quantile curves may cross.  ``predict`` enforces
    non-crossing by the monotone rearrangement of Chernozhukov,
    Fernández-Val & Galichon (2010, *Econometrica* 78(3)): each row's
    predictions are sorted and assigned to the levels in increasing order.
    As the true quantiles increase with the level, the sorted predictions of
    a row are never farther from them, in any :math:`\ell^p` distance with
    :math:`p \ge 1`, than the unsorted ones (the finite-level case of their
    improvement result); where the outputs do not cross, nothing changes.
    ``predict(X, rearrange=False)`` gives the raw outputs.

    The parameters are those of :class:`onlinekernel.DSGRegressor` except
    ``loss`` (fixed by ``quantiles``) and the step defaults: the pinball
    gradients are bounded (:math:`\tau - 1` or :math:`\tau` per row), so the
    steps decay as ``eta0 / (1 + (t - 1) / t0)`` from ``eta0 = 2`` with
    averaging, which calibrates the levels (see ``tests/losses/test_quantiles.py``).
    Targets should be on a unit scale (standardise ``y``): a step moves a
    prediction by at most about ``eta0`` times the kernel value.

    Parameters
    ----------
    quantiles : sequence of float, default=(0.1, 0.5, 0.9)
        Distinct levels in (0, 1), in any order: output ``c`` of
        ``predict`` is the ``quantiles[c]``-quantile.
    kernel, gamma, degree, coef0, kernel_params
        The feature map (see :class:`onlinekernel.DSGClassifier`).
    alpha : float, default=1e-3
        Penalty of every output's RKHS norm.  Measured on cadata (5,000
        rows, raw targets): 1e-3 gives test coverage 0.109 / 0.903 at
        levels 0.1 / 0.9 in under a second of dual coordinate descent, where
        1e-4 gives 0.132 / 0.883 and 1e-6 does not converge in 1,000 epochs.
    fit_intercept : bool, default=True
        Learn an intercept per level.
    batch_size : int, default=64
    block_size : int, default=256
    max_blocks : int or None, default=16
    n_components : int or None, default=None
        The feature budget as a number of random features (scikit-learn's
        ``RBFSampler(n_components=N)``), rounded up to whole blocks of
        ``block_size``: ``ceil(N / block_size)`` blocks replace
        ``max_blocks``; ``None``: ``max_blocks * block_size`` (see
        :class:`onlinekernel.DSGClassifier`).
    max_model_bytes : int or None, default=None
        The budget as a cap in bytes on the learned state, for a growing
        model (``max_blocks=None``; see :class:`onlinekernel.DSGClassifier`).
    learning_rate : {"inverse", "invsqrt", "constant", "pegasos"}, default="inverse"
    eta0 : float, default=2.0
    t0 : float, default=50.0
    solver, max_iter, tol, n_iter_no_change, early_stopping, validation_fraction, max_memory
        As in :class:`onlinekernel.DSGClassifier`; ``"auto"`` fits the
        levels by ``"dual-cd"`` (the pinball loss is piecewise linear).
        Targets are standardised internally (the scaling is undone on
        prediction and kept in model files), so raw targets work.
    shuffle : bool, default=True
    average : bool, int or "polynomial", default=True
    random_state : int, RandomState or None, default=None
    warm_start : bool, default=False
    cache_bytes : int, default=64 MiB
        As in :class:`onlinekernel.DSGClassifier`.
    dtype : {"float64", "float32"}, default="float64"
        As in :class:`onlinekernel.DSGClassifier`.
    n_jobs : int or None, default=None
        As in :class:`onlinekernel.DSGClassifier`.
    normalize_y : bool, default=True
        Train on standardised targets and map predictions back (see
        :class:`onlinekernel.DSGRegressor`): raw targets of any scale work.
    verbose : int, default=0
        0: ``fit`` prints nothing; 1 or more: a progress line per epoch of
        ``"sgd"`` or per epoch of ``"dual-cd"`` and level (its duality
        gap), as in :class:`onlinekernel.DSGClassifier`.

    Attributes
    ----------
    quantiles_ : tuple of float
        The levels of the fitted outputs, in the order of ``quantiles``.
    coef_ : ndarray of shape (n_random_features_, n_quantiles)
    intercept_ : ndarray of shape (n_quantiles,)
    n_random_features_, n_blocks_, t_, seed_, gamma_, loss_, feature_map_, n_features_in_
        As in :class:`onlinekernel.DSGClassifier`.

    Examples
    --------
    >>> from onlinekernel import DSGQuantileRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(2000, 1))
    >>> y = np.sin(X[:, 0]) + (0.2 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=2000)
    >>> model = DSGQuantileRegressor(quantiles=(0.1, 0.5, 0.9), random_state=0).fit(X, y)
    >>> q = model.predict(X)
    >>> q.shape
    (2000, 3)
    >>> bool(np.all(np.diff(q, axis=1) >= 0))  # no crossing
    True
    >>> np.round((y[:, None] < q).mean(axis=0), 1)  # fraction below each level
    array([0.1, 0.5, 0.9])
    """
    _y_numeric = True

    def __init__(self, quantiles=(0.1, 0.5, 0.9), kernel="gaussian", *, gamma="scale",
                 degree=3, coef0=0.0, kernel_params=None, alpha=1e-3, fit_intercept=True,
                 batch_size=64, block_size=256, max_blocks=16, n_components=None,
                 max_model_bytes=None,
                 learning_rate="inverse",
                 eta0=2.0, t0=50.0, solver="auto", max_iter=1000, tol=1e-4,
                 n_iter_no_change=5, early_stopping=False, validation_fraction=0.1,
                 max_memory=2 ** 32, shuffle=True, average=True,
                 random_state=None, warm_start=False, cache_bytes=64 * 2 ** 20,
                 dtype="float64", n_jobs=None, normalize_y=True, verbose=0):
        self._store_params(locals())

    def _loss_spec(self):
        """The ``multi_quantile`` loss of ``quantiles`` (validates them)."""
        return registry.get_loss("multi_quantile", quantiles=self.quantiles)

    loss = property(_loss_spec)  # a read-only view for users; the training reads the method

    def _prepare_targets(self, y, fitting, classes=None):
        loss = self._resolve_base_loss() if fitting else self.loss_
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric for DSGQuantileRegressor: {exc}") from None
        Q = loss.n_outputs
        # every output's target is y: the levels differ, not the data
        return loss, np.ascontiguousarray(np.repeat(y[:, None], Q, axis=1)), Q

    @property
    def quantiles_(self):
        """The levels of the fitted outputs."""
        return self.loss_.quantiles

    def predict(self, X, rearrange=True):
        """Predicted quantiles, shape ``(n, n_quantiles)``, columns in the order of ``quantiles``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        rearrange : bool, default=True
            Sort each row across the levels (monotone rearrangement) so that
            the predicted quantiles never cross; ``False`` returns the raw
            outputs.

        Returns
        -------
        ndarray of shape (n_samples, n_quantiles)
        """
        raw = self._raw(X)
        if not rearrange:
            return raw
        order = np.argsort(self.loss_.quantiles)
        out = np.empty_like(raw)
        out[:, order] = np.sort(raw, axis=1)
        return out

    def score(self, X, y, sample_weight=None):
        r"""Mean over the levels of the :math:`D^2` pinball score of ``predict(X)``.

        For level :math:`\tau`, :math:`D^2 = 1 - \sum_i \rho_\tau(y_i - q_i) /
        \sum_i \rho_\tau(y_i - \hat q_\tau)` with :math:`\hat q_\tau` the
        empirical :math:`\tau`-quantile of ``y``
        (:func:`sklearn.metrics.d2_pinball_score`): 1 is perfect, 0 is no
        better than a constant.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        pred = self.predict(X)
        return float(np.mean([d2_pinball_score(y, pred[:, c], sample_weight=sample_weight,
                                               alpha=tau)
                              for c, tau in enumerate(self.loss_.quantiles)]))
