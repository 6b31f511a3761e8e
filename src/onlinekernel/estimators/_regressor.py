"""DSGRegressor: kernel regression by doubly stochastic gradients."""
import numpy as np
from sklearn.base import RegressorMixin

from onlinekernel.estimators._base import BaseDSG, dask_rows


class DSGRegressor(RegressorMixin, BaseDSG):
    r"""Kernel regressor trained by doubly stochastic functional gradients.

    Minimises :math:`E[\ell(f(x), y)] + \frac{\alpha}{2}\|f\|^2_{\mathcal H}`
    over :math:`f(x) = b + \sum_{j,k} \alpha_{jk}\phi_{\omega_{jk}}(x)`; see
    :class:`DSGClassifier` for the algorithm and the parameters (among them
    ``reuse``, ``reuse_schedule``, ``precondition`` and ``projection``: what
    a full budget does with its blocks), which are the same except for the
    defaults of ``loss`` (``"squared"``), the step
    (``learning_rate="constant"`` with ``eta0=1.0``) and ``precondition``
    (``False``: on cadata, cpusmall and kin8nm it lowered the validation
    RMSE by 1 to 5 % but tripled the fit time, ``benchmarks/defaults.py``).
    With the squared loss a step of 1 moves a lone row's prediction onto its
    target; much larger steps diverge where many rows of a batch are alike.
    Losses must take real targets
    (``squared``, ``huber``, ``epsilon_insensitive``, ``quantile`` or a
    Python :class:`onlinekernel.Loss` with ``target_encoding="real"``).

    By default ``fit`` reaches the regularised optimum on the
    ``max_blocks * block_size`` random features (``solver="auto"``: a
    Cholesky solve for the squared loss, Newton-CG for Huber, dual
    coordinate descent for the quantile and epsilon-insensitive losses, which
    slows down as ``alpha * n_samples`` gets small: with those losses raise
    ``alpha`` to about 1e-3, as :class:`DSGQuantileRegressor` does, which on
    cadata also gives the better coverage);
    ``partial_fit`` takes stochastic steps.  Targets are standardised
    internally (``normalize_y``), so they need no scaling; features should
    be standardised (the bandwidth is one for all of them).  ``gamma`` and
    ``alpha`` default to ``"auto"``: ``fit`` chooses both on held-out rows
    (see :class:`DSGClassifier`), which on the nine regression sets of
    ``benchmarks/quality.py`` put seven within 5 % of the tuned exact kernel
    ridge machine, against four with ``gamma="scale"`` (cpusmall RMSE 3.59
    -> 3.03, protein 4.48 -> 4.19, concrete 5.17 -> 5.11), at about the
    same time (the bandwidth path runs on 1,024 features and at most 4,000
    rows).

    Parameters
    ----------
    gamma : "auto", "scale" or float, default="auto"
        As in :class:`DSGClassifier`, whose default is ``"scale"``.
    normalize_y : bool, default=True
        Train on standardised targets: ``(y - mean) / std`` of the targets
        first seen (``fit``: all of y; ``partial_fit``: the first batch),
        with the loss's parameters given in the target's units (Huber's
        ``delta``, ``epsilon``) divided by the same std (left at ``None``
        they are relative already: one and a tenth of a std); the intercept
        starts at the loss's best constant (the mean, or the quantile) and
        predictions are mapped back, so the model file keeps the scaling.
        ``False`` trains on the targets as given (scikit-learn's
        ``GaussianProcessRegressor`` has the same switch).
    n_components : int or None, default=None
        The feature budget as a number of random features, as
        scikit-learn's ``RBFSampler(n_components=N)`` takes it, rounded up
        to whole blocks of ``block_size``: ``ceil(N / block_size)`` blocks
        replace ``max_blocks``; ``None``: ``max_blocks * block_size`` (see
        :class:`DSGClassifier`).
    verbose : int, default=0
        0: ``fit`` prints nothing; 1 or more: a progress line per epoch
        of ``"sgd"`` or iteration of a batch solver, as scikit-learn's
        ``SGDRegressor`` prints them (see :class:`DSGClassifier`).
    others
        As in :class:`DSGClassifier`.

    Examples
    --------
    >>> from onlinekernel import DSGRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(800, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=800)
    >>> reg = DSGRegressor(random_state=0).fit(X, y)
    >>> float(reg.score(X, y)) > 0.9
    True

    A loss parameter is a hyper-parameter like any other:

    >>> from sklearn.model_selection import GridSearchCV
    >>> grid = GridSearchCV(DSGRegressor(loss="huber", random_state=0),
    ...                     {"loss_params": [{"delta": 0.5}, {"delta": 2.0}]}, cv=2).fit(X, y)
    >>> sorted(grid.best_params_)
    ['loss_params']
    """
    _y_numeric = True

    def __init__(self, loss="squared", kernel="gaussian", *, gamma="auto", degree=3,
                 coef0=0.0, kernel_params=None, loss_params=None, input_scaling=None,
                 alpha="auto", fit_intercept=True,
                 batch_size=64, block_size=256, max_blocks=16, n_components=None,
                 max_model_bytes=None,
                 learning_rate="constant", eta0=1.0, t0=100.0, eta_min=0.0, forgetting=0.0,
                 solver="auto", max_iter=1000, tol=1e-4, n_iter_no_change=5,
                 early_stopping=False, validation_fraction=0.1, max_memory=2 ** 32,
                 shuffle=True, average=False, reuse="all",
                 reuse_schedule=(1, 0), precondition=False, projection=False,
                 random_state=None, warm_start=False, cache_bytes=64 * 2 ** 20,
                 dtype="float64", n_jobs=None, normalize_y=True, verbose=0):
        self._store_params(locals())

    def _regression_loss(self, fitting):
        loss = self._resolve_base_loss() if fitting else self.loss_
        if loss.target_encoding != "real":
            raise ValueError(f"loss {getattr(loss, 'name', None) or loss!r} is a "
                             f"classification loss (target_encoding="
                             f"{loss.target_encoding!r}); DSGRegressor needs a loss for real "
                             f"targets")
        return loss

    def _dask_targets(self, y, fitting):
        """``(loss, encode, 1)`` for the targets of a dask collection (``encode`` runs on the workers)."""
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must be numeric for DSGRegressor, got dtype {y.dtype}")
        return self._regression_loss(fitting), _real_targets, 1

    def _prepare_targets(self, y, fitting, classes=None):
        loss = self._regression_loss(fitting)
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric for DSGRegressor: {exc}") from None
        return loss, np.ascontiguousarray(y[:, None]), 1

    def _fast_targets(self, y):
        if y.dtype.kind not in "iuf" or not np.isfinite(y).all():
            return None  # the full validation names the problem
        return np.ascontiguousarray(y, dtype=np.float64)[:, None]

    @dask_rows
    def predict(self, X):
        """Predicted targets, shape ``(n,)``."""
        return self._raw(X)[:, 0]


def _real_targets(y):
    """A partition's targets as the loss's ``(rows, 1)`` float64 column (on a dask worker)."""
    return np.asarray(y, dtype=np.float64)[:, None]
