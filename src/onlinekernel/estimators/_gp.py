"""DSGGaussianProcessRegressor: Gaussian-process regression with random features.

The posterior mean is kernel ridge regression (the squared loss with the
penalty ``noise_variance / n``); the posterior variance is the readout of
the ``gp_variance`` operator objective (Dai et al., 2014, section 4), whose
coefficients are a matrix over pairs of random features.  Both are learned
either exactly from statistics accumulated in one pass (``solver="exact"``)
or by doubly stochastic steps (``solver="sgd"``).
"""

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from onlinekernel import registry
from onlinekernel.losses.operator import CyOperatorObjective
from onlinekernel.solvers.operator import operator_pass, operator_readout
from onlinekernel.solvers.schedules import step_sizes
from onlinekernel.solvers.dsg import predict_raw
from onlinekernel.estimators import _docs
from onlinekernel.estimators._base import BaseDSG, _weighted_sum, check_sample_weight, \
    real_targets, transactional
from onlinekernel.estimators._constraints import Bool, Int, Real

# Rows absorbed per exact update: the result does not depend on it (beyond
# rounding); 256 rows make the O(rows M^2) products efficient BLAS calls.
_EXACT_ROWS = 256
_SOLVERS = ("exact", "sgd")
# The variance objective, looked up in the registry like any loss plugin.
_VARIANCE_OBJECTIVE = "gp_variance"


def _check_solver(name, value):
    if not isinstance(value, str) or value not in _SOLVERS:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, _SOLVERS))}, "
                         f"got {value!r}")


@_docs.fill
class DSGGaussianProcessRegressor(RegressorMixin, BaseDSG):
    r"""Gaussian-process regression with random features and doubly stochastic gradients.

    The prior is :math:`f \sim GP(m, k)` with a fixed kernel :math:`k` given
    by a random-feature map (``kernel="gaussian"``:
    :math:`k(x,x') = \exp(-\gamma\|x-x'\|^2)`, scikit-learn's
    ``RBF(length_scale)`` with :math:`\gamma = 1/(2\,\mathrm{length\_scale}^2)`),
    a constant prior mean :math:`m` (the mean of the training targets, or 0
    with ``center_y=False``) and observations
    :math:`y = f(x) + \varepsilon`, :math:`\varepsilon \sim N(0, \sigma^2)`
    with :math:`\sigma^2` = ``noise_variance``.  The posterior of :math:`f`
    at :math:`x` given :math:`n` rows has

    .. math::

        \mu(x) = m + k_x^\top (K + \sigma^2 I)^{-1} (y - m), \qquad
        \sigma^2(x) = k(x, x) - k_x^\top (K + \sigma^2 I)^{-1} k_x .

    Following Dai et al. (2014, section 4):

    * the **mean** is kernel ridge regression, the minimiser of
      :math:`\frac1n\sum_i \frac12 (f(x_i) - y_i)^2 + \frac{\nu}{2}\|f\|^2_{\mathcal H}`
      with :math:`\nu = \sigma^2/n`: the ``squared`` loss, no intercept
      (the prior mean :math:`m` is subtracted from the targets and stored
      as ``intercept_``);
    * the **variance** is :math:`\hat k(x,x) - \langle k_x, A\,k_x\rangle`
      with the operator :math:`A = C(C + \nu I)^{-1}`, :math:`C` the
      covariance operator of the data, the minimiser of the strongly convex
      objective :math:`\frac12 E\|k_x - A k_x\|^2 + \frac{\nu}{2}\|A\|^2_{HS}`:
      the ``gp_variance`` operator objective (see
      :mod:`onlinekernel.losses.gp_variance` for the derivation).  Its
      iterate lives in the span of pairs of the first ``variance_blocks``
      blocks of random features, :math:`A = \sum_{ij} A_{ij} z_i\otimes z_j`
      with :math:`z = \phi_\omega/\sqrt M`: an ``M x M`` matrix,
      ``M = variance_blocks * block_size``.

    With ``M`` random features, what is computed is the exact posterior of
    the GP whose kernel is the features' own,
    :math:`\hat k(x,x') = z(x)^\top z(x')`; in particular the prior
    variance is :math:`\hat k(x,x) = z^\top z` (using the exact
    :math:`k(x,x)` instead leaves an error of order :math:`M^{-1/2}`, larger
    than the posterior variance where data are dense, and negative
    variances).  A finite feature set under-estimates the variance a little:
    the posterior variance is a Schur complement of the prior covariance,
    concave in it, and :math:`\hat k` is an unbiased estimate of :math:`k`,
    so on average it comes out low (Jensen).  With the default 2048
    features, on the problems of ``tests/estimators/test_gp.py``, the posterior std is
    4 % (1-D) and 8 % (5-D) below the exact one.  Far from the data the
    features' kernel does not vanish but is of order :math:`M^{-1/2}`, so
    the posterior returns to the prior only up to that.

    **Solvers.**

    ``solver="exact"`` (default) is not stochastic gradient descent: one
    pass over the rows accumulates, batch by batch, the exact minimisers of
    both objectives on the ``M`` variance features -- the operator
    :math:`A = S(S + \sigma^2 I)^{-1}`, :math:`S = \sum_i w_i z_i z_i^\top`,
    updated by a Woodbury step per batch (:math:`O(B M^2)`, no
    :math:`M^3` factorisation), and the mean weights
    :math:`w = (S + \sigma^2 I)^{-1} Z^\top (y - m) = (I - A)\,r/\sigma^2`
    from the moments :math:`r = \sum_i w_i z_i (y_i - m)` -- that is, the
    fixed points of the squared loss and of ``gp_variance`` with
    :math:`\nu = \sigma^2/n`.  The result does not depend on the order of
    the rows or on how they are split between ``partial_fit`` calls (up to
    rounding): ``partial_fit`` is the exact Bayesian update.  ``max_blocks``,
    the step parameters (``batch_size``, ``learning_rate``, ``eta0``,
    ``t0``, ``shuffle``, ``average``) and the stopping parameters are not
    used.

    ``solver="sgd"`` trains the mean by the doubly stochastic steps of
    :class:`onlinekernel.DSGRegressor` on up to ``max_blocks`` blocks and
    the operator by Dai et al.'s stochastic steps on the ``gp_variance``
    objective, one pass of each per epoch until the mean's objective stops
    improving (the stopping rule of :class:`onlinekernel.DSGRegressor`:
    ``max_iter``, ``tol``, ``n_iter_no_change``, ``early_stopping``), with
    :math:`\nu = \sigma^2/n` for ``n`` the total sample weight seen.  The squared loss with
    :math:`\nu = \sigma^2/n` is ill-conditioned for SGD: the directions of
    the kernel whose eigenvalue is near :math:`\nu` decide the variance and
    need about :math:`n/\sigma^2` steps to converge.  On the 2000-row
    problems of ``tests/estimators/test_gp.py`` (1-D, 5-D), 50 epochs leave the mean
    3 % and 10 % of ``std(y)`` away from the exact GP mean and the
    posterior std 27 % and 49 % off (median relative error), where the
    exact solver gets 0.6 % and 4 % for the mean, 4 % and 8 % for the
    std; so ``"exact"`` is the default.  ``"sgd"`` costs
    :math:`O(M^2)` per row and epoch for the operator, keeps the memory of
    the mean at ``O(M_mean)``, and suits streams whose targets drift.

    **Memory.**  The operator is ``M x M`` float64: ``8 M^2`` bytes, 32 MiB
    for the default ``M = 8 * 256 = 2048`` (this is the feature budget of the
    variance, ``variance_blocks``; the memory of the mean is that of
    :class:`DSGRegressor`).  Prediction costs :math:`O(M^2)` per row for
    the std and :math:`O(M d)` for the mean.

    Parameters
    ----------
    kernel : str or feature map, default="gaussian"
        A registered feature-map name or a feature-map instance.
    gamma : "scale" or float, default="scale"
        Kernel bandwidth for maps that take one; ``"scale"`` uses
        ``1 / (n_features * X.var())`` of the first data seen.
    noise_variance : float, default=0.1
        The observation noise variance :math:`\sigma^2`, > 0 (scikit-learn's
        ``alpha`` of ``GaussianProcessRegressor``).
    {{map_params}}
    solver : {"exact", "sgd"}, default="exact"
        How the mean and the operator are learned (see above).
    variance_blocks : int, default=8
        Feature budget of the variance operator in blocks (and, with
        ``solver="exact"``, of the mean): the first ``variance_blocks``
        blocks of the model's random features; at most ``max_blocks``
        (or the blocks of ``n_components``).
    center_y : bool, default=True
        Use the (weighted) mean of the targets seen as the constant prior
        mean; ``False``: a zero prior mean.
    normalize_y : bool, default=True
        Standardise the targets, ``(y - mean) / std`` of the targets first
        seen (``fit``: all of y; ``partial_fit``: the first batch), and map
        the predictions back (the mean by ``* std + mean``, the std by
        ``* std``), as scikit-learn's ``GaussianProcessRegressor`` does: the
        prior's amplitude (:math:`k(x, x) = 1`) and ``noise_variance`` are
        then relative to the targets' variance, so raw targets of any scale
        get the same posterior as standardised ones.  ``False``: both are
        in the target's units (the prior mean still follows ``center_y``).
    batch_size : int, default=64
        Rows per training step (``"sgd"``).
    block_size : int, default=256
        Random features per block.
    max_blocks : int or None, default=16
        Feature budget of the mean in blocks (``"sgd"``).
    n_components : int or None, default=None
        The feature budget of the mean as a number of random features
        (``"sgd"``), as scikit-learn's ``RBFSampler(n_components=N)`` takes
        it, rounded up to whole blocks of ``block_size`` and to at least
        ``variance_blocks`` blocks (the variance features are the mean's
        first blocks): ``max(ceil(N / block_size), variance_blocks)``
        blocks replace ``max_blocks``; ``None``: ``max_blocks *
        block_size``.  (With ``"exact"`` the features are the
        ``variance_blocks`` blocks.)
    learning_rate : {"constant", "inverse", "invsqrt"}, default="constant"
        Step schedule (``"sgd"``; see :class:`onlinekernel.DSGClassifier`).
    eta0 : float, default=1.0
        Initial step (``"sgd"``).  A step of 1 moves a lone row's prediction
        onto its target and is the stability limit of the operator steps.
    t0 : float, default=100.0
        Time scale of the decaying schedules (``"sgd"``).
    max_iter : int, default=1000
        Most epochs of ``fit`` (``"sgd"``; the exact solver makes one
        pass); hitting it warns (``ConvergenceWarning``).
    tol : float or None, default=1e-4
        Stop when the mean's objective has not improved by ``tol`` for
        ``n_iter_no_change`` epochs (``"sgd"``); ``None`` runs all
        ``max_iter`` epochs.
    n_iter_no_change : int, default=5
        Epochs without improvement before ``fit`` stops (``"sgd"``).
    early_stopping : bool, default=False
        Score the mean's squared loss on ``validation_fraction`` of the rows
        held out (a seeded split) instead of the training objective
        (``"sgd"``).
    validation_fraction : float, default=0.1
        The held-out share for ``early_stopping``.
    shuffle : bool, default=True
        Shuffle the rows before each epoch (``"sgd"``).
    average : bool, int or "polynomial", default=False
        Polyak-Ruppert averaging of the mean's coefficients (``"sgd"``).
    random_state : int, RandomState or None, default=None
        Seeds the random features and the shuffling.
    warm_start : bool, default=False
        ``fit`` continues the fitted model, its rows counted as new data
        (the posterior given every row seen, as with ``partial_fit``).
    cache_bytes : int, default=64 MiB
        Memory budget for materialised blocks of the mean.
    n_jobs : int or None, default=None
        Threads of the compiled loops of the mean (as in
        :class:`onlinekernel.DSGClassifier`); the model is float64.
    verbose : int, default=0
        0: ``fit`` prints nothing; 1 or more: a progress line per epoch of
        ``"sgd"`` (the mean's objective; see
        :class:`onlinekernel.DSGClassifier`), or one for the exact
        solver's pass.

    Attributes
    ----------
    coef_ : ndarray of shape (n_random_features_, 1)
        Coefficients of the mean's random features.
    intercept_ : ndarray of shape (1,)
        The prior mean :math:`m`.
    variance_coef_ : ndarray of shape (M, M)
        The operator :math:`A` over the pairs of the scaled variance
        features (a copy).
    variance_blocks_ : int
        Blocks of the variance operator.
    solver_ : str
        The solver the model was fitted with.
    n_iter_ : int
        Passes of the last ``fit`` over the data (``"exact"``: 1).
    n_random_features_, n_blocks_, t_, seed_, gamma_, loss_, feature_map_, n_features_in_
        As in :class:`onlinekernel.DSGRegressor`.

    See Also
    --------
    onlinekernel.DSGRegressor : Kernel ridge regression alone, with any loss.
    sklearn.gaussian_process.GaussianProcessRegressor : The exact GP, cubic in
        the number of rows.

    Notes
    -----
    There is no ``loss``, ``alpha`` or ``fit_intercept`` parameter: the
    loss is ``squared``, the penalty :math:`\nu = \sigma^2/n` and the
    intercept is the fixed prior mean.  A sample weight :math:`w` gives its
    row the noise variance :math:`\sigma^2/w`: with the exact solver, the
    same posterior as :math:`w` copies of the row.  The solver, the
    variance budget and (for ``"exact"``) the noise variance are fixed by
    the first fit; continuing with other values raises an error.

    References
    ----------
    B. Dai, B. Xie, N. He, Y. Liang, A. Raj, M.-F. Balcan and L. Song (2014),
    *Scalable kernel methods via doubly stochastic gradients*, NIPS,
    section 4 and appendix (the posterior variance as an operator objective).

    Examples
    --------
    >>> from onlinekernel import DSGGaussianProcessRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 1))
    >>> y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=500)
    >>> # normalize_y: the noise variance relative to the targets' (0.09 / 0.59)
    >>> gp = DSGGaussianProcessRegressor(gamma=2.0, noise_variance=0.15,
    ...                                  variance_blocks=2, random_state=0).fit(X, y)
    >>> mean, std = gp.predict([[0.5], [8.0]], return_std=True)
    >>> bool(abs(mean[0] - np.sin(1.0)) < 0.1)
    True
    >>> bool(std[0] < 0.1)  # small near the data
    True
    >>> bool(abs(std[1] - y.std()) < 0.05)  # far away the prior's: the targets' std
    True
    """
    _y_numeric = True
    _extra_state = ("_var_coef", "variance_blocks_", "solver_", "noise_variance_", "_zy",
                    "_z1", "_sw", "_swy")

    def _model_dtype(self):
        # the variance's operator objective runs in double: the model is float64
        return np.dtype(np.float64)

    def __init__(self, kernel="gaussian", *, gamma="scale", noise_variance=0.1, degree=3,
                 coef0=0.0, kernel_params=None, solver="exact", variance_blocks=8,
                 center_y=True, normalize_y=True, batch_size=64, block_size=256,
                 max_blocks=16, n_components=None, learning_rate="constant", eta0=1.0,
                 t0=100.0, max_iter=1000,
                 tol=1e-4, n_iter_no_change=5, early_stopping=False, validation_fraction=0.1,
                 shuffle=True, average=False, random_state=None, warm_start=False,
                 cache_bytes=64 * 2 ** 20, n_jobs=None, verbose=0):
        self._store_params(locals())

    # No loss, alpha or fit_intercept parameter: they follow from the model
    # (the penalty nu = noise_variance / n follows the data seen).
    def _loss_spec(self):
        """``"squared"``: the posterior mean is kernel ridge regression."""
        return "squared"

    def _fits_intercept(self):
        """Always False: the intercept is the fixed prior mean, not learned."""
        return False

    # Read-only views for users; the training reads the methods.
    loss = property(_loss_spec)
    fit_intercept = property(_fits_intercept)

    def _penalty(self, state):
        return float(self.noise_variance) / state["_sw"]

    def _validate_penalty(self):
        if self.learning_rate == "pegasos":
            raise ValueError("learning_rate='pegasos' (steps 1/(alpha t)) diverges with the "
                             "GP's penalty alpha = noise_variance / n; use 'constant', "
                             "'inverse' or 'invsqrt'")

    # ------------------------------------------------------------------ #
    # parameters and state
    # ------------------------------------------------------------------ #
    _parameter_constraints = {**BaseDSG._parameter_constraints,
                              "noise_variance": Real(0.0, strict=True),
                              "solver": _check_solver,
                              "variance_blocks": Int(1),
                              "center_y": Bool(),
                              "normalize_y": Bool()}

    def _check_combinations(self):
        super()._check_combinations()
        budget = self._budget_blocks()
        if budget is not None and self.variance_blocks > budget:
            raise ValueError(f"variance_blocks={self.variance_blocks} exceeds "
                             f"{self._budget_text()}: the variance features are the "
                             f"first blocks of the mean's")

    def _budget_blocks(self, n_outputs=1):
        # n_components is rounded up to the blocks the model needs: whole
        # blocks, and at least the variance's (validated before this is read)
        budget = super()._budget_blocks(n_outputs)
        if self.n_components is None:
            return budget
        return max(budget, self.variance_blocks)

    def _check_continuation(self):
        """A fitted model continues only with the settings its state was built for."""
        if self.solver != self.solver_:
            raise ValueError(f"the model was fitted with solver={self.solver_!r}; it cannot "
                             f"continue with solver={self.solver!r} (refit it)")
        if self.variance_blocks != self.variance_blocks_:
            raise ValueError(f"the model's variance operator has {self.variance_blocks_} "
                             f"blocks; it cannot continue with variance_blocks="
                             f"{self.variance_blocks} (refit it)")
        if self.solver == "exact" and self.noise_variance != self.noise_variance_:
            raise ValueError(f"the exact posterior was computed with noise_variance="
                             f"{self.noise_variance_!r}; it cannot continue with "
                             f"{self.noise_variance!r} (refit it)")

    @staticmethod
    def _variance_objective():
        obj = registry.get_loss(_VARIANCE_OBJECTIVE)
        if not isinstance(obj, CyOperatorObjective):
            raise TypeError(f"the registered {_VARIANCE_OBJECTIVE!r} is a "
                            f"{type(obj).__name__}, not an operator objective")
        return obj

    _prepare_targets = real_targets

    def _new_gp_state(self, X, loss, sw):
        state = self._new_state(X, 1, loss, sw)
        F = state["feature_map_"].n_components
        M = self.variance_blocks * F
        try:
            A = self._variance_objective().initial(M)
        except MemoryError:
            raise MemoryError(f"the variance operator of {M} features needs "
                              f"{8 * M * M / 2 ** 30:.1f} GiB; lower variance_blocks or "
                              f"block_size") from None
        state.update({"_var_coef": A, "variance_blocks_": int(self.variance_blocks),
                      "solver_": self.solver, "noise_variance_": float(self.noise_variance),
                      "_zy": np.zeros(M), "_z1": np.zeros(M), "_sw": 0.0, "_swy": 0.0})
        return state

    def _state_copy(self):
        state = super()._state_copy()
        for k in self._extra_state:
            v = getattr(self, k)
            state[k] = v.copy() if isinstance(v, np.ndarray) else v
        return state

    def _prior_mean(self, state):
        return state["_swy"] / state["_sw"] if self.center_y else 0.0

    # ------------------------------------------------------------------ #
    # training
    # ------------------------------------------------------------------ #
    def _absorb_exact(self, state, X, y, sw):
        """Add the rows to the exact posterior (one pass), then refresh the mean."""
        n = X.shape[0]
        fmap = state["feature_map_"]
        vb = state["variance_blocks_"]
        steps = operator_pass(fmap, state["seed_"], vb, self._variance_objective(), X, sw,
                              np.arange(n, dtype=np.int64), _EXACT_ROWS, state["_var_coef"],
                              float(self.noise_variance), None, y[:, None], state["_zy"][:, None],
                              state["_z1"])
        self._add_moments(state, y, sw)
        state["samples_seen_"] += n
        state["t_"] += int(steps)
        # mean weights (S + s2 I)^{-1} r = (I - A) r / s2 on z = phi / sqrt(M)
        m = self._prior_mean(state)
        A = state["_var_coef"]
        r = state["_zy"] - m * state["_z1"]
        w = (r - A @ r) / float(self.noise_variance)
        M = A.shape[0]
        state["_coef"] = (w / np.sqrt(M))[:, None]
        state["_coef_avg"] = np.zeros_like(state["_coef"])
        state["_scale"] = 1.0
        state["n_blocks_"] = vb
        state["_intercept"] = np.array([m])

    @staticmethod
    def _add_moments(state, y, sw):
        """Count the rows in the sums behind the prior mean and the penalty."""
        state["_sw"] += float(sw.sum())
        state["_swy"] += float(_weighted_sum(sw, y))

    def _fit_sgd(self, state, X, Y, sw):
        # the penalty noise_variance / n counts the rows trained on, not the held-out ones
        keep = (self._validation_split(state["seed_"], X.shape[0])[0]
                if self._stopping().early_stopping else slice(None))
        self._add_moments(state, Y[keep, 0], sw[keep])
        super()._fit_sgd(state, X, Y, sw)

    def _run_epoch(self, state, config, X, Y, sw, order):
        """One epoch of the mean and one of the operator (``"sgd"``), on the same order."""
        self._sgd_epoch(state, config, X, Y[:, 0], sw, order)

    def _sgd_epoch(self, state, config, X, y, sw, order):
        """One epoch of mean steps and one of operator steps, on the same order."""
        state["_intercept"] = np.array([self._prior_mean(state)])
        B = config.batch_size
        n = order.shape[0]
        rows = np.full(-(-n // B), B, dtype=np.int64)
        rows[-1] = n - B * (rows.shape[0] - 1)
        nu = self._penalty(state)
        steps = step_sizes(config.learning_rate, state["samples_seen_"], rows, B,
                           eta0=config.eta0, t0=config.t0, alpha=nu)
        super()._run_epoch(state, config, X, y[:, None], sw, order)  # the mean: squared loss, alpha nu
        operator_pass(state["feature_map_"], state["seed_"], state["variance_blocks_"],
                      self._variance_objective(), X, sw, order, B, state["_var_coef"], nu, steps)

    def _train(self, X, y, sample_weight, partial):
        first = not hasattr(self, "_coef")
        warm = not first and (partial or self.warm_start)
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", accept_sparse="csr",
                             y_numeric=True, reset=not warm)
        sw = check_sample_weight(sample_weight, X)
        keep = self._kept_rows(sw)  # a zero weight means the row is not there at all
        if not keep.all():
            X, y, sw = X[keep], y[keep], sw[keep]
        loss, Y, _ = self._prepare_targets(y, fitting=not warm)
        sw = np.ascontiguousarray(sw)
        if warm:
            self._check_continuation()
        with self._training(None if warm else self._new_gp_state(X, loss, sw)) as state:
            y = np.ascontiguousarray(self._standardize_targets(state, Y, sw, first=not warm)[:, 0])
            if self.solver == "exact":
                progress = self._progress("Epoch", tag="exact")
                self._absorb_exact(state, X, y, sw)
                state["n_epochs_seen_"] += 1
                state["n_iter_"] = 1  # one pass
                if not partial:  # fit reports its pass (partial_fit prints nothing)
                    progress(1, **self._epoch_values(state))
                    progress.finish("Exact posterior after 1 pass")
            elif partial:
                self._add_moments(state, y, sw)
                self._sgd_epoch(state, self._train_config(state), X, y, sw,
                                np.arange(X.shape[0], dtype=np.int64))
            else:
                self._fit_sgd(state, X, y[:, None], sw)
        return self

    @transactional
    @_docs.doc("Fit the posterior on ``(X, y)``.", "X", "y", (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    Row ``i`` is observed with noise variance\n"
        "    ``noise_variance / sample_weight[i]``; rows of weight 0 are left\n"
        "    out."))
    def fit(self, X, y, sample_weight=None):
        return self._train(X, y, sample_weight, partial=False)

    @transactional
    @_docs.doc("Add the rows ``(X, y)`` to the model.", "X", "y", "sample_weight_as_fit",
               body="With ``solver=\"exact\"`` this is the exact Bayesian update; with\n"
                    "``\"sgd\"`` one pass of steps over the rows, in order.")
    def partial_fit(self, X, y, sample_weight=None):
        return self._train(X, y, sample_weight, partial=True)

    # ------------------------------------------------------------------ #
    # prediction
    # ------------------------------------------------------------------ #
    def predict(self, X, return_std=False):
        """Posterior mean, and optionally the posterior std, of the latent function.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the posterior standard deviation of :math:`f(x)`
            (without the noise: the predictive std of a new observation is
            ``sqrt(std**2 + noise_variance)``), as scikit-learn's
            ``GaussianProcessRegressor.predict(X, return_std=True)``.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        check_is_fitted(self, "_coef")
        # one snapshot: a concurrent partial_fit publishes its state in one step
        st = self.__dict__.copy()
        X = validate_data(self, X, dtype=np.float64, order="C", accept_sparse="csr",
                          reset=False)
        if st["n_averaged_"]:
            raw = predict_raw(st["_blocks"], X, st["_coef_avg"], st["n_blocks_"], 1.0,
                              st["_intercept_avg"])
        else:
            raw = predict_raw(st["_blocks"], X, st["_coef"], st["n_blocks_"], st["_scale"],
                              st["_intercept"])
        scale, shift = st.get("_y_scale", 1.0), st.get("_y_mean", 0.0)
        mean = raw[:, 0] * scale + shift
        if not return_std:
            return mean
        var = operator_readout(st["feature_map_"], st["seed_"], st["variance_blocks_"],
                               self._variance_objective(), X, st["_var_coef"])
        # exact: >= 0 up to rounding; a stochastic iterate may overshoot
        return mean, np.sqrt(np.maximum(var, 0.0)) * scale

    @property
    def variance_coef_(self):
        """The operator :math:`A` over the pairs of the scaled variance features (a copy)."""
        check_is_fitted(self, "_coef")
        return self._var_coef.copy()
