"""Batch models on a fixed set of random units: extreme learning machines and
weighted random kitchen sinks.

Both are :class:`DSGRegressor` / :class:`DSGClassifier` with a fixed batch
solver and the parameters of their literature; the features, the targets,
prediction and model files are the shared mechanism.

* An extreme learning machine (Huang, Zhu & Siew 2006) draws random hidden
  units and fits the output layer by ridge regression: ``solver="cholesky"``
  on ``n_components`` units of any registered map (default ``"iln"``,
  random ReLU or sigmoid units).
* Weighted random kitchen sinks (Rahimi & Recht 2008) draw random features
  and minimise the empirical risk with the weights in a norm ball:
  ``solver="wrks"`` (:func:`onlinekernel.solvers.wrks.solve_wrks`).
"""
from onlinekernel.estimators import _docs
from onlinekernel.estimators._classifier import DSGClassifier
from onlinekernel.estimators._regressor import DSGRegressor
from onlinekernel.solvers.wrks import check_ball

__all__ = ["ExtremeLearningMachineRegressor", "ExtremeLearningMachineClassifier",
           "WeightedKitchenSinksRegressor", "WeightedKitchenSinksClassifier"]


class _BatchOnly:
    """What the fixed-solver models share: no ``partial_fit``, and fixed SGD parameters.

    The base estimator reads every parameter of :class:`DSGRegressor`; those
    a subclass does not take are class attributes here, at the values of
    :class:`DSGRegressor` (they matter to no batch fit).
    """
    loss_params = None
    input_scaling = None
    degree = 3
    coef0 = 0.0
    max_blocks = 16
    batch_size = 64
    learning_rate = "constant"
    eta0 = 1.0
    t0 = 100.0
    n_iter_no_change = 5
    early_stopping = False
    validation_fraction = 0.1
    shuffle = True
    average = False
    warm_start = False
    cache_bytes = 64 * 2 ** 20

    @property
    def partial_fit(self):
        """Not available: these models are fitted in one batch (see the class docstring)."""
        raise AttributeError(f"{type(self).__name__} is fitted by fit alone; for stochastic "
                             f"steps on the same features use {self._online_twin} with the "
                             f"same kernel and n_components")

    def _check_combinations(self):
        super()._check_combinations()
        if self.n_components is None:
            raise ValueError(f"{type(self).__name__} needs n_components (the number of "
                             f"random units), got None")


class _ELM(_BatchOnly):
    solver = "cholesky"
    _solvers = ("cholesky",)
    max_iter = 1
    tol = 1e-4

    def _map_params(self, accepted):
        params = dict(self.kernel_params or {})
        given = {"activation": self.activation}
        if self.bias != "auto":
            given["bias"] = self.bias
        elif "bias" in accepted and "bias" not in params:
            params["bias"] = 1.0  # an ELM's units have random biases
        for name, value in given.items():
            if value is None:
                continue
            if name not in accepted:
                raise ValueError(f"{name}={value!r}: kernel {self.kernel!r} has no {name} "
                                 f"parameter; leave {name}="
                                 f"{'None' if name == 'activation' else repr('auto')} "
                                 f"or use kernel='iln'")
            if name in params and params[name] != value:
                raise ValueError(f"{name}={value!r} and kernel_params={self.kernel_params!r} "
                                 f"disagree; give it once")
            params[name] = value
        return params

    def _check_combinations(self):
        super()._check_combinations()
        if (self.activation is not None or self.bias != "auto") and \
                not isinstance(self.kernel, str):
            raise ValueError("activation and bias apply to a kernel given by name; a "
                             "feature-map object carries its own")


_ELM_PARAMS = """
    Parameters
    ----------
    n_components : int, default=1024
        Hidden units: the number of random features, rounded up to whole
        blocks of ``block_size``.
    activation : {None, "relu", "sigmoid"}, default=None
        The hidden units' activation, for maps that take one (``"iln"``);
        ``None``: the map's default (``"relu"`` for ``"iln"``).  The same as
        ``kernel_params={"activation": ...}``.
    bias : "auto", float or None, default="auto"
        The standard deviation of the hidden units' random biases
        ``b ~ N(0, bias^2)``, for maps that take one (``"iln"``, whose own
        default is 0: units through the origin, which cannot place a ReLU
        kink or a sigmoid's step anywhere else).  ``"auto"``: 1.0 for maps
        that take a bias (on kin8nm, ReLU units: test RMSE 0.40 against 0.60
        without), nothing for the others; ``None``: the map's default.  The
        same as ``kernel_params={"bias": ...}``.
    kernel : str or CyFeatureMap, default="iln"
        Any registered feature map: ``"iln"`` draws ReLU or sigmoid units
        ``psi(w^T x + b)`` with Gaussian ``w``; ``"gaussian"`` cosine units
        (random Fourier features), ``"arccos"``, ``"laplacian"``, ...
    gamma : "scale" or float, default="scale"
        The input weights' scale, for maps that take one (see
        :class:`onlinekernel.DSGClassifier`).
    kernel_params : dict, default=None
        Further parameters of the map.
    alpha : float, default=1e-6
        The ridge penalty of the output weights, as every estimator's
        ``alpha``: the objective is the mean squared error plus
        ``alpha * M / 2 * |coef_|^2`` over ``M`` units.
    fit_intercept : bool, default=True
        An unpenalised output bias.
    block_size : int, default=256
        Units per block (the seed regenerates block ``j`` from ``(seed_, j)``).
    max_memory : int, default=4 GiB
        As in :class:`onlinekernel.DSGClassifier`.
    random_state : int, RandomState or None, default=None
        Seeds the hidden units.
    dtype : {"float64", "float32"}, default="float64"
    n_jobs : int or None, default=None
    verbose : int, default=0
        As in :class:`onlinekernel.DSGClassifier` (one line for the solve)."""


@_docs.fill
class ExtremeLearningMachineRegressor(_ELM, DSGRegressor):
    __doc__ = r"""Extreme learning machine: random hidden units and a ridge output layer.

    An extreme learning machine (Huang, Zhu & Siew 2006) is a one-hidden-layer
    network whose hidden weights are drawn at random and never trained; the
    output weights are the ridge regression of the targets on the hidden
    units.  Here the hidden layer is any registered feature map (by default
    ``"iln"``: ReLU units ``sqrt(2) max(0, w^T x + b)`` or sigmoid units,
    with random biases ``b``) and
    the output layer is the exact ridge solver of :mod:`onlinekernel.solvers`
    (``solver="cholesky"``), so the model is exactly
    ``DSGRegressor(kernel=kernel, gamma=gamma, kernel_params={"bias": 1.0},
    n_components=n_components, alpha=alpha, solver="cholesky")`` -- the same features, coefficients, predictions and
    model file format -- with the names and defaults of an ELM.  Targets are
    standardised internally (``normalize_y``).  It has no ``partial_fit``
    (use :class:`DSGRegressor` for stochastic steps on the same units).
""" + _ELM_PARAMS + r"""
    normalize_y : bool, default=True
        Regress standardised targets and map predictions back (see
        :class:`onlinekernel.DSGRegressor`).

    Attributes
    ----------
    coef_ : ndarray of shape (n_random_features_, 1)
        The output weights.
    intercept_ : ndarray of shape (1,)
    {{batch_attributes}}

    See Also
    --------
    ExtremeLearningMachineClassifier, WeightedKitchenSinksRegressor, DSGRegressor

    Examples
    --------
    >>> from onlinekernel import DSGRegressor, ExtremeLearningMachineRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 2))
    >>> y = np.sin(X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=500)
    >>> elm = ExtremeLearningMachineRegressor(n_components=512, random_state=0).fit(X, y)
    >>> float(elm.score(X, y)) > 0.9
    True
    >>> same = DSGRegressor(kernel="iln", gamma="scale", kernel_params={"bias": 1.0},
    ...                     n_components=512, alpha=1e-6, solver="cholesky",
    ...                     random_state=0).fit(X, y)
    >>> bool(np.array_equal(elm.predict(X), same.predict(X)))
    True
    """
    _online_twin = "DSGRegressor"

    def __init__(self, n_components=1024, activation=None, bias="auto", *, kernel="iln",
                 gamma="scale", kernel_params=None, alpha=1e-6, fit_intercept=True, block_size=256,
                 max_memory=2 ** 32, random_state=None, dtype="float64", n_jobs=None,
                 normalize_y=True, verbose=0):
        self._store_params(locals())

    loss = "squared"


@_docs.fill
class ExtremeLearningMachineClassifier(_ELM, DSGClassifier):
    __doc__ = r"""Extreme learning machine classifier: random hidden units, ridge on ±1 targets.

    The classifier of an extreme learning machine (Huang et al. 2012): the
    output weights are the ridge regression of ``+1`` / ``-1`` targets (two
    classes: one output; more: one output per class, ``+1`` for the row's
    class and ``-1`` elsewhere), and ``predict`` takes the sign or the
    largest output, as scikit-learn's ``RidgeClassifier``.  It is
    ``DSGClassifier(loss="squared", solver="cholesky", kernel=kernel,
    n_components=n_components, alpha=alpha)`` with the names and defaults of
    an ELM (see :class:`ExtremeLearningMachineRegressor`); the squared loss
    has no probabilities, so there is no ``predict_proba``.
""" + _ELM_PARAMS + r"""

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_random_features_, n_outputs)
        The output weights (one column for two classes, else one per class).
    intercept_ : ndarray of shape (n_outputs,)
    {{batch_attributes}}

    See Also
    --------
    ExtremeLearningMachineRegressor, WeightedKitchenSinksClassifier, DSGClassifier

    Examples
    --------
    >>> from onlinekernel import ExtremeLearningMachineClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2))
    >>> y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, "in", "out")
    >>> clf = ExtremeLearningMachineClassifier(n_components=256, activation="sigmoid",
    ...                                        random_state=0).fit(X, y)
    >>> float(clf.score(X, y)) > 0.9
    True
    >>> clf.decision_function(X[:2]).shape
    (2,)
    """
    _online_twin = "DSGClassifier"

    def __init__(self, n_components=1024, activation=None, bias="auto", *, kernel="iln",
                 gamma="scale", kernel_params=None, alpha=1e-6, fit_intercept=True, block_size=256,
                 max_memory=2 ** 32, random_state=None, dtype="float64", n_jobs=None,
                 verbose=0):
        self._store_params(locals())

    loss = "squared"


class _WRKS(_BatchOnly):
    solver = "wrks"
    _solvers = ("wrks",)

    def _check_combinations(self):
        super()._check_combinations()
        check_ball(self.constraint, self.radius)

    def _solver_options(self):
        return {"constraint": self.constraint, "radius": float(self.radius)}


_WRKS_PARAMS = """
    Parameters
    ----------
    n_components : int, default=1024
        The number of random features ``M``, rounded up to whole blocks of
        ``block_size``.
    constraint : {"linf", "l2"}, default="linf"
        ``"linf"``: every weight ``|coef_[k]| <= radius / M`` (Rahimi &
        Recht's ball); ``"l2"``: ``sqrt(M) |coef_| <= radius`` per output,
        the norm of the function in the random features' RKHS (the
        constrained form of ridge regression).  The L-infinity ball lies
        inside the L2 ball of the same radius.
    radius : float, default=10.0
        The ball's radius ``C``: a bound on the function's size (``|f(x) -
        b| <= sqrt(2) C`` for the Gaussian map under ``"linf"``), in units
        of the internal targets (standardised targets for the regressor,
        margins for the classifier).  Tune it like a penalty: small radii
        underfit, large ones leave the constraint inactive.
    loss : str or loss object
        Any loss of curvature ``"constant"`` or ``"smooth"`` (squared,
        Huber, logistic, multinomial, squared hinge, ...).
    kernel, gamma, degree, coef0, kernel_params, loss_params
        The feature map and the loss's parameters, as in
        :class:`onlinekernel.DSGClassifier`.
    alpha : float, default=0.0
        An added ridge penalty (the paper has none).
    fit_intercept : bool, default=True
        An unconstrained intercept.
    block_size : int, default=256
    max_iter : int, default=1000
        Projected-gradient iterations at most (a ``ConvergenceWarning``
        when ``tol`` is not met by then).  With ``alpha=0`` the ball is the
        only regulariser, and as ``radius`` grows the problem approaches
        the unregularised one: large radii need more iterations (a
        3-class logistic fit on 300 rows and 256 features: 475 at
        ``radius=3``, 2,334 at 10, 9,019 at 30).
    tol : float or None, default=1e-4
        Stop when the projected-gradient norm is ``tol`` times the start's
        (``None``: all ``max_iter`` iterations).  The features keep the
        model's precision (``dtype``).
    max_memory : int, default=4 GiB
        The ``n x M`` feature matrix is kept when it fits; larger ones are
        regenerated on every product.
    random_state : int, RandomState or None, default=None
    dtype : {"float64", "float32"}, default="float64"
    n_jobs : int or None, default=None
    verbose : int, default=0
        A progress line per iteration (objective, relative projected-gradient
        norm, step), as in :class:`onlinekernel.DSGClassifier`."""


@_docs.fill
class WeightedKitchenSinksRegressor(_WRKS, DSGRegressor):
    __doc__ = r"""Weighted random kitchen sinks: random features, weights in a norm ball.

    Rahimi & Recht (2008) replace the optimisation of a network's hidden
    layer by randomisation: draw ``M`` features ``phi(x; w_k)`` from the
    kernel's distribution, then minimise the empirical risk of
    ``f(x) = sum_k c_k phi(x; w_k) + b`` over ``|c|_inf <= C / M``.  The
    fit is :func:`onlinekernel.solvers.wrks.solve_wrks`: accelerated
    projected gradient on the features, stopping on the projected-gradient
    norm.  The model is a :class:`DSGRegressor` (prediction, model files);
    it has no ``partial_fit``.
""" + _WRKS_PARAMS + r"""
    normalize_y : bool, default=True
        Fit standardised targets (``radius`` is then in units of the
        target's standard deviation) and map predictions back.

    Attributes
    ----------
    coef_ : ndarray of shape (n_random_features_, 1)
    intercept_ : ndarray of shape (1,)
    n_iter_ : int
        Projected-gradient iterations of the last fit.
    {{batch_attributes}}

    See Also
    --------
    WeightedKitchenSinksClassifier, ExtremeLearningMachineRegressor

    References
    ----------
    A. Rahimi and B. Recht, "Weighted sums of random kitchen sinks: replacing
    minimization with randomization in learning", NIPS 21 (2008).

    Examples
    --------
    >>> from onlinekernel import WeightedKitchenSinksRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=500)
    >>> reg = WeightedKitchenSinksRegressor(n_components=256, radius=20.0,
    ...                                     random_state=0).fit(X, y)
    >>> float(reg.score(X, y)) > 0.9
    True
    >>> bool(np.abs(reg.coef_).max() <= 20.0 / 256 + 1e-12)
    True
    """
    _online_twin = "DSGRegressor"

    def __init__(self, n_components=1024, constraint="linf", radius=10.0, *, loss="squared",
                 kernel="gaussian", gamma="scale", degree=3, coef0=0.0, kernel_params=None,
                 loss_params=None, alpha=0.0, fit_intercept=True, block_size=256,
                 max_iter=1000, tol=1e-4, max_memory=2 ** 32, random_state=None,
                 dtype="float64", n_jobs=None, normalize_y=True, verbose=0):
        self._store_params(locals())


@_docs.fill
class WeightedKitchenSinksClassifier(_WRKS, DSGClassifier):
    __doc__ = r"""Weighted random kitchen sinks for classification (Rahimi & Recht 2008).

    Random features, then the empirical risk of a classification loss
    (logistic by default, multinomial beyond two classes, or the squared
    hinge, ...) minimised over weights in an L-infinity or L2 ball by
    accelerated projected gradient; see
    :class:`WeightedKitchenSinksRegressor`.  The model is a
    :class:`DSGClassifier` (``predict_proba`` with the logistic loss); it
    has no ``partial_fit``.
""" + _WRKS_PARAMS + r"""

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_random_features_, n_outputs)
    intercept_ : ndarray of shape (n_outputs,)
    n_iter_ : int
    {{batch_attributes}}

    See Also
    --------
    WeightedKitchenSinksRegressor, ExtremeLearningMachineClassifier

    Examples
    --------
    >>> from onlinekernel import WeightedKitchenSinksClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2))
    >>> y = (np.hypot(X[:, 0], X[:, 1]) < 1.0).astype(int)
    >>> clf = WeightedKitchenSinksClassifier(n_components=256, radius=5.0,
    ...                                      random_state=0).fit(X, y)
    >>> float(clf.score(X, y)) > 0.9
    True
    >>> clf.predict_proba(X[:1]).shape
    (1, 2)
    """
    _online_twin = "DSGClassifier"

    def __init__(self, n_components=1024, constraint="linf", radius=10.0, *, loss="logistic",
                 kernel="gaussian", gamma="scale", degree=3, coef0=0.0, kernel_params=None,
                 loss_params=None, alpha=0.0, fit_intercept=True, block_size=256,
                 max_iter=1000, tol=1e-4, max_memory=2 ** 32, random_state=None,
                 dtype="float64", n_jobs=None, verbose=0):
        self._store_params(locals())
