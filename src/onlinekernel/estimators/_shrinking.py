"""ShrinkingGradientRegressor: online regression with sampled features only.

Livni, Carmon & Globerson (2017), *Learning infinite layer networks without
the kernel trick*: online gradient descent in the span of the seen points,
``f = sum_i alpha_i Phi(x_i)``, where the inner product
``<f, Phi(x_t)>`` is never computed from a kernel but estimated from ``m``
sampled (point, random feature) pairs, and a shrinking step keeps the
coefficients, hence the variance of the estimate, bounded.  The compiled
rounds are in :mod:`onlinekernel.solvers.shrinking`.
"""
import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from onlinekernel.featuremaps.base import PyFeatureMapAdapter, as_cy_feature_map
from onlinekernel.solvers.shrinking import MAX_ESTIMATES, readout_accumulate, sg_rounds
from onlinekernel.solvers.dsg import BlockSource
from onlinekernel.estimators import _docs
from onlinekernel.estimators._base import BaseDSG, model_outputs, seed_of, transactional
from onlinekernel.estimators._constraints import Bool, Int, Real
from onlinekernel.estimators._constraints import check_int as _check_int
from onlinekernel.estimators._constraints import check_real as _check_real

_PREDICTIONS = ("features", "kernel")
# Rows of the support evaluated per kernel product in predict (bounds memory).
_KERNEL_CHUNK = 2048


def estimate_map(fmap):
    """The map that draws the features of the sampled pairs: one feature per block.

    ``fmap``'s own class and parameters with ``n_components=1`` (Algorithm 2
    of Livni et al.: a fresh unit per pair), or the smallest power of two the
    map accepts (the mean of a block's feature products is an unbiased
    kernel estimate as well); bound to ``fmap``'s input dimension.

    Parameters
    ----------
    fmap : CyFeatureMap
        A bound feature map (compiled or a Python map's adapter).

    Returns
    -------
    CyFeatureMap

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> estimate_map(get_feature_map("iln", gamma=0.5).bind(3))
    InfiniteLayerUnits(n_components=1, gamma=0.5, activation='relu', bias=0.0)
    >>> estimate_map(get_feature_map("gaussian", pairs=True).bind(3)).n_components
    2
    """
    base = fmap.map_obj if isinstance(fmap, PyFeatureMapAdapter) else fmap
    params = base.get_params()
    errors = []
    for F in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        try:
            small = type(base)(**dict(params, n_components=F))
        except (ValueError, TypeError) as exc:
            errors.append(str(exc))
            continue
        return as_cy_feature_map(small).bind(fmap.n_features_in)
    raise ValueError(f"the feature map {base!r} cannot be built with a block of at most 256 "
                     f"features ({errors[-1]}); the Shrinking Gradient draws a fresh block "
                     f"per sampled pair")


def _dense(X):
    """Sparse rows made dense: the support set stores the rows it keeps as dense arrays."""
    return X.toarray() if sp.issparse(X) else X


def _check_estimates(name, value):
    _check_int(name, value, 1)
    if value > MAX_ESTIMATES:
        raise ValueError(f"{name} must be at most {MAX_ESTIMATES}, got {value}")


def _check_prediction(name, value):
    if not isinstance(value, str) or value not in _PREDICTIONS:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, _PREDICTIONS))}, "
                         f"got {value!r}")


class ShrinkingGradientRegressor(RegressorMixin, BaseDSG):
    r"""Regression by the Shrinking Gradient algorithm: no kernel, sampled features only.

    Livni, Carmon & Globerson (2017) learn a function of an infinite layer
    network, :math:`f(x) = \langle f, \Phi(x)\rangle =
    \int f(w)\,\psi(x; w)\,d\mu(w)`, for a family of random features
    :math:`\psi(\cdot; w)`, :math:`w \sim \mu`, whose kernel
    :math:`k(x, x') = E_w[\psi(x; w)\psi(x'; w)]` need not have a closed
    form (sigmoid units, say: ``kernel="iln"`` with
    ``kernel_params={"activation": "sigmoid"}``).  Online gradient descent on
    the squared loss keeps :math:`f_t = \sum_{i<t} \alpha_i \Phi(x_i)` (the
    seen points and one coefficient each) and, at round :math:`t`,

    1. estimates :math:`\langle f_t, \Phi(x_t)\rangle` by EST_SCALAR_PROD
       (their Algorithm 2): ``m = n_estimates`` pairs, each an index
       :math:`i` drawn with probability :math:`|\alpha_i|/\|\alpha\|_1` and a
       fresh feature :math:`w \sim \mu`,
       :math:`E_t = \frac{\|\alpha\|_1}{m}\sum_k \mathrm{sgn}(\alpha_{i_k})
       \psi(x_{i_k}; w_k)\psi(x_t; w_k)`, unbiased;
    2. if :math:`|E_t| \ge 16B` *shrinks*: :math:`\alpha \leftarrow \alpha/4`
       (a large estimate means :math:`f_t` is far outside the ball of
       radius :math:`B`; shrinking keeps :math:`\|\alpha\|_1`, and so the
       variance of the next estimates, of order :math:`\eta t`);
    3. otherwise takes the gradient step
       :math:`\alpha_t = -\eta\,(E_t + b_t - y_t)` on the new point (and,
       with ``fit_intercept``,
       :math:`b \leftarrow b - \min(\eta, 1) (E_t + b_t - y_t)`),

    with :math:`\eta` = ``eta0`` :math:`\cdot B/\sqrt T`.  With
    :math:`m = \tilde O(B^4 T)` pairs per round, :math:`T` rounds reach the
    optimal :math:`O(B/\sqrt T)` excess risk against every
    :math:`\|f^*\| < B` (their Theorem 1), with :math:`\tilde O(T^2)` feature
    evaluations in all -- the size of a kernel matrix, without its kernel.

    The model predicts with the **average** of the iterates
    :math:`\bar f = \frac1T\sum_t f_t` (their Corollary 1, online-to-batch
    conversion; ``average=False``: the last iterate).  A prediction is
    :math:`\langle \bar f, \Phi(x)\rangle + \bar b`, evaluated by

    * ``prediction="features"`` (default): ``predict_blocks`` blocks of
      ``block_size`` random features (or ``n_components`` features) drawn
      once from the model's seed,
      :math:`\frac1R\sum_r \big(\sum_i \bar\alpha_i \psi(x_i; w_r)\big)
      \psi(x; w_r)`: an unbiased estimate for every :math:`x` with the
      variance bound of EST_SCALAR_PROD (their Theorem 1.3) with
      :math:`m = R`, the same :math:`w_r` for every row (so a prediction is
      a deterministic function of the model and the row), and its inner
      sums computed once, as the coefficients ``coef_`` of an ordinary
      random-feature model: a prediction costs :math:`R` features whatever
      the number of stored points;
    * ``prediction="kernel"``: exactly, :math:`\sum_i \bar\alpha_i k(x_i, x)`,
      for maps with a closed-form ``kernel`` (``iln`` with ReLU units,
      ``gaussian``, ...).

    Parameters
    ----------
    kernel : str or feature map, default="iln"
        The random features :math:`\psi`: a registered feature map or a
        feature-map object, as for :class:`DSGRegressor`.
    gamma : float or "scale", default="scale"
        The map's ``gamma``, for maps that take one (``iln``: the variance
        of the units' weights); ``"scale"`` is :math:`1/(d\,\mathrm{Var}(X))`.
    degree, coef0 : int, float
        The map's ``degree`` and ``coef0``, for maps that take them.
    kernel_params : dict, default=None
        Further parameters of the map (``{"activation": "sigmoid",
        "bias": 1.0}`` for ``iln``).
    n_estimates : int, default=256
        Sampled pairs per round, :math:`m` (at most :math:`2^{24}`).  The
        standard deviation of an estimate is at most
        :math:`\|\alpha\|_1\sup|\psi|^2/\sqrt m`; the theory asks for
        :math:`m` of order :math:`T` (up to :math:`B^4\log` factors).
    B : float, default=1.0
        The norm bound :math:`B` of the comparison class
        :math:`\|f\| < B`: the shrinking threshold is :math:`16B` and the
        step :math:`\eta = \mathrm{eta0}\cdot B/\sqrt T`.  Like the
        paper's analysis (labels in :math:`[-1, 1]`), it assumes targets of
        order one: scale them.
    T : int or None, default=None
        The horizon :math:`T` of the step.  ``None``: ``fit`` uses its own
        number of rounds (``n_epochs * n_samples``); ``partial_fit`` uses the
        anytime step :math:`\mathrm{eta0}\cdot B/\sqrt t` at round
        :math:`t`, which continues a ``fit`` of :math:`T` rounds where it
        stopped.
    eta0 : float, default=1.0
        Factor of the step (the paper's choice is 1).
    n_epochs : int, default=1
        Passes of ``fit`` over the data (the paper's setting is one pass);
        every round stores its point, so memory grows with the passes.  A
        number of passes, not a cap with a stopping rule (``max_iter``,
        ``tol``) as in the other estimators: the step is set by the horizon
        :math:`T` before the first round, and the analysis is for exactly
        :math:`T` rounds.
    fit_intercept : bool, default=True
        Learn an intercept :math:`b` by the same gradient steps, at most 1
        (a step of 1 sets :math:`b` to the round's residual; it is not
        shrunk, the bound :math:`B` is on :math:`f`).
    average : bool, default=True
        Predict with the average of the iterates (else the last one).
    prediction : {"features", "kernel"}, default="features"
        How predictions evaluate :math:`\langle\bar f, \Phi(x)\rangle` (see
        above).
    block_size : int, default=256
        Features per block of the map (of the prediction features).
    predict_blocks : int, default=16
        Blocks of prediction features, ``R = predict_blocks * block_size``
        (0 is allowed with ``prediction="kernel"``).  Training adds
        :math:`R` feature evaluations per stored point to keep ``coef_``.
    n_components : int or None, default=None
        The number of prediction features ``R``, as scikit-learn's
        ``RBFSampler(n_components=R)`` takes it, rounded up to whole blocks
        of ``block_size``; when given, it replaces ``predict_blocks`` (then
        ignored) by ``ceil(R / block_size)``.  ``None``:
        ``R = predict_blocks * block_size``.  Fixed when the model is built:
        continuing it (``partial_fit``) with another number of blocks is an
        error.
    shuffle : bool, default=True
        Shuffle the rows of ``fit`` before each pass (from the seed).
    random_state : int, RandomState or None, default=None
        Seeds the model's 64-bit seed, from which every random number of
        training and prediction is drawn (counter-based: a fit is
        reproduced bit for bit).
    cache_bytes : int, default=64 MiB
        Memory budget for materialised blocks of the prediction features.
    n_jobs : int or None, default=None
        Threads of the prediction with features (as in
        :class:`onlinekernel.DSGClassifier`); the rounds of training are
        sequential, and the model is float64.
    verbose : int, default=0
        0: ``fit`` prints nothing; 1 or more: a progress line per pass
        (``-- Epoch n``: the rounds so far ``T``, the stored points, the
        shrinks, the step, and the time), in the format of scikit-learn's
        SGD estimators.  ``partial_fit`` prints nothing.

    Attributes
    ----------
    coef_ : ndarray of shape (n_random_features_, 1)
        Coefficients of the prediction features (``prediction="features"``).
    intercept_ : ndarray of shape (1,)
        The intercept (averaged with ``average``).
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
        The stored points :math:`x_i` (a copy).
    dual_coef_ : ndarray of shape (n_support_,)
        Their coefficients in the predictor, :math:`\bar\alpha_i` (or
        :math:`\alpha_i` without ``average``).
    n_support_ : int
        Stored points (rounds that were not shrinks and moved the model).
    n_shrinks_ : int
        Shrinking rounds so far.
    eta_ : float
        The step of the last round.
    t_ : int
        Rounds so far.
    n_random_features_, n_blocks_, seed_, gamma_, feature_map_, n_features_in_
        As in :class:`DSGRegressor` (for the prediction features).

    Notes
    -----
    *Cost.*  A round evaluates ``2 m`` features (the sampled point and the
    new one, for each fresh unit) and draws ``m`` indices by binary search
    over the cumulative sums of :math:`|\alpha|`: :math:`O(m(d + \log t))`
    whatever the history, since the coefficients are stored as a global
    scale (a power of 4) times per-point values that never change.  The
    average of the iterates is kept the same way, as a sum of scales.
    Memory is one stored point per round.

    *Differences from the paper.*  The update on the new point is
    :math:`\alpha_t = -\eta(E_t - y_t)`, the gradient step of their
    section 5 (Algorithm 1 prints the opposite sign); the intercept and the
    anytime step of ``partial_fit`` are additions.

    References
    ----------
    R. Livni, D. Carmon and A. Globerson (2017), *Learning infinite layer
    networks without the kernel trick*, ICML.

    Examples
    --------
    >>> from onlinekernel import ShrinkingGradientRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(1500, 2))
    >>> y = np.tanh(X[:, 0] * X[:, 1])            # targets in [-1, 1]
    >>> reg = ShrinkingGradientRegressor(random_state=0).fit(X[:1000], y[:1000])
    >>> reg.n_support_ + reg.n_shrinks_ == reg.t_ == 1000   # one pass, one round a row
    True
    >>> float(reg.score(X[1000:], y[1000:])) > 0.6   # held-out R^2
    True
    """
    _y_numeric = True
    _extra_state = ("_support", "_beta", "_cum", "_csum_at", "_frozen", "_sg", "_readout",
                    "n_shrinks_", "eta_")

    def __init__(self, kernel="iln", *, gamma="scale", degree=3, coef0=0.0, kernel_params=None,
                 n_estimates=256, B=1.0, T=None, eta0=1.0, n_epochs=1, fit_intercept=True,
                 average=True, prediction="features", block_size=256, predict_blocks=16,
                 n_components=None, shuffle=True, random_state=None,
                 cache_bytes=64 * 2 ** 20, n_jobs=None, verbose=0):
        self._store_params(locals())

    def _model_dtype(self):
        # the rounds run in double: the model is float64
        return np.dtype(np.float64)

    def _loss_spec(self):
        """``"squared"``: the algorithm is online gradient descent on the squared loss."""
        return "squared"

    loss = property(_loss_spec)  # a read-only view for users; the training reads the method

    # ------------------------------------------------------------------ #
    # parameters and state
    # ------------------------------------------------------------------ #
    # Its own parameters, and those it shares with the DSG estimators as they check them
    _parameter_constraints = {**BaseDSG._parameter_constraints,
                              "n_estimates": _check_estimates,
                              "B": Real(0.0, strict=True),
                              "T": Int(1, none=True),
                              "n_epochs": Int(1),
                              "predict_blocks": Int(0),
                              "n_components": Int(0, none=True),
                              "average": Bool(),
                              "prediction": _check_prediction}

    def _check_combinations(self):
        # none of the DSG rules (reuse, penalty, solvers) apply to this algorithm
        if self.prediction == "features" and self._predict_blocks() < 1:
            raise ValueError("prediction='features' needs predict_blocks >= 1" if
                             self.n_components is None else
                             "prediction='features' needs n_components >= 1")
        if not (isinstance(self.gamma, str) and self.gamma in self._gamma_rules):
            _check_real("gamma", self.gamma, 0.0, strict=True)
        self._check_names()

    def _predict_blocks(self):
        """Blocks of prediction features: ``n_components`` in whole blocks, or ``predict_blocks``."""
        if self.n_components is None:
            return self.predict_blocks
        return -(-self.n_components // self.block_size)

    def _new_sg_state(self, X):
        fmap, gamma = self._make_feature_map(X)
        seed = seed_of(self.random_state)
        d = X.shape[1]
        nb = self._predict_blocks()
        R = nb * fmap.n_components
        return {
            "loss_": self._resolve_base_loss(), "feature_map_": fmap, "gamma_": gamma,
            "seed_": seed, "n_features_in_": d, "_n_outputs": 1,
            "_coef": np.zeros((R, 1)), "_scale": 1.0, "_intercept": np.zeros(1),
            "_coef_avg": np.zeros((R, 1)), "_intercept_avg": np.zeros(1),
            "n_blocks_": int(nb), "t_": 0, "samples_seen_": 0,
            "n_epochs_seen_": 0, "n_averaged_": 0,
            # the stored points; alpha = c * beta; cum = cumsum(|beta|); C_i
            # (see _sg); each point's sum of alpha over the rounds before the
            # last shrink
            "_support": np.zeros((0, d)), "_beta": np.zeros(0), "_cum": np.zeros(0),
            "_csum_at": np.zeros(0), "_frozen": np.zeros(0),
            # [c, C, b, b_sum]: the scale of beta, the sum of the scales over
            # the rounds since the last shrink, the intercept and the sum of
            # the intercepts over all rounds
            "_sg": np.array([1.0, 0.0, 0.0, 0.0]),
            # Phi_R^T [beta, beta * C_i, frozen] over the stored points
            "_readout": np.zeros((R, 3)),
            "n_shrinks_": 0, "eta_": 0.0,
            "_blocks": BlockSource(fmap, seed, self.cache_bytes),
            "_built_from": self._build_params(),
        }

    # Arrays a training call replaces rather than modifies: not copied.
    _REPLACED = ("_support", "_beta", "_cum", "_csum_at", "_frozen")

    def _state_copy(self):
        self._check_unchanged()
        if self._predict_blocks() != self.n_blocks_:
            # the readout holds every stored point's prediction features
            given = (f"predict_blocks={self.predict_blocks}" if self.n_components is None
                     else f"n_components={self.n_components}")
            raise ValueError(f"the model has {self.n_random_features_} prediction features "
                             f"({self.n_blocks_} blocks); it cannot continue with {given} "
                             f"(call fit to build a model with them, or set it back)")
        keys = ("loss_", "feature_map_", "gamma_", "seed_", "n_features_in_", "_n_outputs",
                "_coef", "_scale", "_intercept", "_coef_avg", "_intercept_avg", "n_blocks_",
                "t_", "samples_seen_", "n_epochs_seen_", "n_averaged_", "_blocks",
                "_built_from") + self._extra_state
        state = {k: getattr(self, k) for k in keys}
        for k, v in state.items():
            if isinstance(v, np.ndarray) and k not in self._REPLACED:
                state[k] = v.copy()
        return state

    def _check_state(self, st):
        """Refuse a model whose arrays disagree (a crafted model file, say)."""
        n, d = st["_support"].shape[0], st["n_features_in_"]
        R = st["n_blocks_"] * st["feature_map_"].n_components
        if (st["_support"].shape != (n, d) or st["_beta"].shape != (n,)
                or st["_cum"].shape != (n,) or st["_csum_at"].shape != (n,)
                or st["_frozen"].shape != (n,)
                or st["_sg"].shape != (4,) or st["_readout"].shape != (R, 3)
                or st["_coef"].shape != (R, 1) or st["_coef_avg"].shape != (R, 1)):
            raise ValueError("the model's stored points, coefficients and readout disagree in "
                             "shape")

    # ------------------------------------------------------------------ #
    # training
    # ------------------------------------------------------------------ #
    def _steps(self, state, rounds, partial):
        """The step of each of the next ``rounds`` rounds."""
        scale = float(self.eta0) * float(self.B)
        if self.T is not None:
            return np.full(rounds, scale / math.sqrt(self.T))
        if partial:
            t = state["t_"] + np.arange(1, rounds + 1, dtype=np.float64)
            return scale / np.sqrt(t)
        return np.full(rounds, scale / math.sqrt(rounds))

    @staticmethod
    def _absorb(state, arrays, start, stop):
        """Add stored points ``start .. stop-1`` to the readout's first two columns."""
        if stop <= start or not state["n_blocks_"]:
            return
        support, beta, _, csum_at, _ = arrays
        new = slice(start, stop)
        G = np.column_stack([beta[new], beta[new] * csum_at[new], np.zeros(stop - start)])
        readout_accumulate(state["feature_map_"], state["seed_"], state["n_blocks_"],
                           np.ascontiguousarray(support[new]), G, state["_readout"])

    def _rounds(self, state, emap, X, y, sw, order, etas, arrays, counters, absorbed):
        """Run the rounds over ``order``, folding the average at each shrink.

        Returns the index of the first stored point not yet in the readout.
        """
        support, beta, cum, csum_at, frozen = arrays
        sg, V = state["_sg"], state["_readout"]
        done = 0
        while done < order.shape[0]:
            shrinks = int(counters[1])
            done += sg_rounds(emap, state["seed_"], X, y, sw, order[done:], etas[done:],
                              int(self.n_estimates), 16.0 * float(self.B),
                              bool(self.fit_intercept), support, beta, cum, csum_at, sg,
                              counters)
            if counters[1] == shrinks:
                break  # every row done, no shrink
            # A shrink ends a stretch of rounds of one scale: fold their sum
            # of iterates (exact: C and C_i are whole multiples of that scale)
            # and start the next stretch from C = 0.
            n = int(counters[2])
            self._absorb(state, arrays, absorbed, n)
            absorbed = n
            C = sg[1]
            frozen[:n] += beta[:n] * (C - csum_at[:n])
            V[:, 2] += C * V[:, 0] - V[:, 1]
            V[:, 1] = 0.0
            csum_at[:n] = 0.0
            sg[1] = 0.0
            if sg[0] < 2.0 ** -400:
                # c is a power of 4: folding it into beta is exact (up to the
                # underflow of negligible old points)
                c = sg[0]
                beta[:n] *= c
                cum[:n] *= c
                V[:, 0] *= c
                sg[0] = 1.0
        return absorbed

    def _train(self, X, y, partial):
        first = not hasattr(self, "_support")
        self._validate_params()
        continuing = partial and not first
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", accept_sparse="csr",
                             y_numeric=True, reset=not continuing)
        X = _dense(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        sw = np.ones(X.shape[0])
        with self._training(None if continuing else self._new_sg_state(X)) as state:
            if continuing:
                self._check_state(state)
            fmap = state["feature_map_"]
            if self.prediction == "kernel" and not hasattr(fmap, "kernel"):
                raise ValueError(f"prediction='kernel' needs a feature map with a closed-form "
                                 f"kernel; {fmap!r} has none (use prediction='features')")
            emap = estimate_map(fmap)

            n_rows = X.shape[0]
            epochs = 1 if partial else int(self.n_epochs)
            rounds = epochs * n_rows
            etas = self._steps(state, rounds, partial)
            n_old = state["_support"].shape[0]
            cap = n_old + rounds
            support = np.empty((cap, X.shape[1]))
            support[:n_old] = state["_support"]
            arrays = [support]
            for key in ("_beta", "_cum", "_csum_at", "_frozen"):
                a = np.zeros(cap)  # zeros: a fold adds to the frozen sums of new points
                a[:n_old] = state[key]
                arrays.append(a)
            counters = np.array([state["t_"], state["n_shrinks_"], n_old], dtype=np.int64)
            absorbed = n_old
            progress = self._progress("Epoch") if not partial else None
            for e in range(epochs):
                if partial or not self.shuffle:
                    order = np.arange(n_rows, dtype=np.int64)
                else:
                    order = self._shuffled(state["seed_"], state["n_epochs_seen_"] + e, n_rows)
                absorbed = self._rounds(state, emap, X, y, sw, order,
                                        etas[e * n_rows:(e + 1) * n_rows], arrays, counters,
                                        absorbed)
                if progress:
                    progress(e + 1, T=int(counters[0]), stored_points=int(counters[2]),
                             shrinks=int(counters[1]), step=float(etas[(e + 1) * n_rows - 1]))
            if progress is not None:
                progress.finish(f"{epochs} epochs, {int(counters[0])} rounds")
            n = int(counters[2])
            self._absorb(state, arrays, absorbed, n)
            support, beta, cum, csum_at, frozen = (a[:n].copy() for a in arrays)
            state.update({"_support": support, "_beta": beta, "_cum": cum, "_csum_at": csum_at,
                          "_frozen": frozen, "t_": int(counters[0]),
                          "n_shrinks_": int(counters[1]), "eta_": float(etas[-1]),
                          "samples_seen_": state["samples_seen_"] + n_rows,
                          "n_epochs_seen_": state["n_epochs_seen_"] + (0 if partial else epochs)})
            self._set_coefficients(state)
        return self

    def _set_coefficients(self, state):
        """The prediction coefficients (last and averaged iterate) from the readout."""
        R = state["n_blocks_"] * state["feature_map_"].n_components
        c, C, b, b_sum = state["_sg"]
        t = state["t_"]
        V = state["_readout"]
        state["_coef"] = c / max(R, 1) * V[:, :1]
        state["_coef_avg"] = ((V[:, 2] + C * V[:, 0] - V[:, 1]) / (max(R, 1) * t))[:, None]
        state["_intercept"] = np.array([b])
        state["_intercept_avg"] = np.array([b_sum / t])
        state["n_averaged_"] = t if self.average else 0

    @transactional
    @_docs.doc("Fit the model: ``n_epochs`` passes of rounds over ``(X, y)``.", "X", "y")
    def fit(self, X, y):
        return self._train(X, y, partial=False)

    @transactional
    @_docs.doc("Run one round per row of ``(X, y)``, in order, continuing the model.", "X", "y")
    def partial_fit(self, X, y):
        return self._train(X, y, partial=True)

    # ------------------------------------------------------------------ #
    # prediction
    # ------------------------------------------------------------------ #
    @staticmethod
    def _dual(st, average):
        c, C, _, _ = st["_sg"]
        if average and st["t_"]:
            return (st["_frozen"] + st["_beta"] * (C - st["_csum_at"])) / st["t_"]
        return c * st["_beta"]

    @_docs.doc(r"Predicted targets :math:`\langle\bar f, \Phi(x)\rangle + \bar b`, shape ``(n,)``.",
               "X", returns="ndarray of shape (n_samples,)")
    def predict(self, X):
        check_is_fitted(self, "_support")
        # one snapshot: a concurrent partial_fit publishes its state in one step
        st = self.__dict__.copy()
        X = _dense(validate_data(self, X, dtype=np.float64, order="C", accept_sparse="csr",
                                 reset=False))
        average = bool(st["n_averaged_"])
        if self.prediction == "features":
            if not st["n_blocks_"]:
                raise ValueError("the model was fitted without prediction features "
                                 "(predict_blocks=0): predict with prediction='kernel'")
            return model_outputs(st, X, self.n_jobs)[:, 0]
        fmap = st["feature_map_"]
        if not hasattr(fmap, "kernel"):
            raise ValueError(f"prediction='kernel' needs a feature map with a closed-form "
                             f"kernel; {fmap!r} has none (use prediction='features')")
        alpha = self._dual(st, average)
        out = np.full(X.shape[0], (st["_intercept_avg"] if average else st["_intercept"])[0])
        S = st["_support"]
        for s0 in range(0, S.shape[0], _KERNEL_CHUNK):
            out += alpha[s0:s0 + _KERNEL_CHUNK] @ np.asarray(
                fmap.kernel(S[s0:s0 + _KERNEL_CHUNK], X), dtype=np.float64)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's "reasonable score" is R^2 > 0.5 after one fit on a
        # 200-row problem whose standardised targets reach 3.4: beyond the
        # default norm bound B = 1 (targets in [-1, 1], the paper's
        # setting), one pass of 200 steps of B / sqrt(200) reaches R^2 = 0.4;
        # B = 2 clears the bar (tests/solvers/test_shrinking.py checks this).
        tags.regressor_tags.poor_score = True
        return tags

    @property
    def n_support_(self):
        """Number of stored points."""
        check_is_fitted(self, "_support")
        return int(self._support.shape[0])

    @property
    def support_vectors_(self):
        """The stored points, shape ``(n_support_, n_features_in_)`` (a copy)."""
        check_is_fitted(self, "_support")
        return self._support.copy()

    @property
    def dual_coef_(self):
        """Coefficients of the stored points in the predictor, shape ``(n_support_,)``."""
        check_is_fitted(self, "_support")
        st = self.__dict__.copy()
        return self._dual(st, bool(st["n_averaged_"]))
