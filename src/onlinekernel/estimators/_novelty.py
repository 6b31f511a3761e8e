"""DSGOneClassSVM: novelty detection by doubly stochastic gradients."""
import numpy as np
from sklearn.base import OutlierMixin
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from onlinekernel import registry
from onlinekernel.estimators import _docs
from onlinekernel.estimators._base import BaseDSG, model_outputs, transactional


def _no_targets(X):
    """The zero targets the novelty loss ignores, one per row of ``X``."""
    try:
        n = _num_samples(X)
    except TypeError:
        n = 0  # not array-like: validate_data names the problem with X
    return np.zeros(n)


def _check_nu(name, nu):
    if (isinstance(nu, bool) or not isinstance(nu, (int, float, np.integer, np.floating))
            or not 0.0 < nu <= 1.0):
        raise ValueError(f"{name} must be a number in (0, 1], got {nu!r}")


@_docs.fill
class DSGOneClassSVM(OutlierMixin, BaseDSG):
    r"""One-class SVM (novelty detection) trained by doubly stochastic gradients.

    Learns a function :math:`f(x) = \sum_{j,k} \alpha_{jk}\phi_{\omega_{jk}}(x)`
    and an offset :math:`\rho` minimising the one-class SVM objective of
    Schölkopf et al. (2001), in its stochastic form

    .. math::

        \min_{f,\rho}\; E\big[\max(0, \rho - f(x))\big]
            + \frac{\nu}{2}\|f\|^2_{\mathcal H} - \nu\rho ,

    which is :math:`\nu` times the usual
    :math:`\frac12\|f\|^2 + \frac{1}{\nu n}\sum_i \xi_i - \rho`: the same
    minimiser as scikit-learn's :class:`~sklearn.svm.OneClassSVM` with the
    same kernel and ``nu``, up to the random-feature approximation of the
    kernel.  :math:`\nu` plays two parts: it is the penalty of :math:`f`
    (the ``alpha`` of the other DSG estimators, fixed to ``nu`` here) and,
    at the optimum, an upper bound on the fraction of training rows outside
    the learned region (:math:`f(x) < \rho`) and a lower bound on the
    fraction of support vectors (the :math:`\nu`-property).

    Each step (Dai et al., 2014) takes a mini-batch and a block of random
    features regenerated from ``(seed_, j)``, adds
    :math:`\frac{\gamma_t}{B}\sum_b \mathbb 1[f(x_b) \le \rho]\,\phi(x_b)`
    to :math:`f`, shrinks the older coefficients by :math:`1 - \gamma_t\nu`
    and moves the offset by
    :math:`\rho \leftarrow \rho + \gamma_t(\nu - \operatorname{mean}_b
    \mathbb 1[f(x_b) \le \rho])` (the ``novelty`` loss, whose intercept is
    :math:`-\rho`).  The budget rules are those of
    :class:`onlinekernel.DSGClassifier`.

    Steps.  The offset is a stochastic approximation of a quantile of
    :math:`f` on the data, and the one-class solution is nearly flat on
    the bulk of the data (on a Gaussian mixture, the values of :math:`f`
    from its 5th to its 90th percentile lie within 0.006 of :math:`\rho`
    = 0.08): an offset step of ``0.01`` already moves the flagged fraction
    by many points.  The defaults therefore take small steps (``eta0=0.2``,
    decaying as ``1/t`` over ``t0=20`` steps of 32 rows), with passes until
    the objective stops improving (the stopping rule below).
    For the tightest :math:`\nu`-fraction, average the iterates of the
    second half of the fit (``average=k`` with ``k`` half the steps,
    ``n_passes * ceil(n / batch_size) / 2``, with ``tol=None`` for a fixed
    number of passes ``max_iter``): on training data the fraction
    flagged is then within about 0.01 of ``nu`` (``tests/estimators/test_novelty.py``;
    the last iterate, the default, was within 0.016 on a Gaussian mixture
    and 0.035 on a pendigits class).  Averaging from the first step
    (``average=True``) biases the offset low: the early iterates, when
    every row is a margin violation, have a different shape, and the
    :math:`\nu`-quantile of an average of functions is not the average of
    their quantiles (measured on the mixture: 0.02 flagged for
    ``nu=0.05``, 0.075 for 0.1).  Features should be standardised
    (``gamma="scale"`` assumes comparable scales).

    Parameters
    ----------
    nu : float, default=0.1
        The :math:`\nu` of the objective, in (0, 1]: the target fraction of
        training outliers and the penalty of :math:`f`.
    kernel : str or feature map, default="gaussian"
        A registered feature-map name or a feature-map instance.
    gamma : "scale" or float, default="scale"
        Kernel bandwidth for maps that take one; ``"scale"`` uses
        ``1 / (n_features * X.var())`` of the first data seen.
    {{map_params}}
    batch_size : int, default=32
        Rows per training step.
    block_size : int, default=256
        Random features per block.
    max_blocks : int or None, default=16
        Feature budget in blocks; ``None`` grows one block per step.
    n_components : int or None, default=None
        The feature budget as a number of random features, as
        scikit-learn's ``RBFSampler(n_components=N)`` (the usual partner of
        ``SGDOneClassSVM``) takes it, rounded up to whole blocks of
        ``block_size``: ``ceil(N / block_size)`` blocks replace
        ``max_blocks``; ``None``: ``max_blocks * block_size``.
    max_model_bytes : int or None, default=None
        The budget as a cap in bytes on the learned state, for a growing
        model (``max_blocks=None``; see :class:`onlinekernel.DSGClassifier`).
    learning_rate : {"inverse", "invsqrt", "constant", "pegasos"}, default="inverse"
        Step schedule (see :class:`onlinekernel.DSGClassifier`).  The
        offset moves by at most ``step * max(nu, 1 - nu)`` per step, so
        ``pegasos`` (a first step of ``1 / nu``) throws it far off.
    eta0 : float, default=0.2
        Initial step.
    t0 : float, default=20.0
        Time scale of the step decay, in steps.
    max_iter : int, default=1000
        Most passes over the data in ``fit`` (``partial_fit`` makes one);
        hitting it warns (``ConvergenceWarning``).
    tol : float or None, default=1e-4
        Stop when the objective (the one above, including
        :math:`-\nu\rho`) has not improved by ``tol`` for
        ``n_iter_no_change`` passes (scikit-learn's ``SGDOneClassSVM``
        rule); ``None`` runs all ``max_iter`` passes.
    n_iter_no_change : int, default=5
        Passes without improvement before ``fit`` stops.
    early_stopping : bool, default=False
        Score the objective's risk on ``validation_fraction`` of the rows
        held out (a seeded split) instead of the training objective.
    validation_fraction : float, default=0.1
        The held-out share for ``early_stopping``.
    shuffle : bool, default=True
        Shuffle the rows before each epoch of ``fit``.
    average : bool, int or "polynomial", default=False
        Polyak-Ruppert averaging of the coefficients and of the offset
        (``True``: from the first step; ``n``: from step ``n + 1``).
        Averaging the second half of the steps removes the step noise that
        otherwise blurs the fraction of flagged rows (see above).
    {{seed_to_jobs}}
    verbose : int, default=0
        0: ``fit`` prints nothing; 1 or more: a progress line per pass
        (the objective above, the norm of :math:`f`, the offset's
        intercept :math:`-\rho`), as scikit-learn's ``SGDOneClassSVM``
        prints them (see :class:`onlinekernel.DSGClassifier`).

    Attributes
    ----------
    offset_ : float
        The offset :math:`\rho`: ``decision_function = score_samples -
        offset_`` (scikit-learn's convention).
    coef_ : ndarray of shape (n_random_features_, 1)
        Coefficients of the random features.
    intercept_ : ndarray of shape (1,)
        The raw intercept, ``-offset_``.
    n_random_features_, n_blocks_, t_, seed_, gamma_, loss_, feature_map_, n_features_in_
        As in :class:`onlinekernel.DSGClassifier`.
    n_iter_ : int
        Passes of the last ``fit``.

    Notes
    -----
    There is no ``loss``, ``alpha`` or ``fit_intercept`` parameter: the loss
    is ``novelty`` with this ``nu``, the penalty is ``nu`` and the offset is
    always learned (the objective is degenerate without it).  Changing
    ``nu`` between ``partial_fit`` calls continues the model with the new
    value in both roles.  Sample weights scale each row's hinge term.

    Examples
    --------
    >>> from onlinekernel import DSGOneClassSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 2))
    >>> ocsvm = DSGOneClassSVM(nu=0.1, random_state=0).fit(X)
    >>> round(float(np.mean(ocsvm.predict(X) == -1)), 1)  # about nu
    0.1
    >>> ocsvm.predict([[0.0, 0.0], [4.0, 4.0]])
    array([ 1, -1])
    >>> bool(np.allclose(ocsvm.decision_function(X),
    ...                  ocsvm.score_samples(X) - ocsvm.offset_))
    True
    """
    _y_numeric = True
    _parameter_constraints = {**BaseDSG._parameter_constraints, "nu": _check_nu}

    def __init__(self, nu=0.1, kernel="gaussian", *, gamma="scale", degree=3, coef0=0.0,
                 kernel_params=None, batch_size=32, block_size=256, max_blocks=16,
                 n_components=None,
                 max_model_bytes=None, learning_rate="inverse", eta0=0.2, t0=20.0,
                 max_iter=1000, tol=1e-4,
                 n_iter_no_change=5, early_stopping=False, validation_fraction=0.1, shuffle=True,
                 average=False, random_state=None, warm_start=False,
                 cache_bytes=64 * 2 ** 20, dtype="float64", n_jobs=None, verbose=0):
        self._store_params(locals())

    # No loss, alpha or fit_intercept parameter: they follow from nu.
    def _loss_spec(self):
        """The ``novelty`` loss with this ``nu``."""
        return registry.get_loss("novelty", nu=self.nu)

    def _penalty(self, state):
        """The penalty of :math:`f`: ``nu``."""
        return float(self.nu)

    def _validate_penalty(self):
        """The penalty is ``nu``, checked in ``_validate_params``."""

    def _fits_intercept(self):
        """Always True: the offset is part of the objective."""
        return True

    # Read-only views for users; the training reads the methods.
    loss = property(_loss_spec)
    alpha = property(lambda self: self.nu, doc="The penalty of :math:`f`: ``nu``.")
    fit_intercept = property(_fits_intercept)

    def _prepare_targets(self, y, fitting, classes=None):
        loss = self._resolve_base_loss() if fitting else self.loss_
        return loss, np.zeros((y.shape[0], 1)), 1

    def _objective(self, state, X, Y, sw, penalty):
        """The risk ``E max(0, rho - f) - nu rho`` (+ the penalty of ``f``).

        The offset term is not a per-row loss (the ``novelty`` loss steps it
        through the intercept), so it is added here: without it, lowering
        :math:`\rho` would always look like progress.
        """
        b = state["_intercept_avg"] if state["n_averaged_"] else state["_intercept"]
        return super()._objective(state, X, Y, sw, penalty) + self.nu * float(b[0])

    def _follow_nu(self):
        """Continue a fitted model with the current ``nu`` (the loss's copy of it)."""
        if hasattr(self, "loss_") and self.loss_.nu != self.nu:
            self.loss_ = self._loss_spec()

    @transactional
    @_docs.doc("Fit the model on ``X``: passes until the stopping rule holds.", "X", "y_ignored",
               "sample_weight_hinge")
    def fit(self, X, y=None, sample_weight=None):
        self._validate_params()
        if self.warm_start:
            self._follow_nu()
        return self._fit(X, _no_targets(X), sample_weight)

    @transactional
    @_docs.doc("Run one pass of training steps over ``X``, in order.", "X", "y_ignored",
               "sample_weight_hinge")
    def partial_fit(self, X, y=None, sample_weight=None):
        self._validate_params()
        self._follow_nu()
        return self._partial_fit(X, _no_targets(X), sample_weight)

    def _scores(self, X):
        """``f(X)`` and the offset, from one snapshot of the model."""
        check_is_fitted(self, "_coef")
        st = self.__dict__.copy()  # a concurrent partial_fit replaces the state whole
        X = validate_data(self, X, dtype=st["_coef"].dtype, order="C", accept_sparse="csr",
                          reset=False)
        b = st["_intercept_avg"] if st["n_averaged_"] else st["_intercept"]
        f = model_outputs(st, X, self.n_jobs, intercept=False)[:, 0]
        return f, -float(b[0])

    @property
    def offset_(self):
        """The offset :math:`\\rho` (``decision_function = score_samples - offset_``)."""
        check_is_fitted(self, "_coef")
        st = self.__dict__.copy()  # averaged or not, from one state
        return -float((st["_intercept_avg"] if st["n_averaged_"] else st["_intercept"])[0])

    def score_samples(self, X):
        """The learned function :math:`f(x)`: larger is more normal, shape ``(n,)``."""
        return self._scores(X)[0]

    def decision_function(self, X):
        """:math:`f(x) - \\rho`: positive for inliers, negative for outliers, shape ``(n,)``."""
        f, rho = self._scores(X)
        return f - rho

    def predict(self, X):
        """``+1`` for inliers (``decision_function >= 0``), ``-1`` for outliers."""
        return np.where(self.decision_function(X) >= 0.0, 1, -1)
