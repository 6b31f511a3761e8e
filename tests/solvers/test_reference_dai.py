"""The compiled solver against a plain-numpy Dai et al. (2014) Algorithms 1 and 2.

The reference below is written from DESIGN.md (section 2) and the solver's
documented contract, not from the solver's code.  It takes only the block
parameters from the model (``feature_map_.generate_block(seed_, j)``); the
Gaussian features ``sqrt(2) cos(X W^T + b)``, the loss gradients, the step
sizes, the shrinking and the intercept are all computed here in numpy, with
the coefficients stored plainly (no global scale factor).

Algorithm 1, step ``t`` (1-based) on a batch of ``B`` rows (``batch_size``
rows for a full batch; the schedule's clock is ``tau = rows seen / batch_size``
at the end of the batch and the step is ``gamma_t = schedule(tau) * B /
batch_size``):

1. ``U = intercept + sum_j Phi_j(X_b) A_j`` with all existing blocks;
2. ``G = w * dloss/draw (Y_b, U)``;
3. ``A_j <- max(0, 1 - gamma_t * alpha) A_j`` for every existing block;
4. while fewer than ``max_blocks`` blocks exist, a new block ``j = n_blocks``
   with ``A_j = -gamma_t / (B F) Phi_j^T G``; once the budget is full, every
   block moves by ``-gamma_t / (B F n_blocks) Phi_j^T G`` instead;
5. ``intercept <- max(0, 1 - gamma_t * alpha) intercept - gamma_t * mean(G)``
   when fitted (the intercept is the weight of a constant feature).

Algorithm 2: ``f(x) = intercept + sum_j Phi_j(x) A_j``.
"""
import numpy as np
import pytest

from onlinekernel import DSGClassifier, DSGRegressor, get_loss

from conftest import loss_gradient

SQRT2 = np.sqrt(2.0)


# --------------------------------------------------------------------------- #
# the reference
# --------------------------------------------------------------------------- #
def gaussian_features(params, X, F):
    """``sqrt(2) cos(X W^T + b)`` from a gaussian block's flat parameters."""
    d = X.shape[1]
    assert params.shape == (F * d + F,)
    W = params[:F * d].reshape(F, d)
    b = params[F * d:]
    return SQRT2 * np.cos(X @ W.T + b)


def step_size(schedule, t, eta0, t0, alpha):
    if schedule == "constant":
        return eta0
    if schedule == "inverse":  # theta / (t + t0) with theta = eta0 t0, shifted to start at eta0
        return eta0 * t0 / (max(t - 1.0, 0.0) + t0)
    if schedule == "invsqrt":
        return eta0 * np.sqrt(t0) / np.sqrt(max(t - 1.0, 0.0) + t0)
    if schedule == "pegasos":
        return 1.0 / (alpha * t)
    raise KeyError(schedule)


class ReferenceDSG:
    def __init__(self, block_params, F, K, loss, loss_params, alpha, schedule, eta0, t0,
                 max_blocks, fit_intercept):
        self.block_params = block_params  # j -> flat parameters of block j
        self.F, self.K = F, K
        self.loss, self.loss_params = loss, loss_params
        self.alpha, self.schedule, self.eta0, self.t0 = alpha, schedule, eta0, t0
        self.max_blocks = max_blocks if max_blocks is not None else np.inf
        self.fit_intercept = fit_intercept
        self.coefs = []  # one F x K matrix per block
        self.intercept = np.zeros(K)
        self.t = 0
        self.rows = 0
        self.batch_size = None  # set by run()

    def phi(self, j, X):
        return gaussian_features(self.block_params(j), X, self.F)

    def predict(self, X):  # Algorithm 2
        U = np.tile(self.intercept, (X.shape[0], 1))
        for j, A in enumerate(self.coefs):
            U += self.phi(j, X) @ A
        return U

    def step(self, Xb, Yb, wb):  # Algorithm 1, one step
        self.t += 1
        B, F = Xb.shape[0], self.F
        self.rows += B
        tau = self.rows / self.batch_size
        gamma = step_size(self.schedule, tau, self.eta0, self.t0, self.alpha) * B / self.batch_size
        G = loss_gradient(self.loss, self.loss_params, Yb, self.predict(Xb)) * wb[:, None]
        shrink = max(0.0, 1.0 - gamma * self.alpha)
        self.coefs = [shrink * A for A in self.coefs]
        if len(self.coefs) < self.max_blocks:
            j = len(self.coefs)
            self.coefs.append(-gamma / (B * F) * self.phi(j, Xb).T @ G)
        else:
            M = len(self.coefs)
            self.coefs = [A - gamma / (B * F * M) * self.phi(j, Xb).T @ G
                          for j, A in enumerate(self.coefs)]
        if self.fit_intercept:
            self.intercept = shrink * self.intercept - gamma * G.mean(axis=0)

    def run(self, X, Y, w, batch_size):
        self.batch_size = batch_size
        for s in range(0, X.shape[0], batch_size):
            self.step(X[s:s + batch_size], Y[s:s + batch_size], w[s:s + batch_size])

    @property
    def coef(self):
        return np.vstack(self.coefs) if self.coefs else np.zeros((0, self.K))


def encode(loss, y, classes):
    """Targets as the reference trains on them: +-1 margins or class indices."""
    idx = np.searchsorted(classes, y)
    assert np.array_equal(classes[idx], y)
    C = classes.shape[0]
    if loss == "multinomial":
        return idx.astype(float)[:, None], C
    if C == 2:
        return np.where(idx == 1, 1.0, -1.0)[:, None], 1
    Y = -np.ones((y.shape[0], C))
    Y[np.arange(y.shape[0]), idx] = 1.0
    return Y, C


# --------------------------------------------------------------------------- #
# problems and the comparison
# --------------------------------------------------------------------------- #
def problem(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Xt = rng.normal(size=(25, 3))
    if kind == "binary":
        y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, 7, 3)
    elif kind == "multiclass":
        y = np.array(["b", "c", "a"])[np.digitize(X[:, 0] - 0.5 * X[:, 2], [-0.4, 0.4])]
    else:
        y = 3.0 * np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.2 * rng.normal(size=n)
    return X, y, Xt


def reference_for(model, X, y, w, loss, loss_params, **cfg):
    fmap = model.feature_map_
    F = fmap.n_components
    if isinstance(model, DSGClassifier):
        classes = np.unique(y)
        np.testing.assert_array_equal(model.classes_, classes)
        eff_loss = "multinomial" if (loss == "logistic" and classes.shape[0] > 2) else loss
        Y, K = encode(eff_loss, y, classes)
    else:
        eff_loss, Y, K = loss, np.asarray(y, float)[:, None], 1
    assert model.loss_.name == eff_loss
    ref = ReferenceDSG(lambda j: fmap.generate_block(model.seed_, j), F, K, eff_loss,
                       loss_params, cfg["alpha"], cfg["learning_rate"], cfg["eta0"],
                       cfg["t0"], cfg["max_blocks"], cfg["fit_intercept"])
    ref.run(X, Y, w, cfg["batch_size"])
    return ref


def check_agreement(model, ref, Xt):
    assert model.t_ == ref.t
    assert model.n_blocks_ == len(ref.coefs)
    assert model.coef_.shape == ref.coef.shape
    assert np.abs(ref.coef).max() > 1e-4  # the steps did something
    np.testing.assert_allclose(model.coef_, ref.coef, rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.intercept_, ref.intercept, rtol=0, atol=1e-10)
    U = ref.predict(Xt)
    if isinstance(model, DSGRegressor):
        np.testing.assert_allclose(model.predict(Xt), U[:, 0], rtol=0, atol=1e-10)
        return
    scores = model.decision_function(Xt)
    if U.shape[1] == 1:
        expected = U[:, 0]
    elif U.shape[1] == 2 and model.classes_.shape[0] == 2:  # multinomial on two classes
        expected = U[:, 1] - U[:, 0]
    else:
        expected = U
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-10)
    if expected.ndim == 1:
        pred = model.classes_[(expected > 0).astype(int)]
    else:
        pred = model.classes_[np.argmax(expected, axis=1)]
    np.testing.assert_array_equal(model.predict(Xt), pred)


BASE = dict(gamma=0.35, alpha=0.01, batch_size=6, block_size=12, max_blocks=None,
            learning_rate="invsqrt", eta0=0.8, t0=1.0, fit_intercept=True, precondition=False,
            average=False)  # the reference predicts with the last iterate, as Dai et al.

CASES = (
    [pytest.param(loss, {}, kind, id=f"{loss}-{kind}")
     for loss in ("hinge", "squared_hinge", "logistic", "multinomial")
     for kind in ("binary", "multiclass")]
    + [pytest.param(loss, params, "regression",
                    id=loss + "".join(f"-{k}={v}" for k, v in params.items()))
       for loss, params in (("squared", {}), ("huber", {}), ("huber", {"delta": 0.3}),
                            ("epsilon_insensitive", {}),
                            ("epsilon_insensitive", {"epsilon": 0.0}),
                            ("quantile", {}), ("quantile", {"quantile": 0.8}))]
)


def make_model(kind, loss, params, **cfg):
    """The compiled model: the loss by name, or as an instance when it has parameters."""
    if kind == "regression":  # the reference runs on the targets as given
        return DSGRegressor(loss=get_loss(loss, **params) if params else loss,
                            kernel="gaussian", random_state=11, normalize_y=False, **cfg)
    return DSGClassifier(loss=get_loss(loss, **params) if params else loss, kernel="gaussian",
                         random_state=11, **cfg)


@pytest.mark.parametrize("loss, params, kind", CASES)
def test_growing_steps_match_reference(loss, params, kind):
    # 5 steps, the last on a partial batch of 4 rows; one block added per step
    cfg = dict(BASE)
    X, y, Xt = problem(kind, 28)
    model = make_model(kind, loss, params, **cfg)
    if kind == "regression":
        model.partial_fit(X, y)
    else:
        model.partial_fit(X, y, classes=np.unique(y))
    assert model.n_blocks_ == 5 and model.gamma_ == cfg["gamma"]
    ref = reference_for(model, X, y, np.ones(len(y)), loss, params, **cfg)
    check_agreement(model, ref, Xt)


@pytest.mark.parametrize("loss, params, kind", CASES)
def test_budget_full_steps_match_reference(loss, params, kind):
    # 8 steps with a budget of 3 blocks: steps 4..8 move the existing blocks;
    # fit(solver="sgd", max_iter=1, tol=None, shuffle=False) is one pass over the rows in order
    cfg = dict(BASE, max_blocks=3, learning_rate="inverse", eta0=0.6, t0=2.0)
    X, y, Xt = problem(kind, 46, seed=1)
    model = make_model(kind, loss, params, solver="sgd", max_iter=1, tol=None, shuffle=False, **cfg).fit(X, y)
    assert model.n_blocks_ == 3 and model.t_ == 8
    ref = reference_for(model, X, y, np.ones(len(y)), loss, params, **cfg)
    check_agreement(model, ref, Xt)


@pytest.mark.parametrize("loss, kind", [("hinge", "binary"), ("logistic", "multiclass"),
                                        ("squared", "regression"), ("huber", "regression")])
def test_partial_fit_calls_continue_the_reference(loss, kind):
    # three calls: t and the block count carry over; the budget fills mid-way
    cfg = dict(BASE, max_blocks=4, learning_rate="constant", eta0=0.5, fit_intercept=False)
    X, y, Xt = problem(kind, 42, seed=2)
    model = make_model(kind, loss, {}, **cfg)
    extra = {} if kind == "regression" else {"classes": np.unique(y)}
    for a, b in ((0, 12), (12, 30), (30, 42)):
        model.partial_fit(X[a:b], y[a:b], **extra)
        extra = {}
    assert model.n_blocks_ == 4 and model.t_ == 7
    np.testing.assert_array_equal(model.intercept_, 0.0)
    ref = reference_for(model, X, y, np.ones(len(y)), loss, {}, **cfg)
    check_agreement(model, ref, Xt)


@pytest.mark.parametrize("loss, kind", [("hinge", "binary"), ("squared_hinge", "multiclass"),
                                        ("multinomial", "multiclass"),
                                        ("quantile", "regression"),
                                        ("epsilon_insensitive", "regression")])
def test_sample_weights_match_reference(loss, kind):
    cfg = dict(BASE, max_blocks=3)
    X, y, Xt = problem(kind, 40, seed=3)
    w = np.random.default_rng(4).uniform(0.1, 3.0, size=len(y))
    model = make_model(kind, loss, {}, **cfg)
    extra = {} if kind == "regression" else {"classes": np.unique(y)}
    model.partial_fit(X, y, sample_weight=w, **extra)
    ref = reference_for(model, X, y, w, loss, {}, **cfg)
    check_agreement(model, ref, Xt)
    # the weights matter: unit weights give a different model
    unweighted = reference_for(model, X, y, np.ones(len(y)), loss, {}, **cfg)
    assert np.abs(unweighted.coef - ref.coef).max() > 1e-6


@pytest.mark.parametrize("loss, kind", [("hinge", "binary"), ("logistic", "binary"),
                                        ("squared", "regression")])
@pytest.mark.parametrize("max_blocks", [None, 2])
def test_pegasos_schedule_matches_reference(loss, kind, max_blocks):
    # gamma_t = 1 / (alpha t): step 1 shrinks by 1 - 1 = 0, step 2 by 1/2, ...
    cfg = dict(BASE, learning_rate="pegasos", alpha=0.5, max_blocks=max_blocks)
    X, y, Xt = problem(kind, 30, seed=5)
    model = make_model(kind, loss, {}, **cfg)
    extra = {} if kind == "regression" else {"classes": np.unique(y)}
    model.partial_fit(X[:6], y[:6], **extra)
    ref1 = reference_for(model, X[:6], y[:6], np.ones(6), loss, {}, **cfg)
    check_agreement(model, ref1, Xt)
    model.partial_fit(X[6:], y[6:])
    ref = reference_for(model, X, y, np.ones(len(y)), loss, {}, **cfg)
    check_agreement(model, ref, Xt)


def test_pegasos_first_step_zeroes_coefficients_of_a_fresh_fit():
    # warm_start=False: a second fit starts over at t=1, whose shrink factor
    # 1 - alpha / alpha = 0 leaves nothing of an earlier model
    cfg = dict(BASE, learning_rate="pegasos", alpha=0.25)
    X, y, Xt = problem("binary", 24, seed=6)
    a = make_model("binary", "hinge", {}, solver="sgd", max_iter=1, tol=None, shuffle=False, **cfg).fit(X, y)
    b = make_model("binary", "hinge", {}, solver="sgd", max_iter=1, tol=None, shuffle=False, **cfg)
    b.fit(X[::-1], y[::-1]).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    ref = reference_for(a, X, y, np.ones(len(y)), "hinge", {}, **cfg)
    check_agreement(a, ref, Xt)
    # and in the reference, step 2 sees step 1's block halved (factor 1 - 1/2)
    r = ReferenceDSG(lambda j: a.feature_map_.generate_block(a.seed_, j), 12, 1, "hinge", {},
                     0.25, "pegasos", 1.0, 1.0, None, True)
    r.batch_size = 6
    r.step(X[:6], np.where(y[:6] == 7, 1.0, -1.0)[:, None], np.ones(6))
    first = r.coefs[0].copy()
    r.step(X[6:12], np.where(y[6:12] == 7, 1.0, -1.0)[:, None], np.ones(6))
    np.testing.assert_allclose(r.coefs[0], 0.5 * first, rtol=1e-15)
    np.testing.assert_allclose(a.coef_[:12], r.coefs[0] * (1 - 1 / 3) * (1 - 1 / 4),
                               rtol=0, atol=1e-10)


def test_reference_features_agree_with_the_feature_map():
    # the reference's features from block parameters are the map's own features
    X, _, _ = problem("binary", 9)
    model = make_model("binary", "hinge", {}, solver="sgd", max_iter=1, tol=None, **BASE).fit(X, X[:, 0] > 0)
    fmap = model.feature_map_
    for j in (0, 1, 4):
        np.testing.assert_allclose(
            fmap.transform_block(model.seed_, j, X),
            gaussian_features(fmap.generate_block(model.seed_, j), X, fmap.n_components),
            rtol=0, atol=1e-12)
    # and the blocks differ from one another
    assert not np.allclose(fmap.generate_block(model.seed_, 0),
                           fmap.generate_block(model.seed_, 1))


def test_reference_detects_a_wrong_step():
    # the comparison is sharp: a reference with a slightly different step fails
    cfg = dict(BASE)
    X, y, Xt = problem("regression", 18)
    model = make_model("regression", "squared", {}, **cfg).partial_fit(X, y)
    ref = reference_for(model, X, y, np.ones(len(y)), "squared", {}, **dict(cfg, eta0=0.8001))
    with pytest.raises(AssertionError):
        check_agreement(model, ref, Xt)
